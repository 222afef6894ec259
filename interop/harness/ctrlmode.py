"""Scenarios 13-15: brokers in controller mode (RocketMQ 5's automatic master election).

The same scenario runs against three controller groups (see ctrlgroup.py): Apache's own
ControllerStartup (13, the reference), our standalone mqcontroller (14) and our nameservers with
the controller embedded (15). Each records the same figures under the same names in `RESULTS`;
`report()` prints them side by side at the end of the run and writes
`controller-failover.md` into the run directory.

The scenario, with a producer sending throughout (sync, 3 s timeout, route refresh every 1 s):
  1. three controllers elect a leader; three brokers register; one is elected master and is
     broker id 0 in the nameserver's route, the other two are slaves; the sync-state set fills up;
  2. Java mqadmin getControllerMetaData / getSyncStateSet against a follower controller; Java's
     and our mqadmin getBrokerEpoch list the same epochs for every broker of the group;
  3. the producer's first 1,000 acknowledged messages are all received by a push consumer;
  4. kill -9 of the master broker: a member of its sync-state set becomes master, the route shows
     it as id 0, the producer continues; the killed broker is restarted and comes back as a slave;
  5. kill -9 of the controller leader: a new leader, the brokers keep working (sends succeed,
     same master);
  6. kill -9 of the (second) master broker: handled by the new controller leader;
  7. mqadmin again against the surviving controllers; the producer stops and a consumer of a
     new group receives every message that was acknowledged in the whole run.

With our controllers (14, and 15 with our nameservers) the faults are also watched through the
controllers' metrics (issue 22): every node's /metrics before and after each fault, the
leader's polled every 50 ms around a master's kill; checks that the election is counted with
its trigger, the group's master alive again with a higher epoch, one new leader with a higher
term after the leader's kill; the tables go to `controller-metrics-<kind>.md` in the run
directory.

With our controllers and our nameservers (14, 15) access control is on everywhere (issue 21):
every controller node and nameserver reads one accounts file (authenticationMode=writes), the
Java brokers sign their calls to both with innerClientAuthenticationCredentials of a broker
account that owns broker-c only, and our controller nodes sign their Raft RPCs with
controllerPeerCredentials — the whole scenario (registration, elections, failover) runs so.
After start: an unsigned electMaster and cleanBrokerMetadata from Java's mqadmin, the same as
raw requests, and a broker account of another group asking for broker-c's election are refused
(NO_PERMISSION) with the master unchanged; a forged Raft vote is refused; mqadmin with the admin
account in tools.yml reads the sync-state set.
"""

import os
import re
import threading
import time

from .checks import Fail
from . import remoting as rm
from .ctrlgroup import CTRL_ADMIN, CTRL_BROKER, CTRL_CLUSTER, CTRL_OTHER_BROKER, CtrlWorld, scrape, topic_configs
from .fixture import GEN_VERSION, mqadmin_with_tools_yml
from .output import parse_result, tail
from .procs import wait_until
from .topics import RUN_TAG, create_topic

# kind -> {figure: value}, filled by the scenarios of this run, read by report().
RESULTS = {}
TITLES = {
    "java": "Apache ControllerStartup x3 (DLedger)",
    "rust": "our mqcontroller x3",
    "embedded": "nameservers under test x3, enableControllerInNamesrv",
}


def sends_of(proc):
    """(start_ms, end_ms, ok, broker_or_error, body) of every SEND line of a produce-loop client."""
    out = []
    for ln in proc.log_text().splitlines():
        p = ln.split()
        if len(p) >= 5 and p[0] == "SEND":
            start, lat = int(p[1]), int(p[2])
            ok = p[3] == "OK"
            out.append((start, start + lat, ok, p[4], p[5] if ok and len(p) > 5 else None))
    return out


def acked_since(proc, t_ms, broker=None):
    return [s for s in sends_of(proc) if s[2] and s[0] >= t_ms and (broker is None or s[3] == broker)]


def gap_around(proc, t_ms, until_ms):
    """Longest time (ms) without an acknowledged send, between the last ack before t_ms and
    the first after it, looking at acks up to until_ms; and the failed sends started in between."""
    s = sends_of(proc)
    ends = sorted(x[1] for x in s if x[2] and x[1] <= until_ms)
    before = [e for e in ends if e <= t_ms]
    after = [e for e in ends if e > t_ms]
    window = ([before[-1]] if before else []) + after
    gap = max((b - a for a, b in zip(window, window[1:])), default=None)
    failed = sum(1 for x in s if not x[2] and t_ms <= x[0] <= until_ms)
    return gap, failed


