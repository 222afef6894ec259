"""Raw RocketMQ remoting client used by the interop suite (the "prober").

Speaks the framing of the remoting protocol: 4-byte big-endian total length,
4-byte header-length-and-serialize-type, header (JSON or ROCKETMQ binary), body.
Only what the tests need: send a request, read the matching response.
"""

import base64
import hashlib
import hmac
import json
import re
import socket
import struct
import threading

LANGUAGES = [
    "JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER",
    "HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS",
]

# Request codes used by the suite.
PUT_KV_CONFIG = 100
GET_KV_CONFIG = 101
DELETE_KV_CONFIG = 102
REGISTER_BROKER = 103
UNREGISTER_BROKER = 104
GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106
WIPE_WRITE_PERM_OF_BROKER = 205
GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
DELETE_TOPIC_IN_NAMESRV = 216
REGISTER_TOPIC_IN_NAMESRV = 217
GET_KVLIST_BY_NAMESPACE = 219
GET_TOPICS_BY_CLUSTER = 224
GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
GET_UNIT_TOPIC_LIST = 311
GET_HAS_UNIT_SUB_TOPIC_LIST = 312
GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
UPDATE_NAMESRV_CONFIG = 318
GET_NAMESRV_CONFIG = 319
QUERY_DATA_VERSION = 322
ADD_WRITE_PERM_OF_BROKER = 327
GET_BROKER_MEMBER_GROUP = 901
BROKER_HEARTBEAT = 904
# Served by brokers (scenarios 11-13 read a slave's topic table).
GET_ALL_TOPIC_CONFIG = 21
# Served by controllers on their own port (scenarios 11-13).
CONTROLLER_ELECT_MASTER = 1002
CONTROLLER_GET_REPLICA_INFO = 1004
CONTROLLER_GET_METADATA_INFO = 1005
CONTROLLER_GET_SYNC_STATE_DATA = 1006
CLEAN_BROKER_DATA = 1011

# Version numbers (MQVersion ordinals).
V4_9_3 = 399  # last release answered with legacy (unquoted-key) route JSON
V5_3_3 = 479


class ProtocolError(Exception):
    """The peer sent something that is not a valid remoting frame."""


class Response:
    """A decoded remoting command (in practice, a response)."""

    def __init__(self, header, body, serialize_type):
        self.serialize_type = serialize_type
        self.code = header.get("code")
        self.language = header.get("language")
        self.version = header.get("version")
        self.opaque = header.get("opaque")
        self.flag = header.get("flag")
        self.remark = header.get("remark")
        ext = header.get("extFields")
        self.ext = None if ext is None else {str(k): v for k, v in ext.items()}
        self.body = body
        self.header = header

    def body_text(self):
        return None if self.body is None else self.body.decode("utf-8", "replace")

    def body_json(self):
        """Body parsed as JSON after quoting fastjson's bare integer map keys."""
        if self.body is None:
            return None
        return json.loads(normalize_legacy_json(self.body.decode("utf-8")))

    def summary(self):
        b = self.body_text()
        if b is not None and len(b) > 300:
            b = b[:300] + "...(%d bytes)" % len(self.body)
        return "code=%s remark=%r ext=%s body=%s" % (self.code, self.remark, self.ext, b)


def _encode_binary_header(code, ext, opaque, version, language, flag):
    out = struct.pack(">hBhii", code, LANGUAGES.index(language), version, opaque, flag)
    out += struct.pack(">i", 0)  # no remark
    eb = b""
    for k, v in (ext or {}).items():
        kb, vb = k.encode("utf-8"), str(v).encode("utf-8")
        eb += struct.pack(">h", len(kb)) + kb + struct.pack(">i", len(vb)) + vb
    return out + struct.pack(">i", len(eb)) + eb


