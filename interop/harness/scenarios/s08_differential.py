"""Scenario 8: differential test against the Java nameserver."""

import json
import os
import time
import zlib

from .. import diff
from .. import remoting as rm
from ..fixture import CLUSTER, IDIR, LEGACY_CLUSTER, GEN_VERSION, cluster_info
from ..procs import wait_until

TITLE = "Differential test against the Java nameserver"


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
