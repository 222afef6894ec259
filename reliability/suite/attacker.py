"""The attacker on the network of scenario 7 (#21): each function is one attack family of issue
#21's findings, run in its own thread from the same address (127.0.0.1) as the legitimate
clients until a deadline, counting what the server answered. Raw sockets and the interop
harness's frame encoder and signer; nothing here waits without a deadline.

`Tally` keeps, per attack, the answers by outcome ("16", "0", "closed", "http 401", ...); an
outcome in `applied` is one the attack wanted (the server did what an unauthorised client asked).
"""

import base64
import json
import socket
import struct
import threading
import time
import urllib.error
import urllib.request
import zlib

from harness import remoting as rm

ATK_READER = ("atk-reader", "atk-reader-secret-1")
ATK_BROKER = ("atk-broker", "atk-broker-secret-1")  # brokerNames: ["atk-*"]
# Another broker account of the attacker's own groups, for the controller port: its refused
# operator elections fill its failure window, which must not block ATK_BROKER's fencing.
ATK_CTL_BROKER = ("atk-ctl-broker", "atk-ctl-secret-01")  # brokerNames: ["atk-*"]
GUESSED = ("guessed", "guessed-secret-0001")  # an admin account whose secret the guesser tries
# Controller request codes the interop harness does not name: Java's UPDATE_CONTROLLER_CONFIG and
# our Raft RPCs between controller nodes (crates/controller/src/raft/network.rs).
UPDATE_CONTROLLER_CONFIG = 1009
RAFT_APPEND = 60101
RAFT_VOTE = 60102
SPOOFED = "10.9.0.5"  # inside globalWhiteRemoteAddresses
# A complete log record the attacker composes inside a broker address and a cluster name.
FORGED = "2026-12-02T12:00:00.000000Z  INFO audit: accepted who=account:ops peer=10.0.0.1:1 code=205 result=0"
ESCAPES = "\x1b[2J\x1b]0;owned\x07"
SMUGGLE = [
    # Finding 2's payload: a literal backslash-n the properties parser turns into a newline.
    "httpNamesrvAddr=1.2.3.4:9876\\nauthenticationEnabled=false\\nauthConfigPath=/x.yml",
    "rocketmqHome=/tmp\\u000aauthenticationEnabled=false",
    "productEnvName=x\nconfigStorePath=/tmp/atk-namesrv.properties",
    "kvConfigPath=/tmp/atk-kv.json",
    "configBlackList=none",
    "clusterTest=true\\\n  authenticationEnabled=false",
]


class Tally:
    """Outcomes of one attack (thread-safe)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.applied = 0
        self.examples = []

    def add(self, outcome, applied=False, what=""):
        with self.lock:
            self.counts[outcome] = self.counts.get(outcome, 0) + 1
            if applied:
                self.applied += 1
                if len(self.examples) < 5 and what and what not in self.examples:
                    self.examples.append(what)

    def requests(self):
        return sum(self.counts.values())

    def text(self):
        return ", ".join("%s: %d" % kv for kv in sorted(self.counts.items()))


def _answer(addr, frame, preface=b"", timeout=5.0):
    """Sends preface + frame on a new connection; the answer's code as text, or "closed"."""
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(preface + frame)
            head = _read(s, 4)
            if head is None:
                return "closed", None
            (total,) = struct.unpack(">i", head)
            body = _read(s, total)
            if body is None:
                return "closed", None
            resp = rm.decode_frame(body)
            return str(resp.code), resp
    except socket.timeout:
        return "no answer", None
    except OSError:
        return "closed", None