def encode_request(code, ext=None, body=None, opaque=1, version=V5_3_3,
                   language="JAVA", flag=0, serialize="JSON", raw_ext=False):
    """One request frame; `serialize` is "JSON" or "ROCKETMQ" (binary header).

    With raw_ext the JSON header's extFields values are written as given (e.g. numbers).
    """
    if serialize == "ROCKETMQ":
        hb = _encode_binary_header(code, ext, opaque, version, language, flag)
        stype = 1
    else:
        header = {"code": code, "flag": flag, "language": language, "opaque": opaque,
                  "serializeTypeCurrentRPC": "JSON", "version": version}
        if ext is not None:
            header["extFields"] = dict(ext) if raw_ext else {k: str(v) for k, v in ext.items()}
        hb = json.dumps(header, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode("utf-8")
        stype = 0
    bb = body if isinstance(body, (bytes, bytearray)) else (body or "").encode("utf-8")
    total = 4 + len(hb) + len(bb)
    return struct.pack(">iI", total, (stype << 24) | len(hb)) + hb + bb


def _decode_binary_header(b):
    pos = 0

    def take(fmt):
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(b):
            raise ProtocolError("truncated ROCKETMQ header")
        v = struct.unpack_from(fmt, b, pos)
        pos += size
        return v[0]

    def take_bytes(n):
        nonlocal pos
        if n < 0 or pos + n > len(b):
            raise ProtocolError("bad length in ROCKETMQ header")
        v = b[pos:pos + n]
        pos += n
        return v

    h = {"code": take(">h")}
    lang = take(">B")
    h["language"] = LANGUAGES[lang] if lang < len(LANGUAGES) else "CODE_%d" % lang
    h["version"] = take(">h")
    h["opaque"] = take(">i")
    h["flag"] = take(">i")
    rl = take(">i")
    remark = take_bytes(rl).decode("utf-8") if rl > 0 else None
    if remark is not None:
        h["remark"] = remark
    el = take(">i")
    if el > 0:
        ext = {}
        eb = take_bytes(el)
        p = 0
        while p < len(eb):
            (kl,) = struct.unpack_from(">h", eb, p)
            p += 2
            k = eb[p:p + kl].decode("utf-8")
            p += kl
            (vl,) = struct.unpack_from(">i", eb, p)
            p += 4
            v = eb[p:p + vl].decode("utf-8")
            p += vl
            ext[k] = v
        h["extFields"] = ext
    return h


def decode_frame(frame):
    """Decode one frame without its leading 4-byte length."""
    if len(frame) < 4:
        raise ProtocolError("frame shorter than 4 bytes")
    (hl_type,) = struct.unpack_from(">I", frame, 0)
    stype = (hl_type >> 24) & 0xFF
    hl = hl_type & 0xFFFFFF
    if 4 + hl > len(frame):
        raise ProtocolError("header length %d exceeds frame %d" % (hl, len(frame)))
    hb = frame[4:4 + hl]
    body = frame[4 + hl:]
    if stype == 0:
        header = json.loads(hb.decode("utf-8"))
        st = "JSON"
    elif stype == 1:
        header = _decode_binary_header(hb)
        st = "ROCKETMQ"
    else:
        raise ProtocolError("unknown serialize type %d" % stype)
    return Response(header, body if len(body) > 0 else None, st)


class Conn:
    """One TCP connection to a remoting server; requests are sent one at a time.

    With `ssl_context` (an `ssl.SSLContext`) the connection is TLS: the handshake is done here.
    """

    def __init__(self, addr, timeout=5.0, ssl_context=None):
        host, port = addr.rsplit(":", 1)
        self.addr = addr
        sock = socket.create_connection((host, int(port)), timeout=timeout)
        if ssl_context is not None:
            try:
                sock = ssl_context.wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
        self.sock = sock
        self.sock.settimeout(timeout)
        self.opaque = 0
        self.lock = threading.Lock()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def _read_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ProtocolError("connection closed by %s" % self.addr)
            buf += chunk
        return bytes(buf)

    def request(self, code, ext=None, body=None, version=V5_3_3, language="JAVA", oneway=False,
                serialize="JSON", raw_ext=False):
        with self.lock:
            self.opaque += 1
            op = self.opaque
            self.sock.sendall(encode_request(code, ext, body, op, version, language,
                                             2 if oneway else 0, serialize, raw_ext))
            if oneway:
                return None
            while True:
                (total,) = struct.unpack(">i", self._read_exact(4))
                if total < 4 or total > 16 * 1024 * 1024:
                    raise ProtocolError("bad frame length %d" % total)
                resp = decode_frame(self._read_exact(total))
                if resp.flag is not None and resp.flag & 1 and resp.opaque == op:
                    return resp
                # Anything else (a server-initiated request, a stale response) is skipped.


def signed(ext, body, access_key, secret_key):
    """`ext` plus AccessKey and Signature, as Java's AclClientRPCHook signs a request:
    Base64(HmacSHA1(secret, the values of every other field in Java key order (UTF-16 code
    units), then the body))."""
    ext = dict(ext or {})
    ext["AccessKey"] = access_key
    keys = sorted((k for k in ext if k != "Signature"), key=lambda k: k.encode("utf-16-be"))
    content = "".join(ext[k] for k in keys).encode("utf-8") + (body or b"")
    digest = hmac.new(secret_key.encode("utf-8"), content, hashlib.sha1).digest()
    ext["Signature"] = base64.b64encode(digest).decode("ascii")
    return ext


def call(addr, code, ext=None, body=None, version=V5_3_3, timeout=5.0, ssl_context=None, credentials=None):
    """Open a connection (TLS with `ssl_context`), send one request (signed with `credentials`,
    an (access key, secret key) pair, when given), return the response."""
    if credentials is not None:
        ext = signed(ext, body, *credentials)
    with Conn(addr, timeout, ssl_context) as c:
        return c.request(code, ext, body, version)


_BARE_KEY = re.compile(r"-?\d+")


def normalize_legacy_json(text):
    """Quote bare integer object keys ({0:"a"} -> {"0":"a"}) outside strings."""
    out = []
    i = 0
    n = len(text)
    in_str = False
    expect_key = False
    while i < n:
        ch = text[i]
        if in_str:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == '"':
                in_str = False
            i += 1
            continue
        if ch == '"':
            in_str = True
            expect_key = False
            out.append(ch)
            i += 1
            continue
        if ch in "{,":
            out.append(ch)
            i += 1
            expect_key = True
            continue
        if expect_key and not ch.isspace():
            expect_key = False
            m = _BARE_KEY.match(text, i)
            if m:
                j = m.end()
                k = j
                while k < n and text[k].isspace():
                    k += 1
                if k < n and text[k] == ":":
                    out.append('"%s"' % m.group(0))
                    i = j
                    continue
        out.append(ch)
        i += 1
    return "".join(out)


def has_bare_keys(text):
    """True when the JSON text uses fastjson's legacy unquoted integer keys."""
    return normalize_legacy_json(text) != text


def parse_properties(text):
    """Parse the key=value lines of GET_NAMESRV_CONFIG (no continuations needed)."""
    props = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        m = re.match(r"([^=:\s]+)\s*[=:]?\s*(.*)$", line)
        if m:
            props[m.group(1)] = m.group(2)
    return props
