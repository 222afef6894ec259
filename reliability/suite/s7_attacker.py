"""Scenario 7: an attacker on the network (#21). With access control on (`authenticationMode=all`),
a hostile client on 127.0.0.1 runs every attack of issue #21's findings (suite/attacker.py) for
60 s while a real 5.5.0 broker (innerClientAuthenticationCredentials), a signing Java producer, the
Java mqadmin with tools.yml and a signing reader (remoting and HTTP Basic) keep working from the
same address. Before and after: the KV file, the `-c` file and the route tables are compared;
RSS is sampled; the log is searched for lines the attacker composed. Java 5.5.0 runs the same
load and attacks (it has no access control): what the attacker achieved there is reported.
"""

import json
import os
import socket
import threading
import time

from harness import remoting as rm
from harness.fixture import mqadmin_with_tools_yml
from harness.procs import free_port_block

from . import attacker
from .base import JAVA, OURS, Fail, fmt_mib, rss_kib, say
from .world import NameServer, parse_sends

TITLE = "Attacker on the network: access control under every attack of #21 while a broker, a producer and mqadmin work"
SECS = int(os.environ.get("RELIABILITY_ATTACK_SECS", "60"))
CLUSTER = "LegitCluster"
BROKER = "broker-real"
TOPIC = "LegitTopic"
OPS = ("ops", "ops-secret-00001")
BROKER_KEY = ("broker-real", "broker-secret-001")
PRODUCER = ("producer", "producer-secret-1")
VIEWER = ("viewer", "viewer-secret-001")
ACCOUNTS = """globalWhiteRemoteAddresses: [10.9.0.0/16]
accounts:
  - {accessKey: %s, secretKey: "%s", role: admin}
  - {accessKey: %s, secretKey: "%s", role: broker, brokerNames: [%s]}
  - {accessKey: %s, secretKey: "%s", role: reader}
  - {accessKey: %s, secretKey: "%s", role: reader}
  - {accessKey: %s, secretKey: "%s", role: reader}
  - {accessKey: %s, secretKey: "%s", role: broker, brokerNames: ["atk-*"]}
  - {accessKey: %s, secretKey: "%s", role: admin}
  - {accessKey: %s, secretKey: "%s", role: broker, brokerNames: ["atk-*"]}
""" % (OPS + BROKER_KEY + (BROKER,) + PRODUCER + VIEWER + attacker.ATK_READER + attacker.ATK_BROKER
       + attacker.GUESSED + attacker.ATK_CTL_BROKER)
GET_CONTROLLER_CONFIG = 1010
CTRL_GROUP = "s7-embedded"
RSS_BOUND_MIB = 256
REFUSED = ("rocketmq_namesrv_auth_refused_total", "rocketmq_namesrv_connections_refused_total",
           "rocketmq_namesrv_http_connections_refused_total")


def outside_ip():
    """A non-loopback address of this host (None without one): plain-credential refusal."""
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect(("192.0.2.1", 9))
        ip = s.getsockname()[0]
        s.close()
        return None if ip.startswith("127.") else ip
    except OSError:
        return None


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def canonical(resp):
    if resp is None or resp.code != 0:
        return "code %s" % (None if resp is None else resp.code)
    return json.dumps(json.loads(rm.normalize_legacy_json(resp.body_text())), sort_keys=True)


def clusters_without_attacker(resp):
    """Cluster info without the attacker's own broker groups (`atk-*`, registered with its own
    broker account: authorised) and the clusters only they were in."""
    if resp is None or resp.code != 0:
        return "code %s" % (None if resp is None else resp.code)
    ci = json.loads(rm.normalize_legacy_json(resp.body_text()))
    ci["brokerAddrTable"] = {k: v for k, v in (ci.get("brokerAddrTable") or {}).items() if not k.startswith("atk-")}
    ci["clusterAddrTable"] = {c: sorted(n for n in ns if not n.startswith("atk-"))
                              for c, ns in (ci.get("clusterAddrTable") or {}).items()
                              if any(not n.startswith("atk-") for n in ns)}
    return json.dumps(ci, sort_keys=True)


