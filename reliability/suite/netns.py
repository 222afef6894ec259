"""A network namespace joined to the host by a veth pair, and a silent cut of that link.

The namespace, its link and its address are removed by the cleanup registry whatever happens
(`ip netns del` destroys the namespace's end of the pair, which takes the host's end with it).
"""

import os

from .base import CLEANUP, Fail, sh


class Netns:
    """Namespace `name` with `ns_ip`/30 inside and `host_ip`/30 on the host end."""

    def __init__(self, tag):
        n = os.getpid() % 250
        self.name = "relns-%d-%s" % (os.getpid(), tag)
        self.host_if = ("rlh%d%s" % (os.getpid(), tag))[:15]
        self.ns_if = ("rln%d%s" % (os.getpid(), tag))[:15]
        self.host_ip = "10.213.%d.1" % n
        self.ns_ip = "10.213.%d.2" % n
        self.token = None

    def up(self):
        if os.geteuid() != 0:
            raise Fail("network namespaces need root (ip netns add)")
        if not any(os.access(os.path.join(d, "ip"), os.X_OK) for d in os.environ.get("PATH", "").split(":")):
            raise Fail("the ip command (iproute2) is missing: apt-get install iproute2")
        self.token = CLEANUP.add("netns " + self.name, self.down)
        sh(["ip", "netns", "add", self.name])
        sh(["ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if])
        sh(["ip", "link", "set", self.ns_if, "netns", self.name])
        sh(["ip", "addr", "add", self.host_ip + "/30", "dev", self.host_if])
        sh(["ip", "link", "set", self.host_if, "up"])
        self.exec(["ip", "addr", "add", self.ns_ip + "/30", "dev", self.ns_if])
        self.exec(["ip", "link", "set", self.ns_if, "up"])
        self.exec(["ip", "link", "set", "lo", "up"])
        return self

    def exec(self, argv, check=True):
        return sh(["ip", "netns", "exec", self.name] + list(argv), check=check)

    def cut(self):
        """Takes both ends of the link down: nothing crosses any more, in either direction, and
        nothing tells the peers (no FIN, no RST)."""
        self.exec(["ip", "link", "set", self.ns_if, "down"])
        sh(["ip", "link", "set", self.host_if, "down"])

    def down(self):
        sh(["ip", "netns", "del", self.name], check=False)
        sh(["ip", "link", "del", self.host_if], check=False)


def established_to(ip, local_port):
    """Established TCP connections on the host from local port `local_port` to peer `ip`."""
    out = sh(["ss", "-Htn", "state", "established", "dst", ip, "sport", "= :%d" % local_port], check=False)
    return len([ln for ln in out.splitlines() if ln.strip()])
