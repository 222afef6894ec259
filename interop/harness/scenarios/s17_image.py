"""Scenario 17: the container image (deploy/container, issue 24) in place of apache/rocketmq's.

The OCI archive made by deploy/container/build is loaded into podman and started the way the
official image is started:

- as the rocketmq-docker Helm chart starts its nameserver (command `/bin/sh`, args
  `-c "./mqnamesrv -c /home/rocketmq/config/namesrv.p"`, JAVA_HEAP_SIZE in the environment, the
  properties file mounted read-only as a ConfigMap is, /home/rocketmq/logs mounted), on the host
  network: a real Java broker registers with it, a Java producer gets the route and sends,
  /readyz answers, the Java mqadmin's updateNamesrvConfig works on the read-only file, SIGTERM
  (`podman stop`) stops it gracefully with the route snapshot written to its volume, and a new
  container on the same volume serves the routes from that snapshot; it runs as uid 3000;
- as the compose files start it (`command: sh mqnamesrv`, defaults);
- as rocketmq-operator starts its controller (NODE_ROLE=controller, controllerDLegerGroup,
  controllerDLegerPeers, controllerStorePath and MY_POD_NAME in the environment).

The archive: INTEROP_IMAGE, default target/container/rocketmq-namesrv-<version>.oci.tar (build it
with deploy/container/build). Needs podman (rootful: the volumes are chowned to uid 3000); runc
is used where installed (this VM's crun cannot start containers), with explicit ulimits.
"""

import os
import re
import shutil
import time
import zlib

from .. import ctrlgroup
from ..fixture import GEN_VERSION, ROOT, Broker, SetupError, broker_addrs, cluster_info, namesrv_config, route, route_queues
from ..output import parse_result, tail
from ..procs import free_port_block, http_get, wait_until
from ..topics import RUN_TAG

TITLE = "Container image: the official image's command lines, Java broker and producer, SIGTERM"

UID = 3000


def image_archive():
    if os.environ.get("INTEROP_IMAGE"):
        return os.environ["INTEROP_IMAGE"]
    version = None
    with open(os.path.join(ROOT, "Cargo.toml")) as f:
        in_pkg = False
        for ln in f:
            if ln.strip().startswith("["):
                in_pkg = ln.strip() == "[workspace.package]"
            elif in_pkg and ln.startswith("version"):
                version = ln.split("=", 1)[1].strip().strip('"')
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    return os.path.join(target, "container", "rocketmq-namesrv-%s.oci.tar" % version)


def image_available():
    return bool(os.environ.get("INTEROP_IMAGE")) or os.path.exists(image_archive())


class Podman:
    """podman commands through the harness's process log, and the containers to remove."""

    def __init__(self, env):
        self.env = env
        self.names = []
        self.run_flags = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768"]
        if shutil.which("runc"):
            self.run_flags = ["--runtime", "runc"] + self.run_flags

    def __call__(self, *args, timeout=120):
        rc, out, _ = self.env.procs.run("podman-" + args[0], ["podman"] + list(args), timeout)
        return rc, out.strip()

    def run(self, name, args):
        self.names.append(name)
        return self("run", "-d", "--name", name, *(self.run_flags + list(args)))

    def exec(self, name, *argv):
        return self("exec", name, *argv, timeout=30)

    def logs(self, name):
        return self("logs", name, timeout=30)[1]

    def inspect(self, name, fmt):
        return self("inspect", "--format", fmt, name, timeout=30)[1]

    def cleanup(self):
        for name in self.names:
            self("rm", "-f", "-t", "0", name, timeout=60)


def host_dir(env, *parts, mode=0o755, owner=True):
    d = os.path.join(env.rundir, "image", *parts)
    os.makedirs(d, exist_ok=True)
    os.chmod(d, mode)
    if owner:
        os.chown(d, UID, UID)
    return d


def wait_ready(http_addr, timeout=30):
    """Seconds until GET /readyz answered 200, or None."""
    t0 = time.time()
    ok = wait_until(lambda: http_get(http_addr, "/readyz", timeout=1)[0] == 200, timeout, 0.02)
    return time.time() - t0 if ok else None


def started_ns(pm, name):
    """When the container's process started (Unix ns), or None."""
    try:
        v = int(pm.inspect(name, "{{.State.StartedAt.UnixNano}}"))
    except ValueError:
        return None
    return v if v > 0 else None


