"""The interop scenarios. Each takes (env, ctx) and records named checks and figures in ctx."""

import json
import os
import re
import socket
import ssl
import time
import zlib

from . import diff
from . import remoting as rm
from .fixture import (CLUSTER, IDIR, LEGACY_CLUSTER, GEN_VERSION, Broker, Namesrv, SetupError, broker_addrs,
                      java_bin,
                      cluster_info, route,
                      route_brokers, route_queues)
from .pki import Pki, PkiError
from .procs import free_port_block, http_get, wait_until  # noqa: F401 (http_get: image.py, follow.py)


class Fail(Exception):
    """A required check failed; the scenario stops."""


class Ctx:
    """Checks and figures of one scenario."""

    def __init__(self, say):
        self.say = say
        self.checks = []
        self.figures = []

    def check(self, ok, text):
        ok = bool(ok)
        self.checks.append((ok, text))
        self.say("    %s %s" % ("ok  " if ok else "FAIL", text))
        return ok

    def require(self, ok, text):
        if not self.check(ok, text):
            raise Fail(text)

    def fig(self, key, value):
        self.figures.append((key, value))
        self.say("    ..  %s = %s" % (key, value))

    def note(self, text):
        self.say("    ..  " + text)

    def passed(self):
        return bool(self.checks) and all(ok for ok, _ in self.checks)


RUN_TAG = "r%d" % (int(time.time()) % 100000)


def parse_result(out):
    """key=value pairs of the last 'RESULT ' line of a client's output ({} if none)."""
    line = None
    for ln in out.splitlines():
        if ln.startswith("RESULT "):
            line = ln
    if line is None:
        return {}
    return {m.group(1): m.group(2) for m in re.finditer(r"(\w+)=(\{[^}]*\}|\S+)", line[7:])}


def tail(out, n=12):
    return "\n".join("        | " + ln for ln in out.strip().splitlines()[-n:])


def parse_json_output(out):
    """The JSON object printed by an mqadmin command (legacy bare keys allowed)."""
    start = out.find("{")
    end = out.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        return json.loads(rm.normalize_legacy_json(out[start:end + 1]))
    except ValueError:
        return None


def create_topic(env, c, topic, cluster=CLUSTER, queues=4, ns=None, gen="5", brokers=("broker-a", "broker-b")):
    rc, out = env.mqadmin(["updateTopic", "-c", cluster, "-t", topic, "-r", str(queues), "-w", str(queues)],
                          ns=ns, gen=gen)
    c.require(rc == 0 and "success" in out,
              "mqadmin(%s) updateTopic -c %s -t %s succeeded" % (GEN_VERSION[gen], cluster, topic)
              + ("" if rc == 0 else "\n" + tail(out)))
    ns_addr = ns or env.sut1
    rt = wait_until(lambda: (lambda r: r if all(b in route_queues(r) for b in brokers) else None)(route(ns_addr, topic)),
                    30, 0.3)
    c.require(rt, "route of %s on the SUT lists queues of %s" % (topic, ", ".join(brokers)))
    return rt


# ---------------------------------------------------------------------------------------------
# 1. Broker registration

def parse_cluster_list(out):
    rows = set()
    for ln in out.splitlines():
        parts = ln.split()
        if len(parts) >= 4 and not ln.startswith("#") and parts[2].isdigit() and ":" in parts[3]:
            rows.add((parts[0], parts[1], parts[2], parts[3]))
    return rows


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


# ---------------------------------------------------------------------------------------------
# 2. Messages flow

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


# ---------------------------------------------------------------------------------------------
# 3. Admin tool

def kv_get(addr, ns, key):
    r = rm.call(addr, rm.GET_KV_CONFIG, {"namespace": ns, "key": key})
    return r.code, (r.ext or {}).get("value")


def parse_props_output(out):
    props = {}
    for ln in out.splitlines():
        m = re.match(r"^\s*([A-Za-z][\w.]*)\s*=\s*(.*?)\s*$", ln)
        if m:
            props[m.group(1)] = m.group(2)
    return props


def namesrv_config(addr):
    r = rm.call(addr, rm.GET_NAMESRV_CONFIG)
    return rm.parse_properties(r.body_text()) if r.code == 0 else {}


