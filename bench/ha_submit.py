#!/usr/bin/python3
"""
bench/ha_submit.py - durable submissions per second, sluiced --ha (every
group commit in etcd before its replies leave) against a single sluiced
(SQLite, synchronous=FULL), in one run on this machine.

Both receive the same job submissions (POST /v1/jobs, 201 once durable)
over C keep-alive connections from one client thread (bench/live/httpload.py),
N requests each, after a warm-up of 500. HA mode: one etcd member on
loopback (fsync on, Debian's etcd-server), three sluiced --ha members (the
leader measured, two followers applying the log beside it; --members 1:
the leader alone, as when its standbys run elsewhere), once for each
--pipeline value (the leader's --commit-pipeline: log transactions in
flight; its loop does not wait for them, a reply waits for its entry).
The rounds alternate single / HA so that all see the same machine load.

    /usr/bin/python3 bench/ha_submit.py [--n 10000] [--conns 8[,32]] [--rounds 3]
                                        [--pipeline 1,2,4,8] [--members 3]

Prints one JSON object: per connection count, mode and round the rate, p50
and p99 latency; for the single controller its CPU time per submission;
for HA also the leader's etcd transactions (its commit
histogram), submissions per transaction, the mean number of transactions
in flight (their summed time over the run's), the leader's CPU time per
submission, the mean log entry size, and etcd's own latency for a
transaction of the same shape and size measured right after each HA round
by bench/etcd_floor.py's probe (1 and `conns` concurrent callers). With
`conns` closed-loop clients and one transaction at a time, a leader that
waits for each does at most conns / (2 x latency); one that does not wait
(and so gathers the next while one is in flight) up to conns / latency.
"""

import argparse
import base64
import http.client
import json
import time
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
import etcd_floor  # noqa: E402

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


def log_entry_bytes(etcd, prefix):
    """Mean decoded size of the log entries under prefix + "log/"."""
    k = base64.b64encode((prefix + "log/").encode()).decode()
    end = base64.b64encode((prefix + "log0").encode()).decode()
    conn = http.client.HTTPConnection("127.0.0.1", etcd.client_port, timeout=30)
    conn.request("POST", "/v3/kv/range", body=json.dumps({"key": k, "range_end": end}))
    kvs = json.loads(conn.getresponse().read()).get("kvs", [])
    conn.close()
    sizes = [len(base64.b64decode(kv.get("value", ""))) for kv in kvs]
    return round(statistics.mean(sizes)) if sizes else None


def etcd_txn_ms(etcd, size, callers, n=300):
    """etcd's own latency (p50 ms) and rate for txns shaped as the
    leader's (bench/etcd_floor.py), each caller on its own connection."""
    r = etcd_floor.gateway(etcd, callers, n, size)
    return {"callers": callers, "p50_ms": r["p50_ms"], "txn_per_s": r["txn_per_s"]}


def ha_round(n, conns, pipeline, members):
    """One HA run: etcd, members sluiced --ha (the leader measured, the
    others following on the same cores), with pipeline log transactions in
    flight at most (--commit-pipeline)."""
    with tempfile.TemporaryDirectory(prefix="ha-submit-") as tmp:
        etcd = hautil.Etcd(tmp).start()
        ms = hautil.members(tmp, etcd, members, extra=["--snapshot-every", "1000000",
                                                       "--commit-pipeline", str(pipeline)])
        try:
            for m in ms:
                m.start()
            lead = hautil.wait_leader(ms)
            txn0 = metric(lead, "sluice_ha_commit_seconds_count") or 0
            txs0 = metric(lead, "sluice_ha_commit_seconds_sum") or 0
            cpu0 = etcd_floor.cpu_s(lead.proc.pid)
            t0 = time.perf_counter()
            r = load(lead, n, conns)
            el = time.perf_counter() - t0
            cpu = etcd_floor.cpu_s(lead.proc.pid) - cpu0
            txns = (metric(lead, "sluice_ha_commit_seconds_count") or 0) - txn0
            txs = (metric(lead, "sluice_ha_commit_seconds_sum") or 0) - txs0
            subs = n + 500
            r["pipeline"] = pipeline
            r["members"] = members
            r["etcd_txns"] = txns
            r["subs_per_txn"] = round(subs / txns, 2) if txns else None
            r["etcd_txn_mean_ms"] = round(1e3 * txs / txns, 3) if txns else None
            r["etcd_txns_in_flight_mean"] = round(txs / el, 3)
            r["leader_cpu_us_per_sub"] = round(1e6 * cpu / subs, 1)
            size = log_entry_bytes(etcd, lead.prefix)
            r["log_entry_bytes"] = size
            r["etcd_alone"] = [etcd_txn_ms(etcd, size or 3000, 1),
                               etcd_txn_ms(etcd, size or 3000, conns)]
            lat1 = r["etcd_alone"][0]["p50_ms"] / 1e3
            r["bound_serial_per_s"] = round(conns / (2 * lat1))
            r["bound_overlapped_per_s"] = round(conns / lat1)
            return r
        finally:
            hautil.stop_all(ms, etcd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--conns", default="8", help="connection counts, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pipeline", default="4",
                    help="HA: log transactions in flight (--commit-pipeline), comma-separated")
    ap.add_argument("--members", type=int, default=3,
                    help="HA: sluiced --ha members on this machine (1: the leader alone, as "
                    "when its standbys run on machines of their own)")

    a = ap.parse_args()
    conns_list = [int(x) for x in a.conns.split(",")]
    pipes = [int(x) for x in a.pipeline.split(",")]
    out = {"n": a.n, "members": a.members, "load_before": os.getloadavg(), "by_conns": {}}
    for conns in conns_list:
        out["by_conns"][conns] = {"single": []}
        for p in pipes:
            out["by_conns"][conns]["ha_p%d" % p] = []
    for rnd in range(a.rounds):
        for conns in conns_list:
            o = out["by_conns"][conns]
            with tempfile.TemporaryDirectory(prefix="ha-submit-") as tmp:
                one = harness.Controller(os.path.join(tmp, "single")).start()
                try:
                    cpu0 = etcd_floor.cpu_s(one.proc.pid)
                    r = load(one, a.n, conns)
                    r["cpu_us_per_sub"] = round(
                        1e6 * (etcd_floor.cpu_s(one.proc.pid) - cpu0) / (a.n + 500), 1)
                    o["single"].append(r)
                finally:
                    one.stop()
            for p in pipes:
                k = "ha_p%d" % p
                o[k].append(ha_round(a.n, conns, p, a.members))
                print("round %d, %d conns: single %d/s, ha pipeline %d %d/s (%.1f subs/txn)" % (
                    rnd + 1, conns, o["single"][-1]["rate_per_s"], p, o[k][-1]["rate_per_s"],
                    o[k][-1]["subs_per_txn"] or 0), file=sys.stderr)
    for conns in conns_list:
        o = out["by_conns"][conns]
        modes = ["single"] + ["ha_p%d" % p for p in pipes]
        for k in modes:
            for f in ("rate_per_s", "p50_ms", "p99_ms"):
                o[k + "_median_" + f] = statistics.median(r[f] for r in o[k])
        o["single_median_cpu_us_per_sub"] = statistics.median(
            r["cpu_us_per_sub"] for r in o["single"])
        for k in modes[1:]:
            for f in ("subs_per_txn", "etcd_txn_mean_ms", "etcd_txns_in_flight_mean",
                      "leader_cpu_us_per_sub", "log_entry_bytes"):
                vals = [r[f] for r in o[k] if r[f] is not None]
                o[k + "_median_" + f] = statistics.median(vals) if vals else None
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
