"""Scenario 6: hostile and broken clients. Each case runs against a fresh nameserver holding 40
simulated brokers (2,000 topics), while a well-behaved client reads routes (200 req/s over two
long-lived connections, plus 5 req/s each over a new connection): its p99 and errors before and
during the attack, the server's RSS, and what the attack got.
"""

import os
import time

from . import hostile
from .base import JAVA, OURS, fmt_mib, rss_kib, say
from .world import NameServer, errors_of, fleet, readers, shape_args

TITLE = "Hostile clients: floods, slow senders, huge frames, non-readers, zlib bombs, header and topic floods"
SHAPE = shape_args(4, 10, 500)
P99_MS = float(os.environ.get("RELIABILITY_P99_MS", "100"))
MIB = 1024

# Config keys of the resource caps of #13. When the build under test has a case's cap, the case
# sets it (to a value the attack exceeds) and checks that it holds; else the cap's checks are
# pending and the case's memory bound is a fixed one.
CAP_KEYS = {
    "conn_cap": "serverMaxConnections",
    "frame_deadline": "serverFrameTimeoutSeconds",
    "partial_budget": "serverMaxPendingFrameBytes",
    "queued_cap": "serverConnectionMaxPendingResponseBytes",
    "inflate_cap": "registerBodyMaxInflatedBytes",
    "topics_cap": "registerBrokerMaxTopics",
    "kv_value_cap": "kvConfigMaxValueBytes",
}
CONN_CAP = 2000
FRAME_DEADLINE_S = 5
PARTIAL_BUDGET_MIB = 256
SLACK_MIB = 128


def cap(w, name):
    """The key of cap `name` in this build, or None."""
    key = CAP_KEYS.get(name)
    return key if key and w.has(key) else None


def props_for(w, key):
    """Properties our server runs a case with: the case's cap set low enough to trigger."""
    if key == "idle" and cap(w, "conn_cap"):
        return {cap(w, "conn_cap"): CONN_CAP}
    if key == "slow" and cap(w, "frame_deadline"):
        return {cap(w, "frame_deadline"): FRAME_DEADLINE_S}
    if key == "huge" and cap(w, "partial_budget"):
        return {cap(w, "partial_budget"): PARTIAL_BUDGET_MIB << 20}
    return {}


def bound_for(w, key, fixed):
    """The RSS growth a case may cause (MiB): its cap plus slack when the build has it."""
    if key == "huge" and cap(w, "partial_budget"):
        return PARTIAL_BUDGET_MIB + SLACK_MIB
    return fixed


def nothing(c, col, r, w):
    pass


def idle(c, col, r, w):
    if cap(w, "conn_cap"):
        held = r["held by the server (ss)"]
        c.check(held <= CONN_CAP, "%s idle flood: at most %s=%d connections held (%d of %d, counted with ss)"
                % (col, cap(w, "conn_cap"), CONN_CAP, held, r["connections"]))
    else:
        c.pending("%s idle flood: a connection cap closes the connections beyond it (this build has none)" % col)


def slow(c, col, r, w):
    if cap(w, "frame_deadline"):
        c.check(r["closed by server"] == r["connections"] and (r["last close (s)"] or 0) <= FRAME_DEADLINE_S + 5,
                "%s slow senders: every one closed by %s=%d (%d of %d, last after %s s)"
                % (col, cap(w, "frame_deadline"), FRAME_DEADLINE_S, r["closed by server"], r["connections"],
                   r["last close (s)"]))
    else:
        c.pending("%s slow senders: closed by a slow-frame deadline (this build has none; %d of %d closed)"
                  % (col, r["closed by server"], r["connections"]))


def zlib_bomb(c, col, r, w):
    ok = all(k not in ("0", "None") for k in r["answers"])
    c.check(ok, "%s zlib bombs: every one answered with an error (%s)" % (col, r["answers"]))