def s3_admin(env, c):
    """Each mqadmin command's effect is checked with a raw request to the SUT (or the tool's output)."""
    env.ensure("a", "a_s", "b")
    ns = env.sut1
    topic = "InteropAdmin"
    create_topic(env, c, topic, queues=2)

    # KV config
    rc, out = env.mqadmin(["updateKvConfig", "-s", "InteropNS", "-k", "k1", "-v", "v1"])
    code, val = kv_get(ns, "InteropNS", "k1")
    c.check(code == 0 and val == "v1", "updateKvConfig -s InteropNS -k k1 -v v1 -> GET_KV_CONFIG = %r (code %s)" % (val, code))
    rc, out = env.mqadmin(["deleteKvConfig", "-s", "InteropNS", "-k", "k1"])
    code, val = kv_get(ns, "InteropNS", "k1")
    c.check(code == 22, "deleteKvConfig -s InteropNS -k k1 -> GET_KV_CONFIG code 22 QUERY_NOT_FOUND (got %s)" % code)

    # Nameserver config
    rc, out = env.mqadmin(["getNamesrvConfig"])
    props = parse_props_output(out)
    c.fig("getNamesrvConfig keys", len(props))
    c.check(props.get("listenPort") == str(env.namesrvs["sut1"].port) and props.get("orderMessageEnable") == "false",
            "getNamesrvConfig prints listenPort=%s orderMessageEnable=false (got %s, %s)" % (
                env.namesrvs["sut1"].port, props.get("listenPort"), props.get("orderMessageEnable")))
    kv_path = namesrv_config(ns).get("kvConfigPath")
    rc, out = env.mqadmin(["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"])
    got = namesrv_config(ns).get("orderMessageEnable")
    c.check("success" in out and got == "true",
            "updateNamesrvConfig -k orderMessageEnable -v true -> GET_NAMESRV_CONFIG shows %s" % got)
    rc, out = env.mqadmin(["updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/interop-evil.json"])
    refused = "CODE: 16" in out
    got = namesrv_config(ns).get("kvConfigPath")
    c.check(refused and got == kv_path,
            "updateNamesrvConfig -k kvConfigPath (black-listed) is refused with code 16 and kvConfigPath is unchanged")
    if not refused:
        c.note(tail(out))

    # Order conf (KV namespace ORDER_TOPIC_CONFIG) and its effect on routes
    conf = "broker-a:2;broker-b:2"
    rc, out = env.mqadmin(["updateOrderConf", "-t", topic, "-v", conf, "-m", "put"])
    code, val = kv_get(ns, "ORDER_TOPIC_CONFIG", topic)
    c.check(val == conf, "updateOrderConf -m put -> KV ORDER_TOPIC_CONFIG/%s = %r" % (topic, val))
    rt = route(ns, topic)
    c.check(rt is not None and rt.get("orderTopicConf") == conf,
            "with orderMessageEnable=true the route carries orderTopicConf=%r (got %r)" % (conf, (rt or {}).get("orderTopicConf")))
    rc, out = env.mqadmin(["updateOrderConf", "-t", topic, "-m", "get"])
    c.check(conf in out, "updateOrderConf -m get prints the order conf")
    rc, out = env.mqadmin(["updateOrderConf", "-t", topic, "-m", "delete"])
    code, val = kv_get(ns, "ORDER_TOPIC_CONFIG", topic)
    c.check(code == 22, "updateOrderConf -m delete -> KV entry gone (code %s)" % code)
    rc, out = env.mqadmin(["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "false"])
    rt = route(ns, topic)
    c.check(namesrv_config(ns).get("orderMessageEnable") == "false" and rt is not None and "orderTopicConf" not in rt,
            "updateNamesrvConfig orderMessageEnable=false -> config false, route without orderTopicConf")

    # Write permission
    rc, out = env.mqadmin(["wipeWritePerm", "-b", "broker-a"])
    m = re.search(r"wipe write perm of broker\[broker-a\] in name server\[[^\]]*\] OK, (\d+)", out)
    c.fig("wipeWritePerm count", m.group(1) if m else None)
    q = route_queues(route(ns, topic))
    c.check(m and q.get("broker-a", {}).get("perm") == 4 and q.get("broker-b", {}).get("perm") == 6,
            "wipeWritePerm -b broker-a -> %s perms broker-a=4 broker-b=6 (got %s/%s)" % (
                topic, q.get("broker-a", {}).get("perm"), q.get("broker-b", {}).get("perm")))
    if not m:
        c.note(tail(out))
    rc, out = env.mqadmin(["addWritePerm", "-b", "broker-a"])
    m = re.search(r"add write perm of broker\[broker-a\] in name server\[[^\]]*\] OK, (\d+)", out)
    c.fig("addWritePerm count", m.group(1) if m else None)
    q = route_queues(route(ns, topic))
    c.check(m and q.get("broker-a", {}).get("perm") == 6,
            "addWritePerm -b broker-a -> broker-a perm 6 (got %s)" % q.get("broker-a", {}).get("perm"))
    if not m:
        c.note(tail(out))

    # Topic lists
    rc, out = env.mqadmin(["topicList"])
    listed = set(out.split())
    c.check(topic in listed, "topicList includes %s (%d entries)" % (topic, len(listed)))
    rc, out = env.mqadmin(["topicClusterList", "-t", topic])
    c.check(CLUSTER in out.split(), "topicClusterList -t %s prints %s" % (topic, CLUSTER))

    # Delete
    rc, out = env.mqadmin(["deleteTopic", "-t", topic, "-c", CLUSTER])
    c.check("success" in out and "Exception" not in out, "deleteTopic -t %s -c %s succeeded" % (topic, CLUSTER))
    if "Exception" in out:
        c.note(tail(out))
    r = rm.call(ns, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    c.check(r.code == 17, "after deleteTopic the SUT answers TOPIC_NOT_EXIST for %s (code %s)" % (topic, r.code))
    r = rm.call(ns, rm.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    c.check(r.code == 0 and topic not in (r.body_json() or {}).get("topicList", []),
            "GET_ALL_TOPIC_LIST_FROM_NAMESERVER no longer includes %s" % topic)


# ---------------------------------------------------------------------------------------------
# 4. Failure of a master while producing

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


# ---------------------------------------------------------------------------------------------
# 5. No single point of failure

def loop_sends(proc):
    """(start_ms, latency_ms, ok, broker) of every send printed by a produce-loop client."""
    out = []
    for ln in proc.log_text().splitlines():
        p = ln.split()
        if len(p) >= 5 and p[0] == "SEND":
            out.append((int(p[1]), int(p[2]), p[3] == "OK", p[4]))
    return out


def max_gap(sends, since_ms):
    """Longest time (ms) between consecutive successful sends completed after since_ms."""
    done = sorted(s[0] + s[1] for s in sends if s[2])
    window = [t for t in done if t >= since_ms]
    return max((b - a for a, b in zip(window, window[1:])), default=None)


def warm_producer(env, c, ns, topic):
    """A running Java producer: sends to `topic` every 50 ms (2 s timeout, routes re-read every
    second) through the nameservers `ns`; returned once it has sent to both brokers. The caller
    kills it."""
    loop = env.jclient_start("5", "produce-loop", ns=ns, topic=topic, durationMs=180000,
                             intervalMs=50, timeoutMs=2000, pollMs=1000)
    warm = wait_until(lambda: {s[3] for s in loop_sends(loop) if s[2]} >= {"broker-a", "broker-b"}, 40, 0.2)
    if not warm:
        env.procs.kill(loop)
    c.require(warm, "a running producer (nameservers %s, route refresh every 1 s) sends to both brokers" % ns)
    return loop


def live_brokers_registered(env, addr):
    """True when the nameserver at addr lists every running broker at its address under its id."""
    ci = cluster_info(addr)
    return all(broker_addrs(ci, b.name, b.broker_id) == [b.addr] for b in env.brokers.values() if b.alive())


def s5_two_namesrvs(env, c):
    env.ensure("a", "a_s", "b")
    c.note("brokers use registerNameServerPeriod=10000 (default 30000) to shorten the re-registration wait")
    topic = "InteropHA"
    create_topic(env, c, topic, ns=env.sut2)
    both = env.sut1 + ";" + env.sut2
    sut1 = env.namesrvs["sut1"]
    loop = warm_producer(env, c, both, topic)
    try:
        t_kill = int(time.time() * 1000)
        sut1.kill()
        c.note("kill -9 nameserver sut1 (%s)" % env.sut1)
        time.sleep(5.0)
        after = [s for s in loop_sends(loop) if s[0] >= t_kill]
        c.fig("running producer: sends / failed after stopping sut1", "%d / %d" % (
            len(after), sum(1 for s in after if not s[2])))
        c.fig("running producer: max gap (ms)", max_gap(loop_sends(loop), t_kill - 1000))
        last = [s for s in after if s[0] >= t_kill + 3000]
        c.check(last and all(s[2] for s in last),
                "the running producer keeps sending through sut2 (all %d sends of the last 2 s OK)" % len(last))

        prefix = RUN_TAG + "-ha"
        rc, out = env.jclient("5", "produce", timeout=120, ns=both, topic=topic, count=200, prefix=prefix)
        r = parse_result(out)
        ok = int(r.get("ok", "0"))
        c.fig("new producer: ok / failed", "%s / %s" % (r.get("ok"), r.get("failed")))
        # A new Java client picks one nameserver at random; when it picks the dead one, its first
        # route lookup fails ("connect to null") and the client moves on: that one send may fail.
        c.check(ok >= 199, "a new producer sends through the surviving nameserver (ok=%s of 200; <=1 failure "
                "allowed for the client's first pick of the dead nameserver)" % ok)
        if ok < 199:
            c.note(tail(out))
        rc, out = env.jclient("5", "consume", timeout=120, ns=both, topic=topic, group="interop_ha_" + RUN_TAG,
                              count=ok, prefix=prefix, timeoutSec=90)
        r = parse_result(out)
        c.check(rc == 0 and r.get("distinct") == str(ok),
                "a new consumer receives all %d through the surviving nameserver (distinct=%s)" % (ok, r.get("distinct")))
        if rc != 0:
            c.note(tail(out))

        t0 = time.time()
        sut1.start()
        sut1.wait_ready(90 if sut1.impl == "java" else 30)
        c.fig("sut1 restart until serving (s)", "%.1f" % (time.time() - t0))
        t0 = time.time()

        def complete():
            if not live_brokers_registered(env, env.sut1):
                return None
            return set(route_queues(route(env.sut1, topic))) >= {"broker-a", "broker-b"}
        ok_reg = wait_until(complete, 40, 0.25)
        secs = time.time() - t0
        c.check(ok_reg, "all %d live brokers re-registered with the restarted sut1 and the route of %s is back" % (
            sum(1 for b in env.brokers.values() if b.alive()), topic))
        c.fig("re-registration after sut1 serves again (s)", "%.1f" % secs)
        c.check(ok_reg and secs <= 30, "re-registration within the 30 s period (%.1f s)" % secs)
        t_back = int(time.time() * 1000)
        time.sleep(2.0)
        s = loop_sends(loop)
        back = [x for x in s if x[0] >= t_back]
        c.check(back and all(x[2] for x in back), "the running producer is unaffected by the restart (%d sends OK)" % len(back))
        c.fig("running producer: total sends / failed", "%d / %d" % (len(s), sum(1 for x in s if not x[2])))
    finally:
        env.procs.kill(loop)
    rc, out = env.jclient("5", "produce", timeout=120, ns=env.sut1, topic=topic, count=50, prefix=prefix + "b")
    r = parse_result(out)
    c.check(rc == 0 and r.get("ok") == "50", "a producer works through the restarted sut1 alone (ok=%s)" % r.get("ok"))


# ---------------------------------------------------------------------------------------------
# 11. Rolling replacement of a Java nameserver

def s11_rolling_replacement(env, c):
    """The migration the book describes: the Java nameserver `ref` (in every broker's and
    client's list) is stopped with SIGTERM and the nameserver under test started on its address
    with its properties file and the kvConfig.json Java wrote, while a producer sends; no send
    may fail, and the new nameserver must end up knowing what the others know."""
    env.ensure("a", "b")
    ref = env.namesrvs["ref"]
    c.require(ref.impl == "java" and ref.alive(), "the Java nameserver %s is running" % ref.addr)
    topic = "InteropRolling"
    create_topic(env, c, topic, ns=ref.addr)
    ns_key, kv_key = "InteropRolling", "carried"
    r = rm.call(ref.addr, rm.PUT_KV_CONFIG, {"namespace": ns_key, "key": kv_key, "value": "over"})
    c.require(r.code == 0, "KV entry put on the Java nameserver (code %s)" % r.code)
    every = env.broker_ns_list()
    loop = warm_producer(env, c, every, topic)
    try:
        t_stop = int(time.time() * 1000)
        env.procs.stop(ref.proc)
        c.note("SIGTERM to the Java nameserver %s" % ref.addr)
        ref.impl = env.impl
        if ref.impl == "rust":
            # The harness gives each of our nameservers an HTTP port of its own (the default 8080
            # would clash); the rest of the file is the one the Java nameserver ran with.
            ref.http_port = free_port_block((0,))
            with open(ref.conf, "a") as f:
                f.write("httpListenPort=%d\nhttpBindAddress=127.0.0.1\n" % ref.http_port)
        t0 = time.time()
        ref.start()
        ref.wait_ready(90 if ref.impl == "java" else 30)
        c.fig("stop of the Java nameserver until %s serves on its address (s)" % ref.impl, "%.1f" % (time.time() - t0))
        code, val = kv_get(ref.addr, ns_key, kv_key)
        c.check(code == 0 and val == "over",
                "the new nameserver serves the KV entry from the kvConfig.json Java wrote (%s, code %s)" % (val, code))

        t0 = time.time()

        def same_as_sut1():
            if not live_brokers_registered(env, ref.addr):
                return None
            mine, theirs = route(ref.addr, topic), route(env.sut1, topic)
            if mine is None or theirs is None:
                return None
            return route_queues(mine) == route_queues(theirs) and route_brokers(mine) == route_brokers(theirs)
        agreed = wait_until(same_as_sut1, 40, 0.25)
        secs = time.time() - t0
        c.check(agreed, "every live broker re-registered with the new nameserver, and its route of %s equals sut1's" % topic)
        c.fig("re-registration until the new nameserver agrees with sut1 (s)", "%.1f" % secs)
        time.sleep(2.0)
        sends = loop_sends(loop)
        after = [x for x in sends if x[0] >= t_stop]
        failed = [x for x in after if not x[2]]
        c.fig("running producer: sends / failed since the stop", "%d / %d" % (len(after), len(failed)))
        c.fig("running producer: max gap (ms)", max_gap(sends, t_stop - 1000))
        c.check(after and not failed, "zero failed sends during the replacement (%d sends, %d failed)" % (
            len(after), len(failed)))
    finally:
        env.procs.kill(loop)
    rc, out = env.jclient("5", "produce", timeout=120, ns=ref.addr, topic=topic, count=50, prefix=RUN_TAG + "-rolling")
    r = parse_result(out)
    c.check(rc == 0 and r.get("ok") == "50", "a producer works through the new nameserver alone (ok=%s)" % r.get("ok"))


# ---------------------------------------------------------------------------------------------
# 6. Older generation (4.9.x broker and client)

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


# ---------------------------------------------------------------------------------------------
# 7. Go client

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


# ---------------------------------------------------------------------------------------------
# 8. Differential test against the Java nameserver

class Probe:
    def __init__(self, name, code, ext=None, body=None, version=rm.V5_3_3, language="JAVA",
                 serialize="JSON", retry=True, raw_ext=False):
        self.raw_ext = raw_ext
        self.name = name
        self.code = code
        self.ext = ext
        self.body = body
        self.version = version
        self.language = language
        self.serialize = serialize
        self.retry = retry

    def describe(self, limit=200):
        return "code=%d version=%d language=%s header=%s ext=%s body=%s" % (
            self.code, self.version, self.language, self.serialize, self.ext,
            None if self.body is None else diff.short(self.body if isinstance(self.body, str) else repr(self.body),
                                                      limit))


class Side:
    """A persistent connection to one nameserver that reconnects after errors."""

    def __init__(self, addr):
        self.addr = addr
        self.conn = None

    def send(self, p):
        for attempt in (1, 2):
            try:
                if self.conn is None:
                    self.conn = rm.Conn(self.addr, timeout=5)
                return self.conn.request(p.code, p.ext, p.body, p.version, p.language, serialize=p.serialize,
                                         raw_ext=p.raw_ext)
            except Exception as e:  # noqa: BLE001 - reported as a transport difference
                if self.conn:
                    self.conn.close()
                self.conn = None
                if attempt == 2:
                    return e
        return None

    def close(self):
        if self.conn:
            self.conn.close()


def topic_list(addr):
    r = rm.call(addr, rm.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    return set((r.body_json() or {}).get("topicList", [])) if r.code == 0 and r.body else set()


def diff_probes(env, sut_ci, ref_ci, topics):
    P = Probe
    ps = [
        P("cluster-info", rm.GET_BROKER_CLUSTER_INFO),
        P("cluster-info/rocketmq-header", rm.GET_BROKER_CLUSTER_INFO, serialize="ROCKETMQ"),
        P("topic-list/all", rm.GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        P("topic-list/system", rm.GET_SYSTEM_TOPIC_LIST_FROM_NS),
        P("topic-list/unit", rm.GET_UNIT_TOPIC_LIST),
        P("topic-list/has-unit-sub", rm.GET_HAS_UNIT_SUB_TOPIC_LIST),
        P("topic-list/has-unit-sub-ununit", rm.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST),
    ]
    for cl in (CLUSTER, LEGACY_CLUSTER, "NoSuchCluster"):
        ps.append(P("topics-by-cluster[%s]" % cl, rm.GET_TOPICS_BY_CLUSTER, {"cluster": cl}))
    for cl, bn in ((CLUSTER, "broker-a"), (CLUSTER, "broker-b"), (LEGACY_CLUSTER, "broker-legacy"),
                   (CLUSTER, "no-such-broker")):
        ps.append(P("member-group[%s]" % bn, rm.GET_BROKER_MEMBER_GROUP, {"clusterName": cl, "brokerName": bn}))
    for t in sorted(topics):
        ps.append(P("route[%s]/v%d" % (t, rm.V5_3_3), rm.GET_ROUTEINFO_BY_TOPIC, {"topic": t}))
        ps.append(P("route[%s]/v%d" % (t, rm.V4_9_3), rm.GET_ROUTEINFO_BY_TOPIC, {"topic": t}, version=rm.V4_9_3))
        ps.append(P("route[%s]/v%d+acceptStandardJsonOnly" % (t, rm.V4_9_3), rm.GET_ROUTEINFO_BY_TOPIC,
                    {"topic": t, "acceptStandardJsonOnly": "true"}, version=rm.V4_9_3))
    for t in (CLUSTER, "InteropFlow"):
        if t in topics:
            ps.append(P("route[%s]/go-client-header" % t, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": t},
                        version=317, language="GO"))
            ps.append(P("route[%s]/rocketmq-header" % t, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": t},
                        serialize="ROCKETMQ"))
    ps.append(P("route[NoSuchTopic]", rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "InteropNoSuchTopic"}))
    ps.append(P("route[<no topic header>]", rm.GET_ROUTEINFO_BY_TOPIC, {}))
    # QUERY_DATA_VERSION for every registered broker (the union of both views) and an unknown one.
    seen = set()
    for ci in (sut_ci, ref_ci):
        for bn, bd in sorted(((ci or {}).get("brokerAddrTable") or {}).items()):
            for bid, addr in sorted((bd.get("brokerAddrs") or {}).items()):
                if (bn, bid) in seen:
                    continue
                seen.add((bn, bid))
                ps.append(P("query-data-version[%s/%s]" % (bn, bid), rm.QUERY_DATA_VERSION,
                            {"brokerName": bn, "brokerAddr": addr, "clusterName": bd.get("cluster"), "brokerId": bid},
                            body='{"counter":0,"stateVersion":0,"timestamp":0}'))
    for bn, bd in sorted(((sut_ci or {}).get("brokerAddrTable") or {}).items())[:1]:
        for bid, addr in sorted((bd.get("brokerAddrs") or {}).items())[:1]:
            # JSON header whose extFields carry a number (accepted and stringified by Java).
            ps.append(P("query-data-version[%s/%s]/numeric-ext" % (bn, bid), rm.QUERY_DATA_VERSION,
                        {"brokerName": bn, "brokerAddr": addr, "clusterName": bd.get("cluster"), "brokerId": int(bid)},
                        body='{"counter":0,"stateVersion":0,"timestamp":0}', raw_ext=True))
    ps.append(P("query-data-version[unknown]", rm.QUERY_DATA_VERSION,
                {"brokerName": "no-such-broker", "brokerAddr": "127.0.0.1:1", "clusterName": CLUSTER, "brokerId": "0"},
                body='{"counter":0,"stateVersion":0,"timestamp":0}'))
    # KV sequence (order matters: no retries).
    ns, key = "InteropDiffNS", "k1"
    ps += [
        P("kv/put", rm.PUT_KV_CONFIG, {"namespace": ns, "key": key, "value": "v1"}, retry=False),
        P("kv/get", rm.GET_KV_CONFIG, {"namespace": ns, "key": key}, retry=False),
        P("kv/get-missing-key", rm.GET_KV_CONFIG, {"namespace": ns, "key": "nope"}, retry=False),
        P("kv/get-missing-namespace", rm.GET_KV_CONFIG, {"namespace": "InteropNoNS", "key": key}, retry=False),
        P("kv/list", rm.GET_KVLIST_BY_NAMESPACE, {"namespace": ns}, retry=False),
        P("kv/list-missing-namespace", rm.GET_KVLIST_BY_NAMESPACE, {"namespace": "InteropNoNS"}, retry=False),
        P("kv/delete", rm.DELETE_KV_CONFIG, {"namespace": ns, "key": key}, retry=False),
        P("kv/get-after-delete", rm.GET_KV_CONFIG, {"namespace": ns, "key": key}, retry=False),
        P("kv/list-after-delete", rm.GET_KVLIST_BY_NAMESPACE, {"namespace": ns}, retry=False),
        P("kv/delete-missing", rm.DELETE_KV_CONFIG, {"namespace": "InteropNoNS", "key": key}, retry=False),
        P("kv/put-without-key", rm.PUT_KV_CONFIG, {"namespace": ns, "value": "v"}, retry=False),
        P("kv/put-non-ascii", rm.PUT_KV_CONFIG, {"namespace": ns, "key": "k\u00e9", "value": "v\u4e2d\u00e9"},
          retry=False),
        P("kv/get-non-ascii", rm.GET_KV_CONFIG, {"namespace": ns, "key": "k\u00e9"}, retry=False),
        P("kv/get-non-ascii/rocketmq-header", rm.GET_KV_CONFIG, {"namespace": ns, "key": "k\u00e9"},
          serialize="ROCKETMQ", retry=False),
        P("kv/list-non-ascii", rm.GET_KVLIST_BY_NAMESPACE, {"namespace": ns}, retry=False),
        P("kv/delete-non-ascii", rm.DELETE_KV_CONFIG, {"namespace": ns, "key": "k\u00e9"}, retry=False),
    ]
    # Config.
    ps.append(P("config/get", rm.GET_NAMESRV_CONFIG))
    for k in ("kvConfigPath", "configStorePath", "rocketmqHome", "configBlackList"):
        ps.append(P("config/update-blacklisted[%s]" % k, rm.UPDATE_NAMESRV_CONFIG, body="%s=/tmp/interop-evil\n" % k,
                    retry=False))
    ps.append(P("config/update-no-body", rm.UPDATE_NAMESRV_CONFIG, retry=False))
    ps.append(P("config/update-allowed", rm.UPDATE_NAMESRV_CONFIG, body="enableTopicList=true\n", retry=False))
    ps.append(P("config/get-after-update", rm.GET_NAMESRV_CONFIG))
    # Misc.
    ps += [
        P("unknown-code-999", 999),
        P("wipe-write-perm[no-such-broker]", rm.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "no-such-broker"}),
        P("add-write-perm[no-such-broker]", rm.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "no-such-broker"}),
        P("broker-heartbeat[unknown]", rm.BROKER_HEARTBEAT,
          {"clusterName": CLUSTER, "brokerAddr": "127.0.0.1:1", "brokerName": "no-such-broker"}),
        P("delete-topic[NoSuchTopic]", rm.DELETE_TOPIC_IN_NAMESRV, {"topic": "InteropNoSuchTopic"}),
    ]
    ps += fake_broker_probes()
    # REGISTER_TOPIC_IN_NAMESRV then read back, then delete (order matters).
    reg = json.dumps({"queueDatas": [{"brokerName": "broker-b", "perm": 6, "readQueueNums": 2,
                                      "topicSysFlag": 0, "writeQueueNums": 2}]})
    ps += [
        P("register-topic[InteropDiffReg]", rm.REGISTER_TOPIC_IN_NAMESRV, {"topic": "InteropDiffReg"}, body=reg,
          retry=False),
        P("route[InteropDiffReg]/after-register", rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "InteropDiffReg"}, retry=False),
        P("delete-topic[InteropDiffReg]", rm.DELETE_TOPIC_IN_NAMESRV, {"topic": "InteropDiffReg"}, retry=False),
        P("route[InteropDiffReg]/after-delete", rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "InteropDiffReg"}, retry=False),
    ]
    return ps


def register_body(topics, counter=3, timestamp=1700000000000):
    """A RegisterBrokerBody (uncompressed JSON) as a 5.x broker sends it."""
    table = {}
    for name, perm, q, sysflag in topics:
        table[name] = {"attributes": {}, "order": False, "perm": perm, "readQueueNums": q,
                       "topicFilterType": "SINGLE_TAG", "topicName": name, "topicSysFlag": sysflag,
                       "writeQueueNums": q}
    return json.dumps({"filterServerList": [], "topicConfigSerializeWrapper": {
        "dataVersion": {"counter": counter, "stateVersion": 0, "timestamp": timestamp},
        "topicConfigTable": table}}, separators=(",", ":"), ensure_ascii=False)


def register_ext(name, addr, bid, body, cluster="InteropFakeCluster", acting=True, crc=None):
    ext = {"brokerName": name, "brokerAddr": addr, "clusterName": cluster, "haServerAddr": addr[:-1] + "9",
           "brokerId": str(bid), "compressed": "false",
           "bodyCrc32": str(crc if crc is not None else zlib.crc32(body.encode("utf-8")) & 0x7FFFFFFF)}
    if acting:
        ext["enableActingMaster"] = "false"
    return ext


NON_ASCII_TOPIC = "InteropFake-\u00e9\u4e2d"


def fake_broker_probes():
    """REGISTER_BROKER / UNREGISTER_BROKER from the prober itself (a fake broker group on the probe
    connection), with reads in between; all in a cluster of its own."""
    P = Probe
    topics = [("InteropFakeA", 6, 4, 0), ("InteropFakeB", 7, 2, 1), ("InteropFakeC", 4, 1, 2),
              (NON_ASCII_TOPIC, 6, 1, 0)]
    body = register_body(topics)
    master, slave, third, old = "127.0.0.1:11911", "127.0.0.1:11921", "127.0.0.1:11931", "127.0.0.1:11941"
    dv = '{"counter":3,"stateVersion":0,"timestamp":1700000000000}'
    single = register_body([("InteropFakeSingle", 6, 1, 0)])
    ps = [
        P("fake/register-master", rm.REGISTER_BROKER, register_ext("broker-fake", master, 0, body), body=body,
          retry=False),
        P("fake/register-slave", rm.REGISTER_BROKER, register_ext("broker-fake", slave, 1, body), body=body,
          retry=False),
        P("fake/register-bad-crc", rm.REGISTER_BROKER, register_ext("broker-fake", third, 2, body, crc=12345),
          body=body, retry=False),
        P("fake/register-single-topic-first-time", rm.REGISTER_BROKER,
          register_ext("broker-fake", third, 2, single), body=single, retry=False),
        P("fake/register-old-version-broker", rm.REGISTER_BROKER,
          register_ext("broker-fake-old", old, 0, body, acting=False), body=body, version=rm.V4_9_3, retry=False),
        P("fake/route[InteropFakeA]/v479", rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "InteropFakeA"}),
        P("fake/route[InteropFakeA]/v399", rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "InteropFakeA"}, version=rm.V4_9_3),
        P("fake/route[InteropFakeB]/v479", rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "InteropFakeB"}),
        P("fake/route[InteropFakeSingle]", rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "InteropFakeSingle"}),
        P("fake/route[non-ascii topic]/v479", rm.GET_ROUTEINFO_BY_TOPIC, {"topic": NON_ASCII_TOPIC}),
        P("fake/route[non-ascii topic]/v399", rm.GET_ROUTEINFO_BY_TOPIC, {"topic": NON_ASCII_TOPIC},
          version=rm.V4_9_3),
        P("fake/topic-list/all", rm.GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        P("fake/cluster-info", rm.GET_BROKER_CLUSTER_INFO),
        P("fake/topics-by-cluster", rm.GET_TOPICS_BY_CLUSTER, {"cluster": "InteropFakeCluster"}),
        P("fake/unit-topic-list", rm.GET_UNIT_TOPIC_LIST),
        P("fake/has-unit-sub-topic-list", rm.GET_HAS_UNIT_SUB_TOPIC_LIST),
        P("fake/has-unit-sub-ununit-topic-list", rm.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST),
        P("fake/member-group", rm.GET_BROKER_MEMBER_GROUP,
          {"clusterName": "InteropFakeCluster", "brokerName": "broker-fake"}),
        P("fake/query-data-version-same", rm.QUERY_DATA_VERSION,
          {"brokerName": "broker-fake", "brokerAddr": master, "clusterName": "InteropFakeCluster", "brokerId": "0"},
          body=dv),
        P("fake/query-data-version-other", rm.QUERY_DATA_VERSION,
          {"brokerName": "broker-fake", "brokerAddr": master, "clusterName": "InteropFakeCluster", "brokerId": "0"},
          body='{"counter":4,"stateVersion":0,"timestamp":1700000000000}'),
        P("fake/wipe-write-perm", rm.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-fake"}, retry=False),
        P("fake/route[InteropFakeB]/after-wipe", rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "InteropFakeB"}),
        P("fake/add-write-perm", rm.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-fake"}, retry=False),
        P("fake/route[InteropFakeB]/after-add", rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "InteropFakeB"}),
        P("fake/delete-topic-in-cluster", rm.DELETE_TOPIC_IN_NAMESRV,
          {"topic": "InteropFakeC", "clusterName": "InteropFakeCluster"}, retry=False),
        P("fake/route[InteropFakeC]/after-delete", rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "InteropFakeC"}),
    ]
    for name, addr, bid in (("broker-fake", slave, 1), ("broker-fake", master, 0), ("broker-fake-old", old, 0)):
        ps.append(P("fake/unregister[%s/%d]" % (name, bid), rm.UNREGISTER_BROKER,
                    {"brokerName": name, "brokerAddr": addr, "clusterName": "InteropFakeCluster",
                     "brokerId": str(bid)}, retry=False))
    # Unregistration is asynchronous in Java: these reads are retried until both agree.
    ps += [
        P("fake/route[InteropFakeA]/after-unregister", rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "InteropFakeA"}),
        P("fake/cluster-info/after-unregister", rm.GET_BROKER_CLUSTER_INFO),
        P("fake/query-data-version/after-unregister", rm.QUERY_DATA_VERSION,
          {"brokerName": "broker-fake", "brokerAddr": master, "clusterName": "InteropFakeCluster", "brokerId": "0"},
          body=dv),
    ]
    return ps


