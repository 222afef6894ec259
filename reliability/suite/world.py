"""The processes a scenario drives: nameservers under test (ours or Java) that can be restarted
gracefully or killed on their own port, the `nsfault` load agents, Java brokers and producers
(through the interop harness), and the build of what they need.
"""

import json
import os
import queue
import signal
import subprocess
import threading
import time

from harness import remoting as rm  # interop/harness
from harness.fixture import Artifacts, Broker, Env, java_bin
from harness.procs import Procs, free_port_block, port_open

from .base import CACHE, ROOT, Fail, RssSampler, say

JAVA_VERSION = os.environ.get("RMQ5_VERSION", "5.5.0")
# The Java nameserver's JVM: a 1 GiB heap cap (as bench/run; the registration storm holds a
# million queue entries), G1, no TLS listener (its self-signed context costs seconds of CPU).
JAVA_NS_OPTS = ["-Xmx1g", "-XX:+UseG1GC", "-Dtls.server.mode=disabled"]


class World:
    """Everything one run of the suite starts, and how to build it."""

    def __init__(self, rundir):
        self.rundir = rundir
        self.procs = Procs(os.path.join(rundir, "logs"))
        self.artifacts = Artifacts(self.procs, say)
        self._env = None
        self.ours_bin = None
        self.nsfault_bin = None
        self.ours_keys = set()

    def build(self, need_java):
        """Builds mqnamesrv and nsfault (release) and, with `need_java`, fetches the Java jars
        and compiles the interop Java client. Raises Fail with the build output on error."""
        target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
        if not os.path.isabs(target):
            target = os.path.join(ROOT, target)
        if os.environ.get("NAMESRV_BIN") and os.environ.get("NSFAULT_BIN"):
            self.ours_bin, self.nsfault_bin = (os.path.abspath(os.path.join(ROOT, os.environ[k]))
                                               for k in ("NAMESRV_BIN", "NSFAULT_BIN"))
        else:
            say("building mqnamesrv and nsfault (cargo build --release) ...")
            rc, out, secs = self.procs.run(
                "cargo-build", ["cargo", "build", "--release", "-p", "daemon", "-p", "bench",
                                "--bin", "mqnamesrv", "--bin", "nsfault"], timeout=2400, cwd=ROOT)
            if rc != 0:
                raise Fail("cargo build failed (rc=%s):\n%s" % (rc, out[-4000:]))
            self.ours_bin = os.path.join(target, "release", "mqnamesrv")
            self.nsfault_bin = os.path.join(target, "release", "nsfault")
            say("  built in %.0fs" % secs)
        # The keys this build knows (`-p` prints every effective key): features are detected,
        # so the scenarios assert what the build under test claims to support.
        out = subprocess.run([self.ours_bin, "-p"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=30).stdout.decode("utf-8", "replace")
        self.ours_keys = {ln.split("=", 1)[0].strip() for ln in out.splitlines() if "=" in ln}
        if need_java:
            os.environ.setdefault("RMQ5_VERSION", JAVA_VERSION)
            self.artifacts.libdir("5")
            self.artifacts.classes("5")

    def has(self, key):
        """Whether our build has config key `key`."""
        return key in self.ours_keys

    @property
    def env(self):
        """The interop harness's environment (Java brokers, clients, mqadmin), made on first use."""
        if self._env is None:
            self._env = Env("rust", self.rundir, self.procs, self.artifacts, say, with_ref=False)
        return self._env

    def cleanup(self):
        self.procs.cleanup()
        if self._env is not None:
            self._env.remove_stores()

    # ---- Java brokers and clients ------------------------------------------------------------

    def broker(self, key, cluster, name, namesrv_addrs, overrides=None, netns=None, ip=None):
        """Starts a 5.x broker (master) registering with `namesrv_addrs` and waits for its boot.

        `overrides`: broker.conf keys; `netns`/`ip`: run it inside that network namespace and
        advertise `ip` (brokerIP1/brokerIP2)."""
        b = Broker(self.env, key, "5", cluster, name, 0)
        b.conf_overrides = dict(overrides or {})
        if ip:
            b.conf_overrides.update({"brokerIP1": ip, "brokerIP2": ip})
            b.addr = "%s:%d" % (ip, b.port)
        if netns:
            b.argv_prefix = ["ip", "netns", "exec", netns]
        b.start(";".join(namesrv_addrs))
        b.wait_boot(180)
        return b

    def create_topic(self, topic, broker, ns_addr, queues=4):
        """mqadmin updateTopic on one broker (it then registers the topic with its nameservers)."""
        rc, out = self.env.mqadmin(["updateTopic", "-b", broker.addr, "-t", topic, "-r", str(queues),
                                    "-w", str(queues)], ns=ns_addr, timeout=120)
        if rc != 0 or "success" not in out:
            raise Fail("mqadmin updateTopic -b %s -t %s failed:\n%s" % (broker.addr, topic, out[-2000:]))

    def producer(self, mode, ns_addr, topic, duration_ms, **kw):
        """A Java producer (InteropClient produce-loop / produce-fresh) running in the background."""
        return self.env.jclient_start("5", mode, ns=ns_addr, topic=topic, durationMs=duration_ms, **kw)


def parse_sends(text):
    """`SEND <start ms> <latency ms> OK|FAIL <detail...>` lines of an InteropClient producer."""
    out = []
    for ln in text.splitlines():
        p = ln.split()
        if len(p) >= 4 and p[0] == "SEND" and p[1].isdigit():
            out.append({"t": int(p[1]), "ms": int(p[2]), "ok": p[3] == "OK", "detail": " ".join(p[4:])})
    return out


class NameServer:
    """One nameserver under test, on a fixed port across restarts.

    kind `ours` (mqnamesrv -c) or `java` (Apache's NamesrvStartup -c); `props` are written to the
    properties file both read (Java keys; ours also knows its own, e.g. routeSnapshotEnable).
    """

    def __init__(self, world, key, kind, props=None, kv_dir=None):
        self.world = world
        self.key = key
        self.kind = kind
        self.port = free_port_block((0,))
        self.addr = "127.0.0.1:%d" % self.port
        self.dir = os.path.join(world.rundir, "ns-" + key)
        os.makedirs(self.dir, exist_ok=True)
        self.kv_dir = kv_dir or self.dir
        self.kv_path = os.path.join(self.kv_dir, "kvConfig.json")
        self.props = {"listenPort": self.port, "kvConfigPath": self.kv_path}
        if kind == "ours":
            # Ours serves HTTP on httpListenPort (default 8080, which the run's nameservers would
            # share): a free port of its own, kept across restarts.
            self.props.update({"httpListenPort": free_port_block((0,)), "httpBindAddress": "127.0.0.1"})
        self.props.update(props or {})
        self.conf = os.path.join(self.dir, "namesrv.properties")
        self.proc = None
        self.starts = 0
        self.rss = None
        # (access key, secret key) its readiness probe signs with (authenticationMode=all).
        self.credentials = None

    def label(self):
        return "%s %s (%s)" % (self.kind, self.key, self.addr)

    def write_conf(self):
        with open(self.conf, "w") as f:
            for k, v in self.props.items():
                f.write("%s=%s\n" % (k, v))

    def start(self):
        self.write_conf()
        self.starts += 1
        name = "ns-%s-%s-%d" % (self.key, self.kind, self.starts)
        if self.kind == "ours":
            argv = [self.world.ours_bin, "-c", self.conf]
            env = {"RUST_LOG": os.environ.get("RUST_LOG", "info")}
        else:
            w = self.world
            lib = w.artifacts.libdir("5")
            argv = [java_bin()] + JAVA_NS_OPTS + [
                "-Duser.home=" + self.dir, "-Drmq.logback.configurationFile=" + w.env.shaded_logback,
                "-cp", lib + "/*", "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", self.conf]
            env = {"ROCKETMQ_HOME": w.env.rmq_home}
        self.proc = self.world.procs.start(name, argv, env=env, cwd=self.dir)
        self.rss = RssSampler(self.proc.pid)
        return time.time()

    def alive(self):
        return self.proc is not None and self.proc.alive()

    @property
    def pid(self):
        return self.proc.pid

    def wait_ready(self, timeout=90):
        """Waits until a raw GET_BROKER_CLUSTER_INFO is answered; returns that wall time."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not self.proc.alive():
                raise Fail("nameserver %s exited (rc=%s):\n%s" % (
                    self.label(), self.proc.popen.returncode, self.proc.log_tail()))
            try:
                if port_open(self.addr, 0.3) and rm.call(self.addr, rm.GET_BROKER_CLUSTER_INFO, timeout=2,
                                                                 credentials=self.credentials).code == 0:
                    return time.time()
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.02)
        raise Fail("nameserver %s not serving after %ds:\n%s" % (self.label(), timeout, self.proc.log_tail()))

    def stop(self, grace=40):
        """Graceful stop (SIGTERM), bounded; returns the wall time it exited."""
        if self.proc and self.proc.alive():
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                say("  %s did not stop within %ds of SIGTERM; killed" % (self.label(), grace))
        self.kill9()
        return time.time()

    def kill9(self):
        if self.proc:
            self.world.procs.kill(self.proc)
        if self.rss:
            self.rss.stop()
        return time.time()

    def log_text(self):
        """Everything this nameserver logged, all starts (ours: stdout; Java: its log file)."""
        parts = []
        logdir = self.world.procs.logdir
        for f in sorted(os.listdir(logdir)):
            if ("ns-%s-%s-" % (self.key, self.kind)) in f:
                with open(os.path.join(logdir, f), errors="replace") as fh:
                    parts.append(fh.read())
        if self.kind == "java":
            p = os.path.join(self.dir, "rocketmq.log")
            if os.path.exists(p):
                with open(p, errors="replace") as fh:
                    parts.append(fh.read())
        return "\n".join(parts)


class Agent:
    """An `nsfault` process: JSON events from its stdout, commands to its stdin."""

    def __init__(self, world, name, args, netns=None):
        self.world = world
        self.name = name
        argv = ([] if not netns else ["ip", "netns", "exec", netns]) + [world.nsfault_bin] + list(args)
        log_path = os.path.join(world.procs.logdir, "agent-%s.log" % name)
        self.events_path = os.path.join(world.procs.logdir, "agent-%s.events" % name)
        self.popen = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=open(log_path, "wb"), start_new_session=True)
        world.procs.adopt("agent-" + name, self.popen, log_path)
        self.events = []
        self.lock = threading.Lock()
        self.new = queue.Queue()
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self):
        with open(self.events_path, "wb") as keep:
            for raw in self.popen.stdout:
                keep.write(raw)
                try:
                    ev = json.loads(raw)
                except ValueError:
                    continue
                with self.lock:
                    self.events.append(ev)
                self.new.put(ev)

    def send(self, line):
        try:
            self.popen.stdin.write((line + "\n").encode())
            self.popen.stdin.flush()
        except OSError as e:
            raise Fail("agent %s is gone: %r" % (self.name, e))

    def wait_for(self, pred, timeout):
        """The first event (already seen or new) with pred(event) true, or None after timeout."""
        with self.lock:
            for ev in self.events:
                if pred(ev):
                    return ev
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                ev = self.new.get(timeout=max(0.05, deadline - time.time()))
            except queue.Empty:
                return None
            if pred(ev):
                return ev
        return None

    def select(self, kind, t_from=None, t_to=None, key="t"):
        with self.lock:
            evs = [e for e in self.events if e.get("event") == kind]
        if t_from is not None:
            evs = [e for e in evs if e.get(key, e.get("t0", 0)) >= t_from]
        if t_to is not None:
            evs = [e for e in evs if e.get(key, e.get("t0", 0)) <= t_to]
        return evs

    def stop(self, timeout=20):
        """Ends the agent (end of stdin) and waits for its last events."""
        try:
            self.popen.stdin.close()
        except OSError:
            pass
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.world.procs.kill_popen(self.popen)
        self.thread.join(timeout=5)


def shape_args(clusters, brokers, topics, seed=13):
    return ["--clusters", str(clusters), "--brokers", str(brokers), "--topics", str(topics), "--seed", str(seed)]


def fleet(world, name, addr, shape, period_ms=30000, extra=(), netns=None):
    return Agent(world, name, ["fleet", "--addr", addr, "--period-ms", str(period_ms)] + shape + list(extra), netns)


def readers(world, name, addr, shape, rate=500, fresh_rate=0, sweep_sample=0, extra=()):
    return Agent(world, name, ["read", "--addr", addr, "--rate", str(rate), "--fresh-rate", str(fresh_rate),
                               "--sweep-sample", str(sweep_sample)] + shape + list(extra))


def errors_of(summary, code=None):
    """Failures in a summary (`{"ok":..,"errors":{"17 TopicNotExist": n, ...}}`), of one code or all."""
    errs = (summary or {}).get("errors") or {}
    if code is None:
        return sum(errs.values())
    return sum(v for k, v in errs.items() if k.split(" ", 1)[0] == str(code))


TOPIC_NOT_EXIST = 17


def first_sweep_text(sweep, t_up):
    """"complete of checked (started +x s after serving)" for the first sweep after a start."""
    if not sweep:
        return "-"
    return "%d of %d (sweep began %.1f s after serving)" % (
        sweep["complete"], sweep["checked"], sweep["t0"] / 1000.0 - t_up)
