"""Test-time X.509 material for the TLS scenario, made with the `openssl` command line tool.

A CA, a server certificate (SAN 127.0.0.1 / localhost, serverAuth) and client certificates
(clientAuth) signed by it, plus a self-signed "rogue" client certificate no CA vouches for.
Keys are EC P-256 in unencrypted PKCS#8 PEM ("BEGIN PRIVATE KEY"), the form Java's
`SslContextBuilder` (Netty) and our server both read. Nothing here is kept after the run directory.
"""

import os
import shutil
import subprocess


class PkiError(Exception):
    """openssl is missing or one of its commands failed."""


def _openssl(args, cwd):
    exe = shutil.which("openssl")
    if exe is None:
        raise PkiError("the openssl command line tool is not installed")
    try:
        r = subprocess.run([exe] + args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
    except subprocess.TimeoutExpired:
        raise PkiError("openssl %s timed out" % args[0])
    if r.returncode != 0:
        raise PkiError("openssl %s failed (rc=%d): %s" % (" ".join(args), r.returncode,
                                                          r.stdout.decode("utf-8", "replace")[-2000:]))


def _key(d, name):
    path = os.path.join(d, name + ".key")
    _openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path], d)
    return path


def _ext_file(d, name, lines):
    path = os.path.join(d, name + ".ext")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


class Pki:
    """Files of one test PKI, all PEM: `.ca`, `.server_cert`/`.server_key`, `.client_cert`/`.client_key`,
    `.rogue_cert`/`.rogue_key`."""

    def __init__(self, d):
        os.makedirs(d, exist_ok=True)
        self.dir = d
        self.ca_key = _key(d, "ca")
        self.ca = os.path.join(d, "ca.pem")
        ca_ext = _ext_file(d, "ca", [
            "basicConstraints=critical,CA:TRUE",
            "keyUsage=critical,keyCertSign,cRLSign",
            "subjectKeyIdentifier=hash",
        ])
        # A self-signed CA certificate (x509 -req -signkey keeps the v3 extensions from ca.ext).
        csr = os.path.join(d, "ca.csr")
        _openssl(["req", "-new", "-key", self.ca_key, "-subj", "/CN=interop test CA", "-out", csr], d)
        _openssl(["x509", "-req", "-in", csr, "-signkey", self.ca_key, "-days", "2", "-sha256",
                  "-extfile", ca_ext, "-out", self.ca], d)
        self.server_cert, self.server_key = self._issue("server", "/CN=127.0.0.1", [
            "basicConstraints=critical,CA:FALSE",
            "keyUsage=critical,digitalSignature",
            "extendedKeyUsage=serverAuth",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ])
        self.client_cert, self.client_key = self._issue("client", "/CN=interop client", [
            "basicConstraints=critical,CA:FALSE",
            "keyUsage=critical,digitalSignature",
            "extendedKeyUsage=clientAuth",
        ])
        # Same shape as the client certificate, but self-signed: no CA vouches for it.
        self.rogue_key = _key(d, "rogue")
        self.rogue_cert = os.path.join(d, "rogue.pem")
        rogue_ext = _ext_file(d, "rogue", ["basicConstraints=critical,CA:FALSE",
                                           "keyUsage=critical,digitalSignature",
                                           "extendedKeyUsage=clientAuth"])
        rcsr = os.path.join(d, "rogue.csr")
        _openssl(["req", "-new", "-key", self.rogue_key, "-subj", "/CN=interop rogue client", "-out", rcsr], d)
        _openssl(["x509", "-req", "-in", rcsr, "-signkey", self.rogue_key, "-days", "2", "-sha256",
                  "-extfile", rogue_ext, "-out", self.rogue_cert], d)

    def _issue(self, name, subject, ext_lines):
        d = self.dir
        key = _key(d, name)
        csr = os.path.join(d, name + ".csr")
        cert = os.path.join(d, name + ".pem")
        ext = _ext_file(d, name, ext_lines)
        _openssl(["req", "-new", "-key", key, "-subj", subject, "-out", csr], d)
        _openssl(["x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key, "-CAcreateserial",
                  "-days", "2", "-sha256", "-extfile", ext, "-out", cert], d)
        return cert, key
