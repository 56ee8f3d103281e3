#!/usr/bin/python3
"""
bench/etcd_floor.py - what one etcd member on this machine can do for the
HA leader's commit path, by itself: transactions of the leader's shape
(compare "leader key exists" is stood in for by "an absent key's
create_revision == 0", and "this log key does not exist"; one put of a
1.4 KiB value, the mean changeset of bench/ha_submit.py) from 1..N
concurrent callers, through the two ways a client reaches etcd 3.4:

  gateway  its HTTP/JSON gateway (POST /v3/kv/txn, base64 keys and
           values), what sluiced uses, from C keep-alive connections
           (bench/live/httpload.py);
  grpc     its gRPC port (KV.Txn), from Debian's python3-etcd3, one
           channel per caller thread (skipped when it is not installed:
           apt-get install python3-etcd3).

For each: transactions per second, p50 latency (gateway), and etcd's own
CPU time per transaction (its /proc/PID/stat), which on a 2-core machine
is what the leader and the clients compete with.

    /usr/bin/python3 bench/etcd_floor.py [--callers 1,2,4,8] [--n 4000]

Prints one JSON object. etcd: Debian's etcd-server, fsync on, one member
on loopback in a temporary directory (tests/e2e/fixtures/hautil.py).
"""

import argparse
import base64
import json
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "fixtures"))
sys.path.insert(0, os.path.join(HERE, "live"))
import hautil  # noqa: E402
import httpload  # noqa: E402

VALUE = os.urandom(1400)


def cpu_s(pid):
    """utime + stime of a process, seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def b64(b):
    return base64.b64encode(b).decode()


def gateway(etcd, callers, n, size=len(VALUE)):
    """n transactions of the leader's shape with a put of size bytes, from
    callers keep-alive connections at once, through the JSON gateway."""
    val = b64(os.urandom(size))
    absent = b64(b"/probe-absent")

    def mk(i):
        key = b64(("/gw/%d/%d/%d" % (callers, size, i)).encode())
        return httpload.build_request("POST", "/v3/kv/txn", None, {
            "compare": [
                {"key": absent, "target": "CREATE", "result": "EQUAL", "create_revision": "0"},
                {"key": key, "target": "CREATE", "result": "EQUAL", "create_revision": "0"}],
            "success": [{"request_put": {"key": key, "value": val}}]})

    c0 = cpu_s(etcd.proc.pid)
    r = httpload.run_load(etcd.client_port, mk, n, callers, 120, expect=(200,))
    c1 = cpu_s(etcd.proc.pid)
    lat = sorted(r["latencies_s"])
    return {"txn_per_s": round(r["ok"] / r["elapsed_s"]),
            "p50_ms": round(1e3 * lat[len(lat) // 2], 2) if lat else None,
            "etcd_cpu_us_per_txn": round(1e6 * (c1 - c0) / max(1, r["ok"])),
            "ok": r["ok"], "errors": r["errors"]}


def grpc(etcd, callers, n):
    try:
        import etcd3
    except ImportError:
        return {"skipped": "python3-etcd3 is not installed (apt-get install python3-etcd3)"}
    per = n // callers
    clients = [etcd3.client(host="127.0.0.1", port=etcd.client_port) for _ in range(callers)]
    done = [0] * callers  # each caller's transactions that succeeded
    failed = []

    def one(c, ci):
        try:
            for i in range(per):
                k = "/grpc/%d/%d/%d" % (callers, ci, i)
                ok, _ = c.transaction(
                    compare=[c.transactions.create("/probe-absent") == 0,
                             c.transactions.create(k) == 0],
                    success=[c.transactions.put(k, VALUE)], failure=[])
                if ok:
                    done[ci] += 1
                else:
                    failed.append(k)
        except Exception as e:  # a caller's failure is reported, not hidden
            failed.append(repr(e))

    threads = [threading.Thread(target=one, args=(c, i)) for i, c in enumerate(clients)]
    c0 = cpu_s(etcd.proc.pid)
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    el = time.monotonic() - t0
    c1 = cpu_s(etcd.proc.pid)
    for c in clients:
        c.close()
    ok = sum(done)
    return {"txn_per_s": round(ok / el),
            "etcd_cpu_us_per_txn": round(1e6 * (c1 - c0) / max(1, ok)),
            "ok": ok, "errors": failed[:10], "error_count": len(failed)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--callers", default="1,2,4,8", help="concurrent callers, comma-separated")
    ap.add_argument("--n", type=int, default=4000, help="transactions per point")
    a = ap.parse_args()
    callers = [int(x) for x in a.callers.split(",")]
    if a.n < 1 or any(c < 1 or c > 64 for c in callers):
        ap.error("--n must be >= 1 and each of --callers within 1..64")
    out = {"load_average": os.getloadavg(), "value_bytes": len(VALUE), "points": []}
    with tempfile.TemporaryDirectory(prefix="etcd-floor-", dir="/tmp") as tmp:
        etcd = hautil.Etcd(tmp).start()
        try:
            for c in callers:
                out["points"].append({"callers": c, "gateway": gateway(etcd, c, a.n),
                                      "grpc": grpc(etcd, c, a.n)})
                print(json.dumps(out["points"][-1]), file=sys.stderr, flush=True)
        finally:
            etcd.stop()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
