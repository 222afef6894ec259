"""Scenario 9: TLS (issue #7)."""

import json
import os
import re
import socket
import ssl
import time

from .. import remoting as rm
from ..fixture import GEN_VERSION, Broker, Namesrv, SetupError, broker_addrs, route_brokers, route_queues
from ..output import server_log_count, tail
from ..pki import Pki, PkiError
from ..procs import wait_until
from ..procs import wait_until
from ..topics import RUN_TAG

TITLE = "TLS: Java client and broker to an enforcing SUT, mutual TLS"


TLS_CLUSTER = "TlsCluster"
TLS_BROKER = "broker-tls"
TLS_KV_NAMESPACE = "InteropTls"


def tls_context(ca=None, cert=None, key=None):
    """A client SSLContext for the harness's raw requests: trust `ca` (or anything), present `cert`."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    if ca:
        ctx.load_verify_locations(ca)
    else:
        ctx.verify_mode = ssl.CERT_NONE
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


def probe_refused(addr, ssl_context=None):
    """(refused, detail): a GET_BROKER_CLUSTER_INFO must end with the server closing the
    connection or failing the handshake, not with an answer and not by hanging."""
    try:
        r = rm.call(addr, rm.GET_BROKER_CLUSTER_INFO, timeout=5, ssl_context=ssl_context)
        return False, "answered with code %s" % r.code
    except socket.timeout:
        return False, "no answer and no close within 5 s"
    except (OSError, rm.ProtocolError) as e:  # ssl.SSLError is an OSError
        return True, "%s: %s" % (type(e).__name__, e)


def tls_session(addr, ssl_context):
    """(TLS version, cipher) that the server negotiates with the harness's client."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        with ssl_context.wrap_socket(raw, server_hostname=host) as t:
            return t.version(), t.cipher()[0]


def cluster_info_tls(addr, ctx):
    r = rm.call(addr, rm.GET_BROKER_CLUSTER_INFO, timeout=3, ssl_context=ctx)
    return r.body_json() if r.code == 0 and r.body else None


def kv_get_tls(addr, ctx, key):
    r = rm.call(addr, rm.GET_KV_CONFIG, {"namespace": TLS_KV_NAMESPACE, "key": key}, timeout=5, ssl_context=ctx)
    return r.code, (r.ext or {}).get("value")


def client_lines(out, tag):
    """The JSON printed after `tag ` by InteropClient nsquery (legacy bare keys allowed), or None."""
    for ln in out.splitlines():
        if ln.startswith(tag + " "):
            try:
                return json.loads(rm.normalize_legacy_json(ln[len(tag) + 1:]))
            except ValueError:
                return None
    return None


def client_value(out, tag):
    for ln in out.splitlines():
        if ln.startswith(tag + " "):
            return ln[len(tag) + 1:]
    return None


def client_error(out):
    m = re.search(r"^RESULT ok=false step=(\S+) error=(.*)$", out, re.M)
    return "%s: %s" % (m.group(1), m.group(2)) if m else None


