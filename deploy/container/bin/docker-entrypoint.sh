#!/bin/sh
# The image's entry point, with the official apache/rocketmq image's conventions: the role comes
# from the first argument (`nameserver`, `controller`) or from NODE_ROLE; without either, no
# argument or only options (`-c FILE`) start the nameserver; any other command (`sh`,
# `mqadmin ...`) is run as given.
set -eu

role=
case ${1:-} in
    nameserver | controller)
        role=$1
        shift
        ;;
    broker | proxy | dashboard)
        echo "docker-entrypoint.sh: this image holds the nameserver and the controller, not the $1" >&2
        exit 64
        ;;
esac
if [ -z "$role" ] && [ -n "${NODE_ROLE:-}" ]; then
    case $NODE_ROLE in
        nameserver | controller) role=$NODE_ROLE ;;
        *)
            echo "docker-entrypoint.sh: NODE_ROLE=$NODE_ROLE is not served by this image (nameserver, controller)" >&2
            exit 64
            ;;
    esac
    # The official image's CMD is a placeholder that its entry point drops.
    if [ "${1:-}" = dummy ]; then
        shift
    fi
fi
# No argument, or only options (`-c FILE`): the nameserver.
if [ -z "$role" ]; then
    case ${1:--} in
        -*) role=nameserver ;;
    esac
fi

case $role in
    nameserver) exec mqnamesrv "$@" ;;
    controller) exec mqcontroller "$@" ;;
esac
exec "$@"
