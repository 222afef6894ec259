"""The controller-mode world of scenarios 13-15, and the controller protocol queries they make.

One `CtrlWorld` per scenario: a group of three controller nodes of one `kind`, the nameserver(s)
the brokers register with, and one broker group (`broker-c` in `ControllerCluster`) of three
Java brokers in controller mode. Kinds:

* `java`: Apache's `org.apache.rocketmq.controller.ControllerStartup` (DLedger, 5.5.0's default
  `controllerType`) x3, and one nameserver under test (`NAMESRV_IMPL`);
* `rust`: our `mqcontroller` x3 with the very same `controller.properties` files, and one
  nameserver under test;
* `embedded`: three nameservers under test with `enableControllerInNamesrv=true` and the same
  controller keys in their `-c` files (ours, or Java's with `NAMESRV_IMPL=java`).

Every controller node listens on the port of its own `controllerDLegerPeers` entry (DLedger's
layout, which ours keeps), so the brokers' `controllerAddr` is the same list for every kind.
Each node's `controller.properties` also gets an `httpListenPort` of its own (ours serves
`/metrics`, `/readyz` there; Java's ignores the key), and an embedded controller's metrics are
on its nameserver's `/metrics`: `ControllerNode.metrics()` reads them (issue 22).
`stop()` kills everything the world started and removes its stores.
"""

import json
import os
import re
import shutil
import time

from . import remoting as rm
from .fixture import Broker, Namesrv, SetupError, java_bin, route, route_brokers
from .procs import free_port_block, http_get, port_open, wait_until

CTRL_CLUSTER = "ControllerCluster"
CTRL_BROKER = "broker-c"
KINDS = ("java", "rust", "embedded")

# Access control of a secured world (scenarios 14 and 15, issue 21): the accounts every
# controller node and nameserver read, the brokers' account (owning broker-c only), and the
# peers' credentials our controller nodes sign their Raft RPCs with.
CTRL_ADMIN = ("ctl-admin", "ctl-admin-secret-1")
CTRL_BROKER_KEY = ("ctl-broker", "ctl-broker-secret-1")
CTRL_OTHER_BROKER = ("ctl-other", "ctl-other-secret-1")
CTRL_PEERS = ("ctl-peers", "ctl-peers-secret-1")
CTRL_ACCOUNTS = """accounts:
  - {accessKey: %s, secretKey: "%s", role: admin}
  - {accessKey: %s, secretKey: "%s", role: broker, clusters: [%s], brokerNames: [%s]}
  - {accessKey: %s, secretKey: "%s", role: broker, brokerNames: [other-*]}
""" % (CTRL_ADMIN + CTRL_BROKER_KEY + (CTRL_CLUSTER, CTRL_BROKER) + CTRL_OTHER_BROKER)


def credentials_json(pair):
    """`{"accessKey":…,"secretKey":…}`, the shape of innerClientAuthenticationCredentials."""
    return json.dumps({"accessKey": pair[0], "secretKey": pair[1]}, separators=(",", ":"))


def controller_conf(group, peers, self_id, store):
    """controller.properties keys shared by Java's ControllerStartup, our mqcontroller and the
    nameservers that embed a controller: Java's own names and defaults, except a small DLedger
    segment (`mappedFileSize`, 1 GiB by default; ours accepts and ignores it)."""
    return {
        "controllerDLegerGroup": group,
        "controllerDLegerPeers": peers,
        "controllerDLegerSelfId": self_id,
        "controllerStorePath": store,
        "mappedFileSize": 16 * 1024 * 1024,
    }


# ---- raw controller queries ----------------------------------------------------------------

def metadata(addr, timeout=2.0):
    """GET_METADATA_INFO (1005): its response header as a dict, or None."""
    try:
        r = rm.call(addr, rm.CONTROLLER_GET_METADATA_INFO, timeout=timeout)
    except Exception:  # noqa: BLE001 - down or not answering: no metadata
        return None
    if r.code != 0:
        return None
    return r.ext or {}


