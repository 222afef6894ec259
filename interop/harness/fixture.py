"""The world the scenarios run in: fetched artifacts, nameservers, brokers and tool wrappers.

Artifacts are fetched with package managers at test time and cached under interop/.cache/:
Maven Central (org.apache.rocketmq jars, via interop/java/pom.xml), the Go module proxy
(rocketmq-client-go, via interop/go/go.mod) and cargo (our nameserver).
"""

import os
import queue
import shutil
import subprocess
import threading
import time

from . import remoting as rm
from .procs import free_port_block, port_open, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
IDIR = os.path.dirname(HERE)
ROOT = os.path.dirname(IDIR)
CACHE = os.path.join(IDIR, ".cache")

V5 = os.environ.get("RMQ5_VERSION", "5.5.0")
V4 = os.environ.get("RMQ4_VERSION", "4.9.3")
# The release of the controller-mode scenarios (13-15): brokers, Java controller, clients, mqadmin.
VC = os.environ.get("RMQ_CTRL_VERSION", "5.5.0")
GEN_VERSION = {"5": V5, "4": V4, "c": VC}

CLUSTER = "DefaultCluster"
LEGACY_CLUSTER = "LegacyCluster"


class SetupError(Exception):
    """An artifact could not be fetched or built, or a process did not come up."""


# A RocketMQ broker refuses every write (code 14, "the broker's disk is full") once the disk
# holding its store is 90 % used; 5.x caps the warning level (rocketmq.broker.diskSpaceWarningLevelRatio,
# in 5.5.0 also the broker key diskSpaceWarningLevelRatio) at 0.90, so no setting lifts it. The
# stores are small and thrown away after the run, so they go to a tmpfs when there is one with
# room, and the disk they land on is checked before a broker starts.
BROKER_DISK_FULL = 0.90
SHM = "/dev/shm"


