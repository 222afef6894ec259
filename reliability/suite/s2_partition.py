"""Scenario 2: silent broker death. A real 5.5.0 broker and 20 simulated brokers live in a
network namespace joined to the host by a veth pair; a second real broker runs on the host.
Both nameservers (ours and Java, side by side, one cut for both) know them all. The link is cut
(both ends down: no FIN, no RST reaches anyone) and the brokers in the namespace are killed
(power loss). Measured: how long each nameserver keeps routing to the dead brokers, and a
running producer's failed sends meanwhile.
"""

import threading
import time

from harness.fixture import broker_addrs, cluster_info, route, route_queues

from .base import JAVA, OURS, fmt_s, say
from .netns import Netns, established_to
from .world import NameServer, errors_of, fleet, parse_sends, shape_args

TITLE = "Silent broker death (namespace link cut, no FIN): time until routes drop, failed sends"
TOPIC = "RelPartition"
DEAD, ALIVE = "broker-part", "broker-alive"
SHAPE = shape_args(1, 20, 50)
# Java and ours drop a silent broker after its 120 s liveness timeout (brokerChannelExpiredTime)
# plus a scan period (5 s), counted from its last registration (at most 30 s before the cut).
DROP_WITHIN_S = 130
OBSERVE_S = 170


def run(w, c, servers, ci=False):
    net = Netns("p").up()
    nss = {}
    for kind in servers:
        col = OURS if kind == "ours" else JAVA
        nss[col] = NameServer(w, "s2-" + kind, kind)
        nss[col].start()
    for ns in nss.values():
        ns.wait_ready()
    # The namespace reaches the nameservers through the host end of the link.
    dead = w.broker("s2-dead", "RelPartCluster", DEAD, ["%s:%d" % (net.host_ip, ns.port) for ns in nss.values()],
                    netns=net.name, ip=net.ns_ip)
    alive = w.broker("s2-alive", "RelPartCluster", ALIVE, [ns.addr for ns in nss.values()])
    first = next(iter(nss.values()))
    w.create_topic(TOPIC, dead, first.addr)
    w.create_topic(TOPIC, alive, first.addr)
    fleets = {col: fleet(w, "s2-fleet-" + ns.key, "%s:%d" % (net.host_ip, ns.port), SHAPE, netns=net.name)
              for col, ns in nss.items()}
    for col, fl in fleets.items():
        pop = fl.wait_for(lambda e: e.get("event") == "populated", 120)
        c.require(pop and errors_of(pop["regs"]) == 0, "%s: 20 simulated brokers registered from the namespace" % col)
    for col, ns in nss.items():
        ok = wait(lambda: {DEAD, ALIVE} <= set(route_queues(route(ns.addr, TOPIC))), 60)
        c.require(ok, "%s: the route of %s lists %s (in the namespace) and %s" % (col, TOPIC, DEAD, ALIVE))
    producers = {col: w.producer("produce-loop", ns.addr, TOPIC, 10 * 60 * 1000, intervalMs=100, timeoutMs=3000)
                 for col, ns in nss.items()}
    time.sleep(8)  # the producers start and send to both brokers
    for col, p in producers.items():
        sends = parse_sends(p.log_text())
        c.require(any(s["ok"] for s in sends), "%s: the producer sends before the cut" % col)

    t_cut = time.time()
    net.cut()
    # Power loss: the processes in the namespace die; nothing they would send gets out.
    w.procs.kill(dead.proc)
    for fl in fleets.values():
        w.procs.kill_popen(fl.popen)
    say("  link cut, processes in the namespace killed; watching the nameservers for %d s at most" % OBSERVE_S)
    est = {col: established_to(net.ns_ip, ns.port) for col, ns in nss.items()}

    gone = {}
    threads = [threading.Thread(target=watch, args=(ns, col, t_cut, gone), daemon=True) for col, ns in nss.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(OBSERVE_S + 30)
    t_end = time.time()
    for col, ns in nss.items():
        g = gone.get(col, {})
        sends = [s for s in parse_sends(producers[col].log_text()) if s["t"] >= t_cut * 1000]
        failed = [s for s in sends if not s["ok"]]
        gaps = [b["t"] - a["t"] for a, b in zip([s for s in sends if s["ok"]], [s for s in sends if s["ok"]][1:])]
        c.fig("nameserver connections from the dead brokers still ESTABLISHED after the cut", col, est[col])
        c.fig("dead broker dropped from the topic route after", col, fmt_s(g.get("route")))
        c.fig("dead broker dropped from cluster info after", col, fmt_s(g.get("cluster")))
        c.fig("all 20 dead simulated brokers dropped after", col, fmt_s(g.get("fleet")))
        c.fig("live broker kept in the route throughout", col, "yes" if not g.get("alive_lost") else "NO")
        c.fig("producer: failed sends after the cut (of all)", col, "%d of %d" % (len(failed), len(sends)))
        c.fig("producer: longest gap between good sends", col, fmt_s(max(gaps) / 1000.0 if gaps else None))
        if col == JAVA:
            continue
        c.check(est[col] > 0, "%s: the cut was silent (%d connections from the dead brokers still established)"
                % (col, est[col]))
        for what, label in (("route", "the topic route"), ("cluster", "cluster info"), ("fleet", "cluster info (20 simulated brokers)")):
            v = g.get(what)
            c.check(v is not None and v <= DROP_WITHIN_S,
                    "%s: the dead brokers are gone from %s within %d s of the cut (%s)" % (col, label, DROP_WITHIN_S, fmt_s(v)))
        c.check(not g.get("alive_lost"), "%s: the live broker stayed in the route" % col)
        c.check(ns.alive() and not g.get("errors"), "%s: kept running and answering throughout (%s)"
                % (col, (g.get("errors") or ["no errors"])[0]))
        last = [s for s in sends if s["t"] >= (t_end - 10) * 1000]
        c.check(last and all(s["ok"] for s in last),
                "%s: once the dead broker is dropped, every send succeeds (last 10 s: %d of %d ok)"
                % (col, sum(s["ok"] for s in last), len(last)))
    for p in producers.values():
        w.procs.kill(p)


def wait(pred, timeout):
    end = time.time() + timeout
    while time.time() < end:
        try:
            if pred():
                return True
        except Exception:  # noqa: BLE001 - not yet
            pass
        time.sleep(0.5)
    return False


def watch(ns, col, t_cut, gone):
    """Polls one nameserver every 250 ms until the dead brokers are gone (or OBSERVE_S)."""
    g = gone.setdefault(col, {})
    end = t_cut + OBSERVE_S
    while time.time() < end and len(g.keys() & {"route", "cluster", "fleet"}) < 3:
        now = time.time() - t_cut
        try:
            q = route_queues(route(ns.addr, TOPIC))
            if q:
                if DEAD not in q:
                    g.setdefault("route", now)
                if ALIVE not in q:
                    g["alive_lost"] = True
            ci = cluster_info(ns.addr)
            if ci is not None:
                if not broker_addrs(ci, DEAD):
                    g.setdefault("cluster", now)
                names = set((ci.get("brokerAddrTable") or {}).keys())
                if not any(n.startswith("broker-c0-") for n in names):
                    g.setdefault("fleet", now)
        except Exception as e:  # noqa: BLE001 - the nameserver must keep answering; record it
            g.setdefault("errors", []).append(repr(e))
        time.sleep(0.25)
