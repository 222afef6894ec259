"""Scenario 3: the admin tool."""

import re

from .. import remoting as rm
from ..fixture import CLUSTER, kv_get, namesrv_config, route, route_queues
from ..output import tail
from ..topics import create_topic

TITLE = "Admin tool (mqadmin KV, config, perms, topic lists, order conf, delete)"


def parse_props_output(out):
    props = {}
    for ln in out.splitlines():
        m = re.match(r"^\s*([A-Za-z][\w.]*)\s*=\s*(.*?)\s*$", ln)
        if m:
            props[m.group(1)] = m.group(2)
    return props


def s3_admin(env, c):
    """Each mqadmin command's effect is checked with a raw request to the SUT (or the tool's output)."""
    env.ensure("a", "a_s", "b")
    ns = env.sut1
    topic = "InteropAdmin"
    create_topic(env, c, topic, queues=2)

    # KV config
    rc, out = env.mqadmin(["updateKvConfig", "-s", "InteropNS", "-k", "k1", "-v", "v1"])
    code, val = kv_get(ns, "InteropNS", "k1")
    c.check(code == 0 and val == "v1", "updateKvConfig -s InteropNS -k k1 -v v1 -> GET_KV_CONFIG = %r (code %s)" % (val, code))
    rc, out = env.mqadmin(["deleteKvConfig", "-s", "InteropNS", "-k", "k1"])
    code, val = kv_get(ns, "InteropNS", "k1")
    c.check(code == 22, "deleteKvConfig -s InteropNS -k k1 -> GET_KV_CONFIG code 22 QUERY_NOT_FOUND (got %s)" % code)

    # Nameserver config
    rc, out = env.mqadmin(["getNamesrvConfig"])
    props = parse_props_output(out)
    c.fig("getNamesrvConfig keys", len(props))
    c.check(props.get("listenPort") == str(env.namesrvs["sut1"].port) and props.get("orderMessageEnable") == "false",
            "getNamesrvConfig prints listenPort=%s orderMessageEnable=false (got %s, %s)" % (
                env.namesrvs["sut1"].port, props.get("listenPort"), props.get("orderMessageEnable")))
    kv_path = namesrv_config(ns).get("kvConfigPath")
    rc, out = env.mqadmin(["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"])
    got = namesrv_config(ns).get("orderMessageEnable")
    c.check("success" in out and got == "true",
            "updateNamesrvConfig -k orderMessageEnable -v true -> GET_NAMESRV_CONFIG shows %s" % got)
    rc, out = env.mqadmin(["updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/interop-evil.json"])
    refused = "CODE: 16" in out
    got = namesrv_config(ns).get("kvConfigPath")
    c.check(refused and got == kv_path,
            "updateNamesrvConfig -k kvConfigPath (black-listed) is refused with code 16 and kvConfigPath is unchanged")
    if not refused:
        c.note(tail(out))

    # Order conf (KV namespace ORDER_TOPIC_CONFIG) and its effect on routes
    conf = "broker-a:2;broker-b:2"
    rc, out = env.mqadmin(["updateOrderConf", "-t", topic, "-v", conf, "-m", "put"])
    code, val = kv_get(ns, "ORDER_TOPIC_CONFIG", topic)
    c.check(val == conf, "updateOrderConf -m put -> KV ORDER_TOPIC_CONFIG/%s = %r" % (topic, val))
    rt = route(ns, topic)
    c.check(rt is not None and rt.get("orderTopicConf") == conf,
            "with orderMessageEnable=true the route carries orderTopicConf=%r (got %r)" % (conf, (rt or {}).get("orderTopicConf")))
    rc, out = env.mqadmin(["updateOrderConf", "-t", topic, "-m", "get"])
    c.check(conf in out, "updateOrderConf -m get prints the order conf")
    rc, out = env.mqadmin(["updateOrderConf", "-t", topic, "-m", "delete"])
    code, val = kv_get(ns, "ORDER_TOPIC_CONFIG", topic)
    c.check(code == 22, "updateOrderConf -m delete -> KV entry gone (code %s)" % code)
    rc, out = env.mqadmin(["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "false"])
    rt = route(ns, topic)
    c.check(namesrv_config(ns).get("orderMessageEnable") == "false" and rt is not None and "orderTopicConf" not in rt,
            "updateNamesrvConfig orderMessageEnable=false -> config false, route without orderTopicConf")

    # Write permission
    rc, out = env.mqadmin(["wipeWritePerm", "-b", "broker-a"])
    m = re.search(r"wipe write perm of broker\[broker-a\] in name server\[[^\]]*\] OK, (\d+)", out)
    c.fig("wipeWritePerm count", m.group(1) if m else None)
    q = route_queues(route(ns, topic))
    c.check(m and q.get("broker-a", {}).get("perm") == 4 and q.get("broker-b", {}).get("perm") == 6,
            "wipeWritePerm -b broker-a -> %s perms broker-a=4 broker-b=6 (got %s/%s)" % (
                topic, q.get("broker-a", {}).get("perm"), q.get("broker-b", {}).get("perm")))
    if not m:
        c.note(tail(out))
    rc, out = env.mqadmin(["addWritePerm", "-b", "broker-a"])
    m = re.search(r"add write perm of broker\[broker-a\] in name server\[[^\]]*\] OK, (\d+)", out)
    c.fig("addWritePerm count", m.group(1) if m else None)
    q = route_queues(route(ns, topic))
    c.check(m and q.get("broker-a", {}).get("perm") == 6,
            "addWritePerm -b broker-a -> broker-a perm 6 (got %s)" % q.get("broker-a", {}).get("perm"))
    if not m:
        c.note(tail(out))

    # Topic lists
    rc, out = env.mqadmin(["topicList"])
    listed = set(out.split())
    c.check(topic in listed, "topicList includes %s (%d entries)" % (topic, len(listed)))
    rc, out = env.mqadmin(["topicClusterList", "-t", topic])
    c.check(CLUSTER in out.split(), "topicClusterList -t %s prints %s" % (topic, CLUSTER))

    # Delete
    rc, out = env.mqadmin(["deleteTopic", "-t", topic, "-c", CLUSTER])
    c.check("success" in out and "Exception" not in out, "deleteTopic -t %s -c %s succeeded" % (topic, CLUSTER))
    if "Exception" in out:
        c.note(tail(out))
    r = rm.call(ns, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    c.check(r.code == 17, "after deleteTopic the SUT answers TOPIC_NOT_EXIST for %s (code %s)" % (topic, r.code))
    r = rm.call(ns, rm.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    c.check(r.code == 0 and topic not in (r.body_json() or {}).get("topicList", []),
            "GET_ALL_TOPIC_LIST_FROM_NAMESERVER no longer includes %s" % topic)
