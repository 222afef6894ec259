"""What every scenario shares: printing, checks and figures per server column, and the cleanup
registry (network namespaces, mounts) that run.py empties on exit, failure, Ctrl-C and timeout.
"""

import os
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RDIR = os.path.dirname(HERE)
ROOT = os.path.dirname(RDIR)
CACHE = os.path.join(RDIR, ".cache")


T0 = time.time()
_print_lock = threading.Lock()


def say(msg):
    with _print_lock:
        for i, line in enumerate(str(msg).splitlines() or [""]):
            prefix = "[%6.1fs] " % (time.time() - T0) if i == 0 else "          "
            print(prefix + line, flush=True)


class Fail(Exception):
    """A required step failed; the scenario stops (its checks so far are kept)."""


# Columns of the side-by-side table.
OURS = "ours"
OURS_SNAP = "ours (snapshot)"
OURS_NOSNAP = "ours (no snapshot)"
JAVA = "Java 5.5.0"


class Ctx:
    """Checks and side-by-side figures of one scenario.

    A check is `ok`, `FAIL` or `pending` (it needs a server feature this build lacks: it is
    listed, and neither passes nor fails the scenario). Figures are rows of the table:
    `fig(row, column, value)`.
    """

    def __init__(self, title):
        self.title = title
        self.checks = []
        self.rows = []
        self.table = {}
        self.columns = []
        self.notes = []

    def check(self, ok, text):
        ok = bool(ok)
        self.checks.append(("ok" if ok else "FAIL", text))
        say("    %s %s" % ("ok  " if ok else "FAIL", text))
        return ok

    def require(self, ok, text):
        if not self.check(ok, text):
            raise Fail(text)

    def pending(self, text):
        self.checks.append(("pending", text))
        say("    pend %s" % text)

    def fig(self, row, column, value):
        if row not in self.table:
            self.rows.append(row)
            self.table[row] = {}
        if column not in self.columns:
            self.columns.append(column)
        self.table[row][column] = value
        say("    ..  %s [%s] = %s" % (row, column, value))

    def note(self, text):
        self.notes.append(text)
        say("    ..  " + text)

    def passed(self):
        states = [s for s, _ in self.checks]
        return bool(states) and "FAIL" not in states and "ok" in states


def fmt_ms(ms):
    return "-" if ms is None else ("%.0f ms" % ms if ms < 10000 else "%.1f s" % (ms / 1000.0))


def fmt_s(secs):
    return "-" if secs is None else "%.1f s" % secs


def fmt_mib(kib):
    return "-" if kib is None else "%.0f MiB" % (kib / 1024.0)


class Cleanup:
    """Undo actions (LIFO) for what is not a process: namespaces, links, mounts, files."""

    def __init__(self):
        self.lock = threading.Lock()
        self.actions = []

    def add(self, name, fn):
        with self.lock:
            self.actions.append((name, fn))
        return (name, fn)

    def done(self, token):
        """Runs and forgets one action (normal teardown)."""
        with self.lock:
            if token in self.actions:
                self.actions.remove(token)
            else:
                return
        self._run(*token)

    def run_all(self):
        while True:
            with self.lock:
                if not self.actions:
                    return
                token = self.actions.pop()
            self._run(*token)

    @staticmethod
    def _run(name, fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - cleanup goes on with the rest
            say("cleanup of %s failed: %r" % (name, e))


CLEANUP = Cleanup()


def sh(argv, timeout=30, check=True):
    """Runs a short system command (ip, mount, ...); returns its output."""
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    out = p.stdout.decode("utf-8", "replace")
    if check and p.returncode != 0:
        raise Fail("%s failed (rc=%d): %s" % (" ".join(argv), p.returncode, out.strip()))
    return out


def rss_kib(pid):
    """VmRSS of a process in KiB (None when it is gone)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class RssSampler:
    """Samples a process's VmRSS every `every` seconds in a thread; `peak()` is the highest seen."""

    def __init__(self, pid, every=0.1):
        self.pid = pid
        self.every = every
        self.max = 0
        self.last = None
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop_flag.is_set():
            v = rss_kib(self.pid)
            if v is not None:
                self.last = v
                self.max = max(self.max, v)
            self.stop_flag.wait(self.every)

    def reset(self):
        self.max = self.last or 0

    def peak(self):
        return self.max

    def stop(self):
        self.stop_flag.set()
        self.thread.join(timeout=2)
        return self.max


def quantile(values, q):
    if not values:
        return None
    s = sorted(values)
    i = min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))
    return s[i]
