"""Scenario 6: older generation (4.9.x broker and client)."""

from .. import diff
from .. import remoting as rm
from ..fixture import LEGACY_CLUSTER, GEN_VERSION
from ..output import parse_cluster_list, parse_result, tail
from ..topics import RUN_TAG, create_topic

TITLE = "Older generation (%s broker + client)" % GEN_VERSION["4"]


def s6_legacy(env, c):
    env.ensure("legacy")
    lb = env.brokers["legacy"]
    topic = "InteropLegacy"
    create_topic(env, c, topic, cluster=LEGACY_CLUSTER, gen="4", brokers=("broker-legacy",))
    r399 = rm.call(env.sut1, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, version=rm.V4_9_3)
    r479 = rm.call(env.sut1, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, version=rm.V5_3_3)
    c.check(r399.code == 0 and r399.body and rm.has_bare_keys(r399.body_text()),
            "route for version %d (%s) uses legacy bare-key JSON: %s" % (rm.V4_9_3, GEN_VERSION["4"], diff.short(r399.body_text(), 120)))
    c.check(r479.code == 0 and r479.body and not rm.has_bare_keys(r479.body_text()),
            "route for version %d uses standard JSON" % rm.V5_3_3)
    rc, out = env.mqadmin(["clusterList"], gen="4")
    rows = parse_cluster_list(out)
    c.check((LEGACY_CLUSTER, "broker-legacy", "0", lb.addr) in rows,
            "mqadmin %s clusterList shows %s broker-legacy 0 %s" % (GEN_VERSION["4"], LEGACY_CLUSTER, lb.addr))
    if not rows:
        c.note(tail(out))
    prefix = RUN_TAG + "-legacy"
    rc, out = env.jclient("4", "produce", timeout=120, ns=env.sut1, topic=topic, count=200, prefix=prefix)
    r = parse_result(out)
    c.check(rc == 0 and r.get("ok") == "200", "Java %s producer sent 200 (ok=%s failed=%s)" % (GEN_VERSION["4"], r.get("ok"), r.get("failed")))
    c.fig("produced per broker", r.get("brokers"))
    if rc != 0:
        c.note(tail(out))
    rc, out = env.jclient("4", "consume", timeout=120, ns=env.sut1, topic=topic, group="interop_legacy_" + RUN_TAG,
                          count=200, prefix=prefix, timeoutSec=90)
    r = parse_result(out)
    c.check(rc == 0 and r.get("distinct") == "200", "Java %s push consumer received 200 (distinct=%s)" % (GEN_VERSION["4"], r.get("distinct")))
    c.fig("consume ms", r.get("ms"))
    if rc != 0:
        c.note(tail(out))
