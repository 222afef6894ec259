"""Differential comparison of two nameservers' responses (scenario 8).

Responses are compared field by field: code, remark, extFields, language, version, flag,
serialize type, and the body. JSON bodies are parsed after quoting fastjson's bare integer
keys, and compared with order-insensitive arrays and maps; whether a body used the legacy
(bare-key) form is compared separately. GET_NAMESRV_CONFIG bodies are compared as
key=value maps. Differences matched by interop/allowlist.txt are reported but do not fail.
"""

import fnmatch
import json
import os

from . import remoting as rm

MISSING = "<absent>"


class AllowEntry:
    def __init__(self, check_glob, path_glob, reason, lineno):
        self.check_glob = check_glob
        self.path_glob = path_glob
        self.reason = reason
        self.lineno = lineno
        self.used = 0

    def matches(self, check, path):
        return fnmatch.fnmatchcase(check, self.check_glob) and fnmatch.fnmatchcase(path, self.path_glob)


def load_allowlist(path):
    """Entries: `<check-glob> <path-glob> <reason...>`; '#' starts a comment line."""
    entries = []
    errors = []
    if not os.path.exists(path):
        return entries, errors
    with open(path) as f:
        for i, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            parts = s.split(None, 2)
            if len(parts) < 3 or len(parts[2].strip()) < 10:
                errors.append("allowlist line %d needs '<check-glob> <path-glob> <reason>': %s" % (i, s))
                continue
            entries.append(AllowEntry(parts[0], parts[1], parts[2].strip(), i))
    return entries, errors


def canonical(v):
    """A hashable, order-insensitive canonical form for sorting arrays."""
    return json.dumps(normalize(v), sort_keys=True, separators=(",", ":"))


def normalize(v):
    if isinstance(v, dict):
        return {str(k): normalize(x) for k, x in v.items()}
    if isinstance(v, list):
        items = [normalize(x) for x in v]
        return sorted(items, key=lambda x: json.dumps(x, sort_keys=True))
    return v


def _list_key(items):
    """Key arrays of objects by a natural identifier when there is one."""
    if items and all(isinstance(x, dict) for x in items):
        for k in ("brokerName", "topic"):
            keys = [x.get(k) for x in items]
            if all(isinstance(x, str) for x in keys) and len(set(keys)) == len(keys):
                return k
    return None


def diff_values(a, b, path, out):
    """Append (path, a, b) for every difference between two JSON values."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            diff_values(a.get(k, MISSING), b.get(k, MISSING), "%s.%s" % (path, k), out)
        return
    if isinstance(a, list) and isinstance(b, list):
        ka, kb = _list_key(a), _list_key(b)
        if ka and ka == kb:
            da = {x[ka]: x for x in a}
            db = {x[kb]: x for x in b}
            for k in sorted(set(da) | set(db)):
                diff_values(da.get(k, MISSING), db.get(k, MISSING), "%s[%s]" % (path, k), out)
            return
        ca = sorted(canonical(x) for x in a)
        cb = sorted(canonical(x) for x in b)
        if ca != cb:
            only_a = [x for x in ca if x not in cb]
            only_b = [x for x in cb if x not in ca]
            out.append((path + "[]", "only here: %s" % only_a if only_a else "(subset)",
                        "only here: %s" % only_b if only_b else "(subset)"))
        return
    if type(a) is not type(b) or a != b:
        out.append((path, a, b))


def body_view(check, resp):
    """(kind, value, legacy_form) of a response body for comparison."""
    if resp.body is None:
        return "none", None, False
    text = resp.body.decode("utf-8", "replace")
    if check.startswith("config/get"):
        return "properties", rm.parse_properties(text), False
    try:
        return "json", json.loads(rm.normalize_legacy_json(text)), rm.has_bare_keys(text)
    except ValueError:
        return "text", text, False


def compare(check, sut, ref):
    """All differences between two responses as (path, sut_value, ref_value)."""
    out = []
    for field in ("code", "remark", "language", "version", "flag", "serialize_type"):
        va, vb = getattr(sut, field), getattr(ref, field)
        if va != vb:
            out.append((field, va, vb))
    ea, eb = sut.ext, ref.ext
    if (ea is None) != (eb is None):
        out.append(("extFields", "absent" if ea is None else ea, "absent" if eb is None else eb))
    else:
        diff_values(ea or {}, eb or {}, "ext", out)
    ka, va, la = body_view(check, sut)
    kb, vb, lb = body_view(check, ref)
    if ka != kb:
        out.append(("body", "%s: %s" % (ka, short(sut.body_text())), "%s: %s" % (kb, short(ref.body_text()))))
    else:
        if ka in ("json", "properties"):
            diff_values(va, vb, "body", out)
        elif va != vb:
            out.append(("body", short(va), short(vb)))
        if la != lb:
            out.append(("body<form>", "legacy bare-key JSON" if la else "standard JSON",
                        "legacy bare-key JSON" if lb else "standard JSON"))
    return out


def short(v, n=400):
    s = v if isinstance(v, str) else json.dumps(v, sort_keys=True) if not isinstance(v, bytes) else repr(v)
    if s is None:
        return None
    return s if len(s) <= n else s[:n] + "...(%d chars)" % len(s)