def disk_used_ratio(path):
    """The broker's own measure: used / (used + usable), rounded up to a whole percent."""
    st = os.statvfs(path)
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    entire = used + st.f_bavail * st.f_frsize
    if entire <= 0:
        return 0.0
    return -(-used * 100 // entire) / 100.0


def pick_store_root(rundir):
    """A fresh directory for the brokers' stores: on /dev/shm if it has >= 2 GiB free, else in rundir."""
    if os.path.isdir(SHM) and os.access(SHM, os.W_OK):
        st = os.statvfs(SHM)
        if st.f_bavail * st.f_frsize >= 2 << 30 and disk_used_ratio(SHM) < 0.5:
            root = os.path.join(SHM, "rmq-interop-%d-%s" % (os.getpid(), os.path.basename(rundir)))
            os.makedirs(root, exist_ok=True)
            return root, True
    root = os.path.join(rundir, "stores")
    os.makedirs(root, exist_ok=True)
    return root, False


def check_store_disk(path):
    ratio = disk_used_ratio(path)
    if ratio >= BROKER_DISK_FULL - 0.02:
        raise SetupError(
            "the disk holding the broker stores (%s) is %.0f%% used; RocketMQ brokers refuse every "
            "write from %.0f%% (the broker's disk is full), so free some space first"
            % (path, ratio * 100, BROKER_DISK_FULL * 100))


def java_bin():
    if os.environ.get("INTEROP_JAVA"):
        return os.environ["INTEROP_JAVA"]
    for p in ("/usr/lib/jvm/java-17-openjdk-amd64/bin/java",):
        if os.path.exists(p):
            return p
    return "java"


def javac_bin():
    j = java_bin()
    if j.endswith("/java"):
        c = j[:-len("java")] + "javac"
        if os.path.exists(c):
            return c
    return "javac"


class Artifacts:
    """Fetches and builds everything the scenarios run; each item once per run, thread-safe."""

    def __init__(self, procs, say):
        self.procs = procs
        self.say = say
        self.lock = threading.Lock()
        self.key_locks = {}
        self.done = {}
        # Set before the first build when a selected scenario runs our mqcontroller.
        self.want_controller = False
        # Set before the first build when a selected scenario runs our mqadmin (13-15).
        self.want_admin = False

    def _once(self, key, fn):
        with self.lock:
            key_lock = self.key_locks.setdefault(key, threading.Lock())
        with key_lock:
            if key in self.done:
                v = self.done[key]
                if isinstance(v, Exception):
                    raise v
                return v
            try:
                v = fn()
            except Exception as e:  # noqa: BLE001 - remembered and re-raised to every caller
                self.done[key] = e
                raise
            self.done[key] = v
            return v

    def libdir(self, gen):
        ver = GEN_VERSION[gen]

        def fetch():
            d = os.path.join(CACHE, "lib-" + ver)
            marker = os.path.join(d, ".complete")
            if os.path.exists(marker):
                return d
            self.say("fetching org.apache.rocketmq %s jars from Maven Central ..." % ver)
            shutil.rmtree(d, ignore_errors=True)
            argv = ["mvn", "-B", "-q", "-f", os.path.join(IDIR, "java", "pom.xml"),
                    "-Dmaven.repo.local=" + os.path.join(CACHE, "m2"), "-Drmq.version=" + ver,
                    "dependency:copy-dependencies", "-DoutputDirectory=" + d]
            rc, out, secs = self.procs.run("mvn-" + ver, argv, timeout=1200)
            if rc != 0:
                raise SetupError("mvn failed for %s (rc=%s):\n%s" % (ver, rc, out[-3000:]))
            open(marker, "w").close()
            self.say("  jars %s ready (%.0fs)" % (ver, secs))
            return d

        return self._once("lib" + ver, fetch)

    def classes(self, gen):
        ver = GEN_VERSION[gen]

        def build():
            lib = self.libdir(gen)
            srcdir = os.path.join(IDIR, "java", "src")
            srcs = sorted(os.path.join(srcdir, f) for f in os.listdir(srcdir) if f.endswith(".java"))
            out = os.path.join(CACHE, "classes-" + ver)
            stamp = os.path.join(out, ".stamp")
            newest = max(os.path.getmtime(f) for f in srcs)
            if os.path.exists(stamp) and os.path.getmtime(stamp) >= newest:
                return out
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out, exist_ok=True)
            rc, text, _ = self.procs.run("javac-" + ver, [javac_bin(), "-nowarn", "-d", out,
                                                           "-cp", lib + "/*"] + srcs, timeout=300)
            if rc == 0:
                open(stamp, "w").close()
            if rc != 0:
                raise SetupError("javac failed against %s:\n%s" % (ver, text[-3000:]))
            return out

        return self._once("classes" + ver, build)

    def go_client(self):
        def build():
            out = os.path.join(CACHE, "bin", "goclient")
            os.makedirs(os.path.dirname(out), exist_ok=True)
            env = go_env()
            rc, text, secs = self.procs.run("go-build", ["go", "build", "-o", out, "."],
                                            timeout=900, env=env, cwd=os.path.join(IDIR, "go"))
            if rc != 0:
                raise SetupError("go build failed:\n%s" % text[-3000:])
            return out

        return self._once("go", build)

    def _cargo_build(self):
        """`cargo build --release` of our binaries (once): daemon (mqnamesrv and mqcontroller;
        an older checkout: namesrv, plus controller when `want_controller` is set) and admin
        (mqadmin) when `want_admin` is, each when the workspace has that crate. Returns the bin
        dir."""
        def build():
            target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
            if not os.path.isabs(target):
                target = os.path.join(ROOT, target)
            if os.path.exists(os.path.join(ROOT, "crates", "daemon", "Cargo.toml")):
                pkgs = ["-p", "daemon"]
            else:
                pkgs = ["-p", "namesrv"]
                if self.want_controller and os.path.exists(os.path.join(ROOT, "crates", "controller", "Cargo.toml")):
                    pkgs += ["-p", "controller"]
            if self.want_admin and os.path.exists(os.path.join(ROOT, "crates", "admin", "Cargo.toml")):
                pkgs += ["-p", "admin"]
            cmd = ["cargo", "build", "--release"] + pkgs
            self.say("building our binaries: %s ..." % " ".join(cmd))
            rc, text, secs = self.procs.run("cargo-build", cmd, timeout=2400, cwd=ROOT)
            if rc != 0:
                raise SetupError("%s failed (rc=%s):\n%s" % (" ".join(cmd), rc, text[-4000:]))
            self.say("  %s ready (%.0fs)" % (os.path.join(target, "release"), secs))
            return os.path.join(target, "release")

        return self._once("cargo", build)

    def _rust_bin(self, name, env_var):
        def find():
            if os.environ.get(env_var):
                b = os.environ[env_var]
                if not os.path.isabs(b):
                    b = os.path.join(ROOT, b)
                if not os.path.exists(b):
                    raise SetupError("%s=%s does not exist" % (env_var, b))
                return b
            b = os.path.join(self._cargo_build(), name)
            if not os.path.exists(b):
                raise SetupError("cargo build succeeded but %s is missing%s" % (
                    b, "" if name == "mqnamesrv" else " (this checkout lacks its crate; set %s)" % env_var))
            return b

        return self._once("bin-" + name, find)

    def rust_namesrv(self):
        """Our nameserver: NAMESRV_BIN, or built by cargo."""
        return self._rust_bin("mqnamesrv", "NAMESRV_BIN")

    def rust_controller(self):
        """Our standalone controller: CONTROLLER_BIN, or built by cargo (scenario 14)."""
        return self._rust_bin("mqcontroller", "CONTROLLER_BIN")

    def rust_mqadmin(self):
        """Our mqadmin: MQADMIN_BIN, or built by cargo (scenarios 13-15 compare it with Java's)."""
        return self._rust_bin("mqadmin", "MQADMIN_BIN")


