#!/usr/bin/python3
"""
bench/ha_submit.py - durable submissions per second, sluiced --ha (every
group commit in etcd before its replies leave) against a single sluiced
(SQLite, synchronous=FULL), in one run on this machine.

Both receive the same job submissions (POST /v1/jobs, 201 once durable)
over C keep-alive connections from one client thread (bench/live/httpload.py),
N requests each, after a warm-up of 500. HA mode: one etcd member on
loopback (fsync on, Debian's etcd-server), three sluiced --ha members (the
leader measured, two followers applying the log beside it). The rounds
alternate single / HA so that both see the same machine load.

    /usr/bin/python3 bench/ha_submit.py [--n 10000] [--conns 8] [--rounds 3]

Prints one JSON object: per mode and round the rate, p50 and p99 latency,
and the leader's commit histogram count (etcd transactions) for HA.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "fixtures"))
sys.path.insert(0, os.path.join(HERE, "live"))
import harness  # noqa: E402
import hautil  # noqa: E402
import httpload  # noqa: E402

SPEC = {"command": ["sleep", "60"], "gpus": 1, "name": "b"}


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def load(ctl, n, conns):
    raw = httpload.build_request("POST", "/v1/jobs", ctl.token("alice"), SPEC)
    httpload.run_load(ctl.port, lambda i: raw, 500, conns, 60)
    r = httpload.run_load(ctl.port, lambda i: raw, n, conns, 120)
    lat = r["latencies_s"]
    return {"ok": r["ok"], "errors": r["errors"], "rate_per_s": round(r["ok"] / r["elapsed_s"]),
            "p50_ms": round(1e3 * pct(lat, 0.5), 2), "p99_ms": round(1e3 * pct(lat, 0.99), 2)}


def metric(ctl, name):
    st, text = ctl.request("GET", "/metrics", token=ctl.token("admin"))
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    out = {"n": a.n, "conns": a.conns, "single": [], "ha": []}
    for rnd in range(a.rounds):
        with tempfile.TemporaryDirectory(prefix="ha-submit-") as tmp:
            one = harness.Controller(os.path.join(tmp, "single")).start()
            try:
                out["single"].append(load(one, a.n, a.conns))
            finally:
                one.stop()
        with tempfile.TemporaryDirectory(prefix="ha-submit-") as tmp:
            etcd = hautil.Etcd(tmp).start()
            ms = hautil.members(tmp, etcd, 3, extra=["--snapshot-every", "1000000"])
            try:
                for m in ms:
                    m.start()
                lead = hautil.wait_leader(ms)
                r = load(lead, a.n, a.conns)
                r["etcd_txns"] = metric(lead, "sluice_ha_commit_seconds_count")
                r["etcd_txn_s"] = metric(lead, "sluice_ha_commit_seconds_sum")
                out["ha"].append(r)
            finally:
                hautil.stop_all(ms, etcd)
        print("round %d: single %d/s, ha %d/s" % (rnd + 1, out["single"][-1]["rate_per_s"],
                                                 out["ha"][-1]["rate_per_s"]), file=sys.stderr)
    for k in ("single", "ha"):
        out[k + "_median_per_s"] = statistics.median(r["rate_per_s"] for r in out[k])
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