def is_true(v):
    return v is True or str(v).lower() == "true"


SAMPLE = re.compile(r'^(rocketmq_controller_[a-z_]+)(\{[^}]*\})? (\S+)$')


def scrape(http_addr, path="/metrics", timeout=2.0):
    """(status, text) of GET http://http_addr/path; (None, error) when it cannot connect."""
    return http_get(http_addr, path, timeout)


def controller_samples(text):
    """{(name, frozenset of label pairs): value} of every rocketmq_controller_* sample."""
    out = {}
    for ln in text.splitlines():
        m = SAMPLE.match(ln)
        if m:
            labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def sample(samples, name, **labels):
    """The value of `name` whose labels include `labels`, summed over the others; None if absent."""
    want = set(labels.items())
    vals = [v for (n, ls), v in samples.items() if n == name and want <= set(ls)]
    return sum(vals) if vals else None


def replica_info(leader, broker_name, timeout=2.0):
    """GET_REPLICA_INFO (1004) from the leader: (header dict, SyncStateSet body dict) or None."""
    try:
        r = rm.call(leader, rm.CONTROLLER_GET_REPLICA_INFO, {"brokerName": broker_name}, timeout=timeout)
    except Exception:  # noqa: BLE001
        return None
    if r.code != 0:
        return None
    try:
        body = r.body_json() if r.body else {}
    except ValueError:
        body = {}
    return r.ext or {}, body or {}


def sync_state_data(leader, broker_names, timeout=2.0):
    """GET_SYNC_STATE_DATA (1006) from the leader: BrokerReplicasInfo's replicasInfoTable or None."""
    try:
        r = rm.call(leader, rm.CONTROLLER_GET_SYNC_STATE_DATA, body=json.dumps(list(broker_names)).encode(),
                    timeout=timeout)
    except Exception:  # noqa: BLE001
        return None
    if r.code != 0 or not r.body:
        return None
    try:
        return (r.body_json() or {}).get("replicasInfoTable") or {}
    except ValueError:
        return None


def topic_configs(broker_addr, timeout=3.0):
    """Topic names a broker holds (GET_ALL_TOPIC_CONFIG, 21), or None."""
    try:
        r = rm.call(broker_addr, rm.GET_ALL_TOPIC_CONFIG, timeout=timeout)
    except Exception:  # noqa: BLE001
        return None
    if r.code != 0 or not r.body:
        return None
    try:
        return set(((r.body_json() or {}).get("topicConfigTable") or {}).keys())
    except ValueError:
        return None


# ---- processes ------------------------------------------------------------------------------