def _read(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _req(code, ext=None, body=None, credentials=None):
    if credentials is not None:
        ext = rm.signed(ext, body.encode() if isinstance(body, str) else body, *credentials)
    return rm.encode_request(code, ext, body)


def _pace(deadline, secs):
    time.sleep(max(0.0, min(secs, deadline - time.time())))


def proxy_spoof(addr, deadline, t):
    """Finding 1: PROXY v1/v2 prefaces naming an allowed address before unsigned writes."""
    port = int(addr.rsplit(":", 1)[1])
    v1 = ("PROXY TCP4 %s 127.0.0.1 1234 %d\r\n" % (SPOOFED, port)).encode()
    v6 = ("PROXY TCP6 ::ffff:10.9.0.9 ::1 1234 %d\r\n" % port).encode()
    v2 = (b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11]) + struct.pack(">H", 12)
          + socket.inet_aton("10.9.0.7") + socket.inet_aton("127.0.0.1") + struct.pack(">HH", 1234, port))
    cases = [
        (v1, _req(rm.PUT_KV_CONFIG, {"namespace": "AtkNS", "key": "proxy", "value": "owned"}), "v1 PUT_KV_CONFIG"),
        (v2, _req(rm.UPDATE_NAMESRV_CONFIG, body=SMUGGLE[0]), "v2 UPDATE_NAMESRV_CONFIG"),
        (v6, _req(rm.DELETE_KV_CONFIG, {"namespace": "VictimNS", "key": "victim"}), "TCP6 DELETE_KV_CONFIG"),
    ]
    while time.time() < deadline:
        for preface, frame, what in cases:
            outcome, _ = _answer(addr, frame, preface)
            t.add(outcome, outcome == "0", what)
        _pace(deadline, 0.1)


def config_smuggle(addr, deadline, t):
    """Finding 2: UPDATE_NAMESRV_CONFIG smuggling keys, unsigned and with a reader account."""
    while time.time() < deadline:
        for body in SMUGGLE:
            for creds in (None, ATK_READER):
                outcome, _ = _answer(addr, _req(rm.UPDATE_NAMESRV_CONFIG, body=body, credentials=creds))
                t.add(outcome, outcome == "0", body.split("=", 1)[0])
        _pace(deadline, 0.2)


def lockout(addr, deadline, t):
    """Finding 3: unsigned and unknown-key failures from the legitimate clients' address, and a
    guesser of a third account who, once blocked, sends the right secret."""
    put = {"namespace": "AtkNS", "key": "lockout", "value": "owned"}
    i = 0
    while time.time() < deadline:
        i += 1
        for creds, what in ((None, "unsigned"), (("no-such-key-%d" % i, "x"), "unknown key"),
                            ((GUESSED[0], "guess-%d" % i), "wrong secret")):
            outcome, resp = _answer(addr, _req(rm.PUT_KV_CONFIG, put, credentials=creds))
            t.add(what + " " + outcome, outcome == "0", what)
            if what == "wrong secret" and resp is not None and "too many failed" in (resp.remark or ""):
                # Blocked: now the right secret. It must be refused without being verified.
                outcome, _ = _answer(addr, _req(rm.PUT_KV_CONFIG, put, credentials=GUESSED))
                t.add("right secret while blocked " + outcome, outcome == "0", "right secret while blocked")
        _pace(deadline, 0.05)


def _http(url, method="GET", headers=None, timeout=5):
    req = urllib.request.Request(url, method=method, headers=headers or {},
                                 data=b"owned" if method in ("POST", "PUT") else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def _basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()}


