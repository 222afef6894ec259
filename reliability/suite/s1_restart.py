"""Scenario 1: nameserver restart under load, graceful and `kill -9`.

Per server: 200 simulated brokers (10 clusters x 20, 100 topics each, re-registering every 30 s
like Java brokers), a real 5.5.0 broker (registerNameServerPeriod 30 s) serving the producers'
topic, paced route readers plus a new-connection probe and a route sweeper (nsfault read), a
running Java producer, and "fresh" Java producers (a new client per send, as an application
starting up: no cached route). The nameserver is restarted on its port; counted until every
route is back: TOPIC_NOT_EXIST answers, reads that failed while it was down, failed sends.
"""

import time

from harness.fixture import route, route_queues

from .base import JAVA, OURS, OURS_NOSNAP, OURS_SNAP, Fail, fmt_ms, fmt_s, say
from .world import TOPIC_NOT_EXIST, NameServer, errors_of, first_sweep_text, fleet, parse_sends, readers, shape_args

TITLE = "Restart under load: TOPIC_NOT_EXIST, failed sends, time to full routes (graceful, kill -9)"
TOPIC = "RelRestart"
BROKER = "broker-rel"
SHAPE = shape_args(10, 20, 100)
N_TOPICS = 10 * 100
# Brokers re-register every 30 s: a route must be back within one period (plus slack).
BACK_WITHIN_S = 40
WINDOW_S = 45
MIN_WINDOW_S = 15


def configs(w, servers, ci):
    out = []
    if "ours" in servers:
        if w.has("routeSnapshotEnable"):
            out.append((OURS_SNAP, "ours", {"routeSnapshotEnable": "true"}))
            if not ci:
                out.append((OURS_NOSNAP, "ours", {"routeSnapshotEnable": "false"}))
        else:
            out.append((OURS, "ours", {}))
    if "java" in servers and not ci:
        out.append((JAVA, "java", {}))
    return out


def run(w, c, servers, ci=False):
    cfgs = configs(w, servers, ci)
    if not w.has("routeSnapshotEnable"):
        c.note("this build has no routeSnapshotEnable key: ours restarts without a route snapshot")
    nss = {col: NameServer(w, "s1-%d" % i, kind, props) for i, (col, kind, props) in enumerate(cfgs)}
    for ns in nss.values():
        ns.start()
    for ns in nss.values():
        ns.wait_ready()
    broker = w.broker("s1", "RelCluster", BROKER, [ns.addr for ns in nss.values()],
                      overrides={"registerNameServerPeriod": 30000})
    first = next(iter(nss.values()))
    w.create_topic(TOPIC, broker, first.addr)
    for col, ns in nss.items():
        say("  -- %s: %s" % (col, ns.label()))
        try:
            one_server(w, c, col, ns)
        finally:
            ns.kill9()


def one_server(w, c, col, ns):
    fl = fleet(w, "s1-fleet-" + ns.key, ns.addr, SHAPE)
    rd = readers(w, "s1-read-" + ns.key, ns.addr, SHAPE, rate=500, fresh_rate=5, sweep_sample=N_TOPICS)
    agents = [fl, rd]
    long_ms = 10 * 60 * 1000
    running = w.producer("produce-loop", ns.addr, TOPIC, long_ms, intervalMs=100, timeoutMs=3000)
    fresh = w.producer("produce-fresh", ns.addr, TOPIC, long_ms, intervalMs=500, timeoutMs=3000)
    try:
        pop = fl.wait_for(lambda e: e.get("event") == "populated", 120)
        c.require(pop and errors_of(pop["regs"]) == 0, "%s: 200 simulated brokers registered" % col)
        for mode in ("graceful", "kill -9"):
            trial(w, c, col, ns, mode, rd, running, fresh)
    finally:
        for a in agents:
            a.stop()
        for p in (running, fresh):
            w.procs.kill(p)


def steady(ns, rd, since):
    """True when a sweep started after `since` found every route complete and the producers'
    topic has the real broker's queues."""
    sw = rd.select("sweep", since, key="t0")
    if not sw or sw[-1]["complete"] != sw[-1]["checked"]:
        return False
    return BROKER in route_queues(route(ns.addr, TOPIC))


