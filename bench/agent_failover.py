#!/usr/bin/python3
"""
bench/agent_failover.py - how long an agent given two controllers
(`sluice-agent --controller A,B`) takes to be welcomed by the other one
once the one it is connected to is lost: the agent's part of a takeover
(docs/protocol.md, "Controllers and epochs"). Real sluiced x2 (the same
cluster token, each its own state database) and one real sluice-agent.

Each round loses the controller the agent is on, then measures from that
instant to the other controller listing the node up with a hello newer
than the loss (GET /v1/nodes/n1, polled every 5 ms):

  kill     kill -9 of the controller: the agent sees the connection close
           at once and tries the next with its back-off (100 ms first);
  stop     SIGSTOP of the controller: nothing closes; the agent leaves it
           once an asked-for heartbeat answer is later than half of
           node_timeout plus one heartbeat interval.

The lost controller is started again (kill) or resumed (stop) before the
next round, which loses the other one.

    /usr/bin/python3 bench/agent_failover.py [--rounds N] [--mode kill|stop]
                                             [--node-timeout S] [--heartbeat S]

Needs build/ (`make`; SLUICE_BUILD to change) and python3-yaml.
"""
import argparse
import os
import signal
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import harness  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--mode", choices=("kill", "stop"), default="kill")
    ap.add_argument("--node-timeout", type=int, default=10)
    ap.add_argument("--heartbeat", type=int, default=2)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="agent-failover-")
    cfg = {"node_timeout": a.node_timeout, "heartbeat": a.heartbeat}
    ca = harness.Controller(os.path.join(tmp, "a"), config_overrides=cfg)
    cb = harness.Controller(os.path.join(tmp, "b"), config_overrides=cfg)
    cb.admin_token, cb.cluster_token = ca.admin_token, ca.cluster_token
    cb.config.update(admin_token=ca.admin_token, cluster_token=ca.cluster_token)
    cb._write_config()
    ctls = [ca, cb]
    agent = None
    times = []
    try:
        for c in ctls:
            c.start()
        agent = harness.Agent(ca, "n1", gpus=0, extra_args=["--heartbeat", str(a.heartbeat)])
        agent.args[agent.args.index("--controller") + 1] = "%s,%s" % (ca.agent_addr, cb.agent_addr)
        agent.start()
        cur = 0
        for r in range(a.rounds):
            lost, other = ctls[cur], ctls[1 - cur]
            t0 = time.time()
            if a.mode == "kill":
                lost.kill9()
            else:
                lost.proc.send_signal(signal.SIGSTOP)

            def up():
                n = other.node("n1")
                return n is not None and n["state"] == "up" and n.get("connected", True) and \
                    (n.get("last_seen") or 0) >= t0
            harness.wait_for(up, timeout=60, interval=0.005, what="n1 up on the other controller")
            times.append(time.time() - t0)
            if a.mode == "kill":
                lost.start()
            else:
                lost.proc.send_signal(signal.SIGCONT)
            cur = 1 - cur
            print("round %d: %.3f s" % (r + 1, times[-1]), flush=True)
    finally:
        if agent is not None:
            agent.stop()
        for c in ctls:
            if c.proc is not None and c.proc.poll() is None:
                c.proc.send_signal(signal.SIGCONT)
            c.stop()
    times.sort()
    p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
    print("mode=%s rounds=%d node_timeout=%d s heartbeat=%d s: p50 %.3f s, p99 %.3f s, max %.3f s"
          % (a.mode, len(times), a.node_timeout, a.heartbeat, statistics.median(times), p99,
             times[-1]))


if __name__ == "__main__":
    main()