def ext_fields(c, col, r, w):
    c.check(r["slowest answer (s)"] <= 5,
            "%s 100,000-key headers: answered or their connection closed within 5 s (slowest %.1f s, %s)"
            % (col, r["slowest answer (s)"], r["answers"]))


def topic_flood(c, col, r, w):
    c.check(r["answers"] and all(k != "None" for k in r["answers"]),
            "%s 2,000,000-topic registration answered (%s)" % (col, r["answers"]))
    key = cap(w, "topics_cap")
    if key:
        c.check("0" not in r["answers"] and key in r.get("first remark", "") and r["route of the last topic"] == 17,
                "%s 2,000,000-topic registration refused naming %s, none of its topics routed (%s)"
                % (col, key, r.get("first remark")))
    else:
        c.pending("%s 2,000,000-topic registration refused by a topics-per-broker cap (this build has none)" % col)


def kv_big(c, col, r, w):
    refused = not str(r["big put"]).startswith("0")
    p99 = r["small put p99 (ms)"]
    c.check(refused or (p99 is not None and p99 <= 50),
            "%s 10 MB KV value refused, or later puts stay fast (big put %s, small put p99 %s ms)"
            % (col, r["big put"], p99))
    c.check(r["log growth (KiB)"] <= 1024, "%s the 10 MB value is not logged whole (log grew %d KiB)"
            % (col, r["log growth (KiB)"]))


def sabotage(c, col, r, w):
    for k in ("serverChannelMaxIdleTimeSeconds=1", "listenPort=1"):
        c.check(r.get(k) not in (0, None), "%s UPDATE_NAMESRV_CONFIG %s refused (code %s)" % (col, k, r.get(k)))


# key, what, attack, kwargs, memory bound (MiB above the RSS before; None = not checked),
# the cap that sets the bound when present, case-specific checks.
CASES = [
    ("idle", "5,000 idle connections, held 10 s", hostile.idle_flood, {}, 128, "conn_cap", idle),
    ("slow", "300 slow senders (1 byte/s), 15 s", hostile.slow_senders, {}, 64, "frame_deadline", slow),
    ("huge", "100 connections sending 8 MiB of announced 16 MiB frames, then stalled", hostile.huge_frames, {},
     256, "partial_budget", nothing),
    ("noread", "10 non-reading connections x 1,000 topic-list requests", hostile.non_readers, {}, 256,
     "queued_cap", nothing),
    ("bomb", "4 zlib bombs (1 GiB inflated each)", hostile.zlib_bomb, {}, 320, "inflate_cap", zlib_bomb),
    ("ext", "2 headers of 100,000 extFields (1.3 MB each)", hostile.ext_fields_flood, {}, 128, None, ext_fields),
    ("topics", "one registration of 2,000,000 topics (5 MB compressed)", hostile.topic_flood, {}, 256,
     "topics_cap", topic_flood),
    ("kv", "a 10 MB KV value, then 50 puts", hostile.kv_big_value, {}, 128, "kv_value_cap", kv_big),
    ("config", "UPDATE_NAMESRV_CONFIG serverChannelMaxIdleTimeSeconds=1, listenPort=1", hostile.config_sabotage,
     {}, None, None, sabotage),
]
CI_CASES = ("idle",)


def run(w, c, servers, ci=False):
    missing = sorted(k for k in CAP_KEYS.values() if not w.has(k))
    if missing:
        c.note("this build lacks the cap keys %s: their cases use fixed memory bounds and their "
               "cap checks are pending" % ", ".join(missing))
    only = [k for k in os.environ.get("RELIABILITY_CASES", "").split(",") if k]
    for key, what, attack, kw, bound, cap_name, extra in CASES:
        if (ci and key not in CI_CASES) or (only and key not in only):
            continue
        for kind in servers:
            col = OURS if kind == "ours" else JAVA
            one(w, c, col, kind, key, what, attack, kw, bound, cap_name, extra)