def s8_differential(env, c):
    keys = ["a", "a_s", "b"]
    if os.environ.get("INTEROP_DIFF_LEGACY", "1") == "1":
        keys.append("legacy")
    env.ensure(*keys)
    sut, ref = env.sut2, env.ref
    c.require(ref is not None, "Java reference nameserver is running")
    c.note("SUT = sut2 %s (%s), reference = Java %s %s" % (sut, env.impl, GEN_VERSION["5"], ref))
    allow, errors = diff.load_allowlist(os.path.join(IDIR, "allowlist.txt"))
    c.check(not errors, "allowlist.txt is well-formed (%d entries)" % len(allow))
    for e in errors:
        c.note(e)

    # Let registrations settle: same brokers and topics on both sides.
    def settled():
        a, b = diff.normalize(cluster_info(sut)), diff.normalize(cluster_info(ref))
        ta, tb = topic_list(sut), topic_list(ref)
        return (a, b, ta | tb) if (a == b and ta == tb and a) else None
    st = wait_until(settled, 25, 0.5)
    if not c.check(st, "SUT and reference agree on cluster info and topic list before probing"):
        d = []
        diff.diff_values(diff.normalize(cluster_info(sut)), diff.normalize(cluster_info(ref)), "cluster-info", d)
        ta, tb = topic_list(sut), topic_list(ref)
        if ta != tb:
            d.append(("topic-list", sorted(ta - tb), sorted(tb - ta)))
        for path, va, vb in d[:10]:
            c.note("not settled: %s sut=%s ref=%s" % (path, diff.short(va, 200), diff.short(vb, 200)))
    sut_ci, ref_ci = cluster_info(sut), cluster_info(ref)
    topics = topic_list(sut) | topic_list(ref)
    probes = diff_probes(env, sut_ci, ref_ci, topics)
    report_path = os.path.join(env.rundir, "differential-report.txt")
    sa, sb = Side(sut), Side(ref)
    failing = []
    allowed = []
    full = open(os.path.join(env.rundir, "differential-all.txt"), "w")
    with open(report_path, "w") as rep:
        rep.write("SUT %s (%s) vs reference Java %s\n\n" % (sut, env.impl, ref))
        for p in probes:
            attempts = 3 if p.retry else 1
            for i in range(attempts):
                ra, rb = sa.send(p), sb.send(p)
                if isinstance(ra, Exception) or isinstance(rb, Exception):
                    d = [("transport", repr(ra) if isinstance(ra, Exception) else "ok",
                          repr(rb) if isinstance(rb, Exception) else "ok")]
                else:
                    d = diff.compare(p.name, ra, rb)
                # Retry only while a difference remains that the allow-list does not cover.
                if i == attempts - 1 or not any(
                        not any(e.matches(p.name, path) for e in allow) for path, _, _ in d):
                    break
                time.sleep(1.5)
            full.write("=== %s\nrequest: %s\n" % (p.name, p.describe(4000)))
            for side, r in (("sut", ra), ("ref", rb)):
                if isinstance(r, Exception):
                    full.write("  %s: %r\n" % (side, r))
                else:
                    full.write("  %s: %s %s\n" % (side, json.dumps(r.header, sort_keys=True), r.body_text()))
            bad = []
            for path, va, vb in d:
                entry = next((e for e in allow if e.matches(p.name, path)), None)
                if entry:
                    entry.used += 1
                    allowed.append((p, path, va, vb, entry))
                else:
                    bad.append((path, va, vb))
            if bad:
                failing.append((p, bad))
                rep.write("=== %s\nrequest: %s\n" % (p.name, p.describe(4000)))
                for path, va, vb in bad:
                    rep.write("  DIFF %s\n    sut: %s\n    ref: %s\n" % (path, diff.short(va, 2000), diff.short(vb, 2000)))
                for side, r in (("sut", ra), ("ref", rb)):
                    if isinstance(r, Exception):
                        rep.write("  %s response: %r\n" % (side, r))
                    else:
                        rep.write("  %s header: %s\n  %s body: %s\n" % (
                            side, json.dumps(r.header, sort_keys=True), side, r.body_text()))
                rep.write("\n")
        rep.write("allowed differences:\n")
        for p, path, va, vb, e in allowed:
            rep.write("  %s %s: sut=%s ref=%s  [allowlist line %d: %s]\n" % (
                p.name, path, diff.short(va, 200), diff.short(vb, 200), e.lineno, e.reason))
    full.close()
    sa.close()
    sb.close()
    n_diff = sum(len(b) for _, b in failing)
    c.fig("requests compared", len(probes))
    c.fig("topics compared", len(topics))
    c.fig("differences (not allow-listed)", n_diff)
    c.fig("differing requests", len(failing))
    c.fig("allow-listed differences", len(allowed))
    c.fig("report", report_path)
    for p, bad in failing:
        for path, va, vb in bad[:6]:
            c.note("DIFF %s %s: sut=%s ref=%s" % (p.name, path, diff.short(va, 160), diff.short(vb, 160)))
        if len(bad) > 6:
            c.note("     ... %d more differences for %s" % (len(bad) - 6, p.name))
    unused = [e for e in allow if not e.used]
    for e in unused:
        c.note("allowlist line %d matched nothing this run: %s %s" % (e.lineno, e.check_glob, e.path_glob))
    c.check(n_diff == 0, "no differences outside the allow-list (%d in %d requests)" % (n_diff, len(failing)))