def trial(w, c, col, ns, mode, rd, running, fresh):
    deadline = time.time() + 60
    while not steady(ns, rd, time.time() * 1000 - 3000) and time.time() < deadline:
        time.sleep(0.5)
    c.require(steady(ns, rd, time.time() * 1000 - 5000),
              "%s: every route complete before the %s restart" % (col, mode))
    # Producers must be sending before the fault.
    t_wait = time.time() + 30
    while time.time() < t_wait and not any(s["ok"] for s in parse_sends(fresh.log_text())):
        time.sleep(0.5)
    rd.send("phase restart-" + mode)
    t_fault = time.time()
    if mode == "graceful":
        ns.stop()
    else:
        ns.kill9()
    ns.start()
    t_up = ns.wait_ready(120)
    up_ms = t_up * 1000
    # Observe until every route is back (plus 3 s), at least MIN_WINDOW_S (so that new producers
    # start in it), at most WINDOW_S.
    back = None
    end = t_up + WINDOW_S
    while time.time() < end:
        done = [s for s in rd.select("sweep", up_ms, key="t0") if s["complete"] == s["checked"]]
        if done and back is None and BROKER in route_queues(route(ns.addr, TOPIC)):
            back = done[0]
            end = min(end, max(time.time() + 3, t_up + MIN_WINDOW_S))
        time.sleep(0.25)
    rd.send("phase after-" + mode)
    ph = rd.wait_for(lambda e: e.get("event") == "phase" and e.get("name") == "restart-" + mode, 10)
    if ph is None:
        raise Fail("the readers did not report the restart phase")
    t_end = time.time()
    sweeps = rd.select("sweep", up_ms, key="t0")
    first_sweep = sweeps[0] if sweeps else None
    tne = errors_of(ph["steady"], TOPIC_NOT_EXIST) + errors_of(ph["fresh"], TOPIC_NOT_EXIST)
    tne_sweep = sum(s["not_exist"] for s in sweeps if s["t0"] <= t_end * 1000)
    down_fail = errors_of(ph["steady"]) + errors_of(ph["fresh"]) - tne
    f_sends = [s for s in parse_sends(fresh.log_text()) if t_up * 1000 <= s["t"] <= t_end * 1000]
    f_failed = [s for s in f_sends if not s["ok"]]
    r_sends = [s for s in parse_sends(running.log_text()) if t_fault * 1000 <= s["t"] <= t_end * 1000]
    r_failed = [s for s in r_sends if not s["ok"]]
    back_s = None if back is None else max(0.0, back["t1"] / 1000.0 - t_up)

    m = mode
    c.fig("%s: stop to serving again" % m, col, fmt_ms((t_up - t_fault) * 1000))
    c.fig("%s: TOPIC_NOT_EXIST answers after restart (readers, probe, sweeper)" % m, col,
          "%d (%d of %d reads)" % (tne + tne_sweep, tne, ph["steady"]["ok"] + ph["fresh"]["ok"] + errors_of(ph["steady"]) + errors_of(ph["fresh"])))
    c.fig("%s: reads failed while down (not answered)" % m, col, down_fail)
    c.fig("%s: failed sends of new producers after restart" % m, col, "%d of %d" % (len(f_failed), len(f_sends)))
    c.fig("%s: failed sends of the running producer" % m, col, "%d of %d" % (len(r_failed), len(r_sends)))
    c.fig("%s: every route back (after serving)" % m, col,
          fmt_s(back_s) if back_s is not None else "not within %d s" % WINDOW_S)
    c.fig("%s: routes complete in the first sweep after start" % m, col, first_sweep_text(first_sweep, t_up))
    if f_failed:
        c.note("%s %s: first failed new-producer send: %s" % (col, m, f_failed[0]["detail"][:160]))

    if col == JAVA:
        return
    c.check(back_s is not None and back_s <= BACK_WITHIN_S,
            "%s %s: every route back within %d s of serving (%s)" % (col, m, BACK_WITHIN_S, fmt_s(back_s)))
    c.check(not r_failed, "%s %s: the running producer never failed a send (%d of %d failed)"
            % (col, m, len(r_failed), len(r_sends)))
    if col == OURS_SNAP:
        c.check(tne + tne_sweep == 0, "%s %s: zero TOPIC_NOT_EXIST after the restart (got %d)" % (col, m, tne + tne_sweep))
        c.check(first_sweep is not None and first_sweep["complete"] == first_sweep["checked"]
                and first_sweep["t0"] / 1000.0 - t_up <= 2,
                "%s %s: every route complete in the first sweep after start (%s)" % (col, m, first_sweep_text(first_sweep, t_up)))
        c.check(f_sends and not f_failed, "%s %s: new producers sent without a failure after the restart (%d of %d failed)"
                % (col, m, len(f_failed), len(f_sends)))
    elif col == OURS:
        c.pending("%s %s: zero TOPIC_NOT_EXIST and no failed new-producer send after restart "
                  "(needs the route snapshot: routeSnapshotEnable; now %d TOPIC_NOT_EXIST, %d failed sends)"
                  % (col, m, tne + tne_sweep, len(f_failed)))