def one(w, c, col, kind, key, what, attack, kw, bound, cap_name, extra):
    say("  -- %s: %s" % (col, what))
    props = props_for(w, key) if kind == "ours" else {}
    bound = None if bound is None else bound_for(w, key, bound)
    ns = NameServer(w, "s6-%s-%s" % (key, kind), kind, props)
    ns.start()
    ns.wait_ready()
    fl = fleet(w, "s6-fleet-%s-%s" % (key, kind), ns.addr, SHAPE)
    rd = None
    try:
        pop = fl.wait_for(lambda e: e.get("event") == "populated", 120)
        c.require(pop and errors_of(pop["regs"]) == 0, "%s %s: 40 simulated brokers registered" % (col, key))
        rd = readers(w, "s6-read-%s-%s" % (key, kind), ns.addr, SHAPE, rate=200, fresh_rate=5,
                     extra=["--conns", "2", "--depth", "2", "--bucket-ms", "1000"])
        time.sleep(1.0)
        rd.send("phase baseline")
        time.sleep(3.0)
        rss0 = rss_kib(ns.pid) or 0
        ns.rss.reset()
        log0 = os.path.getsize(ns.proc.log_path)
        rd.send("phase attack")
        t0 = time.time()
        result = attack(ns.addr, **kw)
        secs = time.time() - t0
        rd.send("phase after")
        time.sleep(2.0)
        peak = ns.rss.peak()
        alive = ns.alive()
        result["log growth (KiB)"] = (os.path.getsize(ns.proc.log_path) - log0) // 1024
    finally:
        fl.stop()
        if rd:
            rd.stop()
        ns.kill9()
    base = rd.wait_for(lambda e: e.get("event") == "phase" and e.get("name") == "baseline", 5)
    during = rd.wait_for(lambda e: e.get("event") == "phase" and e.get("name") == "attack", 5)
    if not (base and during):
        c.check(False, "%s %s: the well-behaved client reported its phases" % (col, key))
        return
    p99_0 = base["steady"]["p99_us"] / 1000.0
    p99_1 = during["steady"]["p99_us"] / 1000.0
    steady_err = errors_of(during["steady"])
    fresh_err = errors_of(during["fresh"])
    fresh_n = during["fresh"]["ok"] + fresh_err
    grew = max(0, peak - rss0)
    c.fig("%s: well-behaved p99 before → during" % key, col, "%.1f → %.1f ms" % (p99_0, p99_1))
    c.fig("%s: well-behaved failures during (long-lived / new connections)" % key, col,
          "%d / %d of %d" % (steady_err, fresh_err, fresh_n))
    c.fig("%s: RSS before → peak" % key, col, "%s → %s" % (fmt_mib(rss0), fmt_mib(peak)))
    shown = {k: v for k, v in result.items() if k != "log growth (KiB)" or key == "kv"}
    c.fig("%s: what the attack got (%.0f s)" % (key, secs), col, "; ".join("%s: %s" % kv for kv in shown.items()))
    if props:
        c.fig("%s: set for ours" % key, col, ", ".join("%s=%s" % kv for kv in props.items()))
    if col == JAVA:
        if not alive:
            c.note("Java nameserver died during %s" % key)
        return
    limit = max(P99_MS, 3 * p99_0)
    c.check(alive, "%s %s: the server is still running" % (col, key))
    c.check(steady_err == 0, "%s %s: the well-behaved client's long-lived connections saw no failure (%d; %s)"
            % (col, key, steady_err, during["steady"]["errors"]))
    c.check(p99_1 <= limit, "%s %s: well-behaved p99 during the attack %.1f ms <= %.0f ms (max of %.0f ms and 3x before)"
            % (col, key, p99_1, limit, P99_MS))
    if bound is not None:
        c.check(grew <= bound * MIB, "%s %s: RSS grew %s <= %d MiB" % (col, key, fmt_mib(grew), bound))
    extra(c, col, result, w)