def http_side_door(http_addr, deadline, t, outside_addr=None, reader=None):
    """Finding 4: the HTTP port without credentials, with X-Forwarded-For, with wrong Basic
    credentials, write methods; valid credentials over plain HTTP from a non-loopback address."""
    if not http_addr:
        return
    paths = ["/api/v1/config", "/api/v1/kv", "/api/v1/kv/VictimNS", "/api/v1/topics", "/api/v1/clusters",
             "/api/v1/events", "/api/v1/stats", "/"]
    while time.time() < deadline:
        for p in paths:
            for headers, what in (({}, "anonymous"), ({"X-Forwarded-For": "127.0.0.1", "X-Real-IP": SPOOFED}, "XFF"),
                                  (_basic("no-such-user", "x"), "unknown user"),
                                  (_basic(GUESSED[0], "wrong"), "wrong password")):
                st = _http("http://%s%s" % (http_addr, p), headers=headers)
                t.add("%s http %s" % (what, st), st == 200, "%s %s" % (what, p))
        for m in ("POST", "PUT", "DELETE"):
            st = _http("http://%s/api/v1/kv/VictimNS" % http_addr, m)
            t.add("%s http %s" % (m, st), st is not None and 200 <= st < 300, m)
        if outside_addr and reader:
            st = _http("http://%s/api/v1/kv/VictimNS" % outside_addr, headers=_basic(*reader))
            t.add("plain credentials from %s http %s" % (outside_addr.rsplit(":", 1)[0], st), st == 200,
                  "plain credentials from a non-loopback address")
        _pace(deadline, 0.2)


