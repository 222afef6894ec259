"""Scenario 12: access control."""

import json
import os
import time

from .. import remoting as rm
from ..fixture import GEN_VERSION, Broker, Namesrv, broker_addrs, java_bin, mqadmin_with_tools_yml
from ..output import parse_result, server_log_count, tail
from ..procs import wait_until
from ..topics import RUN_TAG, create_topic

TITLE = "Access control: signed Java broker, mqadmin with/without credentials, signed producer"


ACL_CLUSTER = "AclCluster"
ACL_BROKER = "broker-acl"
ACL_TOPIC = "InteropAcl"
ACL_ADMIN = ("interop-admin", "admin-secret-10")
ACL_BROKER_KEY = ("interop-broker", "broker-secret-10")
ACL_READER = ("interop-reader", "reader-secret-10")
# Per send, for the checks that every send is acknowledged (see where it is used).
SEND_TIMEOUT_MS = 10000
ACL_ACCOUNTS = """accounts:
  - {accessKey: %s, secretKey: "%s", role: admin}
  - {accessKey: %s, secretKey: "%s", role: broker}
  - {accessKey: %s, secretKey: "%s", role: reader}
""" % (ACL_ADMIN + ACL_BROKER_KEY + ACL_READER)


def acl_namesrv(env, key, mode):
    """A SUT enforcing access control with ACL_ACCOUNTS in `authenticationMode=mode`."""
    ns = Namesrv(env, key, env.impl, credentials=ACL_READER, props={
        "authenticationEnabled": "true",
        "authenticationMode": mode,
        "authConfigPath": os.path.join(env.rundir, "ns-" + key, "auth.yml"),
    })
    path = os.path.join(ns.dir, "auth.yml")
    with open(path, "w") as f:
        f.write(ACL_ACCOUNTS)
    os.chmod(path, 0o600)
    return ns


def signing_broker(env, key, name, access_key, secret_key):
    """A 5.x broker of ACL_CLUSTER signing its nameserver calls: innerClientAuthenticationCredentials
    (which the broker also stores as a user, so it needs an authentication metadata provider; its
    own authentication stays off)."""
    broker = Broker(env, key, "5", ACL_CLUSTER, name, 0)
    broker.conf_overrides["innerClientAuthenticationCredentials"] = json.dumps(
        {"accessKey": access_key, "secretKey": secret_key}, separators=(",", ":"))
    broker.conf_overrides["authenticationMetadataProvider"] = (
        "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider")
    return broker