# ---------------------------------------------------------------------------------------------
# 9. TLS (issue #7)

TLS_CLUSTER = "TlsCluster"
TLS_BROKER = "broker-tls"
TLS_KV_NAMESPACE = "InteropTls"


def tls_context(ca=None, cert=None, key=None):
    """A client SSLContext for the harness's raw requests: trust `ca` (or anything), present `cert`."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    if ca:
        ctx.load_verify_locations(ca)
    else:
        ctx.verify_mode = ssl.CERT_NONE
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


def probe_refused(addr, ssl_context=None):
    """(refused, detail): a GET_BROKER_CLUSTER_INFO must end with the server closing the
    connection or failing the handshake, not with an answer and not by hanging."""
    try:
        r = rm.call(addr, rm.GET_BROKER_CLUSTER_INFO, timeout=5, ssl_context=ssl_context)
        return False, "answered with code %s" % r.code
    except socket.timeout:
        return False, "no answer and no close within 5 s"
    except (OSError, rm.ProtocolError) as e:  # ssl.SSLError is an OSError
        return True, "%s: %s" % (type(e).__name__, e)


def tls_session(addr, ssl_context):
    """(TLS version, cipher) that the server negotiates with the harness's client."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        with ssl_context.wrap_socket(raw, server_hostname=host) as t:
            return t.version(), t.cipher()[0]


