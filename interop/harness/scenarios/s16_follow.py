"""Scenario 16: a broker follows the address server's list (issue 24).

A real Java broker started with `fetchNamesrvAddrByAddressServer=true`, no `namesrvAddr`, and
`-Drocketmq.namesrv.domain` pointed at our first nameserver's HTTP port learns its nameservers
from our `/rocketmq/nsaddr`. The list is then changed at run time with the Java mqadmin's
`updateNamesrvConfig -k httpNamesrvAddr` (UPDATE_NAMESRV_CONFIG, 318) to a second nameserver of
ours: the broker registers there without a restart, and a Java producer given only
`-Drocketmq.namesrv.domain` (no nameserver address) reads its route from the second nameserver
and sends through the broker.

The broker polls the address server every `fetchNamesrvAddrInterval` ms (BrokerConfig, 10 000 by
default in 5.x; first poll 10 s after start) and registers with a new list at its next
`registerNameServerPeriod` (10 s in this suite): the time from the update to the registration is
reported as a figure. (The 2-minute poll is the Java client's, MQClientInstance; the producer
here fetches the list once at start.)
"""

import os
import time

from ..fixture import GEN_VERSION, Broker, Namesrv, SetupError, broker_addrs, cluster_info, route, route_queues
from ..output import parse_result, tail
from ..procs import http_get, wait_until
from ..topics import RUN_TAG

TITLE = "Broker follows the address server's list (httpNamesrvAddr changed at run time)"

CLUSTER = "FollowCluster"
BROKER = "broker-follow"


def route_reads(http_addr):
    """GET_ROUTEINFO_BY_TOPIC requests a nameserver of ours has answered (its /metrics)."""
    status, text = http_get(http_addr, "/metrics")
    if status != 200:
        return None
    total = 0
    for ln in text.splitlines():
        if ln.startswith("rocketmq_namesrv_requests_total{") and 'request="GET_ROUTEINFO_BY_TOPIC"' in ln:
            total += int(float(ln.rsplit(" ", 1)[1]))
    return total


def s16_broker_follows_the_list(env, c):
    """A Java broker and producer that find the nameservers only through our address server."""
    if env.impl != "rust":
        c.check(True, "the Java nameserver has no address server: scenario 16 applies to ours only")
        return
    if os.environ.get("NAMESRV_ADDR"):
        raise SetupError("NAMESRV_ADDR is set in the environment: the broker would use it instead of the address server")
    ver = GEN_VERSION["5"]
    first = Namesrv(env, "follow1", "rust")
    second = Namesrv(env, "follow2", "rust")
    # The first nameserver's address server starts by answering its own address.
    with open(first.conf, "a") as f:
        f.write("httpNamesrvAddr=%s\n" % first.addr)
    first_http = "127.0.0.1:%d" % first.http_port
    second_http = "127.0.0.1:%d" % second.http_port
    broker = Broker(env, "follow", "5", CLUSTER, BROKER, 0)
    broker.conf_overrides = {"namesrvAddr": None, "fetchNamesrvAddrByAddressServer": "true"}
    broker.jvm_extra = ["-Drocketmq.namesrv.domain=" + first_http]
    started = []
    try:
        for ns in (first, second):
            ns.start()
            started.append(ns)
        for ns in (first, second):
            ns.wait_ready(30)
        status, body = http_get(first_http, "/rocketmq/nsaddr")
        c.require(status == 200 and body.strip() == first.addr,
                  "the first SUT's address server answers its own address %s (got %s %r)" % (first.addr, status, body[:100]))

        t0 = time.time()
        broker.start(None)
        started.append(broker)
        broker.wait_boot(120)
        c.check("namesrvAddr" not in open(os.path.join(broker.dir, "broker.conf")).read(),
                "the broker's broker.conf names no nameserver (fetchNamesrvAddrByAddressServer=true)")

        def registered(ns):
            return broker.addr in broker_addrs(cluster_info(ns.addr), BROKER, 0)
        c.require(wait_until(lambda: registered(first), 90, 0.5),
                  "Java %s broker registered with the first SUT, found through %s/rocketmq/nsaddr" % (ver, first_http))
        c.fig("start to first registration (s)", "%.1f" % (time.time() - t0))
        c.check(not registered(second), "the broker is not registered with the second SUT yet")

        topic = "InteropFollow"
        rc, out = env.mqadmin(["updateTopic", "-b", broker.addr, "-t", topic, "-r", "4", "-w", "4"], ns=first.addr)
        c.require(rc == 0 and "success" in out, "mqadmin(%s) updateTopic -b %s -t %s" % (ver, broker.addr, topic))

        # The nameserver set changes: the address server now names the second SUT only.
        rc, out = env.mqadmin(["updateNamesrvConfig", "-k", "httpNamesrvAddr", "-v", second.addr], ns=first.addr)
        t_update = time.time()
        c.require(rc == 0 and "success" in out.lower(),
                  "Java %s mqadmin updateNamesrvConfig -k httpNamesrvAddr -v %s (318) on the first SUT" % (ver, second.addr)
                  + ("" if rc == 0 else "\n" + tail(out)))
        status, body = http_get(first_http, "/rocketmq/nsaddr")
        c.require(status == 200 and body.strip() == second.addr,
                  "the address server answers the new list at once: %s (got %r)" % (second.addr, body[:100]))

        ok = wait_until(lambda: registered(second), 90, 0.5)
        took = time.time() - t_update
        c.require(ok, "without a restart, the broker registered with the second SUT %.1f s after the update" % took)
        c.fig("update to registration with the second SUT (s)", "%.1f" % took)
        c.check(broker.starts == 1 and broker.alive(), "the broker was not restarted")
        c.require(wait_until(lambda: BROKER in route_queues(route(second.addr, topic)), 30, 0.3),
                  "the second SUT's route of %s lists %s" % (topic, BROKER))

        before_second, before_first = route_reads(second_http), route_reads(first_http)
        prefix = RUN_TAG + "-follow"
        argv = env.jclient_argv("5", "produce", ns="-", topic=topic, count=50, prefix=prefix)
        argv.insert(argv.index("-cp"), "-Drocketmq.namesrv.domain=" + first_http)
        rc, out, _ = env.procs.run("jclient-%s-produce-follow" % ver, argv, 180, env={"ROCKETMQ_HOME": env.rmq_home})
        r = parse_result(out)
        c.check(rc == 0 and r.get("ok") == "50" and BROKER in (r.get("brokers") or ""),
                "Java %s producer with only -Drocketmq.namesrv.domain=%s sent 50 messages through %s (ok=%s failed=%s "
                "brokers=%s)" % (ver, first_http, BROKER, r.get("ok"), r.get("failed"), r.get("brokers")))
        if rc != 0:
            c.note(tail(out))
        after_second, after_first = route_reads(second_http), route_reads(first_http)
        c.check(after_second is not None and after_second > before_second and after_first == before_first,
                "the producer read its route from the second SUT (route reads: second %s -> %s, first %s -> %s)"
                % (before_second, after_second, before_first, after_first))
    finally:
        for p in reversed(started):
            p.kill()