def acl_route_perm(addr, credentials=None):
    """The perm of broker-acl's queues of ACL_TOPIC on `addr` (None without a route)."""
    r = rm.call(addr, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": ACL_TOPIC}, credentials=credentials)
    if r.code != 0:
        return None
    perms = {q.get("perm") for q in json.loads(rm.normalize_legacy_json(r.body_text())).get("queueDatas", [])
             if q.get("brokerName") == ACL_BROKER}
    return perms.pop() if len(perms) == 1 else None


def s12_access_control(env, c):
    """A Java 5.x broker, mqadmin and producer against SUTs enforcing access control.

    SUT `acl` (authenticationMode=writes) and SUT `acl-all` (authenticationMode=all), both with
    an admin, a broker and a reader account. The broker `broker-acl` signs its nameserver calls
    with innerClientAuthenticationCredentials of the broker account: it registers with both and
    serves messages (an unsigned Java producer through the `writes` SUT). The Java mqadmin
    wipeWritePerm without credentials is refused (write permission unchanged); with the admin
    account in $ROCKETMQ_HOME/conf/tools.yml it is applied, and addWritePerm restores it. On the
    `all` SUT an unsigned Java producer finds no route while one with an AclClientRPCHook (reader
    account) sends. Last, a broker with a wrong secret never appears in the routes.
    """
    if env.impl != "rust":
        c.check(True, "skipped: the Java nameserver has no access control to test")
        return
    ver = GEN_VERSION["5"]
    started = []
    try:
        ns = acl_namesrv(env, "acl", "writes")
        ns_all = acl_namesrv(env, "acl-all", "all")
        for n in (ns, ns_all):
            started.append(n)
            n.start()
        for n in (ns, ns_all):
            n.wait_ready(30)
        c.check(True, "SUTs %s (authenticationMode=writes) and %s (all) up with an accounts file" % (
            ns.addr, ns_all.addr))

        broker = signing_broker(env, "acl", ACL_BROKER, *ACL_BROKER_KEY)
        started.append(broker)
        t0 = time.time()
        broker.start("%s;%s" % (ns.addr, ns_all.addr))
        broker.wait_boot(120)

        def registered(addr, credentials=None):
            r = rm.call(addr, rm.GET_BROKER_CLUSTER_INFO, credentials=credentials)
            if r.code != 0:
                return None
            ci = json.loads(rm.normalize_legacy_json(r.body_text()))
            return ci if broker_addrs(ci, ACL_BROKER, 0) == [broker.addr] else None
        c.require(wait_until(lambda: registered(ns.addr), 60, 0.3),
                  "%s broker with innerClientAuthenticationCredentials (broker account) registered with the "
                  "writes SUT" % ver)
        c.require(wait_until(lambda: registered(ns_all.addr, ACL_READER), 60, 0.3),
                  "... and with the all SUT")
        c.fig("signed broker booted and registered (s)", "%.1f" % (time.time() - t0))
        c.check(server_log_count(ns, "who=account:%s" % ACL_BROKER_KEY[0]) >= 1,
                "SUT audit log: the registration accepted as account:%s" % ACL_BROKER_KEY[0])

        create_topic(env, c, ACL_TOPIC, cluster=ACL_CLUSTER, ns=ns.addr, brokers=(ACL_BROKER,))
        prefix = RUN_TAG + "-acl"
        # A send the broker is slow to acknowledge is not what this checks (access control is):
        # 10 s per send, not the client's 3 s (one send of 50 timed out at 3 s on a busy machine).
        rc, out = env.jclient("5", "produce", timeout=180, ns=ns.addr, topic=ACL_TOPIC, count=50, prefix=prefix,
                              timeoutMs=SEND_TIMEOUT_MS)
        r = parse_result(out)
        c.check(rc == 0 and r.get("ok") == "50",
                "an unsigned Java %s producer sent 50 messages through the writes SUT (ok=%s failed=%s)" % (
                    ver, r.get("ok"), r.get("failed")))
        if rc != 0:
            c.note(tail(out))

        # mqadmin without credentials: refused, nothing applied.
        before = server_log_count(ns, "reason=\"no_signature\"")
        rc, out = env.mqadmin(["wipeWritePerm", "-b", ACL_BROKER], ns=ns.addr)
        c.check("OK" not in out, "Java mqadmin wipeWritePerm without credentials is not applied (%s)" % (
            out.strip().splitlines()[0] if out.strip() else "no output"))
        c.check(acl_route_perm(ns.addr) == 6, "the route still has perm 6 (got %s)" % acl_route_perm(ns.addr))
        c.check(server_log_count(ns, "reason=\"no_signature\"") > before,
                "SUT log: WIPE_WRITE_PERM refused for want of a signature")

        # mqadmin with the admin account in tools.yml: applied, then restored.
        rc, out = mqadmin_with_tools_yml(env, ["wipeWritePerm", "-b", ACL_BROKER], ns.addr, ACL_ADMIN)
        c.check("wipe write perm of broker[%s] in name server[%s] OK" % (ACL_BROKER, ns.addr) in out,
                "Java mqadmin wipeWritePerm with the admin account in $ROCKETMQ_HOME/conf/tools.yml: OK")
        if "OK" not in out:
            c.note(tail(out))
        c.check(acl_route_perm(ns.addr) == 4, "the route now has perm 4 (got %s)" % acl_route_perm(ns.addr))
        c.check(server_log_count(ns, "who=account:%s" % ACL_ADMIN[0]) >= 1,
                "SUT audit log: WIPE_WRITE_PERM accepted as account:%s" % ACL_ADMIN[0])
        rc, out = mqadmin_with_tools_yml(env, ["addWritePerm", "-b", ACL_BROKER], ns.addr, ACL_ADMIN)
        c.check(acl_route_perm(ns.addr) == 6, "addWritePerm with the admin account restores perm 6 (got %s)" %
                acl_route_perm(ns.addr))

        # authenticationMode=all: reads need an account too.
        r = rm.call(ns_all.addr, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": ACL_TOPIC})
        c.check(r.code == 16, "all SUT: an unsigned route read is refused with NO_PERMISSION (code=%s remark=%r)" % (
            r.code, r.remark))
        c.check(wait_until(lambda: acl_route_perm(ns_all.addr, ACL_READER) == 6, 30, 0.3),
                "all SUT: a route read signed by the reader account lists %s" % ACL_BROKER)
        rc, out = env.jclient("5", "produce", timeout=120, ns=ns_all.addr, topic=ACL_TOPIC, count=1,
                              prefix=prefix + "-unsigned", timeoutMs=2000)
        r = parse_result(out)
        c.check(r.get("ok") == "0", "an unsigned Java producer sends nothing through the all SUT (ok=%s)" % r.get("ok"))
        rc, out = env.jclient("5", "produce", timeout=180, ns=ns_all.addr, topic=ACL_TOPIC, count=50,
                              prefix=prefix + "-signed", accessKey=ACL_READER[0], secretKey=ACL_READER[1],
                              timeoutMs=SEND_TIMEOUT_MS)
        r = parse_result(out)
        c.check(rc == 0 and r.get("ok") == "50",
                "a Java %s producer with an AclClientRPCHook (reader account) sent 50 messages through the all "
                "SUT (ok=%s failed=%s)" % (ver, r.get("ok"), r.get("failed")))
        if rc != 0:
            c.note(tail(out))

        # Last (its failures count against 127.0.0.1): a broker with a wrong secret.
        bad = signing_broker(env, "acl-bad", ACL_BROKER + "-bad", ACL_BROKER_KEY[0], "wrong-secret")
        started.append(bad)
        before = server_log_count(ns, "reason=\"bad_signature\"")
        bad.start(ns.addr)
        bad.wait_boot(120)
        refused = wait_until(lambda: server_log_count(ns, "reason=\"bad_signature\"") > before, 60, 0.3)
        c.check(refused, "SUT log: the wrong-secret broker's registration refused (bad_signature)")
        r = rm.call(ns.addr, rm.GET_BROKER_CLUSTER_INFO)
        ci = json.loads(rm.normalize_legacy_json(r.body_text())) if r.code == 0 else {}
        c.check(broker_addrs(ci, ACL_BROKER + "-bad", 0) == [] and broker_addrs(ci, ACL_BROKER, 0) == [broker.addr],
                "the wrong-secret broker is in no route; %s still is" % ACL_BROKER)
        env.procs.kill(bad.proc)
    finally:
        for p in started:
            if p.proc is not None:
                env.procs.kill(p.proc)