def controller_state(addr):
    """The embedded controller's config (1010, as the admin) and metadata (1005: group, leader,
    peers), for the before/after comparison."""
    cfg = rm.call(addr, GET_CONTROLLER_CONFIG, credentials=OPS)
    meta = rm.call(addr, rm.CONTROLLER_GET_METADATA_INFO, credentials=VIEWER)
    ext = meta.ext or {}
    return {"controller config": cfg.code if cfg.code != 0 else cfg.body_text(),
            "controller metadata": meta.code if meta.code != 0 else json.dumps(
                {k: ext.get(k) for k in ("group", "controllerLeaderId", "controllerLeaderAddress", "peers")},
                sort_keys=True)}


def state(ns, java_store, ctrl_addr=None):
    creds = VIEWER
    return {**(controller_state(ctrl_addr) if ctrl_addr else {}),
        "KV file": read(ns.kv_path),
        "-c file": read(ns.conf),
        "config store (configStorePath)": read(java_store),
        "route of %s" % TOPIC: canonical(rm.call(ns.addr, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC},
                                                 credentials=creds)),
        "cluster info": clusters_without_attacker(rm.call(ns.addr, rm.GET_BROKER_CLUSTER_INFO, credentials=creds)),
    }


def scrape(http_addr):
    """The refusal counters of /metrics ({series: value})."""
    out = {}
    try:
        with __import__("urllib.request").request.urlopen("http://%s/metrics" % http_addr, timeout=5) as r:
            for ln in r.read().decode().splitlines():
                if ln.startswith(REFUSED):
                    k, v = ln.rsplit(" ", 1)
                    out[k] = float(v)
    except OSError:
        pass
    return out