def client_log(home):
    try:
        with open(os.path.join(home, "rocketmq.log"), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def client_handshake_error(home):
    """The client's own account of a refused TLS connection (first SSL exception in its log)."""
    for ln in client_log(home).splitlines():
        if "SSLException" in ln or "SSLHandshakeException" in ln or "Connection reset" in ln:
            return ln.strip()[:300]
    return None


def s9_tls(env, c):
    """Java 5.x clients (and a 5.x broker) over TLS to a SUT that refuses plaintext.

    Part 1, test mode: the SUT runs tls.server.mode=enforcing with tls.test.mode.enable=true (a
    self-signed certificate generated at start). Plaintext is refused (raw request and a Java
    client without -Dtls.enable); a broker started with -Dtls.enable=true registers; a Java client
    with -Dtls.enable=true reads cluster info and a route and does a KV put/get, read back by the
    harness over its own TLS connection.
    Part 2, mutual TLS: a second SUT with a CA-signed certificate and tls.server.need.client.auth=
    require; a Java client with a client certificate (and checking the server's against the CA)
    is served; without a certificate, or with one no CA vouches for, it is refused.
    """
    gen = "5"
    ver = GEN_VERSION[gen]
    started = []
    try:
        # ---- part 1: enforcing, test mode --------------------------------------------------------
        any_cert = tls_context()
        ns = Namesrv(env, "tls", env.impl, ssl_context=any_cert,
                     tls={"tls.server.mode": "enforcing", "tls.test.mode.enable": "true"})
        started.append(ns)
        t0 = time.time()
        ns.start()
        ns.wait_ready(90 if env.impl == "java" else 30)
        c.check(True, "SUT %s (%s) up with tls.server.mode=enforcing, tls.test.mode.enable=true; "
                "serves the harness's TLS requests" % (ns.addr, env.impl))
        c.fig("TLS SUT ready (s)", "%.1f" % (time.time() - t0))
        version, cipher = tls_session(ns.addr, any_cert)
        c.fig("negotiated with the harness", "%s %s" % (version, cipher))

        refused, detail = probe_refused(ns.addr)
        c.check(refused, "a plaintext request is refused (%s)" % detail)
        if env.impl == "rust":
            # The server writes the line as it drops the connection, maybe after the probe saw the
            # reset: looked for until it is there (5 s).
            logged = lambda: server_log_count(ns, "plaintext connection refused: tls.server.mode is enforcing") >= 1
            c.check(wait_until(logged, 5, 0.1), "SUT log: plaintext connection refused: tls.server.mode is enforcing")

        broker = Broker(env, "tls", gen, TLS_CLUSTER, TLS_BROKER, 0)
        broker.jvm_extra = ["-Dtls.enable=true", "-Dtls.test.mode.enable=true"]
        started.append(broker)
        t0 = time.time()
        broker.start(ns.addr)
        broker.wait_boot(120)

        def registered():
            ci = cluster_info_tls(ns.addr, any_cert)
            return ci if broker_addrs(ci, TLS_BROKER, 0) == [broker.addr] else None
        ci = wait_until(registered, 60, 0.3)
        c.require(ci, "%s broker %s (-Dtls.enable=true) registered with the enforcing SUT, i.e. over TLS" % (
            ver, broker.addr))
        c.fig("TLS broker booted and registered (s)", "%.1f" % (time.time() - t0))
        blog = client_log(broker.dir)
        c.check("useTLS=true" in blog and "Prepend SSL handler" in blog,
                "broker log: useTLS=true and 'Prepend SSL handler'")

        tag = "tls-" + RUN_TAG
        home = os.path.join(env.rundir, "jclient-tls")
        rc, out = env.jclient(gen, "nsquery", timeout=90, tls=True, home=home, ns=ns.addr, topic=TLS_CLUSTER,
                              kvNamespace=TLS_KV_NAMESPACE, kvKey=tag, kvValue="value-" + tag)
        err = client_error(out)
        c.check(rc == 0 and "RESULT ok=true" in out,
                "Java %s client with -Dtls.enable=true (test mode) completed its nameserver requests%s" % (
                    ver, "" if err is None else " (failed at %s)" % err))
        if rc != 0 and err is None:
            c.note(tail(out))
        jci = client_lines(out, "CLUSTER")
        c.check(broker_addrs(jci, TLS_BROKER, 0) == [broker.addr]
                and TLS_BROKER in (jci.get("clusterAddrTable") or {}).get(TLS_CLUSTER, []),
                "its cluster info lists %s {0:%s} in %s" % (TLS_BROKER, broker.addr, TLS_CLUSTER))
        rt = client_lines(out, "ROUTE")
        c.check(route_brokers(rt) == {TLS_BROKER: {"0": broker.addr}} and set(route_queues(rt)) == {TLS_BROKER},
                "its route of topic %s: brokerDatas {%s: {0: %s}} and queueDatas of %s (got %s)" % (
                    TLS_CLUSTER, TLS_BROKER, broker.addr, TLS_BROKER, route_brokers(rt)))
        c.check(client_value(out, "KV") == "value-" + tag,
                "its KV put then get round trip returned value-%s (got %s)" % (tag, client_value(out, "KV")))
        code, value = kv_get_tls(ns.addr, any_cert, tag)
        c.check(code == 0 and value == "value-" + tag,
                "the harness reads the client's KV value back from the SUT over TLS (code=%s value=%s)" % (code, value))
        log = client_log(home)
        c.check("useTLS=true" in log and "Prepend SSL handler" in log,
                "client log: useTLS=true and 'Prepend SSL handler' (its connection was TLS)")

        home = os.path.join(env.rundir, "jclient-plain")
        before = server_log_count(ns, "plaintext connection refused")
        rc, out = env.jclient(gen, "nsquery", timeout=90, home=home, ns=ns.addr,
                              kvNamespace=TLS_KV_NAMESPACE, kvKey=tag + "-plain", kvValue="plain")
        err = client_error(out)
        c.check(rc != 0 and err is not None and client_lines(out, "CLUSTER") is None,
                "Java %s client without -Dtls.enable is refused (%s)" % (ver, err or "rc=%s" % rc))
        code, value = kv_get_tls(ns.addr, any_cert, tag + "-plain")
        c.check(value is None, "nothing it sent reached the SUT (KV %s-plain: code=%s value=%s)" % (tag, code, value))
        if env.impl == "rust":
            c.check(wait_until(lambda: server_log_count(ns, "plaintext connection refused") > before, 5, 0.1),
                    "SUT log: its connection refused as plaintext under enforcing")
        e = client_handshake_error(home)
        if e:
            c.note("plaintext client saw: " + e)
        env.procs.kill(broker.proc)
        if env.impl == "rust":
            # Java peers close without a TLS close_notify: an ordinary disconnect, not a bad frame.
            c.check(wait_until(lambda: broker.addr not in broker_addrs(cluster_info_tls(ns.addr, any_cert),
                                                                       TLS_BROKER), 10, 0.2),
                    "the killed TLS broker's connection close unregistered it")
            c.check(server_log_count(ns, "close_notify") == 0,
                    "SUT log: no error for TLS peers that closed without close_notify")

        # ---- part 2: mutual TLS --------------------------------------------------------------------
        try:
            pki = Pki(os.path.join(env.rundir, "pki"))
        except PkiError as e:
            raise SetupError("test certificates: %s" % e)
        with_cert = tls_context(pki.ca, pki.client_cert, pki.client_key)
        ns2 = Namesrv(env, "mtls", env.impl, ssl_context=with_cert, tls={
            "tls.server.mode": "enforcing",
            "tls.test.mode.enable": "false",
            "tls.server.certPath": pki.server_cert,
            "tls.server.keyPath": pki.server_key,
            "tls.server.trustCertPath": pki.ca,
            "tls.server.need.client.auth": "require",
            # Java: without it a client certificate is required but not checked against the CA.
            "tls.server.authClient": "true",
        })
        started.append(ns2)
        ns2.start()
        ns2.wait_ready(90 if env.impl == "java" else 30)
        c.check(True, "SUT %s up with mutual TLS: CA-signed certificate, tls.server.need.client.auth=require; "
                "the harness's client certificate is accepted" % ns2.addr)
        for what, ctx, log_text in (
                ("plaintext", None, "plaintext connection refused"),
                ("TLS without a client certificate", tls_context(pki.ca), "peer sent no certificates"),
                ("TLS with a self-signed client certificate", tls_context(pki.ca, pki.rogue_cert, pki.rogue_key),
                 "invalid peer certificate")):
            before = server_log_count(ns2, log_text)
            refused, detail = probe_refused(ns2.addr, ctx)
            c.check(refused, "harness request over %s is refused (%s)" % (what, detail))
            if env.impl == "rust":
                ok = wait_until(lambda: server_log_count(ns2, log_text) > before, 3, 0.1)
                c.check(ok, "SUT log: %s" % log_text)

        client_tls = {"tls.test.mode.enable": "false", "tls.client.authServer": "true",
                      "tls.client.trustCertPath": pki.ca}
        tag2 = "mtls-" + RUN_TAG
        home = os.path.join(env.rundir, "jclient-mtls")
        rc, out = env.jclient(gen, "nsquery", timeout=90, home=home, ns=ns2.addr,
                              tls=dict(client_tls, **{"tls.client.certPath": pki.client_cert,
                                                      "tls.client.keyPath": pki.client_key}),
                              kvNamespace=TLS_KV_NAMESPACE, kvKey=tag2, kvValue="value-" + tag2)
        err = client_error(out)
        c.check(rc == 0 and "RESULT ok=true" in out and client_value(out, "KV") == "value-" + tag2
                and client_lines(out, "CLUSTER") is not None,
                "Java %s client with a CA-signed client certificate (verifying the server's against the CA): "
                "cluster info and KV round trip%s" % (ver, "" if err is None else " - failed at %s" % err))
        code, value = kv_get_tls(ns2.addr, with_cert, tag2)
        c.check(code == 0 and value == "value-" + tag2,
                "the harness reads that KV value back over mutual TLS (code=%s value=%s)" % (code, value))

        for what, props, key in (
                ("without a client certificate (test mode)", True, tag2 + "-nocert"),
                ("with a self-signed client certificate", dict(client_tls, **{
                    "tls.client.certPath": pki.rogue_cert, "tls.client.keyPath": pki.rogue_key}), tag2 + "-rogue")):
            home = os.path.join(env.rundir, "jclient-" + key.rsplit("-", 1)[1])
            rc, out = env.jclient(gen, "nsquery", timeout=90, tls=props, home=home, ns=ns2.addr,
                                  kvNamespace=TLS_KV_NAMESPACE, kvKey=key, kvValue="x")
            err = client_error(out)
            c.check(rc != 0 and err is not None and client_lines(out, "CLUSTER") is None,
                    "Java %s client %s is refused (%s)" % (ver, what, err or "rc=%s" % rc))
            code, value = kv_get_tls(ns2.addr, with_cert, key)
            c.check(value is None, "nothing it sent reached the SUT (code=%s value=%s)" % (code, value))
            e = client_handshake_error(home)
            if e:
                c.note("client saw: " + e)
        if env.impl == "rust":
            for ln in ns2.proc.log_text().splitlines():
                if "refused during negotiation" in ln:
                    c.note("SUT: " + ln.split("namesrv::server: ", 1)[-1][:200])
    finally:
        for p in started:
            if p.proc is not None:
                env.procs.kill(p.proc)
