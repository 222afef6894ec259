"""Scenario 11: rolling replacement of a Java nameserver."""

import time

from .. import remoting as rm
from ..fixture import kv_get, live_brokers_registered, route, route_brokers, route_queues
from ..output import parse_result
from ..procs import free_port_block, wait_until
from ..producer import loop_sends, max_gap, warm_producer
from ..topics import RUN_TAG, create_topic

TITLE = "Rolling replacement of a Java nameserver (same address, kvConfig.json carried over)"


def s11_rolling_replacement(env, c):
    """The migration the book describes: the Java nameserver `ref` (in every broker's and
    client's list) is stopped with SIGTERM and the nameserver under test started on its address
    with its properties file and the kvConfig.json Java wrote, while a producer sends; no send
    may fail, and the new nameserver must end up knowing what the others know."""
    env.ensure("a", "b")
    ref = env.namesrvs["ref"]
    c.require(ref.impl == "java" and ref.alive(), "the Java nameserver %s is running" % ref.addr)
    topic = "InteropRolling"
    create_topic(env, c, topic, ns=ref.addr)
    ns_key, kv_key = "InteropRolling", "carried"
    r = rm.call(ref.addr, rm.PUT_KV_CONFIG, {"namespace": ns_key, "key": kv_key, "value": "over"})
    c.require(r.code == 0, "KV entry put on the Java nameserver (code %s)" % r.code)
    every = env.broker_ns_list()
    loop = warm_producer(env, c, every, topic)
    try:
        t_stop = int(time.time() * 1000)
        env.procs.stop(ref.proc)
        c.note("SIGTERM to the Java nameserver %s" % ref.addr)
        ref.impl = env.impl
        if ref.impl == "rust":
            # The harness gives each of our nameservers an HTTP port of its own (the default 8080
            # would clash); the rest of the file is the one the Java nameserver ran with.
            ref.http_port = free_port_block((0,))
            with open(ref.conf, "a") as f:
                f.write("httpListenPort=%d\nhttpBindAddress=127.0.0.1\n" % ref.http_port)
        t0 = time.time()
        ref.start()
        ref.wait_ready(90 if ref.impl == "java" else 30)
        c.fig("stop of the Java nameserver until %s serves on its address (s)" % ref.impl, "%.1f" % (time.time() - t0))
        code, val = kv_get(ref.addr, ns_key, kv_key)
        c.check(code == 0 and val == "over",
                "the new nameserver serves the KV entry from the kvConfig.json Java wrote (%s, code %s)" % (val, code))

        t0 = time.time()

        def same_as_sut1():
            if not live_brokers_registered(env, ref.addr):
                return None
            mine, theirs = route(ref.addr, topic), route(env.sut1, topic)
            if mine is None or theirs is None:
                return None
            return route_queues(mine) == route_queues(theirs) and route_brokers(mine) == route_brokers(theirs)
        agreed = wait_until(same_as_sut1, 40, 0.25)
        secs = time.time() - t0
        c.check(agreed, "every live broker re-registered with the new nameserver, and its route of %s equals sut1's" % topic)
        c.fig("re-registration until the new nameserver agrees with sut1 (s)", "%.1f" % secs)
        time.sleep(2.0)
        sends = loop_sends(loop)
        after = [x for x in sends if x[0] >= t_stop]
        failed = [x for x in after if not x[2]]
        c.fig("running producer: sends / failed since the stop", "%d / %d" % (len(after), len(failed)))
        c.fig("running producer: max gap (ms)", max_gap(sends, t_stop - 1000))
        c.check(after and not failed, "zero failed sends during the replacement (%d sends, %d failed)" % (
            len(after), len(failed)))
    finally:
        env.procs.kill(loop)
    rc, out = env.jclient("5", "produce", timeout=120, ns=ref.addr, topic=topic, count=50, prefix=RUN_TAG + "-rolling")
    r = parse_result(out)
    c.check(rc == 0 and r.get("ok") == "50", "a producer works through the new nameserver alone (ok=%s)" % r.get("ok"))
