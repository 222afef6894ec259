"""Scenario 4: failure of a master while producing."""

import time

from ..checks import Fail
from ..fixture import broker_addrs, cluster_info, route, route_brokers
from ..procs import wait_until
from ..producer import loop_sends
from ..topics import create_topic

TITLE = "Failure: kill -9 broker-a master while producing"


def s4_failover(env, c):
    env.ensure("a", "a_s", "b")
    topic = "InteropFailover"
    create_topic(env, c, topic)
    a = env.brokers["a"]
    proc = env.jclient_start("5", "produce-loop", ns=env.sut1, topic=topic, durationMs=120000,
                             intervalMs=20, timeoutMs=1000, pollMs=1000)

    def sends():
        return loop_sends(proc)
    warm = wait_until(lambda: {s[3] for s in sends() if s[2]} >= {"broker-a", "broker-b"}, 40, 0.2)
    if not c.check(warm, "producer is sending to both broker-a and broker-b before the kill"):
        env.procs.kill(proc)
        c.note(proc.log_tail())
        raise Fail("producer did not warm up")
    time.sleep(1.0)
    t_kill = int(time.time() * 1000)
    env.procs.kill(a.proc)
    c.note("kill -9 broker-a master (pid %d) at t=%d" % (a.proc.pid, t_kill))

    def dropped():
        rt = route(env.sut1, topic)
        if rt is None:
            return None
        b = route_brokers(rt)
        return rt if "0" not in b.get("broker-a", {}) and "0" in b.get("broker-b", {}) else None
    rt = wait_until(dropped, 30, 0.05)
    drop_ms = int(time.time() * 1000) - t_kill
    c.check(rt is not None, "SUT dropped broker-a's master from the route (broker-b still there)")
    c.fig("route drop after kill (ms)", drop_ms if rt else "not within 30000")
    c.check(rt is not None and drop_ms <= 5000, "route drop within 5000 ms (%d ms)" % drop_ms)
    if rt is not None:
        c.fig("broker-a in route after kill", route_brokers(rt).get("broker-a"))
    ci = cluster_info(env.sut1)
    c.check(broker_addrs(ci, "broker-a", 0) == [], "SUT cluster info no longer lists broker-a id 0")
    time.sleep(6.0)
    env.procs.kill(proc)
    s = sends()
    after = [x for x in s if x[0] >= t_kill]
    ok_after = [x for x in after if x[2]]
    failed_after = [x for x in after if not x[2]]
    oks = [x[0] + x[1] for x in s if x[2]]
    window = [t for t in oks if t >= t_kill - 2000]
    gap = max((b - a_ for a_, b in zip(window, window[1:])), default=None)
    c.fig("sends total / after kill", "%d / %d" % (len(s), len(after)))
    c.fig("failed sends after kill", len(failed_after))
    c.fig("max gap between successful sends around the kill (ms)", gap)
    c.fig("successful sends after kill per broker", {b: sum(1 for x in ok_after if x[3] == b)
                                                       for b in sorted({x[3] for x in ok_after})})
    c.check(any(x[3] == "broker-b" for x in ok_after), "sends keep succeeding on broker-b after the kill")
    last = [x for x in s if x[0] >= s[-1][0] - 2000] if s else []
    c.check(last and all(x[2] and x[3] == "broker-b" for x in last),
            "every send of the last 2 s succeeded on broker-b (%d sends)" % len(last))
    c.check(gap is not None and gap <= 5000, "gap between successful sends <= 5000 ms (%s ms)" % gap)
