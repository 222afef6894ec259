"""Scenario 10: address server (issue 12)."""

from ..fixture import GEN_VERSION
from ..output import parse_result, tail
from ..procs import http_get
from ..topics import RUN_TAG, create_topic

TITLE = "Address server: Java producer via -Drocketmq.namesrv.domain"


def nsaddr_fetches(http_addr):
    """How many address-server requests the SUT has answered with 200 (its own metrics)."""
    status, text = http_get(http_addr, "/metrics")
    if status != 200:
        return None
    total = 0
    for ln in text.splitlines():
        if ln.startswith("rocketmq_namesrv_http_requests_total{") and 'handler="/rocketmq/{subgroup}"' in ln \
                and 'status="200"' in ln:
            total += int(float(ln.rsplit(" ", 1)[1]))
    return total


def s10_address_server(env, c):
    """A Java producer given no nameserver address finds it through our /rocketmq/nsaddr."""
    ns = env.namesrvs["sut1"]
    if ns.impl != "rust":
        c.check(True, "the Java nameserver has no address server: scenario 10 applies to ours only")
        return
    env.ensure("a", "b")
    http_addr = "127.0.0.1:%d" % ns.http_port
    status, body = http_get(http_addr, "/rocketmq/nsaddr")
    c.require(status == 200 and body.strip() == ns.addr,
              "GET http://%s/rocketmq/nsaddr answers the SUT's remoting address %s (got %s %r)"
              % (http_addr, ns.addr, status, body[:200]))
    before = nsaddr_fetches(http_addr)
    c.require(before is not None, "the SUT's /metrics is served on %s" % http_addr)
    topic = "InteropNsAddr"
    create_topic(env, c, topic)
    prefix = RUN_TAG + "-nsaddr"
    argv = env.jclient_argv("5", "produce", ns="-", topic=topic, count=100, prefix=prefix)
    # The JVM property goes before the class name.
    argv.insert(argv.index("-cp"), "-Drocketmq.namesrv.domain=" + http_addr)
    rc, out, _ = env.procs.run("jclient-%s-produce-nsaddr" % GEN_VERSION["5"], argv, 180,
                               env={"ROCKETMQ_HOME": env.rmq_home})
    r = parse_result(out)
    c.check(rc == 0 and r.get("ok") == "100",
            "Java %s producer with -Drocketmq.namesrv.domain=%s and no nameserver address sent 100 "
            "messages (ok=%s failed=%s)" % (GEN_VERSION["5"], http_addr, r.get("ok"), r.get("failed")))
    if rc != 0:
        c.note(tail(out))
    after = nsaddr_fetches(http_addr)
    c.check(after is not None and after > before,
            "the producer fetched the nameserver list from the SUT's address server (%s -> %s requests)"
            % (before, after))
    c.fig("produced per broker", r.get("brokers"))
