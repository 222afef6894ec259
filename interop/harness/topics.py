"""The run's tag for topic and group names, and topic creation through mqadmin."""

import time

from .fixture import CLUSTER, GEN_VERSION, route, route_queues
from .output import tail
from .procs import wait_until


RUN_TAG = "r%d" % (int(time.time()) % 100000)


def create_topic(env, c, topic, cluster=CLUSTER, queues=4, ns=None, gen="5", brokers=("broker-a", "broker-b")):
    rc, out = env.mqadmin(["updateTopic", "-c", cluster, "-t", topic, "-r", str(queues), "-w", str(queues)],
                          ns=ns, gen=gen)
    c.require(rc == 0 and "success" in out,
              "mqadmin(%s) updateTopic -c %s -t %s succeeded" % (GEN_VERSION[gen], cluster, topic)
              + ("" if rc == 0 else "\n" + tail(out)))
    ns_addr = ns or env.sut1
    rt = wait_until(lambda: (lambda r: r if all(b in route_queues(r) for b in brokers) else None)(route(ns_addr, topic)),
                    30, 0.3)
    c.require(rt, "route of %s on the SUT lists queues of %s" % (topic, ", ".join(brokers)))
    return rt
