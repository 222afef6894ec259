#!/bin/sh
# runserver.sh PROGRAM [ARGS...]: starts mqnamesrv or mqcontroller as the official image's
# runserver.sh starts a JVM, so that the environment the rocketmq-docker chart, compose files and
# rocketmq-operator pass works unchanged:
#  - JAVA_OPT, JAVA_OPT_EXT, HEAP_OPTS and JAVA_HEAP_SIZE are accepted and ignored (one line);
#  - controllerDLegerGroup, controllerDLegerPeers, controllerDLegerSelfId and controllerStorePath
#    from the environment override the `-c` file, as rocketmq-operator's controller image does;
#    without controllerDLegerSelfId, MY_POD_NAME without its dashes is the node's id (the
#    operator's peers are named that way: pod `controller-0` is peer `controller0`);
#  - a `-c` file that cannot be rewritten here (a ConfigMap mount) is served from a writable
#    copy, so that updateNamesrvConfig and updateControllerConfig work until the next start.
# In both cases the server runs on `$RMQ_RUNTIME_DIR/PROGRAM.properties` (default
# /tmp/rocketmq), said in one line. Then the binary is exec'd: it gets the signals directly.
set -eu

prog=$1
shift
bin=${RMQ_BIN_DIR:-/usr/libexec/rocketmq-namesrv}/$prog
say() {
    printf '%s: %s\n' "$prog" "$*" >&2
}

ignored=
for var in JAVA_OPT JAVA_OPT_EXT HEAP_OPTS JAVA_HEAP_SIZE; do
    eval "value=\${$var:-}"
    if [ -n "$value" ]; then
        ignored="$ignored $var"
    fi
done
if [ -n "$ignored" ]; then
    say "ignoring$ignored: $prog is not a JVM (limit its memory with the container's resources)"
fi

# The -c file, in any of the forms the binary accepts.
conf=
expect=
for arg in "$@"; do
    if [ -n "$expect" ]; then
        conf=$arg
        expect=
        continue
    fi
    case $arg in
        -c | --configFile) expect=1 ;;
        --configFile=*) conf=${arg#--configFile=} ;;
        -c?*) conf=${arg#-c} ;;
    esac
done

nl='
'
overrides=
from_env=
override() {
    case $2 in
        *"$nl"*)
            say "$1 from the environment holds a line break: refused"
            exit 1
            ;;
    esac
    overrides="$overrides$1=$2$nl"
    from_env="$from_env $1"
}
for key in controllerDLegerGroup controllerDLegerPeers controllerDLegerSelfId controllerStorePath; do
    eval "value=\${$key:-}"
    if [ -n "$value" ]; then
        override "$key" "$value"
    fi
done
if [ -z "${controllerDLegerSelfId:-}" ] && [ -n "${MY_POD_NAME:-}" ] && [ -n "${controllerDLegerPeers:-}" ]; then
    override controllerDLegerSelfId "$(printf '%s' "$MY_POD_NAME" | tr -d -)"
fi

read_only=
if [ -n "$conf" ] && [ -f "$conf" ] && { [ ! -w "$conf" ] || [ ! -w "$(dirname "$conf")" ]; }; then
    read_only=1
fi
# A -c file that does not exist is left to the binary, which names it in its error.
if { [ -n "$overrides" ] || [ -n "$read_only" ]; } && { [ -z "$conf" ] || [ -f "$conf" ]; }; then
    dir=${RMQ_RUNTIME_DIR:-${TMPDIR:-/tmp}/rocketmq}
    (umask 077 && mkdir -p "$dir")
    served=$dir/$prog.properties
    (
        umask 077
        if [ -n "$conf" ]; then
            cat "$conf"
            printf '\n'
        fi
        if [ -n "$overrides" ]; then
            printf '# From the environment:\n%s' "$overrides"
        fi
    ) > "$served.tmp"
    mv -f "$served.tmp" "$served"
    why=
    if [ -n "$read_only" ]; then
        why="a copy of the read-only $conf"
    elif [ -n "$conf" ]; then
        why="a copy of $conf"
    else
        why="the defaults"
    fi
    if [ -n "$from_env" ]; then
        why="$why, with$from_env from the environment"
    fi
    say "serving $served: $why (runtime config updates last until the next start)"
    if [ -z "$conf" ]; then
        set -- "$@" -c "$served"
    else
        # The same arguments with the -c file replaced.
        n=$#
        expect=
        while [ "$n" -gt 0 ]; do
            arg=$1
            shift
            n=$((n - 1))
            if [ -n "$expect" ]; then
                set -- "$@" "$served"
                expect=
                continue
            fi
            case $arg in
                -c | --configFile)
                    set -- "$@" "$arg"
                    expect=1
                    ;;
                --configFile=*) set -- "$@" "--configFile=$served" ;;
                -c?*) set -- "$@" "-c$served" ;;
                *) set -- "$@" "$arg" ;;
            esac
        done
    fi
fi

exec "$bin" "$@"
