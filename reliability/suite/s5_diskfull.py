"""Scenario 5: disk full. The KV file (and our route snapshot beside it) lives on a 1 MiB tmpfs;
20 KV entries are written, then a filler file takes every free byte. A KV write that cannot be
persisted must be answered with an error, never success; the files already on disk must
survive; serving (routes, reads of the KV store, registrations that change the tables) must
go on. Then the filler goes, writes succeed again, and a restart finds every acknowledged write.
"""

import errno
import json
import os
import time

from harness import remoting as rm

from .base import CLEANUP, JAVA, OURS, Fail, sh
from .world import NameServer, errors_of, fleet, readers, shape_args

TITLE = "Disk full (1 MiB tmpfs): unpersisted KV writes answered with an error, old files survive, serving continues"
SHAPE = shape_args(2, 5, 100)
NS = "RelDisk"


def mount_tmpfs(path, size="1m"):
    if os.geteuid() != 0:
        raise Fail("mounting a tmpfs needs root")
    os.makedirs(path, exist_ok=True)
    sh(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "tmpfs", path])
    return CLEANUP.add("tmpfs " + path, lambda: sh(["umount", "-l", path], check=False))


def fill(path):
    """Writes a filler file until the filesystem is full; returns its size."""
    filler = os.path.join(path, "filler")
    n = 0
    with open(filler, "wb", buffering=0) as f:
        block = b"\0" * 4096
        while True:
            try:
                n += f.write(block)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                break
        # The last partial block.
        for size in (1024, 256, 64, 16, 4, 1):
            try:
                while True:
                    n += f.write(b"\0" * size)
            except OSError:
                pass
    return filler, n


def put(addr, key, value):
    try:
        r = rm.call(addr, rm.PUT_KV_CONFIG, {"namespace": NS, "key": key, "value": value}, timeout=10)
        return r.code, (r.remark or "")[:100]
    except Exception as e:  # noqa: BLE001
        return None, type(e).__name__


def get(addr, key):
    r = rm.call(addr, rm.GET_KV_CONFIG, {"namespace": NS, "key": key}, timeout=10)
    return r.code, (r.ext or {}).get("value")


def on_disk(path):
    """The KV table of NS in the file, or None when the file is missing or not valid JSON."""
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read().decode("utf-8"))
        return (data.get("configTable") or {}).get(NS, {})
    except (OSError, ValueError):
        return None


def run(w, c, servers, ci=False):
    for kind in servers:
        col = OURS if kind == "ours" else JAVA
        disk = os.path.join(w.rundir, "disk-" + kind)
        token = mount_tmpfs(disk)
        ns = NameServer(w, "s5-" + kind, kind, kv_dir=disk)
        try:
            one(w, c, col, ns, disk)
        finally:
            ns.kill9()
            CLEANUP.done(token)


