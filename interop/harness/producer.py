"""A Java producer sending in a loop (produce-loop): its sends and the gaps between them."""

from .procs import wait_until


def loop_sends(proc):
    """(start_ms, latency_ms, ok, broker) of every send printed by a produce-loop client."""
    out = []
    for ln in proc.log_text().splitlines():
        p = ln.split()
        if len(p) >= 5 and p[0] == "SEND":
            out.append((int(p[1]), int(p[2]), p[3] == "OK", p[4]))
    return out


def max_gap(sends, since_ms):
    """Longest time (ms) between consecutive successful sends completed after since_ms."""
    done = sorted(s[0] + s[1] for s in sends if s[2])
    window = [t for t in done if t >= since_ms]
    return max((b - a for a, b in zip(window, window[1:])), default=None)


def warm_producer(env, c, ns, topic):
    """A running Java producer: sends to `topic` every 50 ms (2 s timeout, routes re-read every
    second) through the nameservers `ns`; returned once it has sent to both brokers. The caller
    kills it."""
    loop = env.jclient_start("5", "produce-loop", ns=ns, topic=topic, durationMs=180000,
                             intervalMs=50, timeoutMs=2000, pollMs=1000)
    warm = wait_until(lambda: {s[3] for s in loop_sends(loop) if s[2]} >= {"broker-a", "broker-b"}, 40, 0.2)
    if not warm:
        env.procs.kill(loop)
    c.require(warm, "a running producer (nameservers %s, route refresh every 1 s) sends to both brokers" % ns)
    return loop