class Legit:
    """The signing reader of the legitimate load: route, cluster and KV reads on a long-lived
    connection (20/s) and on new ones (2/s), HTTP Basic reads (ours), and whether the real broker
    is in the cluster info every time."""

    def __init__(self, ns, http_addr, broker_addr):
        self.ns, self.http, self.broker_addr = ns, http_addr, broker_addr
        self.ok = 0
        self.failed = []
        self.missing = 0
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _fail(self, what):
        if len(self.failed) < 1000:
            self.failed.append(what)

    def _one(self, c, code, ext):
        r = c.request(code, rm.signed(ext, None, *VIEWER))
        if r.code != 0:
            self._fail("%d -> %d %s" % (code, r.code, (r.remark or "")[:80]))
            return None
        self.ok += 1
        return r

    def _run(self):
        n = 0
        conn = None
        while not self.stop_flag.is_set():
            n += 1
            try:
                if conn is None:
                    conn = rm.Conn(self.ns.addr, timeout=5)
                self._one(conn, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
                r = self._one(conn, rm.GET_BROKER_CLUSTER_INFO, {})
                if r is not None and self.broker_addr not in r.body_text():
                    self.missing += 1
                self._one(conn, rm.GET_KV_CONFIG, {"namespace": "LegitNS", "key": "k"})
                if n % 10 == 0:
                    with rm.Conn(self.ns.addr, timeout=5) as fresh:
                        self._one(fresh, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
                    if self.http:
                        st = attacker._http("http://%s/api/v1/kv/LegitNS" % self.http, headers=attacker._basic(*VIEWER))
                        if st == 200:
                            self.ok += 1
                        else:
                            self._fail("http /api/v1/kv/LegitNS -> %s" % st)
            except Exception as e:  # noqa: BLE001 - a failure of the legitimate client is counted
                self._fail(type(e).__name__)
                if conn is not None:
                    conn.close()
                conn = None
            self.stop_flag.wait(0.15)
        if conn is not None:
            conn.close()

    def stop(self):
        self.stop_flag.set()
        self.thread.join(10)


def admin_loop(w, ns, deadline, results):
    """The Java mqadmin with the admin account in tools.yml, one command after another."""
    cmds = [(["clusterList"], BROKER), (["getNamesrvConfig"], "listenPort"),
            (["updateKvConfig", "-s", "LegitNS", "-k", "k", "-v", "v"], "success"),
            (["topicRoute", "-t", TOPIC], BROKER)]
    i = 0
    while time.time() < deadline:
        args, expect = cmds[i % len(cmds)]
        i += 1
        rc, out = mqadmin_with_tools_yml(w.env, args, ns.addr, OPS)
        # clusterList also asks every broker of the cluster info for its figures and prints the
        # exception of each it cannot reach: the attacker's own groups (registered with its own
        # broker account, at addresses of its choosing) are such brokers.
        ok = rc == 0 and expect in out and (args[0] == "clusterList" or "Exception" not in out)
        results.append((args[0], ok, "" if ok else out.strip()[-300:]))


def run(w, c, servers, ci=False):
    for kind in servers:
        one(w, c, OURS if kind == "ours" else JAVA, kind)


def one(w, c, col, kind):
    say("  -- %s: %d s of attacks under legitimate load" % (col, SECS))
    props = {}
    outside = outside_ip() if kind == "ours" else None
    if kind == "ours":
        props = {"authenticationEnabled": "true", "authenticationMode": "all",
                 "authFailureWindowSeconds": 2 * SECS + 60, "httpBindAddress": "0.0.0.0" if outside else "127.0.0.1"}
    ns = NameServer(w, "s7-" + kind, kind, props)
    if kind == "ours":
        props["authConfigPath"] = os.path.join(ns.dir, "auth.yml")
        ns.props.update(props)
        with open(props["authConfigPath"], "w") as f:
            f.write(ACCOUNTS)
        os.chmod(props["authConfigPath"], 0o600)
        ns.credentials = VIEWER
        # An embedded controller (one node) on a port of its own: finding 6's target.
        ctrl_addr = "127.0.0.1:%d" % free_port_block((0,))
        ns.props.update({"enableControllerInNamesrv": "true", "controllerDLegerGroup": CTRL_GROUP,
                         "controllerDLegerPeers": "n0-" + ctrl_addr, "controllerDLegerSelfId": "n0",
                         "controllerStorePath": os.path.join(ns.dir, "controller")})
    else:
        ctrl_addr = None
    http_addr = "127.0.0.1:%s" % ns.props["httpListenPort"] if kind == "ours" else None
    outside_http = "%s:%s" % (outside, ns.props["httpListenPort"]) if outside else None
    java_store = os.path.join(ns.dir, "namesrv", "namesrv.properties")
    ns.start()
    ns.wait_ready()
    broker = w.broker("s7-" + kind, CLUSTER, BROKER, [ns.addr], overrides={
        "innerClientAuthenticationCredentials": json.dumps(
            {"accessKey": BROKER_KEY[0], "secretKey": BROKER_KEY[1]}, separators=(",", ":")),
        "authenticationMetadataProvider":
            "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
        # Java's floor (BrokerController clamps it to 10-60 s).
        "registerNameServerPeriod": 10000})
    rc, out = mqadmin_with_tools_yml(w.env, ["updateTopic", "-b", broker.addr, "-t", TOPIC, "-r", "4", "-w", "4"],
                                     ns.addr, OPS)
    c.require("success" in out, "%s: topic %s created by the signing mqadmin" % (col, TOPIC))
    for nsk, key, value in (("LegitNS", "k", "v"), ("VictimNS", "victim", "keep")):
        r = rm.call(ns.addr, rm.PUT_KV_CONFIG, {"namespace": nsk, "key": key, "value": value}, credentials=OPS)
        c.require(r.code == 0, "%s: KV %s/%s put by the admin account" % (col, nsk, key))
    deadline = time.time() + 60
    while time.time() < deadline and BROKER not in canonical(
            rm.call(ns.addr, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}, credentials=VIEWER)):
        time.sleep(0.5)
    prod = w.producer("produce-loop", ns.addr, TOPIC, (SECS + 20) * 1000, intervalMs=100, pollMs=1000,
                      accessKey=PRODUCER[0], secretKey=PRODUCER[1])
    time.sleep(8)  # the producer's start-up
    if ctrl_addr:
        deadline = time.time() + 30
        while time.time() < deadline and "n0" not in str(controller_state(ctrl_addr)["controller metadata"]):
            time.sleep(0.5)
    before = state(ns, java_store, ctrl_addr)
    if ctrl_addr:
        c.require(isinstance(before["controller config"], str) and "n0" in before["controller metadata"],
                  "%s: the embedded controller answers the admin's 1010 and names its leader n0 (%s)"
                  % (col, before["controller metadata"]))
    metrics0 = scrape(http_addr) if http_addr else {}
    log0 = len(ns.log_text())
    rss0 = rss_kib(ns.pid) or 0
    ns.rss.reset()
    legit = Legit(ns, http_addr, broker.addr)
    admin = []
    t_admin = threading.Thread(target=admin_loop, args=(w, ns, time.time() + SECS, admin), daemon=True)
    t_admin.start()
    t0 = time.time()
    t0_ms = int(t0 * 1000)
    tallies = attacker.run_all(ns.addr, SECS, (CLUSTER, BROKER, broker.addr), http_addr, outside_http, VIEWER,
                                 (ctrl_addr, CTRL_GROUP) if ctrl_addr else None)
    secs = time.time() - t0
    t_admin.join(120)
    legit.stop()
    time.sleep(6)  # one more broker period: a forged route would show
    after = state(ns, java_store, ctrl_addr)
    peak = ns.rss.peak()
    rss1 = rss_kib(ns.pid) or 0
    metrics1 = scrape(http_addr) if http_addr else {}
    alive = ns.alive()
    w.procs.kill(prod)
    sends = [s for s in parse_sends(prod.log_text()) if t0_ms <= s["t"] <= t0_ms + int(secs * 1000)]
    log = ns.log_text()[log0:] if kind == "ours" else ns.log_text()
    broker.kill()
    ns.kill9()

    # ---- figures ----
    for label, key in attacker.ATTACKS:
        t = tallies[key]
        c.fig("attack %s" % label, col, "%d requests; %s" % (t.requests(), t.text()) if t.requests() else "n/a")
    c.fig("attack 7 fenced registrations (lower stateVersion, new 10 KB address each)", col,
          "%d; %s" % (tallies["fenced"].requests(), tallies["fenced"].text()))
    applied = {key: tallies[key].applied for _, key in attacker.ATTACKS}
    c.fig("what the attacker achieved", col, "; ".join(
        "%s: %d applied (%s)" % (k, v, ", ".join(tallies[k].examples)) for k, v in applied.items() if v) or "nothing")
    changed = [k for k in before if before[k] != after[k]]
    c.fig("changed by the attack (before vs after)", col, ", ".join(changed) or "nothing")
    ok_sends = sum(1 for s in sends if s["ok"])
    admin_ok = sum(1 for _, ok, _ in admin if ok)
    accepted = log.count("who=account:%s" % BROKER_KEY[0]) if kind == "ours" else None
    c.fig("legit: Java producer sends ok / failed", col, "%d / %d" % (ok_sends, len(sends) - ok_sends))
    c.fig("legit: Java mqadmin (tools.yml) commands ok / failed", col, "%d / %d" % (admin_ok, len(admin) - admin_ok))
    c.fig("legit: signed reader requests ok / failed (remoting + HTTP Basic)", col,
          "%d / %d" % (legit.ok, len(legit.failed)))
    c.fig("legit: reads without the real broker in the cluster info", col, legit.missing)
    if accepted is not None:
        c.fig("legit: the broker's signed registrations accepted during the attack", col, accepted)
    c.fig("RSS before / after / max", col, "%s / %s / %s" % (fmt_mib(rss0), fmt_mib(rss1), fmt_mib(peak)))
    forged = [ln for ln in log.splitlines() if ln.startswith(attacker.FORGED[:27]) or ln.startswith("AtkCluster")]
    raw_escapes = sum(1 for ln in log.splitlines() if "\x1b" in ln)
    longest = max((len(ln) for ln in log.splitlines()), default=0)
    c.fig("log: forged records / lines with raw escapes / longest line", col,
          "%d / %d / %d bytes" % (len(forged), raw_escapes, longest))
    if metrics1:
        diff = {k: metrics1[k] - metrics0.get(k, 0) for k in metrics1 if metrics1[k] != metrics0.get(k, 0)}
        c.fig("refusals counted (/metrics, during)", col, "; ".join(
            "%s %d" % (k.replace("rocketmq_namesrv_", ""), v) for k, v in sorted(diff.items())))
    if kind == "java":
        if not alive:
            c.note("Java nameserver died under the attack")
        return

    # ---- checks (ours) ----
    c.check(alive, "%s: the server is still running" % col)
    c.check(all(v == 0 for v in applied.values()),
            "%s: no attack was applied (%s)" % (col, ", ".join("%s %d" % kv for kv in applied.items())))
    for k in before:
        c.check(before[k] == after[k], "%s: %s unchanged by the attack" % (col, k))
    c.check(sends and ok_sends == len(sends), "%s: the signing Java producer: every send ok (%d of %d)"
            % (col, ok_sends, len(sends)))
    c.check(admin and admin_ok == len(admin), "%s: the Java mqadmin with tools.yml: every command ok (%d of %d%s)"
            % (col, admin_ok, len(admin), "; " + "; ".join(x for _, ok, x in admin if not ok)[:300]
               if admin_ok < len(admin) else ""))
    c.check(legit.ok > 0 and not legit.failed, "%s: the signing reader: %d ok, %d failed %s"
            % (col, legit.ok, len(legit.failed), legit.failed[:3]))
    c.check(legit.missing == 0, "%s: the real broker in every cluster info read (%d without)" % (col, legit.missing))
    c.check(accepted >= max(1, int(secs / 10) - 1), "%s: the broker's signed registrations accepted throughout (%d in %.0f s)"
            % (col, accepted, secs))
    c.check(peak - rss0 <= RSS_BOUND_MIB * 1024, "%s: RSS grew %s <= %d MiB (peak)" % (col, fmt_mib(peak - rss0), RSS_BOUND_MIB))
    c.check(not forged and raw_escapes == 0 and longest <= 8192,
            "%s: no line the attacker composed is a log record, no raw escape, no line over 8 KiB (%d, %d, %d)"
            % (col, len(forged), raw_escapes, longest))
    c.check(tallies["fenced"].counts.get("0", 0) > 1000 and "holder at the end: the master" in tallies["fenced"].counts,
            "%s: the fenced registrations were answered and none took the master's place (%s)"
            % (col, tallies["fenced"].text()))
    ctl = tallies["controller"]
    c.check(ctl.requests() > 0 and set(ctl.counts) == {"16"},
            "%s: every request to the embedded controller's port from the attacker refused 16 (%s)"
            % (col, ctl.text()))
    lock = tallies["lockout"].counts
    c.check(any(k.startswith("right secret while blocked 16") for k in lock),
            "%s: the guesser, blocked, is refused even with the right secret (%s)"
            % (col, {k: v for k, v in lock.items() if k.startswith("right")}))
    if outside_http:
        c.check(any(k.startswith("plain credentials") and k.endswith("403") for k in tallies["http"].counts),
                "%s: valid Basic credentials over plain HTTP from %s refused 403" % (col, outside))
    else:
        c.pending("%s: plain-credential refusal from a non-loopback address (this host has none)" % col)
    if not alive:
        raise Fail("the server died")
