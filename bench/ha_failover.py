#!/usr/bin/python3
"""
bench/ha_failover.py - takeover time of sluiced --ha after kill -9 (or
SIGSTOP past the lease) of the leader, and acknowledged jobs lost.

One etcd member and three sluiced --ha on 127.0.0.1 (distinct ports, lease
TTL --ttl). A client thread submits jobs one after another to whichever
member leads (it tries the members in turn and follows nothing else), and
records every id acknowledged with 201. Each round: the leader is killed
(kill -9, or --mode stop: SIGSTOP for TTL + 2 s, then SIGCONT); the
takeover time is from the signal to the next 201 from another member;
then every id acknowledged so far is looked up on the new leader (lost =
acknowledged but absent); the killed member is started again and becomes a
follower before the next round.

    /usr/bin/python3 bench/ha_failover.py [--rounds 20] [--ttl 3] [--mode kill|stop]

Jobs running twice needs agents that follow the leader (several
controllers, docs/ha.md); this bench submits jobs that wait (no agent), so
it measures takeover and loss only.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "fixtures"))
import harness  # noqa: E402
import hautil  # noqa: E402

SPEC = {"command": ["sleep", "60"], "gpus": 1}


class Stream(threading.Thread):
    """Submits one job at a time to the member that answers 201."""

    def __init__(self, ms):
        super().__init__(daemon=True)
        self.ms = ms
        self.acked = []          # (monotonic time, id, member name)
        self.stop_flag = False
        self.lock = threading.Lock()

    def run(self):
        i = 0
        while not self.stop_flag:
            for m in list(self.ms):
                if self.stop_flag:
                    return
                try:
                    st, body = m.request("POST", "/v1/jobs", dict(SPEC, name="s%d" % i),
                                         token=m.token("alice"), timeout=1.0)
                except Exception:
                    continue
                if st == 201:
                    with self.lock:
                        self.acked.append((time.monotonic(), body["id"], m.name))
                    i += 1
                    break
            else:
                time.sleep(0.01)

    def first_after(self, t, not_member):
        with self.lock:
            for when, jid, name in self.acked:
                if when > t and name != not_member:
                    return when
        return None

    def ids(self):
        with self.lock:
            return [jid for _, jid, _ in self.acked]


def all_ids(m):
    """Every job id the member holds, a page of 10,000 at a time."""
    have, after = set(), None
    while True:
        q = "/v1/jobs?limit=10000" + ("&after=%d" % after if after else "")
        st, body = m.request("GET", q, token=m.token("admin"))
        assert st == 200, (st, body)
        have.update(j["id"] for j in body["jobs"])
        after = body.get("next_after")
        if not after:
            return have


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--ttl", type=int, default=3)
    ap.add_argument("--mode", choices=("kill", "stop"), default="kill")
    a = ap.parse_args()
    takeovers, lost_total, acked_total = [], 0, 0
    with tempfile.TemporaryDirectory(prefix="ha-failover-") as tmp:
        etcd = hautil.Etcd(tmp).start()
        ms = hautil.members(tmp, etcd, 3, ttl=a.ttl)
        try:
            for m in ms:
                m.start()
            s = Stream(ms)
            s.start()
            for rnd in range(a.rounds):
                lead = hautil.wait_leader(ms, timeout=30)
                time.sleep(0.5)  # submissions flowing
                t0 = time.monotonic()
                if a.mode == "kill":
                    lead.kill9()
                else:
                    lead.sigstop()
                t1 = harness.wait_for(lambda: s.first_after(t0, lead.name), timeout=60,
                                      interval=0.01, what="a 201 from a new leader")
                takeovers.append(t1 - t0)
                if a.mode == "stop":
                    time.sleep(max(0.0, a.ttl + 2 - (time.monotonic() - t0)))
                    lead.sigcont()
                new = hautil.wait_leader(ms, exclude=(lead,), timeout=30)
                ids = s.ids()
                have = all_ids(new)
                lost = [i for i in ids if i not in have]
                lost_total += len(lost)
                acked_total = len(ids)
                print("round %d: takeover %.2f s, acknowledged %d, lost %d" %
                      (rnd + 1, t1 - t0, len(ids), len(lost)), file=sys.stderr)
                if a.mode == "kill":
                    lead.start(timeout=30)
                else:
                    harness.wait_for(lambda: lead.role() == "follower", timeout=30,
                                     what="the stopped leader follows")
            s.stop_flag = True
            s.join(5)
        finally:
            hautil.stop_all(ms, etcd)
    out = {"mode": a.mode, "rounds": a.rounds, "ttl_s": a.ttl,
           "takeover_s": {"min": round(min(takeovers), 3), "p50": round(pct(takeovers, 0.5), 3),
                          "p99": round(pct(takeovers, 0.99), 3), "max": round(max(takeovers), 3),
                          "mean": round(statistics.mean(takeovers), 3)},
           "acknowledged": acked_total, "acknowledged_lost": lost_total,
           "slurm_slurmctld_timeout_s": 120, "kubernetes_lease_takeover_s": "15-17"}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