def register_body(topics, state_version, counter=1):
    table = {tp: {"topicName": tp, "readQueueNums": 1, "writeQueueNums": 1, "perm": 6,
                  "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False} for tp in topics}
    return json.dumps({"topicConfigSerializeWrapper": {"topicConfigTable": table, "dataVersion": {
        "counter": counter, "stateVersion": state_version, "timestamp": 1}},
        "filterServerList": []}, separators=(",", ":")).encode()


def register_frame(cluster, name, addr, body, credentials=None, ha=None):
    ext = {"brokerName": name, "brokerAddr": addr, "clusterName": cluster, "haServerAddr": ha or addr,
           "brokerId": "0", "enableActingMaster": "false", "compressed": "false",
           "bodyCrc32": str(zlib.crc32(body) & 0xFFFFFFFF)}
    if credentials is not None:
        ext = rm.signed(ext, body, *credentials)
    return rm.encode_request(rm.REGISTER_BROKER, ext, body)


def unregister_frame(cluster, name, addr, credentials=None):
    return _req(rm.UNREGISTER_BROKER, {"brokerName": name, "brokerAddr": addr, "clusterName": cluster,
                                       "brokerId": "0"}, credentials=credentials)


def ownership(addr, deadline, t, victim):
    """Finding 5: a broker account owning only `atk-*` overwrites and unregisters the real broker
    (`victim`: cluster, name, address); unsigned too."""
    cluster, name, baddr = victim
    body = register_body([], 0, counter=99)
    while time.time() < deadline:
        for creds, who in ((ATK_BROKER, "atk-broker"), (None, "unsigned")):
            outcome, _ = _answer(addr, register_frame(cluster, name, "127.0.0.1:1", body, creds))
            t.add("%s register %s" % (who, outcome), outcome == "0", "register over " + name)
            outcome, _ = _answer(addr, unregister_frame(cluster, name, baddr, creds))
            t.add("%s unregister %s" % (who, outcome), outcome == "0", "unregister " + name)
        _pace(deadline, 0.25)


def wire_input(addr, deadline, t, fenced):
    """Finding 7: forged log lines in a cluster name and broker addresses, 10 MB KV keys, and
    registrations fenced by a lower stateVersion, each with a new 10 KB address (`fenced` Tally)."""
    forged_addr = "127.0.0.1:10911\n" + FORGED + ESCAPES
    forged_cluster = "AtkCluster\n" + FORGED
    own = register_body(["AtkTopicA", "AtkTopicB"], 5)
    lower = register_body(["AtkTopicA", "AtkTopicB"], 3)
    # The fencing master registers on a connection it keeps, as a broker does: a broker leaves
    # the routes when its connection closes, and a group without a live master fences nothing.
    master = rm.Conn(addr, timeout=10)
    try:
        _fenced_loop(addr, deadline, t, fenced, master, own, lower, forged_addr, forged_cluster)
        fenced.add("holder at the end: %s" % fence_holder(addr))
    finally:
        master.close()


def _fenced_loop(addr, deadline, t, fenced, master, own, lower, forged_addr, forged_cluster):
    big_key = "k" * (10 << 20)
    pad = "a" * (10 * 1024)
    i = 0
    last_big = 0.0
    last_master = 0.0
    while time.time() < deadline:
        if time.time() - last_master > 10.0:
            last_master = time.time()
            t.add("own group registered %s" % _on(master, register_frame("AtkCluster", "atk-fence", "127.0.0.1:2",
                                                                         own, ATK_BROKER)))
        for creds, who in ((ATK_BROKER, "atk-broker"), (None, "unsigned")):
            outcome, _ = _answer(addr, register_frame(forged_cluster, "atk-forge", forged_addr, own, creds,
                                                      ha=forged_addr + "\r\x1b[1A"))
            t.add("forged-line registration (%s) %s" % (who, outcome))
        if time.time() - last_big > 2.0:
            last_big = time.time()
            for creds, who in ((None, "unsigned"), (ATK_READER, "reader")):
                outcome, _ = _answer(addr, _req(rm.PUT_KV_CONFIG, {"namespace": "AtkNS", "key": big_key, "value": "v"},
                                                credentials=creds), timeout=20)
                t.add("10 MB key (%s) %s" % (who, outcome), outcome == "0", "10 MB key")
        try:
            with rm.Conn(addr, timeout=5) as c:
                for _ in range(50):
                    i += 1
                    a = "10.1.%d.%d:%s%d" % (i // 250 % 250, i % 250, pad, i)
                    fenced.add(str(_on(c, register_frame("AtkCluster", "atk-fence", a, lower, ATK_BROKER))))
        except Exception as e:  # noqa: BLE001 - a broken connection is an outcome
            fenced.add(type(e).__name__)
        _pace(deadline, 0.1)


def _on(conn, frame):
    """The answer code of `frame` sent on an open connection."""
    conn.sock.sendall(frame)
    while True:
        (total,) = struct.unpack(">i", conn._read_exact(4))
        resp = rm.decode_frame(conn._read_exact(total))
        if resp.flag is not None and resp.flag & 1:
            return resp.code


def fence_holder(addr):
    """Who holds broker id 0 of `atk-fence` (its master "127.0.0.1:2" unless a fenced
    registration took its place)."""
    try:
        # Its broker account (the reader account is blocked here by now: its refused 318s).
        r = rm.call(addr, rm.GET_BROKER_CLUSTER_INFO, credentials=ATK_BROKER)
        if r.code != 0:
            return "cluster info refused (%s)" % r.code
        ci = json.loads(rm.normalize_legacy_json(r.body_text()))
        holder = ((ci.get("brokerAddrTable") or {}).get("atk-fence") or {}).get("brokerAddrs", {}).get("0")
        return "the master" if holder == "127.0.0.1:2" else "a fenced address" if holder else "none"
    except Exception as e:  # noqa: BLE001
        return type(e).__name__


def controller_port(ctrl_addr, deadline, t, group, victim):
    """Finding 6: the embedded controller's port. Elections, metadata cleaning and config
    updates unsigned, as a reader and as a broker account of another group; Raft votes and
    appends from a client that is not a peer (unsigned and reader-signed). Each should be
    refused (16); a SUCCESS is an applied attack."""
    cluster, name, _ = victim
    elect = {"clusterName": cluster, "brokerName": name, "brokerId": "1", "designateElect": "true",
             "invokeTime": "1"}
    own = dict(elect, designateElect="false")
    clean = {"clusterName": cluster, "brokerName": name, "brokerControllerIdsToClean": "1",
             "isCleanLivingBroker": "true", "invokeTime": "1"}
    vote = b'{"vote":{"leader_id":{"term":999999,"node_id":9},"committed":false},"last_log_id":null}'
    append = (b'{"vote":{"leader_id":{"term":999999,"node_id":9},"committed":true},'
              b'"prev_log_id":null,"entries":[],"leader_commit":null}')
    raft = {"group": group}
    cases = []
    for who, creds in (("unsigned", None), ("reader", ATK_READER)):
        cases += [
            ("%s electMaster" % who, rm.CONTROLLER_ELECT_MASTER, elect, None, creds),
            ("%s cleanBrokerMetadata" % who, rm.CLEAN_BROKER_DATA, clean, None, creds),
            ("%s updateControllerConfig" % who, UPDATE_CONTROLLER_CONFIG, None,
             "authenticationEnabled=false\ncontrollerStorePath=/tmp/atk\n", creds),
            ("%s Raft vote" % who, RAFT_VOTE, raft, vote, creds),
            ("%s Raft append" % who, RAFT_APPEND, raft, append, creds),
        ]
    cases += [("foreign broker electMaster", rm.CONTROLLER_ELECT_MASTER, own, None, ATK_CTL_BROKER),
              ("foreign broker operator electMaster", rm.CONTROLLER_ELECT_MASTER, elect, None, ATK_CTL_BROKER)]
    while time.time() < deadline:
        for what, code, ext, body, creds in cases:
            outcome, _ = _answer(ctrl_addr, _req(code, ext, body, creds))
            t.add(outcome, outcome == "0", what)
        _pace(deadline, 0.2)


def clean_up_own(addr):
    """The attacker's own groups go again (signed by their owner): the route tables compared
    after the attack hold nothing of it."""
    for cluster, name, a in (("AtkCluster\n" + FORGED, "atk-forge", "127.0.0.1:10911\n" + FORGED + ESCAPES),
                             ("AtkCluster", "atk-fence", "127.0.0.1:2")):
        _answer(addr, unregister_frame(cluster, name, a, ATK_BROKER))


ATTACKS = [
    ("1 PROXY preface naming an allowed address (v1, v2, TCP6) before unsigned writes", "proxy"),
    ("2 UPDATE_NAMESRV_CONFIG smuggling (\\n, \\u000a, black-listed keys), unsigned and as a reader", "config"),
    ("3 lock-out flood: unsigned, unknown keys, a guesser of a third account", "lockout"),
    ("4 HTTP side door: anonymous, X-Forwarded-For, wrong Basic, write methods, plain credentials", "http"),
    ("5 broker ownership: atk-broker registers over / unregisters the real broker", "ownership"),
    ("6 controller port: elections, cleaning, config updates, Raft votes and appends from non-peers", "controller"),
    ("7 wire input: forged log lines, 10 MB KV keys (fenced registrations: their own row)", "wire"),
]


def run_all(addr, secs, victim, http_addr=None, outside_http=None, reader=None, controller=None):
    """Every attack at once for `secs` seconds; returns {key: Tally} (and "fenced").
    `controller`: (address, group) of an embedded controller to attack, or None."""
    deadline = time.time() + secs
    tallies = {key: Tally() for _, key in ATTACKS}
    tallies["fenced"] = Tally()
    jobs = [
        (proxy_spoof, (addr, deadline, tallies["proxy"])),
        (config_smuggle, (addr, deadline, tallies["config"])),
        (lockout, (addr, deadline, tallies["lockout"])),
        (http_side_door, (http_addr, deadline, tallies["http"], outside_http, reader)),
        (ownership, (addr, deadline, tallies["ownership"], victim)),
        (wire_input, (addr, deadline, tallies["wire"], tallies["fenced"])),
    ]
    if controller is not None:
        jobs.append((controller_port, (controller[0], deadline, tallies["controller"], controller[1], victim)))
    threads = [threading.Thread(target=_guarded, args=(fn, a), daemon=True) for fn, a in jobs]
    for th in threads:
        th.start()
    for th in threads:
        th.join(secs + 60)
    clean_up_own(addr)
    return tallies


def _guarded(fn, args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - an attack thread's bug is reported, not raised
        args[2].add("attacker error %r" % e)
