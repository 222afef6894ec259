"""Process and port bookkeeping for the interop suite.

Every process is started in its own session (process group) and remembered, so that
`Procs.cleanup()` (called on exit, on failure and on Ctrl-C) can kill all of them.
Every wait is bounded.
"""

import os
import random
import signal
import socket
import subprocess
import threading
import time


class Proc:
    """A long-running child process with its log file."""

    def __init__(self, name, popen, log_path, argv):
        self.name = name
        self.popen = popen
        self.log_path = log_path
        self.argv = argv
        self.started = time.time()

    @property
    def pid(self):
        return self.popen.pid

    def alive(self):
        return self.popen.poll() is None

    def log_text(self):
        try:
            with open(self.log_path, "r", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def log_tail(self, n=15):
        return "\n".join(self.log_text().splitlines()[-n:])


class Procs:
    """Starts, tracks and kills child processes."""

    def __init__(self, logdir):
        self.logdir = logdir
        self.procs = []
        self.lock = threading.Lock()
        self.counter = 0
        os.makedirs(logdir, exist_ok=True)

    def _log_path(self, name):
        with self.lock:
            self.counter += 1
            n = self.counter
        return os.path.join(self.logdir, "%03d-%s.log" % (n, name))

    def start(self, name, argv, env=None, cwd=None):
        path = self._log_path(name)
        log = open(path, "wb")
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=full_env, cwd=cwd, start_new_session=True)
        log.close()
        proc = Proc(name, p, path, argv)
        with self.lock:
            self.procs.append(proc)
        return proc

    def adopt(self, name, popen, log_path):
        """Track a process started elsewhere (in its own session) so that cleanup() kills it."""
        proc = Proc(name, popen, log_path, popen.args)
        with self.lock:
            self.procs.append(proc)
        return proc

    def kill_popen(self, popen):
        for p in list(self.procs):
            if p.popen is popen:
                self.kill(p)
                return

    def run(self, name, argv, timeout, env=None, cwd=None):
        """Run a short-lived command to completion (bounded); returns (rc, output, seconds).

        rc is None when the command was killed for exceeding `timeout`.
        """
        proc = self.start(name, argv, env, cwd)
        t0 = time.time()
        try:
            rc = proc.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(proc)
            rc = None
        return rc, proc.log_text(), time.time() - t0

    def kill(self, proc, sig=signal.SIGKILL):
        """Signal the whole process group of `proc`; with SIGKILL also reap it."""
        if proc.popen.poll() is None:
            try:
                os.killpg(proc.popen.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        if sig == signal.SIGKILL:
            try:
                proc.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            # Also kill anything the process left in its group.
            try:
                os.killpg(proc.popen.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def stop(self, proc, grace=10):
        """SIGTERM, wait up to `grace` seconds, then SIGKILL."""
        if proc.popen.poll() is None:
            self.kill(proc, signal.SIGTERM)
            try:
                proc.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        self.kill(proc, signal.SIGKILL)

    def cleanup(self):
        with self.lock:
            procs = list(self.procs)
        for p in procs:
            if p.popen.poll() is None:
                try:
                    os.killpg(p.popen.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        for p in procs:
            try:
                p.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(p.popen.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, OSError):
                pass


class Printer:
    """Thread-safe progress lines stamped with the seconds since `t0` (`Printer()(msg)`)."""

    def __init__(self, t0=None):
        self.t0 = time.time() if t0 is None else t0
        self.lock = threading.Lock()

    def __call__(self, msg):
        with self.lock:
            for i, line in enumerate(str(msg).splitlines() or [""]):
                prefix = "[%6.1fs] " % (time.time() - self.t0) if i == 0 else "          "
                print(prefix + line, flush=True)


_allocated = set()


def _bindable(port):
    for host in ("0.0.0.0", "127.0.0.1"):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((host, port))
        except OSError:
            return False
        finally:
            s.close()
    return True


def listen_port_range():
    """Where to pick listening ports: 20000-45000 minus the kernel's ephemeral range.

    A port inside the ephemeral range can be taken, between our check and the server's bind, by
    the local end of any outgoing connection (a broker failed to bind its port that way in
    scenario 15, where many processes connect to each other).
    """
    lo, hi = 20000, 45000
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            eph_lo, eph_hi = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        return lo, hi
    if eph_lo - 10000 >= 5000:  # room below the ephemeral range (Linux default: 32768)
        return 10000, eph_lo - 4
    if eph_hi + 4 < 60000:
        return eph_hi + 4, 65000
    return lo, hi


def free_port_block(offsets=(0,), lo=None, hi=None):
    """A base port such that base+off is free for every offset (e.g. (-2, 0, 1) for brokers)."""
    if lo is None or hi is None:
        lo, hi = listen_port_range()
    for _ in range(500):
        base = random.randrange(lo, hi)
        ports = [base + o for o in offsets]
        # Keep a margin around previously handed-out ports.
        if any(abs(p - q) < 4 for p in ports for q in _allocated):
            continue
        if all(_bindable(p) for p in ports):
            _allocated.update(ports)
            return base
    raise RuntimeError("no free port block found")


def port_open(addr, timeout=0.5):
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def wait_until(pred, timeout, interval=0.2):
    """Poll `pred` until it returns a truthy value or `timeout` seconds pass; return the value or None."""
    deadline = time.time() + timeout
    while True:
        try:
            v = pred()
        except Exception:  # noqa: BLE001 - a failing probe just means "not yet"
            v = None
        if v:
            return v
        if time.time() >= deadline:
            return None
        time.sleep(interval)


def http_get(addr, path, timeout=10):
    """(status, body text) of GET http://addr/path; (None, error) when it cannot connect."""
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen("http://%s%s" % (addr, path), timeout=timeout) as r:
            return r.status, r.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except OSError as e:
        return None, str(e)