def cluster_info_tls(addr, ctx):
    r = rm.call(addr, rm.GET_BROKER_CLUSTER_INFO, timeout=3, ssl_context=ctx)
    return r.body_json() if r.code == 0 and r.body else None


def kv_get_tls(addr, ctx, key):
    r = rm.call(addr, rm.GET_KV_CONFIG, {"namespace": TLS_KV_NAMESPACE, "key": key}, timeout=5, ssl_context=ctx)
    return r.code, (r.ext or {}).get("value")


def client_lines(out, tag):
    """The JSON printed after `tag ` by InteropClient nsquery (legacy bare keys allowed), or None."""
    for ln in out.splitlines():
        if ln.startswith(tag + " "):
            try:
                return json.loads(rm.normalize_legacy_json(ln[len(tag) + 1:]))
            except ValueError:
                return None
    return None


def client_value(out, tag):
    for ln in out.splitlines():
        if ln.startswith(tag + " "):
            return ln[len(tag) + 1:]
    return None


def client_error(out):
    m = re.search(r"^RESULT ok=false step=(\S+) error=(.*)$", out, re.M)
    return "%s: %s" % (m.group(1), m.group(2)) if m else None


def client_log(home):
    try:
        with open(os.path.join(home, "rocketmq.log"), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def client_handshake_error(home):
    """The client's own account of a refused TLS connection (first SSL exception in its log)."""
    for ln in client_log(home).splitlines():
        if "SSLException" in ln or "SSLHandshakeException" in ln or "Connection reset" in ln:
            return ln.strip()[:300]
    return None


def server_log_count(ns, text):
    return ns.proc.log_text().count(text) if ns.proc else 0


def s9_tls(env, c):
    """Java 5.x clients (and a 5.x broker) over TLS to a SUT that refuses plaintext.

    Part 1, test mode: the SUT runs tls.server.mode=enforcing with tls.test.mode.enable=true (a
    self-signed certificate generated at start). Plaintext is refused (raw request and a Java
    client without -Dtls.enable); a broker started with -Dtls.enable=true registers; a Java client
    with -Dtls.enable=true reads cluster info and a route and does a KV put/get, read back by the
    harness over its own TLS connection.
    Part 2, mutual TLS: a second SUT with a CA-signed certificate and tls.server.need.client.auth=
    require; a Java client with a client certificate (and checking the server's against the CA)
    is served; without a certificate, or with one no CA vouches for, it is refused.
    """
    gen = "5"
    ver = GEN_VERSION[gen]
    started = []
    try:
        # ---- part 1: enforcing, test mode --------------------------------------------------------
        any_cert = tls_context()
        ns = Namesrv(env, "tls", env.impl, ssl_context=any_cert,
                     tls={"tls.server.mode": "enforcing", "tls.test.mode.enable": "true"})
        started.append(ns)
        t0 = time.time()
        ns.start()
        ns.wait_ready(90 if env.impl == "java" else 30)
        c.check(True, "SUT %s (%s) up with tls.server.mode=enforcing, tls.test.mode.enable=true; "
                "serves the harness's TLS requests" % (ns.addr, env.impl))
        c.fig("TLS SUT ready (s)", "%.1f" % (time.time() - t0))
        version, cipher = tls_session(ns.addr, any_cert)
        c.fig("negotiated with the harness", "%s %s" % (version, cipher))

        refused, detail = probe_refused(ns.addr)
        c.check(refused, "a plaintext request is refused (%s)" % detail)
        if env.impl == "rust":
            c.check(server_log_count(ns, "plaintext connection refused: tls.server.mode is enforcing") >= 1,
                    "SUT log: plaintext connection refused: tls.server.mode is enforcing")

        broker = Broker(env, "tls", gen, TLS_CLUSTER, TLS_BROKER, 0)
        broker.jvm_extra = ["-Dtls.enable=true", "-Dtls.test.mode.enable=true"]
        started.append(broker)
        t0 = time.time()
        broker.start(ns.addr)
        broker.wait_boot(120)

        def registered():
            ci = cluster_info_tls(ns.addr, any_cert)
            return ci if broker_addrs(ci, TLS_BROKER, 0) == [broker.addr] else None
        ci = wait_until(registered, 60, 0.3)
        c.require(ci, "%s broker %s (-Dtls.enable=true) registered with the enforcing SUT, i.e. over TLS" % (
            ver, broker.addr))
        c.fig("TLS broker booted and registered (s)", "%.1f" % (time.time() - t0))
        blog = client_log(broker.dir)
        c.check("useTLS=true" in blog and "Prepend SSL handler" in blog,
                "broker log: useTLS=true and 'Prepend SSL handler'")

        tag = "tls-" + RUN_TAG
        home = os.path.join(env.rundir, "jclient-tls")
        rc, out = env.jclient(gen, "nsquery", timeout=90, tls=True, home=home, ns=ns.addr, topic=TLS_CLUSTER,
                              kvNamespace=TLS_KV_NAMESPACE, kvKey=tag, kvValue="value-" + tag)
        err = client_error(out)
        c.check(rc == 0 and "RESULT ok=true" in out,
                "Java %s client with -Dtls.enable=true (test mode) completed its nameserver requests%s" % (
                    ver, "" if err is None else " (failed at %s)" % err))
        if rc != 0 and err is None:
            c.note(tail(out))
        jci = client_lines(out, "CLUSTER")
        c.check(broker_addrs(jci, TLS_BROKER, 0) == [broker.addr]
                and TLS_BROKER in (jci.get("clusterAddrTable") or {}).get(TLS_CLUSTER, []),
                "its cluster info lists %s {0:%s} in %s" % (TLS_BROKER, broker.addr, TLS_CLUSTER))
        rt = client_lines(out, "ROUTE")
        c.check(route_brokers(rt) == {TLS_BROKER: {"0": broker.addr}} and set(route_queues(rt)) == {TLS_BROKER},
                "its route of topic %s: brokerDatas {%s: {0: %s}} and queueDatas of %s (got %s)" % (
                    TLS_CLUSTER, TLS_BROKER, broker.addr, TLS_BROKER, route_brokers(rt)))
        c.check(client_value(out, "KV") == "value-" + tag,
                "its KV put then get round trip returned value-%s (got %s)" % (tag, client_value(out, "KV")))
        code, value = kv_get_tls(ns.addr, any_cert, tag)
        c.check(code == 0 and value == "value-" + tag,
                "the harness reads the client's KV value back from the SUT over TLS (code=%s value=%s)" % (code, value))
        log = client_log(home)
        c.check("useTLS=true" in log and "Prepend SSL handler" in log,
                "client log: useTLS=true and 'Prepend SSL handler' (its connection was TLS)")

        home = os.path.join(env.rundir, "jclient-plain")
        before = server_log_count(ns, "plaintext connection refused")
        rc, out = env.jclient(gen, "nsquery", timeout=90, home=home, ns=ns.addr,
                              kvNamespace=TLS_KV_NAMESPACE, kvKey=tag + "-plain", kvValue="plain")
        err = client_error(out)
        c.check(rc != 0 and err is not None and client_lines(out, "CLUSTER") is None,
                "Java %s client without -Dtls.enable is refused (%s)" % (ver, err or "rc=%s" % rc))
        code, value = kv_get_tls(ns.addr, any_cert, tag + "-plain")
        c.check(value is None, "nothing it sent reached the SUT (KV %s-plain: code=%s value=%s)" % (tag, code, value))
        if env.impl == "rust":
            c.check(server_log_count(ns, "plaintext connection refused") > before,
                    "SUT log: its connection refused as plaintext under enforcing")
        e = client_handshake_error(home)
        if e:
            c.note("plaintext client saw: " + e)
        env.procs.kill(broker.proc)
        if env.impl == "rust":
            # Java peers close without a TLS close_notify: an ordinary disconnect, not a bad frame.
            c.check(wait_until(lambda: broker.addr not in broker_addrs(cluster_info_tls(ns.addr, any_cert),
                                                                       TLS_BROKER), 10, 0.2),
                    "the killed TLS broker's connection close unregistered it")
            c.check(server_log_count(ns, "close_notify") == 0,
                    "SUT log: no error for TLS peers that closed without close_notify")

        # ---- part 2: mutual TLS --------------------------------------------------------------------
        try:
            pki = Pki(os.path.join(env.rundir, "pki"))
        except PkiError as e:
            raise SetupError("test certificates: %s" % e)
        with_cert = tls_context(pki.ca, pki.client_cert, pki.client_key)
        ns2 = Namesrv(env, "mtls", env.impl, ssl_context=with_cert, tls={
            "tls.server.mode": "enforcing",
            "tls.test.mode.enable": "false",
            "tls.server.certPath": pki.server_cert,
            "tls.server.keyPath": pki.server_key,
            "tls.server.trustCertPath": pki.ca,
            "tls.server.need.client.auth": "require",
            # Java: without it a client certificate is required but not checked against the CA.
            "tls.server.authClient": "true",
        })
        started.append(ns2)
        ns2.start()
        ns2.wait_ready(90 if env.impl == "java" else 30)
        c.check(True, "SUT %s up with mutual TLS: CA-signed certificate, tls.server.need.client.auth=require; "
                "the harness's client certificate is accepted" % ns2.addr)
        for what, ctx, log_text in (
                ("plaintext", None, "plaintext connection refused"),
                ("TLS without a client certificate", tls_context(pki.ca), "peer sent no certificates"),
                ("TLS with a self-signed client certificate", tls_context(pki.ca, pki.rogue_cert, pki.rogue_key),
                 "invalid peer certificate")):
            before = server_log_count(ns2, log_text)
            refused, detail = probe_refused(ns2.addr, ctx)
            c.check(refused, "harness request over %s is refused (%s)" % (what, detail))
            if env.impl == "rust":
                ok = wait_until(lambda: server_log_count(ns2, log_text) > before, 3, 0.1)
                c.check(ok, "SUT log: %s" % log_text)

        client_tls = {"tls.test.mode.enable": "false", "tls.client.authServer": "true",
                      "tls.client.trustCertPath": pki.ca}
        tag2 = "mtls-" + RUN_TAG
        home = os.path.join(env.rundir, "jclient-mtls")
        rc, out = env.jclient(gen, "nsquery", timeout=90, home=home, ns=ns2.addr,
                              tls=dict(client_tls, **{"tls.client.certPath": pki.client_cert,
                                                      "tls.client.keyPath": pki.client_key}),
                              kvNamespace=TLS_KV_NAMESPACE, kvKey=tag2, kvValue="value-" + tag2)
        err = client_error(out)
        c.check(rc == 0 and "RESULT ok=true" in out and client_value(out, "KV") == "value-" + tag2
                and client_lines(out, "CLUSTER") is not None,
                "Java %s client with a CA-signed client certificate (verifying the server's against the CA): "
                "cluster info and KV round trip%s" % (ver, "" if err is None else " - failed at %s" % err))
        code, value = kv_get_tls(ns2.addr, with_cert, tag2)
        c.check(code == 0 and value == "value-" + tag2,
                "the harness reads that KV value back over mutual TLS (code=%s value=%s)" % (code, value))

        for what, props, key in (
                ("without a client certificate (test mode)", True, tag2 + "-nocert"),
                ("with a self-signed client certificate", dict(client_tls, **{
                    "tls.client.certPath": pki.rogue_cert, "tls.client.keyPath": pki.rogue_key}), tag2 + "-rogue")):
            home = os.path.join(env.rundir, "jclient-" + key.rsplit("-", 1)[1])
            rc, out = env.jclient(gen, "nsquery", timeout=90, tls=props, home=home, ns=ns2.addr,
                                  kvNamespace=TLS_KV_NAMESPACE, kvKey=key, kvValue="x")
            err = client_error(out)
            c.check(rc != 0 and err is not None and client_lines(out, "CLUSTER") is None,
                    "Java %s client %s is refused (%s)" % (ver, what, err or "rc=%s" % rc))
            code, value = kv_get_tls(ns2.addr, with_cert, key)
            c.check(value is None, "nothing it sent reached the SUT (code=%s value=%s)" % (code, value))
            e = client_handshake_error(home)
            if e:
                c.note("client saw: " + e)
        if env.impl == "rust":
            for ln in ns2.proc.log_text().splitlines():
                if "refused during negotiation" in ln:
                    c.note("SUT: " + ln.split("namesrv::server: ", 1)[-1][:200])
    finally:
        for p in started:
            if p.proc is not None:
                env.procs.kill(p.proc)


# ---------------------------------------------------------------------------------------------
# 10. Address server (issue 12)

def nsaddr_fetches(http_addr):
    """How many address-server requests the SUT has answered with 200 (its own metrics)."""
    status, text = http_get(http_addr, "/metrics")
    if status != 200:
        return None
    total = 0
    for ln in text.splitlines():
        if ln.startswith("rocketmq_namesrv_http_requests_total{") and 'handler="/rocketmq/{subgroup}"' in ln \
                and 'status="200"' in ln:
            total += int(float(ln.rsplit(" ", 1)[1]))
    return total


def s10_address_server(env, c):
    """A Java producer given no nameserver address finds it through our /rocketmq/nsaddr."""
    ns = env.namesrvs["sut1"]
    if ns.impl != "rust":
        c.check(True, "the Java nameserver has no address server: scenario 10 applies to ours only")
        return
    env.ensure("a", "b")
    http_addr = "127.0.0.1:%d" % ns.http_port
    status, body = http_get(http_addr, "/rocketmq/nsaddr")
    c.require(status == 200 and body.strip() == ns.addr,
              "GET http://%s/rocketmq/nsaddr answers the SUT's remoting address %s (got %s %r)"
              % (http_addr, ns.addr, status, body[:200]))
    before = nsaddr_fetches(http_addr)
    c.require(before is not None, "the SUT's /metrics is served on %s" % http_addr)
    topic = "InteropNsAddr"
    create_topic(env, c, topic)
    prefix = RUN_TAG + "-nsaddr"
    argv = env.jclient_argv("5", "produce", ns="-", topic=topic, count=100, prefix=prefix)
    # The JVM property goes before the class name.
    argv.insert(argv.index("-cp"), "-Drocketmq.namesrv.domain=" + http_addr)
    rc, out, _ = env.procs.run("jclient-%s-produce-nsaddr" % GEN_VERSION["5"], argv, 180,
                               env={"ROCKETMQ_HOME": env.rmq_home})
    r = parse_result(out)
    c.check(rc == 0 and r.get("ok") == "100",
            "Java %s producer with -Drocketmq.namesrv.domain=%s and no nameserver address sent 100 "
            "messages (ok=%s failed=%s)" % (GEN_VERSION["5"], http_addr, r.get("ok"), r.get("failed")))
    if rc != 0:
        c.note(tail(out))
    after = nsaddr_fetches(http_addr)
    c.check(after is not None and after > before,
            "the producer fetched the nameserver list from the SUT's address server (%s -> %s requests)"
            % (before, after))
    c.fig("produced per broker", r.get("brokers"))


# ---------------------------------------------------------------------------------------------
# 12. Access control

ACL_CLUSTER = "AclCluster"
ACL_BROKER = "broker-acl"
ACL_TOPIC = "InteropAcl"
ACL_ADMIN = ("interop-admin", "admin-secret-10")
ACL_BROKER_KEY = ("interop-broker", "broker-secret-10")
ACL_READER = ("interop-reader", "reader-secret-10")
ACL_ACCOUNTS = """accounts:
  - {accessKey: %s, secretKey: "%s", role: admin}
  - {accessKey: %s, secretKey: "%s", role: broker}
  - {accessKey: %s, secretKey: "%s", role: reader}
""" % (ACL_ADMIN + ACL_BROKER_KEY + ACL_READER)


def acl_namesrv(env, key, mode):
    """A SUT enforcing access control with ACL_ACCOUNTS in `authenticationMode=mode`."""
    ns = Namesrv(env, key, env.impl, credentials=ACL_READER, props={
        "authenticationEnabled": "true",
        "authenticationMode": mode,
        "authConfigPath": os.path.join(env.rundir, "ns-" + key, "auth.yml"),
    })
    path = os.path.join(ns.dir, "auth.yml")
    with open(path, "w") as f:
        f.write(ACL_ACCOUNTS)
    os.chmod(path, 0o600)
    return ns


def signing_broker(env, key, name, access_key, secret_key):
    """A 5.x broker of ACL_CLUSTER signing its nameserver calls: innerClientAuthenticationCredentials
    (which the broker also stores as a user, so it needs an authentication metadata provider; its
    own authentication stays off)."""
    broker = Broker(env, key, "5", ACL_CLUSTER, name, 0)
    broker.conf_overrides["innerClientAuthenticationCredentials"] = json.dumps(
        {"accessKey": access_key, "secretKey": secret_key}, separators=(",", ":"))
    broker.conf_overrides["authenticationMetadataProvider"] = (
        "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider")
    return broker


def acl_route_perm(addr, credentials=None):
    """The perm of broker-acl's queues of ACL_TOPIC on `addr` (None without a route)."""
    r = rm.call(addr, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": ACL_TOPIC}, credentials=credentials)
    if r.code != 0:
        return None
    perms = {q.get("perm") for q in json.loads(rm.normalize_legacy_json(r.body_text())).get("queueDatas", [])
             if q.get("brokerName") == ACL_BROKER}
    return perms.pop() if len(perms) == 1 else None


def mqadmin_with_tools_yml(env, args, ns, credentials):
    """The Java mqadmin (one JVM) with ROCKETMQ_HOME holding conf/tools.yml = `credentials`,
    the file MQAdminStartup reads its access key from."""
    home = os.path.join(env.rundir, "rmqhome-acl")
    conf = os.path.join(home, "conf")
    os.makedirs(conf, exist_ok=True)
    for n in os.listdir(os.path.join(env.rmq_home, "conf")):
        with open(os.path.join(env.rmq_home, "conf", n), "rb") as src, open(os.path.join(conf, n), "wb") as dst:
            dst.write(src.read())
    with open(os.path.join(conf, "tools.yml"), "w") as f:
        f.write("accessKey: %s\nsecretKey: %s\n" % credentials)
    lib = env.artifacts.libdir("5")
    argv = [java_bin()] + env.client_jvm_opts("5") + [
        "-cp", lib + "/*", "org.apache.rocketmq.tools.command.MQAdminStartup"] + list(args) + ["-n", ns]
    rc, out, _ = env.procs.run("mqadmin-acl-%s" % args[0], argv, 120, env={"ROCKETMQ_HOME": home})
    return rc, out


def s12_access_control(env, c):
    """A Java 5.x broker, mqadmin and producer against SUTs enforcing access control.

    SUT `acl` (authenticationMode=writes) and SUT `acl-all` (authenticationMode=all), both with
    an admin, a broker and a reader account. The broker `broker-acl` signs its nameserver calls
    with innerClientAuthenticationCredentials of the broker account: it registers with both and
    serves messages (an unsigned Java producer through the `writes` SUT). The Java mqadmin
    wipeWritePerm without credentials is refused (write permission unchanged); with the admin
    account in $ROCKETMQ_HOME/conf/tools.yml it is applied, and addWritePerm restores it. On the
    `all` SUT an unsigned Java producer finds no route while one with an AclClientRPCHook (reader
    account) sends. Last, a broker with a wrong secret never appears in the routes.
    """
    if env.impl != "rust":
        c.check(True, "skipped: the Java nameserver has no access control to test")
        return
    ver = GEN_VERSION["5"]
    started = []
    try:
        ns = acl_namesrv(env, "acl", "writes")
        ns_all = acl_namesrv(env, "acl-all", "all")
        for n in (ns, ns_all):
            started.append(n)
            n.start()
        for n in (ns, ns_all):
            n.wait_ready(30)
        c.check(True, "SUTs %s (authenticationMode=writes) and %s (all) up with an accounts file" % (
            ns.addr, ns_all.addr))

        broker = signing_broker(env, "acl", ACL_BROKER, *ACL_BROKER_KEY)
        started.append(broker)
        t0 = time.time()
        broker.start("%s;%s" % (ns.addr, ns_all.addr))
        broker.wait_boot(120)

        def registered(addr, credentials=None):
            r = rm.call(addr, rm.GET_BROKER_CLUSTER_INFO, credentials=credentials)
            if r.code != 0:
                return None
            ci = json.loads(rm.normalize_legacy_json(r.body_text()))
            return ci if broker_addrs(ci, ACL_BROKER, 0) == [broker.addr] else None
        c.require(wait_until(lambda: registered(ns.addr), 60, 0.3),
                  "%s broker with innerClientAuthenticationCredentials (broker account) registered with the "
                  "writes SUT" % ver)
        c.require(wait_until(lambda: registered(ns_all.addr, ACL_READER), 60, 0.3),
                  "... and with the all SUT")
        c.fig("signed broker booted and registered (s)", "%.1f" % (time.time() - t0))
        c.check(server_log_count(ns, "who=account:%s" % ACL_BROKER_KEY[0]) >= 1,
                "SUT audit log: the registration accepted as account:%s" % ACL_BROKER_KEY[0])

        create_topic(env, c, ACL_TOPIC, cluster=ACL_CLUSTER, ns=ns.addr, brokers=(ACL_BROKER,))
        prefix = RUN_TAG + "-acl"
        rc, out = env.jclient("5", "produce", timeout=180, ns=ns.addr, topic=ACL_TOPIC, count=50, prefix=prefix)
        r = parse_result(out)
        c.check(rc == 0 and r.get("ok") == "50",
                "an unsigned Java %s producer sent 50 messages through the writes SUT (ok=%s failed=%s)" % (
                    ver, r.get("ok"), r.get("failed")))
        if rc != 0:
            c.note(tail(out))

        # mqadmin without credentials: refused, nothing applied.
        before = server_log_count(ns, "reason=\"no_signature\"")
        rc, out = env.mqadmin(["wipeWritePerm", "-b", ACL_BROKER], ns=ns.addr)
        c.check("OK" not in out, "Java mqadmin wipeWritePerm without credentials is not applied (%s)" % (
            out.strip().splitlines()[0] if out.strip() else "no output"))
        c.check(acl_route_perm(ns.addr) == 6, "the route still has perm 6 (got %s)" % acl_route_perm(ns.addr))
        c.check(server_log_count(ns, "reason=\"no_signature\"") > before,
                "SUT log: WIPE_WRITE_PERM refused for want of a signature")

        # mqadmin with the admin account in tools.yml: applied, then restored.
        rc, out = mqadmin_with_tools_yml(env, ["wipeWritePerm", "-b", ACL_BROKER], ns.addr, ACL_ADMIN)
        c.check("wipe write perm of broker[%s] in name server[%s] OK" % (ACL_BROKER, ns.addr) in out,
                "Java mqadmin wipeWritePerm with the admin account in $ROCKETMQ_HOME/conf/tools.yml: OK")
        if "OK" not in out:
            c.note(tail(out))
        c.check(acl_route_perm(ns.addr) == 4, "the route now has perm 4 (got %s)" % acl_route_perm(ns.addr))
        c.check(server_log_count(ns, "who=account:%s" % ACL_ADMIN[0]) >= 1,
                "SUT audit log: WIPE_WRITE_PERM accepted as account:%s" % ACL_ADMIN[0])
        rc, out = mqadmin_with_tools_yml(env, ["addWritePerm", "-b", ACL_BROKER], ns.addr, ACL_ADMIN)
        c.check(acl_route_perm(ns.addr) == 6, "addWritePerm with the admin account restores perm 6 (got %s)" %
                acl_route_perm(ns.addr))

        # authenticationMode=all: reads need an account too.
        r = rm.call(ns_all.addr, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": ACL_TOPIC})
        c.check(r.code == 16, "all SUT: an unsigned route read is refused with NO_PERMISSION (code=%s remark=%r)" % (
            r.code, r.remark))
        c.check(wait_until(lambda: acl_route_perm(ns_all.addr, ACL_READER) == 6, 30, 0.3),
                "all SUT: a route read signed by the reader account lists %s" % ACL_BROKER)
        rc, out = env.jclient("5", "produce", timeout=120, ns=ns_all.addr, topic=ACL_TOPIC, count=1,
                              prefix=prefix + "-unsigned", timeoutMs=2000)
        r = parse_result(out)
        c.check(r.get("ok") == "0", "an unsigned Java producer sends nothing through the all SUT (ok=%s)" % r.get("ok"))
        rc, out = env.jclient("5", "produce", timeout=180, ns=ns_all.addr, topic=ACL_TOPIC, count=50,
                              prefix=prefix + "-signed", accessKey=ACL_READER[0], secretKey=ACL_READER[1])
        r = parse_result(out)
        c.check(rc == 0 and r.get("ok") == "50",
                "a Java %s producer with an AclClientRPCHook (reader account) sent 50 messages through the all "
                "SUT (ok=%s failed=%s)" % (ver, r.get("ok"), r.get("failed")))
        if rc != 0:
            c.note(tail(out))

        # Last (its failures count against 127.0.0.1): a broker with a wrong secret.
        bad = signing_broker(env, "acl-bad", ACL_BROKER + "-bad", ACL_BROKER_KEY[0], "wrong-secret")
        started.append(bad)
        before = server_log_count(ns, "reason=\"bad_signature\"")
        bad.start(ns.addr)
        bad.wait_boot(120)
        refused = wait_until(lambda: server_log_count(ns, "reason=\"bad_signature\"") > before, 60, 0.3)
        c.check(refused, "SUT log: the wrong-secret broker's registration refused (bad_signature)")
        r = rm.call(ns.addr, rm.GET_BROKER_CLUSTER_INFO)
        ci = json.loads(rm.normalize_legacy_json(r.body_text())) if r.code == 0 else {}
        c.check(broker_addrs(ci, ACL_BROKER + "-bad", 0) == [] and broker_addrs(ci, ACL_BROKER, 0) == [broker.addr],
                "the wrong-secret broker is in no route; %s still is" % ACL_BROKER)
        env.procs.kill(bad.proc)
    finally:
        for p in started:
            if p.proc is not None:
                env.procs.kill(p.proc)


SCENARIOS = {
    1: ("Broker registration (2 masters + 1 slave, clusterList, topicRoute)", s1_registration),
    2: ("Messages flow (Java producer 1000 -> push consumer)", s2_flow),
    3: ("Admin tool (mqadmin KV, config, perms, topic lists, order conf, delete)", s3_admin),
    4: ("Failure: kill -9 broker-a master while producing", s4_failover),
    5: ("No single point of failure (two nameservers, stop/restart one)", s5_two_namesrvs),
    6: ("Older generation (%s broker + client)" % GEN_VERSION["4"], s6_legacy),
    7: ("Go client (rocketmq-client-go/v2 producer + consumer)", s7_go),
    8: ("Differential test against the Java nameserver", s8_differential),
    9: ("TLS: Java client and broker to an enforcing SUT, mutual TLS", s9_tls),
    10: ("Address server: Java producer via -Drocketmq.namesrv.domain", s10_address_server),
    11: ("Rolling replacement of a Java nameserver (same address, kvConfig.json carried over)", s11_rolling_replacement),
    12: ("Access control: signed Java broker, mqadmin with/without credentials, signed producer", s12_access_control),
}
# Scenarios 11-13 (controller mode) live in ctrlmode.py, which uses this module's helpers.
from .ctrlmode import CTRL_SCENARIOS  # noqa: E402
SCENARIOS.update(CTRL_SCENARIOS)

# Scenario 4 kills broker-a, so it runs last when everything is selected (no broker restart needed).
# Scenarios 9, 12 and 13-15 use nameservers and brokers of their own (stopped when they end).
# Scenario 11 turns the Java nameserver `ref` into the SUT, so it runs after scenario 8, which
# compares the two.
RUN_ORDER = [1, 2, 3, 5, 6, 7, 8, 9, 10, 12, 11, 4, 13, 14, 15]