class ControllerNode:
    """One controller node: a Java ControllerStartup, our mqcontroller, or a nameserver embedding one."""

    def __init__(self, world, idx, port):
        self.world = world
        self.idx = idx
        self.id = "n%d" % idx
        self.port = port
        self.addr = "127.0.0.1:%d" % port
        self.dir = os.path.join(world.env.rundir, "ctl-%s-%s" % (world.kind, self.id))
        os.makedirs(self.dir, exist_ok=True)
        self.store = os.path.join(world.store_dir, "ctl-" + self.id)
        self.proc = None
        self.namesrv = None  # kind "embedded": the nameserver hosting this node
        # Standalone nodes: an HTTP port of their own (three on one host cannot share 8081).
        self.http_port = free_port_block((0,)) if world.kind != "embedded" else None

    def keys(self):
        w = self.world
        keys = controller_conf(w.group, w.peers, self.id, self.store)
        if self.http_port is not None:
            keys["httpListenPort"] = self.http_port
        keys.update(w.auth_keys())
        if w.secured:
            keys["controllerPeerCredentials"] = credentials_json(CTRL_PEERS)
        return keys

    def http_addr(self):
        """Where this node's metrics are: our mqcontroller's HTTP port, or the HTTP port of our
        nameserver embedding it; None for Java's (no metrics)."""
        if self.namesrv is not None:
            port = self.namesrv.http_port
        else:
            port = self.http_port if self.world.kind == "rust" else None
        return None if port is None else "127.0.0.1:%d" % port

    def metrics(self):
        """The node's rocketmq_controller_* samples, or None (Java's, or not answering)."""
        addr = self.http_addr()
        if addr is None or not self.alive():
            return None
        status, text = scrape(addr)
        return controller_samples(text) if status == 200 else None

    def summary(self):
        """What the metrics say of this node and of broker-c, or None."""
        m = self.metrics()
        if m is None:
            return None
        role = next((dict(ls).get("role") for (n, ls), v in m.items()
                     if n == "rocketmq_controller_role" and v == 1), None)
        g = {"broker_name": CTRL_BROKER}
        return {
            "role": role,
            "term": sample(m, "rocketmq_controller_raft_term"),
            "commit": sample(m, "rocketmq_controller_raft_commit_index"),
            "leader_changes": sample(m, "rocketmq_controller_leader_changes_total"),
            "elected_master_lost": sample(m, "rocketmq_controller_elections_total", trigger="master_lost", result="elected"),
            "elected_heartbeat_timeout": sample(m, "rocketmq_controller_elections_total", trigger="heartbeat_timeout", result="elected"),
            "elected_admin": sample(m, "rocketmq_controller_elections_total", trigger="admin", result="elected"),
            "has_master": sample(m, "rocketmq_controller_broker_group_has_master", **g),
            "sync_state_set": sample(m, "rocketmq_controller_sync_state_set_size", **g),
            "master_epoch": sample(m, "rocketmq_controller_master_epoch", **g),
            "live_brokers": sample(m, "rocketmq_controller_live_brokers"),
            "ready": sample(m, "rocketmq_controller_ready"),
        }

    def prepare(self):
        if self.world.kind == "embedded":
            extra = {"enableControllerInNamesrv": "true"}
            extra.update(self.keys())
            self.namesrv = Namesrv(self.world.env, "ctl-emb-" + self.id, self.world.env.impl, extra=extra, gen="c")
            return
        self.conf = os.path.join(self.dir, "controller.properties")
        with open(self.conf, "w") as f:
            for k, v in self.keys().items():
                f.write("%s=%s\n" % (k, v))

    def start(self):
        env = self.world.env
        if self.namesrv is not None:
            self.namesrv.start()
            self.proc = self.namesrv.proc
            return
        if self.world.kind == "rust":
            argv = [env.artifacts.rust_controller(), "-c", self.conf]
            penv = {"RUST_LOG": os.environ.get("RUST_LOG", "info")}
            name = "controller-%s-rust" % self.id
        else:
            lib = env.artifacts.libdir("c")
            argv = [java_bin(), "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                    "-Duser.home=" + self.dir,
                    "-Drmq.logback.configurationFile=" + env.shaded_logback,
                    "-cp", lib + "/*", "org.apache.rocketmq.controller.ControllerStartup", "-c", self.conf]
            penv = {"ROCKETMQ_HOME": env.rmq_home}
            name = "controller-%s-java" % self.id
        self.proc = env.procs.start(name, argv, env=penv, cwd=self.dir)

    def alive(self):
        return self.proc is not None and self.proc.alive()

    def wait_ready(self, timeout):
        """Boot line printed (standalone) / nameserver serving (embedded), and the controller port
        answering GET_METADATA_INFO."""
        if self.namesrv is not None:
            self.namesrv.wait_ready(timeout)

        def ready():
            if not self.proc.alive():
                raise SetupError("controller %s (%s) exited (rc=%s):\n%s" % (
                    self.id, self.world.kind, self.proc.popen.returncode, self.proc.log_tail()))
            if self.namesrv is None and "The Controller Server boot success" not in self.proc.log_text():
                return False
            return port_open(self.addr) and metadata(self.addr) is not None
        deadline = time.time() + timeout
        while time.time() < deadline:
            if ready():
                return
            time.sleep(0.3)
        raise SetupError("controller %s (%s) not answering on %s after %ds:\n%s" % (
            self.id, self.world.kind, self.addr, timeout, self.proc.log_tail()))

    def kill(self):
        if self.proc is not None:
            self.world.env.procs.kill(self.proc)


