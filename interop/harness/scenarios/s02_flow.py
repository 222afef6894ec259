"""Scenario 2: messages flow."""

from ..fixture import GEN_VERSION
from ..output import parse_result, tail
from ..topics import RUN_TAG, create_topic

TITLE = "Messages flow (Java producer 1000 -> push consumer)"


def s2_flow(env, c):
    env.ensure("a", "a_s", "b")
    topic = "InteropFlow"
    create_topic(env, c, topic)
    prefix = RUN_TAG + "-flow"
    rc, out = env.jclient("5", "produce", timeout=180, ns=env.sut1, topic=topic, count=1000, prefix=prefix)
    r = parse_result(out)
    c.check(rc == 0 and r.get("ok") == "1000",
            "Java %s producer sent 1000 messages (ok=%s failed=%s)" % (GEN_VERSION["5"], r.get("ok"), r.get("failed")))
    c.fig("produce ms", r.get("ms"))
    c.fig("produced per broker", r.get("brokers"))
    if rc != 0:
        c.note(tail(out))
    rc, out = env.jclient("5", "consume", timeout=150, ns=env.sut1, topic=topic, group="interop_flow_" + RUN_TAG,
                          count=1000, prefix=prefix, timeoutSec=120)
    r = parse_result(out)
    c.check(rc == 0 and r.get("distinct") == "1000",
            "Java push consumer received all 1000 (distinct=%s)" % r.get("distinct"))
    c.fig("consume ms", r.get("ms"))
    c.fig("consumed per broker", r.get("brokers"))
    if rc != 0:
        c.note(tail(out))