EPOCH_LINE = re.compile(r"#Epoch: EpochEntry\{epoch=(-?\d+), startOffset=(-?\d+), endOffset=(-?\d+)\}")


def epochs_by_addr(out):
    """{brokerAddr: [(epoch, startOffset, endOffset)]} from mqadmin getBrokerEpoch's text."""
    res, addr = {}, None
    for ln in out.splitlines():
        if ln.startswith("#brokerAddr\t"):
            addr = ln.split("\t", 1)[1].strip()
            res[addr] = []
        elif addr is not None and EPOCH_LINE.match(ln):
            res[addr].append(tuple(int(x) for x in EPOCH_LINE.match(ln).groups()))
    return res


def settled_epochs(by_addr):
    """The epochs without the current one's end (the broker's max offset, which moves while the
    producer sends)."""
    return {a: [(e, s) for e, s, _ in es] + [end for _, _, end in es[:-1]] for a, es in by_addr.items()}


def now_ms():
    return int(time.time() * 1000)


class Run:
    """One run of the scenario against one kind of controller group."""

    def __init__(self, env, c, kind):
        self.env = env
        self.c = c
        self.kind = kind
        self.fig = {}
        self.w = CtrlWorld(env, kind, secured=kind != "java" and env.impl == "rust")
        self.topic = "InteropCtrl%s" % kind.capitalize()
        self.prefix = "%s-ctl-%s" % (RUN_TAG, kind)
        self.producer = None
        self.first_consumer = None
        self.stop_file = os.path.join(env.rundir, "ctl-%s-producer.stop" % kind)
        # (phase, {node id: metrics summary}) and (title, timeline) for controller-metrics-<kind>.md.
        self.metric_rows = []
        self.timelines = []

    # ---- the controllers' metrics (ours only) ----

    def metrics_on(self):
        return any(n.http_addr() for n in self.w.nodes)

    def snapshot(self, phase):
        """Every live node's metrics summary now, kept for the report; {} without metrics."""
        if not self.metrics_on():
            return {}
        rows = {n.id: n.summary() for n in self.w.nodes if n.alive()}
        self.metric_rows.append((phase, rows))
        return rows

    def watch(self, nodes, seconds):
        """Polls `nodes`' metrics every 50 ms for `seconds`, in a thread; returns the thread and
        the list it fills with (ms since start, node id, summary)."""
        out = []

        def run():
            t0 = now_ms()
            while now_ms() - t0 < seconds * 1000:
                for n in nodes:
                    if n.alive():
                        out.append((now_ms() - t0, n.id, n.summary()))
                time.sleep(0.05)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t, out

    def write_metrics(self):
        if not self.metric_rows:
            return
        cols = ["role", "term", "commit", "leader_changes", "elected_master_lost", "elected_heartbeat_timeout",
                "elected_admin", "has_master", "sync_state_set", "master_epoch", "live_brokers", "ready"]
        fmt = lambda v: "-" if v is None else ("%d" % v if isinstance(v, float) and v == int(v) else str(v))
        lines = ["# Controller metrics through the faults (%s)" % TITLES[self.kind], "",
                 "Each node's `/metrics` (`rocketmq_controller_*`; the group columns are `%s`'s)." % CTRL_BROKER, ""]
        for phase, rows in self.metric_rows:
            lines += ["## " + phase, "", "| node | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 1)]
            for node, summary in sorted(rows.items()):
                lines.append("| %s | %s |" % (node, " | ".join(fmt((summary or {}).get(c)) for c in cols)))
            lines.append("")
        for title, timeline in self.timelines:
            lines += ["## " + title, "", "| ms after the kill | node | " + " | ".join(cols) + " |",
                      "|" + "---|" * (len(cols) + 2)]
            for t, node, summary in timeline:
                lines.append("| %d | %s | %s |" % (t, node, " | ".join(fmt((summary or {}).get(c)) for c in cols)))
            lines.append("")
        path = os.path.join(self.env.rundir, "controller-metrics-%s.md" % self.kind)
        with open(path, "w") as f:
            f.write("\n".join(lines))
        self.c.note("controller metrics through the faults: %s" % path)

    def record(self, key, value):
        self.fig[key] = value
        self.c.fig(key, value)

    def ns(self):
        live = self.w.live_ns()
        if not live:
            raise Fail("no nameserver left")
        return live[0].addr

    # ---- steps ----

    def start(self):
        c, w = self.c, self.w
        t0 = time.time()
        w.start_servers(c.note)
        ld = w.wait_leader(60)
        c.require(ld, "the three %s controllers agree on a leader" % self.kind)
        self.record("controllers started -> leader agreed (s)", "%.1f" % (time.time() - t0))
        c.note("controller leader %s (%s)" % (ld[0].id, ld[0].addr))
        t1 = time.time()
        w.start_brokers(c.note)
        addrs = {b.addr for b in w.brokers}

        def elected():
            m = w.route_members(CTRL_CLUSTER)
            if not m or "0" not in m or set(m.values()) != addrs or len(m) != 3:
                return None
            mc = w.master_in_controller()
            return (m, mc) if mc and mc[1] == m["0"] else None
        got = wait_until(elected, 120, 0.3)
        c.require(got, "one master elected: broker id 0 in the route is the controller's master, "
                       "the other two brokers are slaves (%s)" % (got[0] if got else w.route_members(CTRL_CLUSTER)))
        m, mc = got
        self.record("brokers started -> master in route (s)", "%.1f" % (time.time() - t1))
        c.check(mc[0] is not None and mc[0] >= 1 and mc[2] >= 1,
                "controller: master broker id %s (assigned by the controller), master epoch %s" % (mc[0], mc[2]))
        slaves = {k: v for k, v in m.items() if k != "0"}

        def ids_match():
            reps = w.replicas() or {}
            id_addr = {str(r.get("brokerId")): r.get("brokerAddress")
                       for r in (reps.get("inSyncReplicas") or []) + (reps.get("notInSyncReplicas") or [])}
            ok = (len(id_addr) == 3 and id_addr.get(str(mc[0])) == m["0"]
                  and all(id_addr.get(k) == v for k, v in slaves.items()))
            return ok, id_addr
        # The controller may list a slave a moment after the route does.
        ok, id_addr = wait_until(lambda: (lambda r: r if r[0] else None)(ids_match()), 15, 0.3) or ids_match()
        c.check(ok,
                "the route's slave ids %s are the controller's broker ids of those brokers (controller: %s)" % (
                    sorted(slaves), id_addr))
        full = wait_until(lambda: (lambda x: x if x and len(x[3]) == 3 else None)(w.master_in_controller()), 120, 0.5)
        c.require(full, "the sync-state set fills up with all three brokers (%s)" % (
            full[3] if full else w.master_in_controller()))
        self.record("brokers started -> sync-state set of 3 (s)", "%.1f" % (time.time() - t1))

    def admin(self, phase):
        """Java mqadmin getControllerMetaData / getSyncStateSet against a follower controller. The
        controllers' and the route's view may move while a JVM starts (a slave joins the sync-state
        set, a new leader catches up), so each comparison is made again, up to three times, before
        it counts as a failure."""
        c, w, env = self.c, self.w, self.env
        ld = w.wait_leader(30)
        c.require(ld, "controllers agree on a leader (%s)" % phase)
        ver = GEN_VERSION["c"]

        def metadata_once():
            ld = w.wait_leader(10)
            if ld is None:
                return False, None, "no leader agreed", ""
            leader = ld[0]
            follower = next(n for n in w.nodes if n.alive() and n is not leader)
            rc, out = env.mqadmin(["getControllerMetaData", "-a", follower.addr], ns=self.ns(), gen="c")
            lines = dict(ln.split("\t", 1) for ln in out.splitlines() if ln.startswith("#") and "\t" in ln
                         and not ln.startswith("#Peer"))
            peers = [ln.split("\t", 1)[1].strip() for ln in out.splitlines() if ln.startswith("#Peer:")]
            ok = (rc == 0 and lines.get("#ControllerGroup", "").strip() == w.group
                  and lines.get("#ControllerLeaderAddress", "").strip() == leader.addr
                  and lines.get("#ControllerLeaderId", "").strip() == leader.id
                  and len(peers) == 3 and all(n.addr in " ".join(peers) for n in w.nodes))
            return ok, follower, "follower %s> shows group %s, leader %s %s, 3 peers" % (
                follower.id, w.group, leader.id, leader.addr), out

        ok, follower, what, out = self.settled(metadata_once)
        c.check(ok, "%s: Java %s mqadmin getControllerMetaData -a <%s" % (phase, ver, what))
        if not ok:
            c.note(tail(out))

        def sync_state_once():
            mc = w.master_in_controller()
            rt = w.route_members(self.topic) or w.route_members(CTRL_CLUSTER) or {}
            rc, out = env.mqadmin(["getSyncStateSet", "-a", follower.addr, "-b", CTRL_BROKER], ns=self.ns(),
                                  gen="c")
            lines = dict(ln.split("\t", 1) for ln in out.splitlines() if ln.startswith("#") and "\t" in ln)
            in_sync = [ln for ln in out.splitlines() if ln.startswith("InSyncReplica:")]
            ok = (rc == 0 and mc is not None and lines.get("#brokerName", "").strip() == CTRL_BROKER
                  and lines.get("#MasterAddr", "").strip() == rt.get("0")
                  and lines.get("#MasterBrokerId", "").strip() == str(mc[0])
                  and lines.get("#SyncStateSetNums", "").strip() == str(len(mc[3])) == str(len(in_sync)))
            return ok, None, "shows master id %s at %s (the route's id 0) and %d in-sync replicas" % (
                mc and mc[0], rt.get("0"), len(mc[3]) if mc else -1), out

        if follower is not None:
            ok, _, what, out = self.settled(sync_state_once)
            c.check(ok, "%s: Java %s mqadmin getSyncStateSet -a <follower> -b %s %s" % (phase, ver, CTRL_BROKER, what))
            if not ok:
                c.note(tail(out))
        if phase == "after start":
            self.broker_epochs()

    def settled(self, once, attempts=3):
        """`once()` -> (ok, ...): its first result that is ok, or its last; a second apart."""
        for i in range(attempts):
            result = once()
            if result[0] or i == attempts - 1:
                return result
            self.c.note("not yet as expected; asking again in 1 s")
            time.sleep(1)
        return result

    def access_control(self):
        """With access control on: what only an operator or the group's own broker may do is
        refused to anyone else, and nothing changes; the operator's mqadmin reads work."""
        c, w, env = self.c, self.w, self.env
        ld = w.wait_leader(30)
        c.require(ld, "controllers agree on a leader (access control)")
        leader = ld[0]
        before = w.master_in_controller()
        c.check(before is not None and before[0] is not None,
                "broker-c has a master elected through signed broker requests: %s" % (before,))
        elect = {"clusterName": CTRL_CLUSTER, "brokerName": CTRL_BROKER, "brokerId": str(before[0] if before else 1),
                 "designateElect": "true", "invokeTime": "1"}
        clean = {"clusterName": CTRL_CLUSTER, "brokerName": CTRL_BROKER, "brokerControllerIdsToClean": "1",
                 "isCleanLivingBroker": "true", "invokeTime": "1"}
        own = dict(elect, designateElect="false")
        refused = []
        for what, code, ext, cred in [
                ("unsigned electMaster", rm.CONTROLLER_ELECT_MASTER, elect, None),
                ("unsigned cleanBrokerMetadata", rm.CLEAN_BROKER_DATA, clean, None),
                ("electMaster of broker-c by another group's broker account", rm.CONTROLLER_ELECT_MASTER, own,
                 CTRL_OTHER_BROKER),
                ("an operator's electMaster by a broker account", rm.CONTROLLER_ELECT_MASTER, elect, CTRL_OTHER_BROKER)]:
            r = rm.call(leader.addr, code, ext, credentials=cred)
            refused.append((what, r.code, r.remark))
        forged = rm.call(leader.addr, 60102, {"group": w.group},
                         body=b'{"vote":{"leader_id":{"term":999999,"node_id":9},"committed":false},"last_log_id":null}')
        refused.append(("forged Raft vote", forged.code, forged.remark))
        c.check(all(code == 16 for _, code, _ in refused),
                "refused with NO_PERMISSION: %s" % "; ".join("%s -> %s" % (w_, code) for w_, code, _ in refused))
        master_id = str(before[0] if before else 1)
        for args in (["electMaster", "-a", leader.addr, "-b", master_id, "-bn", CTRL_BROKER, "-c", CTRL_CLUSTER],
                     ["cleanBrokerMetadata", "-a", leader.addr, "-b", master_id, "-bn", CTRL_BROKER,
                      "-c", CTRL_CLUSTER, "-l"]):
            rc, out = env.mqadmin(args, ns=self.ns(), gen="c")
            denied = "access denied" in out
            c.check(denied, "Java %s mqadmin %s without credentials refused (access denied)" % (
                GEN_VERSION["c"], args[0]))
            if not denied:
                c.note(tail(out))
        after = w.master_in_controller()
        c.check(after is not None and before is not None and after[:3] == before[:3],
                "broker-c's master and epoch unchanged by the refused requests: %s -> %s" % (before, after))
        rc, out = mqadmin_with_tools_yml(env, ["getSyncStateSet", "-a", leader.addr, "-b", CTRL_BROKER],
                                         self.ns(), CTRL_ADMIN, gen="c")
        lines = dict(ln.split("\t", 1) for ln in out.splitlines() if ln.startswith("#") and "\t" in ln)
        ok = after is not None and lines.get("#MasterBrokerId", "").strip() == str(after[0])
        c.check(rc == 0 and ok, "Java %s mqadmin getSyncStateSet with the admin account in tools.yml shows master "
                                "id %s" % (GEN_VERSION["c"], after and after[0]))
        if not ok:
            c.note(tail(out))

    def broker_epochs(self):
        """Java's and our mqadmin getBrokerEpoch -b list the same epochs for the three brokers."""
        c, w, env = self.c, self.w, self.env

        def once():
            rc, jout = env.mqadmin(["getBrokerEpoch", "-b", CTRL_BROKER], ns=self.ns(), gen="c")
            java = epochs_by_addr(jout)
            argv = [env.artifacts.rust_mqadmin(), "getBrokerEpoch", "-b", CTRL_BROKER, "-n", self.ns()]
            rrc, rout, _ = env.procs.run("mqadmin-rust-getBrokerEpoch", argv, 60)
            ours = epochs_by_addr(rout)
            addrs = {b.addr for b in w.brokers}
            ok = (rc == 0 and rrc == 0 and set(java) == addrs and all(java.values())
                  and settled_epochs(java) == settled_epochs(ours))
            return ok, java, ours, jout, rout
        ok, java, ours, jout, rout = self.settled(once)
        c.check(ok, "Java %s and our mqadmin getBrokerEpoch -b %s list the same epochs for the 3 brokers "
                    "(Java %s, ours %s)" % (GEN_VERSION["c"], CTRL_BROKER, java, ours))
        if not ok:
            c.note(tail(jout))
            c.note(tail(rout))

    def produce_first_thousand(self):
        c, env, w = self.c, self.env, self.w
        create_topic(env, c, self.topic, cluster=CTRL_CLUSTER, ns=self.ns(), gen="c", brokers=(CTRL_BROKER,))
        slaves = [addr for i, addr in (w.route_members(self.topic) or {}).items() if i != "0"]
        synced = wait_until(lambda: all(self.topic in (topic_configs(a) or ()) for a in slaves), 90, 1.0)
        c.require(synced and len(slaves) == 2, "both slaves hold %s's config (synced from the master)" % self.topic)
        if os.path.exists(self.stop_file):
            os.remove(self.stop_file)
        self.producer = env.jclient_start("c", "produce-loop", ns=w.ns_addrs(), topic=self.topic, durationMs=1500000,
                                          intervalMs=20, timeoutMs=3000, pollMs=1000, prefix=self.prefix,
                                          stopFile=self.stop_file)
        t0 = time.time()
        got = wait_until(lambda: len(acked_since(self.producer, 0)) >= 1000 or not self.producer.alive(), 300, 0.5)
        acked = acked_since(self.producer, 0)
        c.require(got and len(acked) >= 1000, "Java %s producer: 1000 messages acknowledged (%d, %d failed)" % (
            GEN_VERSION["c"], len(acked), sum(1 for s in sends_of(self.producer) if not s[2])))
        self.record("first 1000 acks (s)", "%.1f" % (time.time() - t0))
        # Its consumer runs on while the faults happen (checked at the end), saving a JVM's wait here.
        self.first_consumer = self.start_consumer([s[4] for s in acked[:1000]])

    def start_consumer(self, keys):
        """A Java push consumer of a new group that must receive exactly these bodies."""
        keys_file = os.path.join(self.env.rundir, "ctl-%s-keys-%d.txt" % (self.kind, len(keys)))
        with open(keys_file, "w") as f:
            f.write("\n".join(keys) + "\n")
        group = "interop_ctl_%s_%d_%s" % (self.kind, len(keys), RUN_TAG)
        return self.env.jclient_start("c", "consume", ns=self.w.ns_addrs(), topic=self.topic, group=group,
                                      count=len(keys), prefix=self.prefix, timeoutSec=180, keysFile=keys_file)

    def check_consumer(self, proc, what):
        c = self.c
        wait_until(lambda: not proc.alive(), 240, 0.5)
        if proc.alive():
            self.env.procs.kill(proc)
        out = proc.log_text()
        r = parse_result(out)
        c.check(proc.popen.returncode == 0 and r.get("missing") == "0",
                "a Java push consumer (new group) received every one of the %s acknowledged messages "
                "(%s expected, %s missing%s)" % (what, r.get("expected"), r.get("missing"),
                                                 ", first " + r["firstMissing"] if r.get("firstMissing") else ""))
        if r.get("missing") != "0":
            c.note(tail(out))
        return r

    def kill_master(self, n):
        """kill -9 of the master broker; the new master must come from the sync-state set."""
        c, w, env = self.c, self.w, self.env
        before = w.master_in_controller()
        rt = w.route_members(self.topic) or {}
        c.require(before and before[1] and rt.get("0") == before[1],
                  "master %d: the route's id 0 is the controller's master (%s)" % (n, before))
        mid, maddr, epoch, sset = before
        victim = w.broker_by_addr(maddr)
        c.require(victim is not None, "the master is one of our brokers")
        replicas = w.replicas() or {}
        id_addr = {r.get("brokerId"): r.get("brokerAddress")
                   for r in (replicas.get("inSyncReplicas") or []) + (replicas.get("notInSyncReplicas") or [])}
        key = "master kill %d" % n
        ld = w.wait_leader(30)
        leader = ld[0] if ld else None
        before_m = self.snapshot("before %s" % key)
        watcher = self.watch([leader], 3) if before_m and leader else None
        t_kill = now_ms()
        env.procs.kill(victim.proc)
        c.note("kill -9 master %s (controller id %s, epoch %s, sync-state set %s)" % (maddr, mid, epoch, sset))
        t_elect = t_route = None
        new_c = new_route = None
        deadline = time.time() + 90
        while time.time() < deadline and (t_elect is None or t_route is None):
            if t_elect is None:
                m = w.master_in_controller()
                if m and m[1] and m[1] != maddr:
                    t_elect, new_c = now_ms(), m
            if t_route is None:
                r = w.route_members(self.topic)
                if r and r.get("0") and r["0"] != maddr:
                    t_route, new_route = now_ms(), r
            time.sleep(0.05)
        c.check(t_elect is not None, "%s: the controller elected a new master (%s)" % (key, new_c))
        c.require(t_route is not None, "%s: the route shows a new broker id 0 (%s)" % (key, new_route))
        self.record("%s -> controller elected (ms)" % key, t_elect - t_kill if t_elect else "none in 90 s")
        self.record("%s -> route shows new master (ms)" % key, t_route - t_kill)
        c.check(new_c and new_c[0] in sset and new_c[0] != mid,
                "%s: the new master (id %s) was in the sync-state set %s" % (key, new_c and new_c[0], sset))
        c.check(new_c and new_route["0"] == new_c[1] == id_addr.get(new_c[0], new_c[1]),
                "%s: route id 0 = %s = the controller's new master" % (key, new_route["0"]))
        c.check(new_c and new_c[2] > epoch, "%s: master epoch went up (%s -> %s)" % (key, epoch, new_c and new_c[2]))
        c.check(maddr not in (new_route or {}).values(), "%s: the killed broker left the route" % key)
        # The producer continues on the new master.
        new_master = new_route["0"]
        cont = wait_until(lambda: len(acked_since(self.producer, t_route)) >= 20, 60, 0.3)
        c.check(cont, "%s: the producer continues (20 acknowledged sends after the route change)" % key)
        gap, failed = gap_around(self.producer, t_kill, now_ms())
        self.record("%s: failed sends / longest gap without an ack (ms)" % key, "%d / %s" % (failed, gap))
        if watcher:
            self.master_kill_metrics(key, leader, before_m, watcher, new_c)
        return victim, new_master

    def master_kill_metrics(self, key, leader, before_m, watcher, new_c):
        """The leader's metrics saw the master go and come back: the election counted with its
        trigger (its connection closed: master_lost), the master alive again with a higher epoch."""
        c = self.c
        watcher[0].join()
        polled = [(t, s) for t, _, s in watcher[1] if s]
        gone = next((t for t, s in polled if s["has_master"] == 0), None)
        back = next((t for t, s in polled if gone is not None and t > gone and s["has_master"] == 1), None)
        # Only the rows where something changed, for the report.
        timeline, last = [], None
        for t, node, s in watcher[1]:
            keyed = s and tuple(sorted(s.items()))
            if keyed != last:
                timeline.append((t, node, s))
                last = keyed
        self.timelines.append(("%s: the leader %s polled every 50 ms" % (key, leader.id), timeline))
        after = wait_until(lambda: (lambda s: s if s and s["has_master"] == 1 and new_c
                                    and s["master_epoch"] == new_c[2] else None)(leader.summary()), 10, 0.1)
        self.snapshot("after %s" % key)
        b = before_m.get(leader.id) or {}
        c.check(after is not None and after["elected_master_lost"] == (b.get("elected_master_lost") or 0) + 1,
                "%s: the leader's metrics count the election: elections_total{trigger=master_lost,result=elected} "
                "%s -> %s" % (key, b.get("elected_master_lost"), after and after["elected_master_lost"]))
        c.check(after is not None and after["master_epoch"] > (b.get("master_epoch") or 0)
                and after["sync_state_set"] is not None and after["sync_state_set"] >= 1,
                "%s: the leader's metrics show %s's master alive again, master epoch %s -> %s, sync-state set %s" % (
                    key, CTRL_BROKER, b.get("master_epoch"), after and after["master_epoch"],
                    after and after["sync_state_set"]))
        self.record("%s: metrics without a live master (ms, polled every 50 ms)" % key,
                    "%s (from +%s to +%s)" % (back - gone, gone, back) if gone is not None and back is not None
                    else "not seen" if gone is None else "from +%s, not back in 3 s" % gone)

    def kill_leader(self):
        c, w, env = self.c, self.w, self.env
        ld = w.wait_leader(30)
        c.require(ld, "controllers agree on a leader before its kill")
        old = ld[0]
        before = wait_until(w.master_in_controller, 10, 0.2)
        before_m = self.snapshot("before the controller leader's kill")
        survivors = [n for n in w.nodes if n.alive() and n is not old]
        watcher = self.watch(survivors, 15) if before_m else None
        t_kill = now_ms()
        old.kill()
        c.note("kill -9 controller leader %s (%s)%s" % (
            old.id, old.addr, " and with it its nameserver" if self.kind == "embedded" else ""))
        new = wait_until(lambda: (lambda l: l if l and l[0] is not old else None)(w.leader()), 60, 0.05)
        t_new = now_ms()
        c.require(new, "a new controller leader among the two left")
        self.record("controller leader kill -> new leader (ms)", t_new - t_kill)
        c.note("new controller leader %s (%s)" % (new[0].id, new[0].addr))
        # A new leader may answer before it has caught up with the log: give it 10 s.
        after = wait_until(lambda: (lambda m: m if m and before and m[:3] == before[:3] else None)(
            w.master_in_controller()), 10, 0.2) or w.master_in_controller()
        c.check(after and before and after[:3] == before[:3],
                "the new leader knows the same master (id, address, epoch %s)" % (after and after[:3],))
        cont = wait_until(lambda: len(acked_since(self.producer, t_kill)) >= 50, 60, 0.3)
        c.check(cont, "brokers keep working: 50 acknowledged sends after the controller leader's kill")
        gap, failed = gap_around(self.producer, t_kill, now_ms())
        self.record("controller leader kill: failed sends / longest gap without an ack (ms)", "%d / %s" % (failed, gap))
        rt = wait_until(lambda: (lambda r: r if r and before and r.get("0") == before[1] else None)(
            w.route_members(self.topic)), 10, 0.2) or w.route_members(self.topic) or {}
        c.check(before and rt.get("0") == before[1], "the route still shows the same master %s" % rt.get("0"))
        if watcher:
            self.leader_kill_metrics(old, survivors, before_m, watcher)

    def leader_kill_metrics(self, old, survivors, before_m, watcher):
        """The survivors' metrics: one of them leads in a higher term, both saw the change, both
        ready; how long after the kill the metrics first showed a leader."""
        c = self.c
        watcher[0].join()
        first = next((t for t, _, s in watcher[1] if s and s["role"] == "leader"), None)
        timeline, last = [], {}
        for t, node, s in watcher[1]:
            brief = s and (s["role"], s["term"], s["leader_changes"], s["ready"])
            if last.get(node) != brief:
                timeline.append((t, node, s))
                last[node] = brief
        self.timelines.append(("the controller leader's (%s) kill: the two others polled every 50 ms" % old.id,
                               timeline))
        after = self.snapshot("after the controller leader's kill")
        leaders = [n for n, s in after.items() if s and s["role"] == "leader"]
        old_term = max((s or {}).get("term") or 0 for s in before_m.values())
        c.check(len(leaders) == 1 and all((after.get(n.id) or {}).get("ready") == 1 for n in survivors)
                and all(((after.get(n.id) or {}).get("term") or 0) > old_term for n in survivors),
                "after the leader's kill the metrics show one leader (%s) among the survivors, both ready, "
                "term %s -> %s" % (leaders, old_term, [(after.get(n.id) or {}).get("term") for n in survivors]))
        c.check(all(((after.get(n.id) or {}).get("leader_changes") or 0)
                    > ((before_m.get(n.id) or {}).get("leader_changes") or 0) for n in survivors),
                "both survivors count the new leader in leader_changes_total")
        # Standalone nodes' own probe (an embedded node's /readyz is its nameserver's).
        status = [scrape(n.http_addr(), "/readyz")[0] for n in survivors if n.namesrv is None]
        if status:
            c.check(all(st == 200 for st in status), "the survivors' /readyz answer 200 (%s)" % status)
        self.record("controller leader kill -> a leader in the metrics (ms, polled every 50 ms)",
                    first if first is not None else "not in 15 s")

    def back_as_slave(self, broker, t_restart):
        """The killed master, restarted on its old store, is a slave of the new master."""
        c, w = self.c, self.w
        broker.wait_boot(180)

        def slave():
            r = w.route_members(self.topic)
            return r if r and broker.addr in r.values() and r.get("0") != broker.addr else None
        r = wait_until(slave, 120, 0.5)
        c.check(r, "the killed master, restarted, registers as a slave (route %s)" % r)
        self.record("old master restart -> back as slave in route (s)",
                    "%.1f" % (time.time() - t_restart) if r else "not in 120 s")

    def wait_sync_set(self, at_least, why):
        got = wait_until(lambda: (lambda m: m if m and len(m[3]) >= at_least else None)(self.w.master_in_controller()),
                         120, 0.5)
        self.c.require(got, "sync-state set has >= %d members %s (%s)" % (at_least, why, got and got[3]))
        return got

    def finish(self):
        c = self.c
        open(self.stop_file, "w").close()
        wait_until(lambda: not self.producer.alive(), 30, 0.3)
        if self.producer.alive():
            self.env.procs.kill(self.producer)
        s = sends_of(self.producer)
        acked = [x[4] for x in s if x[2]]
        failed = sum(1 for x in s if not x[2])
        self.record("sends acknowledged / failed", "%d / %d" % (len(acked), failed))
        self.check_consumer(self.first_consumer, "first 1000 (consumer started before the first fault)")
        r = self.check_consumer(self.start_consumer(acked), "%d" % len(acked))
        lost = r.get("missing")
        self.record("acknowledged messages lost", lost if lost is not None else "unknown")

    def run(self):
        completed = False
        try:
            self.start()
            self.admin("after start")
            if self.w.secured:
                self.access_control()
            self.produce_first_thousand()
            victim, _ = self.kill_master(1)
            t_restart = time.time()
            victim.start(self.w.ns_addrs())
            self.wait_sync_set(2, "again (the other slave rejoined)")
            self.kill_leader()
            self.back_as_slave(victim, t_restart)
            self.wait_sync_set(2, "before the second master kill")
            self.kill_master(2)
            self.admin("at the end")
            self.finish()
            completed = True
        finally:
            self.write_metrics()
            RESULTS[self.kind] = dict(self.fig, passed=completed and self.c.passed())
            for p in (self.producer, self.first_consumer):
                if p is not None:
                    self.env.procs.kill(p)
            self.w.stop()


def report(say, rundir):
    """Side-by-side figures of the controller scenarios that ran (printed, and in the run dir)."""
    if not RESULTS:
        return
    kinds = [k for k in ("java", "rust", "embedded") if k in RESULTS]
    keys = []
    for k in kinds:
        for f in RESULTS[k]:
            if f != "passed" and f not in keys:
                keys.append(f)
    head = "| figure | " + " | ".join(TITLES[k] for k in kinds) + " |"
    rows = [head, "|" + "---|" * (len(kinds) + 1)]
    rows.append("| scenario | " + " | ".join("PASS" if RESULTS[k]["passed"] else "FAIL" for k in kinds) + " |")
    for f in keys:
        rows.append("| %s | %s |" % (f, " | ".join(str(RESULTS[k].get(f, "-")) for k in kinds)))
    text = "\n".join(rows)
    say("controller-mode failover, side by side (NAMESRV_IMPL=%s):\n%s" % (env_impl(), text))
    with open(os.path.join(rundir, "controller-failover.md"), "w") as f:
        f.write(text + "\n")


def env_impl():
    return os.environ.get("NAMESRV_IMPL", "rust")