def go_env():
    return {"GOMODCACHE": os.path.join(CACHE, "gomod"), "GOCACHE": os.path.join(CACHE, "gocache"),
            "GOFLAGS": "-modcacherw", "GOTOOLCHAIN": "local"}


SHADED_LOGBACK = """<configuration>
  <appender name="FILE" class="org.apache.rocketmq.logging.ch.qos.logback.core.FileAppender">
    <file>${user.home}/rocketmq.log</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5p [%t] %c{0} - %m%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""

PLAIN_LOGBACK = SHADED_LOGBACK.replace("org.apache.rocketmq.logging.ch.qos.logback", "ch.qos.logback")


class Namesrv:
    """One nameserver process: the SUT (rust or java) or the Java reference.

    `tls` ({key: value} of `tls.*` settings, e.g. `tls.server.mode`) turns its TLS on: ours reads
    them from the `-c` file, Java's from system properties. Without it TLS is left at our default
    (permissive, test mode) and Java's is disabled. `ssl_context` (an `ssl.SSLContext`) is what the
    harness's own raw requests to it use (needed when `tls.server.mode` is `enforcing`).
    """

    def __init__(self, env, key, impl, tls=None, ssl_context=None, props=None, credentials=None,
                 extra=None, gen="5"):
        """`props`: more keys for our `-c` file (e.g. access control); `extra`: more keys for
        either implementation's; `credentials`: the (access key, secret key) the harness signs
        its readiness probe with; `gen`: the release of the Java nameserver (impl "java")."""
        self.env = env
        self.gen = gen
        self.key = key
        self.impl = impl
        self.tls = dict(tls or {})
        # More keys of its -c file, for either implementation (e.g. enableControllerInNamesrv
        # and the controller's keys, scenario 15).
        self.extra = dict(extra or {})
        self.ssl_context = ssl_context
        self.credentials = credentials
        self.port = free_port_block((0,))
        self.addr = "127.0.0.1:%d" % self.port
        # Ours serves HTTP (metrics, probes, API, address server) on httpListenPort (default
        # 8080, which two nameservers of one run would share): a free port of its own.
        self.http_port = free_port_block((0,)) if impl == "rust" else None
        self.dir = os.path.join(env.rundir, "ns-" + key)
        os.makedirs(self.dir, exist_ok=True)
        self.conf = os.path.join(self.dir, "namesrv.properties")
        with open(self.conf, "w") as f:
            f.write("listenPort=%d\n" % self.port)
            f.write("kvConfigPath=%s\n" % os.path.join(self.dir, "kvConfig.json"))
            if impl == "rust":
                f.write("httpListenPort=%d\n" % self.http_port)
                f.write("httpBindAddress=127.0.0.1\n")
                for k, v in list(self.tls.items()) + list((props or {}).items()):
                    f.write("%s=%s\n" % (k, v))
            for k, v in self.extra.items():
                f.write("%s=%s\n" % (k, v))
        self.proc = None
        self.starts = 0

    def alive(self):
        return self.proc is not None and self.proc.alive()

    def start(self):
        self.starts += 1
        name = "namesrv-%s-%s" % (self.key, self.impl)
        env = {"ROCKETMQ_HOME": self.env.rmq_home}
        if self.impl == "rust":
            argv = [self.env.artifacts.rust_namesrv(), "-c", self.conf]
            env["RUST_LOG"] = os.environ.get("RUST_LOG", "info")
            if self.tls:
                # Refused connections (plaintext under enforcing, failed handshakes) are logged at debug.
                env["RUST_LOG"] += ",namesrv::server=debug"
        else:
            lib = self.env.artifacts.libdir(self.gen)
            # Without `tls`: no TLS listener (building its self-signed SSL context costs seconds of CPU).
            tls_props = ["-D%s=%s" % kv for kv in self.tls.items()] or ["-Dtls.server.mode=disabled"]
            argv = [java_bin(), "-Xms128m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"
                    ] + tls_props + [
                    "-Duser.home=" + self.dir,
                    "-Drmq.logback.configurationFile=" + self.env.shaded_logback,
                    "-cp", lib + "/*", "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", self.conf]
        self.proc = self.env.procs.start(name, argv, env=env, cwd=self.dir)

    def wait_ready(self, timeout=60):
        def ready():
            if not self.proc.alive():
                raise SetupError("nameserver %s exited (rc=%s):\n%s" % (
                    self.key, self.proc.popen.returncode, self.proc.log_tail()))
            if not port_open(self.addr):
                return False
            r = rm.call(self.addr, rm.GET_BROKER_CLUSTER_INFO, timeout=2, ssl_context=self.ssl_context,
                        credentials=self.credentials)
            return r.code == 0
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if ready():
                    return
            except SetupError:
                raise
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.2)
        raise SetupError("nameserver %s (%s) not serving on %s after %ds:\n%s" % (
            self.key, self.impl, self.addr, timeout, self.proc.log_tail()))

    def kill(self):
        if self.proc:
            self.env.procs.kill(self.proc)


class Broker:
    """One broker process (5.x or 4.9.x)."""

    def __init__(self, env, key, gen, cluster, name, broker_id):
        self.env = env
        self.key = key
        self.gen = gen
        self.cluster = cluster
        self.name = name
        self.broker_id = broker_id
        # listenPort-2 = fast/VIP channel, listenPort+1 = HA.
        self.port = free_port_block((-2, -1, 0, 1))
        self.addr = "127.0.0.1:%d" % self.port
        self.dir = os.path.join(env.rundir, "broker-" + key)
        # Extra JVM options, e.g. -Dtls.enable=true (its own connections to nameservers over TLS).
        self.jvm_extra = []
        # broker.conf keys replacing the defaults below (None: left out), and a command prefix for its JVM
        # (reliability/run runs a broker inside a network namespace with `ip netns exec NS`).
        self.conf_overrides = {}
        self.argv_prefix = []
        self.proc = None
        self.starts = 0

    def alive(self):
        return self.proc is not None and self.proc.alive()

    def write_conf(self, namesrv_addr):
        os.makedirs(self.dir, exist_ok=True)
        store = os.path.join(self.env.store_root, "broker-" + self.key)
        os.makedirs(store, exist_ok=True)
        check_store_disk(store)
        lines = {
            "brokerClusterName": self.cluster,
            "brokerName": self.name,
            "brokerId": self.broker_id,
            "brokerIP1": "127.0.0.1",
            "brokerIP2": "127.0.0.1",
            "listenPort": self.port,
            "namesrvAddr": namesrv_addr,
            "storePathRootDir": store,
            "storePathCommitLog": os.path.join(store, "commitlog"),
            "mappedFileSizeCommitLog": 64 * 1024 * 1024,
            "mappedFileSizeConsumeQueue": 60000,
            "maxHashSlotNum": 10000,
            "maxIndexNum": 40000,
            # The timer store stays enabled (deleteTopic NPEs without it in 5.3.3; kept for 5.5.0) but small.
            "mappedFileSizeTimerLog": 16 * 1024 * 1024,
            "brokerRole": "SLAVE" if self.broker_id else "ASYNC_MASTER",
            "flushDiskType": "ASYNC_FLUSH",
            # Lowered from the default 30000 ms so that re-registration (scenario 5) takes <= ~10 s.
            "registerNameServerPeriod": 10000,
            # Topics exist only where the scenarios create them.
            "autoCreateTopicEnable": "false",
            "diskMaxUsedSpaceRatio": 95,
        }
        lines.update(self.conf_overrides)
        # An override of None leaves the key out (e.g. namesrvAddr, for the address server).
        lines = {k: v for k, v in lines.items() if v is not None}
        conf = os.path.join(self.dir, "broker.conf")
        with open(conf, "w") as f:
            for k, v in lines.items():
                f.write("%s=%s\n" % (k, v))
        return conf

    def start(self, namesrv_addr):
        self.starts += 1
        conf = self.write_conf(namesrv_addr)
        lib = self.env.artifacts.libdir(self.gen)
        argv = self.argv_prefix + [java_bin(), "-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m",
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "--add-opens", "java.base/java.nio=ALL-UNNAMED",
                "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
                "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
                # No TLS listener: building its self-signed SSL contexts costs ~10 s of CPU per broker.
                "-Dtls.server.mode=disabled",
                "-Duser.home=" + self.dir,
                "-Drmq.logback.configurationFile=" + self.env.shaded_logback,
                ] + self.jvm_extra + [
                "-cp", lib + "/*", "org.apache.rocketmq.broker.BrokerStartup", "-c", conf]
        self.proc = self.env.procs.start("broker-%s-%s" % (self.key, GEN_VERSION[self.gen]), argv,
                                         env={"ROCKETMQ_HOME": self.env.rmq_home}, cwd=self.dir)

    def wait_boot(self, timeout=90):
        def booted():
            if not self.proc.alive():
                raise SetupError("broker %s exited (rc=%s):\n%s" % (
                    self.key, self.proc.popen.returncode, self.proc.log_tail()))
            return "boot success" in self.proc.log_text()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if booted():
                return
            time.sleep(0.3)
        raise SetupError("broker %s did not boot in %ds:\n%s" % (self.key, timeout, self.proc.log_tail()))

    def kill(self):
        if self.proc:
            self.env.procs.kill(self.proc)


class Env:
    """Nameservers, brokers and tools shared by the scenarios of one run."""

    def __init__(self, impl, rundir, procs, artifacts, say, with_ref):
        self.impl = impl
        self.rundir = rundir
        self.procs = procs
        self.artifacts = artifacts
        self.say = say
        self.rmq_home = os.path.join(rundir, "rmqhome")
        conf = os.path.join(self.rmq_home, "conf")
        os.makedirs(conf, exist_ok=True)
        self.shaded_logback = os.path.join(conf, "rmq.logback.xml")
        with open(self.shaded_logback, "w") as f:
            f.write(SHADED_LOGBACK)
        for n in ("logback_broker.xml", "logback_tools.xml", "logback_namesrv.xml"):
            with open(os.path.join(conf, n), "w") as f:
                f.write(PLAIN_LOGBACK)
        self.plain_logback = os.path.join(conf, "logback_tools.xml")
        self.tools_home = os.path.join(rundir, "tools-home")
        os.makedirs(self.tools_home, exist_ok=True)
        self.store_root, self.store_on_shm = pick_store_root(rundir)
        say("broker stores in %s (disk %.0f%% used)" % (self.store_root, disk_used_ratio(self.store_root) * 100))

        self.namesrvs = {"sut1": Namesrv(self, "sut1", impl), "sut2": Namesrv(self, "sut2", impl)}
        if with_ref:
            self.namesrvs["ref"] = Namesrv(self, "ref", "java")
        self.brokers = {
            "a": Broker(self, "a", "5", CLUSTER, "broker-a", 0),
            "a_s": Broker(self, "a_s", "5", CLUSTER, "broker-a", 1),
            "b": Broker(self, "b", "5", CLUSTER, "broker-b", 0),
            "legacy": Broker(self, "legacy", "4", LEGACY_CLUSTER, "broker-legacy", 0),
        }
        self.lock = threading.Lock()
        self.admin_shells = {}
        self.prestart = []

    def remove_stores(self):
        """Called after every process is stopped: a tmpfs store would otherwise hold memory."""
        if self.store_on_shm:
            shutil.rmtree(self.store_root, ignore_errors=True)

    # ---- addresses -------------------------------------------------------------------------

    @property
    def sut1(self):
        return self.namesrvs["sut1"].addr

    @property
    def sut2(self):
        return self.namesrvs["sut2"].addr

    @property
    def ref(self):
        return self.namesrvs["ref"].addr if "ref" in self.namesrvs else None

    def broker_ns_list(self):
        return ";".join(n.addr for n in self.namesrvs.values())

    # ---- lifecycle -------------------------------------------------------------------------

    def _parallel(self, fns):
        errors = []

        def wrap(fn):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - collected and re-raised below
                errors.append(e)
        threads = [threading.Thread(target=wrap, args=(fn,)) for fn in fns]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def ensure_namesrvs(self):
        todo = [n for n in self.namesrvs.values() if not n.alive()]
        if not todo:
            return
        # Build/fetch once before starting in parallel.
        if any(n.impl == "rust" for n in todo):
            self.artifacts.rust_namesrv()
        if any(n.impl == "java" for n in todo):
            self.artifacts.libdir("5")
        t0 = time.time()
        for n in todo:
            n.start()
        self._parallel([lambda n=n: n.wait_ready(90 if n.impl == "java" else 30) for n in todo])
        self.say("  nameservers up in %.1fs: %s" % (time.time() - t0, ", ".join(
            "%s=%s(%s)" % (n.key, n.addr, n.impl) for n in todo)))

    def ensure(self, *keys):
        """Start the named brokers (and every nameserver) unless already running.

        The first call also starts the brokers listed in `self.prestart` (those that later
        scenarios of the run will need), so that all brokers boot in parallel once.
        """
        self.ensure_namesrvs()
        keys = list(keys)
        if self.prestart:
            keys += [k for k in self.prestart if k not in keys]
            self.prestart = []
        todo = [self.brokers[k] for k in keys if not self.brokers[k].alive()]
        if not todo:
            return
        for gen in sorted({b.gen for b in todo}):
            self.artifacts.libdir(gen)
        t0 = time.time()
        for b in todo:
            b.start(self.broker_ns_list())
        self._parallel([lambda b=b: b.wait_boot(120) for b in todo])
        # Registered with every live nameserver?
        for b in todo:
            for n in self.namesrvs.values():
                if not n.alive():
                    continue
                ok = wait_until(lambda: b.addr in broker_addrs(cluster_info(n.addr), b.name, b.broker_id), 30, 0.3)
                if not ok:
                    raise SetupError("broker %s (%s) not registered on %s (%s) after 30s" % (
                        b.key, b.addr, n.key, n.addr))
        self.say("  brokers up and registered in %.1fs: %s" % (time.time() - t0, ", ".join(
            "%s[%s id=%d %s %s]" % (b.key, b.name, b.broker_id, b.addr, GEN_VERSION[b.gen]) for b in todo)))

    # ---- tools -----------------------------------------------------------------------------

    def client_jvm_opts(self, gen, tls=False, home=None):
        """JVM options of a Java client or tool.

        tls=True: TLS to every server, test mode (no certificate checks, no client certificate);
        tls={prop: value}: TLS with these `tls.*` system properties (e.g. client certificate paths).
        home: its own user.home, so that its client log (`<home>/rocketmq.log`) is its alone.
        """
        opts = ["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Duser.home=" + (home or self.tools_home),
                "-Drmq.logback.configurationFile=" + self.shaded_logback,
                "-Dlogback.configurationFile=" + self.plain_logback,
                "-Drocketmq.client.logUseSlf4j=false"]
        if tls:
            props = {"tls.enable": "true", "tls.test.mode.enable": "true"}
            if isinstance(tls, dict):
                props.update(tls)
            opts += ["-D%s=%s" % kv for kv in props.items()]
        return opts

    def mqadmin(self, args, ns=None, gen="5", timeout=90):
        """Run `mqadmin <args> -n <ns>`; returns (rc, output).

        By default the command runs in a long-lived AdminShell JVM (the real MQAdminStartup code,
        without a JVM start per command); INTEROP_MQADMIN_FORK=1 starts one JVM per command.
        rc is 0 unless the tool was killed, exited, or threw past MQAdminStartup; mqadmin itself
        reports failures only in its output.
        """
        full = list(args) + ["-n", ns or self.sut1]
        if os.environ.get("INTEROP_MQADMIN_FORK") == "1":
            lib = self.artifacts.libdir(gen)
            argv = [java_bin()] + self.client_jvm_opts(gen) + [
                "-cp", lib + "/*", "org.apache.rocketmq.tools.command.MQAdminStartup"] + full
            rc, out, _ = self.procs.run("mqadmin-%s-%s" % (GEN_VERSION[gen], args[0]), argv, timeout,
                                        env={"ROCKETMQ_HOME": self.rmq_home})
            return rc, out
        with self.lock:
            shell = self.admin_shells.get(GEN_VERSION[gen])
            if shell is None or not shell.alive():
                shell = AdminShell(self, gen)
                self.admin_shells[GEN_VERSION[gen]] = shell
        t0 = time.time()
        rc, out = shell.run(full, timeout)
        shell.log("$ mqadmin %s  [%.1fs rc=%s]\n%s" % (" ".join(full), time.time() - t0, rc, out))
        return rc, out

    def jclient_argv(self, gen, mode, tls=False, home=None, **kw):
        lib = self.artifacts.libdir(gen)
        cls = self.artifacts.classes(gen)
        return [java_bin()] + self.client_jvm_opts(gen, tls, home) + [
            "-cp", cls + ":" + lib + "/*", "InteropClient", mode] + ["%s=%s" % kv for kv in kw.items()]

    def jclient(self, gen, mode, timeout=120, tls=False, home=None, **kw):
        """Run InteropClient to completion; `tls`/`home` as in `client_jvm_opts` (scenario 9)."""
        rc, out, _ = self.procs.run("jclient-%s-%s" % (GEN_VERSION[gen], mode),
                                    self.jclient_argv(gen, mode, tls, home, **kw),
                                    timeout, env={"ROCKETMQ_HOME": self.rmq_home})
        return rc, out

    def jclient_start(self, gen, mode, **kw):
        return self.procs.start("jclient-%s-%s" % (GEN_VERSION[gen], mode), self.jclient_argv(gen, mode, **kw),
                                env={"ROCKETMQ_HOME": self.rmq_home})

    def goclient(self, mode, timeout=120, **kw):
        b = self.artifacts.go_client()
        argv = [b, mode] + ["-%s=%s" % kv for kv in kw.items()]
        rc, out, _ = self.procs.run("goclient-" + mode, argv, timeout, env={"HOME": self.tools_home})
        return rc, out


class AdminShell:
    """A long-lived JVM running interop/java/src/AdminShell.java (mqadmin without JVM starts)."""

    def __init__(self, env, gen):
        self.env = env
        self.gen = gen
        self.lock = threading.Lock()
        lib = env.artifacts.libdir(gen)
        cls = env.artifacts.classes(gen)
        argv = [java_bin()] + env.client_jvm_opts(gen) + ["-Djava.security.manager=allow",
                                                          "-cp", cls + ":" + lib + "/*", "AdminShell"]
        full_env = dict(os.environ, ROCKETMQ_HOME=env.rmq_home)
        self.transcript = os.path.join(env.procs.logdir, "mqadmin-shell-%s.log" % GEN_VERSION[gen])
        self.popen = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=open(self.transcript + ".stderr", "wb"), env=full_env,
                                      start_new_session=True)
        env.procs.adopt("mqadmin-shell-" + GEN_VERSION[gen], self.popen, self.transcript)
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        first = self._line(120)
        if first != "@@READY@@":
            raise SetupError("AdminShell %s did not start: %r" % (GEN_VERSION[gen], first))

    def _pump(self):
        for raw in self.popen.stdout:
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self.lines.put(None)

    def _line(self, timeout):
        try:
            return self.lines.get(timeout=max(0.1, timeout))
        except queue.Empty:
            return None

    def alive(self):
        return self.popen.poll() is None

    def log(self, text):
        with open(self.transcript, "a") as f:
            f.write(text + "\n")

    def run(self, args, timeout):
        with self.lock:
            if not self.alive():
                return None, "AdminShell is not running"
            try:
                self.popen.stdin.write(("\t".join(args) + "\n").encode("utf-8"))
                self.popen.stdin.flush()
            except OSError as e:
                return None, "AdminShell write failed: %r" % e
            out = []
            deadline = time.time() + timeout
            while True:
                ln = self._line(deadline - time.time())
                if ln is None:
                    # Timed out or the shell died: kill it; the next command starts a new one.
                    self.env.procs.kill_popen(self.popen)
                    return None, "\n".join(out) + "\n(AdminShell timed out or died)"
                if ln.startswith("@@END@@ "):
                    status = ln[8:]
                    return (0 if status == "ok" else 1), "\n".join(out)
                out.append(ln)


# ---- small query helpers used by several scenarios --------------------------------------------

def cluster_info(addr):
    r = rm.call(addr, rm.GET_BROKER_CLUSTER_INFO, timeout=3)
    if r.code != 0 or r.body is None:
        return None
    return r.body_json()


def broker_addrs(ci, broker_name, broker_id=None):
    """Addresses of broker_name in a ClusterInfo (all ids, or only broker_id)."""
    if not ci:
        return []
    bd = (ci.get("brokerAddrTable") or {}).get(broker_name)
    if not bd:
        return []
    addrs = bd.get("brokerAddrs") or {}
    if broker_id is None:
        return list(addrs.values())
    a = addrs.get(str(broker_id))
    return [a] if a else []


def route(addr, topic, version=rm.V5_3_3):
    """TopicRouteData as a dict, or None when the topic is unknown / on error."""
    try:
        r = rm.call(addr, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, version=version, timeout=3)
    except Exception:  # noqa: BLE001
        return None
    if r.code != 0 or r.body is None:
        return None
    return r.body_json()


def route_brokers(rt):
    """{brokerName: {id(str): addr}} of a route."""
    if not rt:
        return {}
    return {bd["brokerName"]: dict(bd.get("brokerAddrs") or {}) for bd in rt.get("brokerDatas") or []}


def route_queues(rt):
    """{brokerName: QueueData} of a route."""
    if not rt:
        return {}
    return {q["brokerName"]: q for q in rt.get("queueDatas") or []}


def kv_get(addr, ns, key):
    r = rm.call(addr, rm.GET_KV_CONFIG, {"namespace": ns, "key": key})
    return r.code, (r.ext or {}).get("value")


def namesrv_config(addr):
    r = rm.call(addr, rm.GET_NAMESRV_CONFIG)
    return rm.parse_properties(r.body_text()) if r.code == 0 else {}


def live_brokers_registered(env, addr):
    """True when the nameserver at addr lists every running broker at its address under its id."""
    ci = cluster_info(addr)
    return all(broker_addrs(ci, b.name, b.broker_id) == [b.addr] for b in env.brokers.values() if b.alive())


def mqadmin_with_tools_yml(env, args, ns, credentials, gen="5"):
    """The Java mqadmin (one JVM) with ROCKETMQ_HOME holding conf/tools.yml = `credentials`,
    the file MQAdminStartup reads its access key from (scenarios 12, 14, 15)."""
    home = os.path.join(env.rundir, "rmqhome-acl")
    conf = os.path.join(home, "conf")
    os.makedirs(conf, exist_ok=True)
    for n in os.listdir(os.path.join(env.rmq_home, "conf")):
        with open(os.path.join(env.rmq_home, "conf", n), "rb") as src, open(os.path.join(conf, n), "wb") as dst:
            dst.write(src.read())
    with open(os.path.join(conf, "tools.yml"), "w") as f:
        f.write("accessKey: %s\nsecretKey: %s\n" % credentials)
    lib = env.artifacts.libdir(gen)
    argv = [java_bin()] + env.client_jvm_opts(gen) + [
        "-cp", lib + "/*", "org.apache.rocketmq.tools.command.MQAdminStartup"] + list(args) + ["-n", ns]
    rc, out, _ = env.procs.run("mqadmin-acl-%s" % args[0], argv, 120, env={"ROCKETMQ_HOME": home})
    return rc, out
