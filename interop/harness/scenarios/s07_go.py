"""Scenario 7: Go client."""

from ..output import parse_result, tail
from ..topics import RUN_TAG, create_topic

TITLE = "Go client (rocketmq-client-go/v2 producer + consumer)"


def s7_go(env, c):
    env.ensure("a", "a_s", "b")
    env.artifacts.go_client()
    topic = "InteropGo"
    create_topic(env, c, topic)
    prefix = RUN_TAG + "-go"
    rc, out = env.goclient("produce", timeout=120, ns=env.sut1, topic=topic, count=200, prefix=prefix)
    r = parse_result(out)
    c.check(rc == 0 and r.get("ok") == "200", "Go producer sent 200 (ok=%s failed=%s)" % (r.get("ok"), r.get("failed")))
    c.fig("produced per broker", r.get("brokers"))
    if rc != 0:
        c.note(tail(out))
    rc, out = env.goclient("consume", timeout=120, ns=env.sut1, topic=topic, group="interop_go_" + RUN_TAG,
                           count=200, prefix=prefix, wait="90s")
    r = parse_result(out)
    c.check(rc == 0 and r.get("distinct") == "200", "Go push consumer received 200 (distinct=%s)" % r.get("distinct"))
    c.fig("consume ms", r.get("ms"))
    if rc != 0:
        c.note(tail(out))