class CtrlWorld:
    """Three controller nodes of one kind, the nameserver(s), three brokers in controller mode."""

    def __init__(self, env, kind, secured=False):
        """`secured` (ours only): access control on every controller node and nameserver
        (CTRL_ACCOUNTS, authenticationMode=writes), the brokers signing with their account."""
        assert kind in KINDS
        assert not (secured and kind == "java")
        self.env = env
        self.kind = kind
        self.secured = secured
        self.auth_file = os.path.join(env.rundir, "ctl-%s-auth.yml" % kind)
        if secured:
            with open(self.auth_file, "w") as f:
                f.write(CTRL_ACCOUNTS)
            os.chmod(self.auth_file, 0o600)
        self.group = "interop-%s" % kind
        self.store_dir = os.path.join(env.store_root, "ctl-" + kind)
        os.makedirs(self.store_dir, exist_ok=True)
        ports = [free_port_block((0,)) for _ in range(3)]
        self.nodes = [ControllerNode(self, i, p) for i, p in enumerate(ports)]
        self.peers = ";".join("%s-%s" % (n.id, n.addr) for n in self.nodes)
        self.controller_addrs = ";".join(n.addr for n in self.nodes)
        for n in self.nodes:
            n.prepare()
        if kind == "embedded":
            self.namesrvs = [n.namesrv for n in self.nodes]
        elif secured and env.impl == "rust":
            self.namesrvs = [Namesrv(env, "ctl-" + kind, env.impl, gen="c", props=self.auth_keys())]
        else:
            self.namesrvs = [Namesrv(env, "ctl-" + kind, env.impl, gen="c")]
        self.brokers = []
        for i in range(3):
            b = Broker(env, "ctl-%s-b%d" % (kind, i), "c", CTRL_CLUSTER, CTRL_BROKER, -1)
            # Apache's quick-start controller-mode broker (distribution/conf/controller/quick-start):
            # brokerId -1 and role SLAVE (the controller assigns both), all three controllers.
            b.conf_overrides = {
                "brokerId": -1,
                "brokerRole": "SLAVE",
                "enableControllerMode": "true",
                "controllerAddr": self.controller_addrs,
                "allAckInSyncStateSet": "true",
                "haListenPort": b.port + 1,
            }
            if secured:
                # Signs every call to the nameservers and the controllers (one remoting client).
                b.conf_overrides["innerClientAuthenticationCredentials"] = credentials_json(CTRL_BROKER_KEY)
                b.conf_overrides["authenticationMetadataProvider"] = (
                    "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider")
            self.brokers.append(b)

    def auth_keys(self):
        """The access-control keys of every secured server ({} when not secured)."""
        if not self.secured:
            return {}
        return {"authenticationEnabled": "true", "authenticationMode": "writes",
                "authConfigPath": self.auth_file}

    # ---- addresses ----

    def ns_addrs(self):
        """Addresses of the nameservers (all, dead or alive), `;`-joined as clients take them."""
        return ";".join(n.addr for n in self.namesrvs)

    def live_ns(self):
        return [n for n in self.namesrvs if n.alive()]

    def broker_by_addr(self, addr):
        for b in self.brokers:
            if b.addr == addr:
                return b
        return None

    # ---- lifecycle ----

    def start_servers(self, say):
        """Controllers and (standalone kinds) the nameserver, in parallel; waits until each answers."""
        if self.kind == "rust":
            self.env.artifacts.rust_controller()
        if self.kind == "java" or self.env.impl == "java":
            lib = self.env.artifacts.libdir("c")
            if self.kind == "java" and not any(f.startswith("rocketmq-controller-") for f in os.listdir(lib)):
                raise SetupError("%s has no rocketmq-controller jar (ControllerStartup)" % lib)
        if self.env.impl == "rust":
            self.env.artifacts.rust_namesrv()
        t0 = time.time()
        for n in self.nodes:
            n.start()
        extra = [ns for ns in self.namesrvs if ns not in [n.namesrv for n in self.nodes]]
        for ns in extra:
            ns.start()
        self.env._parallel([lambda n=n: n.wait_ready(120) for n in self.nodes]
                           + [lambda ns=ns: ns.wait_ready(90) for ns in extra])
        say("  %s controllers answering in %.1fs: %s; nameserver(s) %s" % (
            self.kind, time.time() - t0, self.peers, self.ns_addrs()))

    def start_brokers(self, say):
        t0 = time.time()
        for b in self.brokers:
            b.start(self.ns_addrs())
        self.env._parallel([lambda b=b: b.wait_boot(180) for b in self.brokers])
        say("  controller-mode brokers booted in %.1fs: %s" % (
            time.time() - t0, ", ".join("%s=%s" % (b.key, b.addr) for b in self.brokers)))

    def stop(self):
        procs = [n.proc for n in self.nodes] + [ns.proc for ns in self.namesrvs] + [b.proc for b in self.brokers]
        for p in procs:
            if p is not None:
                self.env.procs.kill(p)
        shutil.rmtree(self.store_dir, ignore_errors=True)
        for b in self.brokers:
            shutil.rmtree(os.path.join(self.env.store_root, "broker-" + b.key), ignore_errors=True)

    # ---- controller state ----

    def leader(self):
        """(node, metadata) of the leader every live node agrees on, or None (no leader yet,
        or the nodes disagree)."""
        live = [n for n in self.nodes if n.alive()]
        leader = None
        for n in live:
            md = metadata(n.addr)
            if md is None:
                return None
            named = md.get("controllerLeaderAddress")
            if not named:
                return None
            if leader is not None and named != leader:
                return None
            leader = named
            if named == n.addr and not is_true(md.get("isLeader")):
                return None
        node = next((n for n in live if n.addr == leader), None)
        if node is None:
            return None
        md = metadata(node.addr)
        return (node, md) if md is not None and is_true(md.get("isLeader")) else None

    def wait_leader(self, timeout, interval=0.1):
        return wait_until(self.leader, timeout, interval)

    def master_in_controller(self):
        """The leader's view of broker-c: (masterBrokerId, masterAddress, masterEpoch, syncStateSet ids)."""
        ld = self.leader()
        if ld is None:
            return None
        ri = replica_info(ld[0].addr, CTRL_BROKER)
        if ri is None:
            return None
        h, body = ri
        mid = h.get("masterBrokerId")
        return (int(mid) if mid not in (None, "") else None, h.get("masterAddress") or None,
                int(h.get("masterEpoch") or 0), sorted(int(x) for x in body.get("syncStateSet") or []))

    def replicas(self):
        """The leader's BrokerReplicasInfo entry for broker-c (1006), or None."""
        ld = self.leader()
        if ld is None:
            return None
        t = sync_state_data(ld[0].addr, [CTRL_BROKER])
        return None if t is None else t.get(CTRL_BROKER)

    # ---- nameserver view ----

    def route_members(self, topic, ns=None):
        """{id(str): addr} of broker-c in the route of `topic` on a live nameserver, or None."""
        targets = [ns] if ns else [n.addr for n in self.live_ns()]
        for addr in targets:
            rt = route(addr, topic)
            if rt is not None:
                return route_brokers(rt).get(CTRL_BROKER, {})
        return None
