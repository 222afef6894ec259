"""Scenario 1: broker registration."""

import time

from ..fixture import CLUSTER, broker_addrs, cluster_info, route_brokers, route_queues
from ..output import parse_cluster_list, parse_json_output, tail
from ..procs import wait_until

TITLE = "Broker registration (2 masters + 1 slave, clusterList, topicRoute)"


def s1_registration(env, c):
    env.ensure("a", "a_s", "b")
    a, a_s, b = env.brokers["a"], env.brokers["a_s"], env.brokers["b"]
    expect = {("broker-a", "0"): a.addr, ("broker-a", "1"): a_s.addr, ("broker-b", "0"): b.addr}

    def all_present():
        ci = cluster_info(env.sut1)
        if not ci:
            return None
        ok = all(broker_addrs(ci, n, int(i)) == [addr] for (n, i), addr in expect.items())
        ok = ok and set(ci.get("clusterAddrTable", {}).get(CLUSTER, [])) >= {"broker-a", "broker-b"}
        return ci if ok else None
    t0 = time.time()
    ci = wait_until(all_present, 30, 0.3)
    c.check(ci, "SUT cluster info lists broker-a{0:%s, 1:%s}, broker-b{0:%s} in %s" % (
        a.addr, a_s.addr, b.addr, CLUSTER))
    c.fig("cluster info complete after (s)", "%.1f" % (time.time() - t0))

    rc, out = env.mqadmin(["clusterList"])
    rows = parse_cluster_list(out)
    c.fig("mqadmin clusterList rows", len(rows))
    for (n, i), addr in sorted(expect.items()):
        c.check((CLUSTER, n, i, addr) in rows, "mqadmin clusterList shows %s %s BID=%s %s" % (CLUSTER, n, i, addr))
    if not rows:
        c.note("clusterList output:\n" + tail(out))

    rc, out = env.mqadmin(["topicRoute", "-t", CLUSTER])
    rt = parse_json_output(out)
    c.check(rt is not None and rc == 0, "mqadmin topicRoute -t %s printed a route" % CLUSTER)
    if rt is not None:
        got = route_brokers(rt)
        want = {"broker-a": {"0": a.addr, "1": a_s.addr}, "broker-b": {"0": b.addr}}
        c.check(got == want, "topicRoute brokerDatas = %s (got %s)" % (want, got))
        c.check(set(route_queues(rt)) == {"broker-a", "broker-b"},
                "topicRoute queueDatas for broker-a and broker-b (got %s)" % sorted(route_queues(rt)))
        clusters = {bd.get("cluster") for bd in rt.get("brokerDatas", [])}
        c.check(clusters == {CLUSTER}, "topicRoute brokerDatas carry cluster %s" % CLUSTER)
    else:
        c.note(tail(out))