SNAPSHOT_HEADER = re.compile(rb"^rocketmq-namesrv-rs route snapshot v(\d+) len=(\d+) crc32=([0-9a-f]{8})\n")


def snapshot_payload(data):
    """The payload of a route snapshot file, its header's length and CRC32 checked (ValueError if not)."""
    m = SNAPSHOT_HEADER.match(data)
    if m is None:
        raise ValueError("no snapshot header line: %r" % data[:80])
    payload = data[m.end():]
    if len(payload) != int(m.group(2)) or zlib.crc32(payload) != int(m.group(3), 16):
        raise ValueError("length or CRC32 does not match the header %r" % m.group(0))
    return payload


def snapshot_holds(payload, name):
    """A name is in the snapshot as its length (LEB128) followed by its UTF-8 bytes (v2), or as JSON (v1)."""
    raw = name.encode()
    n, prefix = len(raw), b""
    while True:
        prefix += bytes([(n & 0x7F) | (0x80 if n >= 0x80 else 0)])
        n >>= 7
        if n == 0:
            break
    return prefix + raw in payload or b'"' + raw + b'"' in payload


def s17_container_image(env, c):
    """The image started as the official image is, with a real Java broker and producer."""
    archive = image_archive()
    if not os.path.exists(archive):
        raise SetupError("no image archive %s: build it with deploy/container/build" % archive)
    if not shutil.which("podman"):
        raise SetupError("podman is not installed (apt-get install podman runc)")
    if os.geteuid() != 0:
        raise SetupError("scenario 17 runs podman as root (its volumes are chowned to uid %d)" % UID)
    ver = GEN_VERSION["5"]
    pm = Podman(env)
    broker = Broker(env, "img", "5", "ImageCluster", "broker-img", 0)
    tag = "rmq-it-%s-%d" % (RUN_TAG, os.getpid())
    try:
        rc, out = pm("load", "-i", archive, timeout=300)
        m = re.findall(r"Loaded image(?:\(s\))?:\s*(\S+)", out)
        c.require(rc == 0 and m, "podman load -i %s" % os.path.basename(archive) + ("" if rc == 0 else "\n" + tail(out)))
        image = m[-1].split(",")[0]
        c.fig("image archive (MB)", "%.1f" % (os.path.getsize(archive) / 1e6))

        # ---- the official chart's command line, on the host network --------------------------
        port, http_port = free_port_block((0,)), free_port_block((0,))
        ns_addr, http_addr = "127.0.0.1:%d" % port, "127.0.0.1:%d" % http_port
        conf = host_dir(env, "config", owner=False)
        with open(os.path.join(conf, "namesrv.p"), "w") as f:
            f.write("listenPort=%d\nhttpListenPort=%d\nbindAddress=127.0.0.1\n" % (port, http_port))
        os.chmod(os.path.join(conf, "namesrv.p"), 0o644)
        store = host_dir(env, "namesrv")
        logs = host_dir(env, "logs")
        volumes = ["-v", conf + ":/home/rocketmq/config:ro", "-v", store + ":/home/rocketmq/namesrv",
                   "-v", logs + ":/home/rocketmq/logs"]
        name = tag + "-ns"
        t0 = time.time()
        rc, out = pm.run(name, ["--network", "host", "-e", "JAVA_HEAP_SIZE=1792M", "-e", "JAVA_OPT_EXT=-Xss512k"]
                         + volumes + ["--entrypoint", "/bin/sh", image, "-c",
                                      "./mqnamesrv -c /home/rocketmq/config/namesrv.p"])
        c.require(rc == 0, "podman run (the rocketmq-docker chart's command: /bin/sh -c "
                           "\"./mqnamesrv -c /home/rocketmq/config/namesrv.p\")" + ("" if rc == 0 else "\n" + tail(out)))
        ready = wait_ready(http_addr, 30)
        t_ready = time.time()
        c.require(ready is not None, "GET http://%s/readyz answers 200 from the container\n%s" % (http_addr, tail(pm.logs(name))))
        c.fig("cold start: podman run to /readyz 200 (ms)", "%.0f" % ((t_ready - t0) * 1000))
        started = started_ns(pm, name)
        if started:
            c.fig("cold start: container process start to /readyz 200 (ms)", "%.0f" % ((t_ready - started / 1e9) * 1000))
        c.check(http_get(http_addr, "/healthz")[0] == 200, "GET /healthz answers 200")
        rc, comm = pm.exec(name, "cat", "/proc/1/comm")
        c.check(comm == "mqnamesrv", "PID 1 in the container is the mqnamesrv binary: sh and the scripts exec'd (got %r)" % comm)
        rc, ident = pm.exec(name, "id")
        c.check(ident.startswith("uid=3000(rocketmq) gid=3000(rocketmq)"), "the server runs as uid/gid 3000 rocketmq (%s)" % ident)
        pid = pm.inspect(name, "{{.State.Pid}}")
        try:
            with open("/proc/%s/status" % pid) as f:
                uids = [ln.split()[1:] for ln in f if ln.startswith("Uid:")][0]
        except (OSError, IndexError):
            uids = None
        c.check(uids == ["3000"] * 4, "seen from the host, the container's process has uid 3000 (Uid: %s)" % uids)
        rc, home = pm.exec(name, "sh", "-c", 'echo "$ROCKETMQ_HOME|$(pwd)"')
        c.check(home == "/home/rocketmq/rocketmq-5.5.0|/home/rocketmq/rocketmq-5.5.0/bin",
                "ROCKETMQ_HOME and the working directory as in apache/rocketmq:5.5.0 (%s)" % home)
        log = pm.logs(name)
        c.check("ignoring JAVA_OPT_EXT JAVA_HEAP_SIZE" in log, "JAVA_OPT_EXT and JAVA_HEAP_SIZE accepted and ignored, in one line")
        c.check("a copy of the read-only /home/rocketmq/config/namesrv.p" in log,
                "the read-only properties file is served from a writable copy")
        c.check("The Name Server boot success" in log, "the boot line on the container's output")

        broker.start(ns_addr)
        broker.wait_boot(120)
        c.require(wait_until(lambda: broker.addr in broker_addrs(cluster_info(ns_addr), broker.name, 0), 60, 0.3),
                  "Java %s broker registered with the nameserver in the container" % ver)
        topic = "InteropImage"
        rc, out = env.mqadmin(["updateTopic", "-b", broker.addr, "-t", topic, "-r", "4", "-w", "4"], ns=ns_addr)
        c.require(rc == 0 and "success" in out, "mqadmin(%s) updateTopic -b %s -t %s" % (ver, broker.addr, topic))
        c.require(wait_until(lambda: broker.name in route_queues(route(ns_addr, topic)), 30, 0.3),
                  "the container's route of %s lists %s" % (topic, broker.name))
        rc, out = env.jclient("5", "produce", timeout=180, ns=ns_addr, topic=topic, count=20, prefix=RUN_TAG + "-image")
        r = parse_result(out)
        c.check(rc == 0 and r.get("ok") == "20", "a Java %s producer got the route from the container and sent 20 messages "
                "(ok=%s failed=%s)" % (ver, r.get("ok"), r.get("failed")))
        rc, out = env.mqadmin(["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"], ns=ns_addr)
        c.check("success" in out and namesrv_config(ns_addr).get("orderMessageEnable") == "true",
                "Java mqadmin updateNamesrvConfig works although the mounted file is read-only")

        # A route change just before SIGTERM: the snapshot on the volume must have it.
        last = "InteropImageLast"
        env.mqadmin(["updateTopic", "-b", broker.addr, "-t", last, "-r", "2", "-w", "2"], ns=ns_addr)
        c.require(wait_until(lambda: broker.name in route_queues(route(ns_addr, last)), 30, 0.2),
                  "the route of %s is served" % last)
        t_stop = time.time()
        rc, _ = pm("stop", "-t", "40", name, timeout=60)
        c.fig("SIGTERM to exit (s)", "%.2f" % (time.time() - t_stop))
        code = pm.inspect(name, "{{.State.ExitCode}}")
        log = pm.logs(name)
        c.check(rc == 0 and code == "0", "podman stop (SIGTERM): the server exited with status 0 (got %s)" % code)
        c.check("shutdown requested" in log and "nameserver stopped" in log
                and ("route snapshot written at shutdown" in log or "route snapshot already current at shutdown" in log),
                "a graceful stop: connections closed, the route snapshot current at exit")
        snap = os.path.join(store, "routes.snapshot")
        try:
            with open(snap, "rb") as f:
                payload = snapshot_payload(f.read())
        except (OSError, ValueError) as e:
            payload = b""
            c.note("snapshot unreadable: %r" % e)
        c.check(snapshot_holds(payload, last) and snapshot_holds(payload, topic),
                "the route snapshot on the volume (%s) holds both topics, %s created just before SIGTERM" % (snap, last))

        # A new container on the same volume: the routes are back before the broker registers again.
        name2 = tag + "-ns2"
        rc, out = pm.run(name2, ["--network", "host"] + volumes + ["--entrypoint", "/bin/sh", image, "-c",
                                                                   "./mqnamesrv -c /home/rocketmq/config/namesrv.p"])
        ready = wait_ready(http_addr, 30)
        t_ready = time.time()
        rt = route(ns_addr, last)
        c.check(ready is not None and broker.name in route_queues(rt) and "route snapshot restored" in pm.logs(name2),
                "a new container on the same volume serves the route of %s from the snapshot at once" % last)
        started = started_ns(pm, name2)
        if started and ready is not None:
            c.fig("warm restart: container process start to /readyz 200 (ms)", "%.0f" % ((t_ready - started / 1e9) * 1000))
        pm("stop", "-t", "40", name2, timeout=60)
        broker.kill()

        # ---- the compose files' command: sh mqnamesrv, defaults, no network ------------------
        name3 = tag + "-compose"
        rc, out = pm.run(name3, ["--network", "none", image, "sh", "mqnamesrv"])
        ok = rc == 0 and wait_until(lambda: pm.exec(name3, "wget", "-qO-", "http://127.0.0.1:8080/readyz")[1] == "ready", 30, 0.2)
        rc, comm = pm.exec(name3, "cat", "/proc/1/comm")
        c.check(ok and comm == "mqnamesrv",
                "the compose files' `sh mqnamesrv` starts the nameserver with its defaults (9876, /readyz on 8080)")
        pm("stop", "-t", "40", name3, timeout=60)

        # ---- the entry point's other forms ---------------------------------------------------
        rc, out = pm("run", "--rm", "--network", "none", *(pm.run_flags + [image, "-p"]), timeout=60)
        c.check(rc == 0 and "listenPort=9876" in out, "options alone (`-p`) go to mqnamesrv: it prints its keys")
        rc, out = pm("run", "--rm", "--network", "none", *(pm.run_flags + [image, "broker"]), timeout=60)
        c.check(rc == 64 and "not the broker" in out, "the role `broker` is refused with exit status 64 (rc=%s)" % rc)

        # ---- rocketmq-operator's controller environment --------------------------------------
        cport, chttp = free_port_block((0,)), free_port_block((0,))
        with open(os.path.join(conf, "controller.properties"), "w") as f:
            # The controller's HTTP port (issue 22) off its default 8081 on the host network.
            f.write("httpListenPort=%d\n" % chttp)
        os.chmod(os.path.join(conf, "controller.properties"), 0o644)
        cstore = host_dir(env, "controller-store")
        name4 = tag + "-ctl"
        peers = "rmqctl0-127.0.0.1:%d" % cport
        rc, out = pm.run(name4, ["--network", "host", "-e", "NODE_ROLE=controller", "-e", "MY_POD_NAME=rmqctl-0",
                                 "-e", "controllerDLegerGroup=ImageGroup", "-e", "controllerDLegerPeers=" + peers,
                                 "-e", "controllerStorePath=/home/rocketmq/store/controller",
                                 "-v", conf + ":/home/rocketmq/config:ro", "-v", cstore + ":/home/rocketmq/store",
                                 image, "-c", "/home/rocketmq/config/controller.properties"])
        addr = "127.0.0.1:%d" % cport
        md = wait_until(lambda: (lambda m: m if m and ctrlgroup.is_true(m.get("isLeader")) else None)(ctrlgroup.metadata(addr)),
                        30, 0.3)
        log = pm.logs(name4)
        c.check(rc == 0 and md and "boot success" in log and "group ImageGroup, id rmqctl0" in log,
                "NODE_ROLE=controller with the operator's controllerDLeger*/MY_POD_NAME environment: a controller node "
                "rmqctl0 of ImageGroup, leader of its one-node group on %s%s" % (addr, "" if md else "\n" + tail(log)))
        rc, _ = pm("stop", "-t", "30", name4, timeout=60)
        c.check(pm.inspect(name4, "{{.State.ExitCode}}") == "0" and os.path.exists(os.path.join(cstore, "controller", "controller.redb")),
                "the controller stopped with status 0, its Raft store on the volume (controllerStorePath from the environment)")
    finally:
        broker.kill()
        pm.cleanup()
