"""Reading what the clients, the tools and the nameservers print."""

import json
import re

from . import remoting as rm


def parse_result(out):
    """key=value pairs of the last 'RESULT ' line of a client's output ({} if none)."""
    line = None
    for ln in out.splitlines():
        if ln.startswith("RESULT "):
            line = ln
    if line is None:
        return {}
    return {m.group(1): m.group(2) for m in re.finditer(r"(\w+)=(\{[^}]*\}|\S+)", line[7:])}


def tail(out, n=12):
    return "\n".join("        | " + ln for ln in out.strip().splitlines()[-n:])


def parse_json_output(out):
    """The JSON object printed by an mqadmin command (legacy bare keys allowed)."""
    start = out.find("{")
    end = out.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        return json.loads(rm.normalize_legacy_json(out[start:end + 1]))
    except ValueError:
        return None


def parse_cluster_list(out):
    rows = set()
    for ln in out.splitlines():
        parts = ln.split()
        if len(parts) >= 4 and not ln.startswith("#") and parts[2].isdigit() and ":" in parts[3]:
            rows.add((parts[0], parts[1], parts[2], parts[3]))
    return rows


def server_log_count(ns, text):
    return ns.proc.log_text().count(text) if ns.proc else 0