def one(w, c, col, ns, disk):
    ns.start()
    ns.wait_ready()
    fl = fleet(w, "s5-fleet-" + ns.key, ns.addr, SHAPE, period_ms=1000, extra=["--bump"])
    rd = readers(w, "s5-read-" + ns.key, ns.addr, SHAPE, rate=100)
    try:
        pop = fl.wait_for(lambda e: e.get("event") == "populated", 60)
        c.require(pop and errors_of(pop["regs"]) == 0, "%s: 10 simulated brokers registered" % col)
        acked = {}
        for i in range(20):
            code, remark = put(ns.addr, "k%02d" % i, "value-%02d" % i)
            if code != 0:
                c.require(False, "%s: KV put %d acknowledged before the disk fills (%s %s)" % (col, i, code, remark))
            acked["k%02d" % i] = "value-%02d" % i
        c.check(True, "%s: 20 KV puts acknowledged before the disk fills" % col)
        time.sleep(6)  # our route snapshot is written at most every 5 s after a change
        files_before = sorted(os.listdir(disk))
        _, filler_bytes = fill(disk)
        st = os.statvfs(disk)
        rd.send("phase full")
        code_full, remark_full = put(ns.addr, "after-full", "x" * 2048)
        try:
            r = rm.call(ns.addr, rm.DELETE_KV_CONFIG, {"namespace": NS, "key": "k00"}, timeout=10)
            code_del = r.code
        except Exception as e:  # noqa: BLE001
            code_del = type(e).__name__
        served_full = get(ns.addr, "after-full")
        served_k00 = get(ns.addr, "k00")
        time.sleep(3)  # registrations (tables changing every second) and reads go on
        table = on_disk(ns.kv_path)
        before_full = dict(acked)
        if code_del == 0:
            acked.pop("k00")
        reads_ok = all(get(ns.addr, k) == (0, v) for k, v in acked.items() if k != "k00")
        rd.send("phase freed")
        ph = rd.wait_for(lambda e: e.get("event") == "phase" and e.get("name") == "full", 10)
        regs = [e for e in fl.select("regs") if e["t"] >= ph["t0"]] if ph else []
        reg_err = sum(errors_of(e["regs"]) for e in regs)
        reg_ok = sum(e["regs"]["ok"] for e in regs)
        alive = ns.alive()
        os.remove(os.path.join(disk, "filler"))
        code_free, _ = put(ns.addr, "after-free", "free")
        if code_free == 0:
            acked["after-free"] = "free"
        ns.stop()
        ns.start()
        ns.wait_ready()
        survived = {k: get(ns.addr, k) for k in acked}
        kept_full = get(ns.addr, "after-full")
    finally:
        fl.stop()
        rd.stop()
    lost = [k for k, (code, v) in survived.items() if (code, v) != (0, acked[k])]
    c.fig("free bytes after the filler (filler size)", col, "%d (%d)" % (st.f_bavail * st.f_frsize, filler_bytes))
    c.fig("files in the KV directory before", col, ", ".join(files_before))
    c.fig("PUT_KV_CONFIG on the full disk: answer", col, "%s %s" % (code_full, remark_full))
    c.fig("DELETE_KV_CONFIG on the full disk: answer", col, code_del)
    c.fig("GET of the value written on the full disk (code)", col, served_full[0])
    c.fig("GET of the key deleted on the full disk (code)", col, served_k00[0])
    c.fig("kvConfig.json on disk while full", col,
          "missing or invalid" if table is None else "valid JSON, %d of 20 acknowledged entries" %
          sum(1 for k, v in before_full.items() if table.get(k) == v))
    c.fig("route reads while full: answered / failed", col,
          "%d / %d" % (ph["steady"]["ok"], errors_of(ph["steady"])) if ph else "-")
    c.fig("registrations while full: answered / failed", col, "%d / %d" % (reg_ok, reg_err))
    c.fig("PUT after the disk is freed", col, code_free)
    c.fig("acknowledged writes lost over the restart", col, len(lost))
    c.fig("GET of the value written on the full disk, after the restart (code)", col, kept_full[0])
    if col == JAVA:
        return
    c.check(code_full not in (0, None), "%s: the write that could not be persisted was answered with an error (%s %s)"
            % (col, code_full, remark_full))
    c.check(code_del not in (0, None), "%s: the delete that could not be persisted was answered with an error (%s)"
            % (col, code_del))
    c.check(served_full[0] != 0 and served_k00 == (0, before_full["k00"]),
            "%s: writes answered with an error did not take effect (refused put served: %s; refused delete applied: %s)"
            % (col, served_full[0] == 0, served_k00[0] != 0))
    c.check(table is not None and all(table.get(k) == v for k, v in before_full.items()),
            "%s: kvConfig.json survived the full disk (valid, every acknowledged entry)" % col)
    c.check(alive and reads_ok and ph is not None and errors_of(ph["steady"]) == 0,
            "%s: serving went on while full (route reads without failure, the other KV entries read back)" % col)
    c.check(reg_ok > 0 and reg_err == 0, "%s: registrations went on while full (%d answered, %d failed)"
            % (col, reg_ok, reg_err))
    c.check(code_free == 0, "%s: writes succeed again once the disk has room" % col)
    c.check(not lost, "%s: every acknowledged write is there after a restart (lost: %s)" % (col, lost[:5]))
    c.check(kept_full[0] != 0, "%s: the write answered with an error is not there after the restart" % col)
