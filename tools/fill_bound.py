#!/usr/bin/python3
"""
fill_bound.py - a lower bound on the unallocated GPU at 100% arrived under
the fill protocol (docs/sim.md, src/sim/fill.c) that no placement policy can
beat, per seed, for an Alibaba GPU trace (bench/RESULTS.md, "How far from
the limit").

What is bounded. For a seed, fill shuffles the pod list and inflates it
(sim_fill_order: the same RNG, sl_rng = xoshiro256** seeded by splitmix64,
and the same draws, reproduced below and checked against sluice-sim by
--check-order); the point "100% arrived" reports the cluster after every
pod of the longest prefix P of that order whose GPU request is at most the
capacity C (G GPUs x 1000 milli). Whatever a policy does, it placed a subset
of P, each pod on GPUs where it fits, so its allocated GPU A is at most

    A* = the most GPU milli any assignment of any subset of P can hold,

and its unallocated GPU is (C - A) / C >= (C - A*) / C. (The protocol is
stricter still: a pod must be placed if it fits anywhere, and never moves;
dropping those rules only lets A* grow, so the bound stays valid.) Any
upper bound U >= A* then gives the lower bound (C - U) / C.

The relaxation (U). Forget nodes, CPU, memory and GPU models (each only
removes constraints, so U can only grow), and keep only that every GPU
holds at most 1000 milli, a whole-GPU pod of k GPUs takes k entire GPUs,
and a share lies within one GPU. In any placement every GPU is then
exactly one of:
  (W) taken entirely by (part of) a whole-GPU pod: it holds 1000;
  (B) holding exactly one "big" share of b > 500 milli (two would pass
      1000) and other shares only of size <= 1000 - b (each fits beside
      it), at most 1000 - b of them in all;
  (E) holding only shares of <= 500 milli, at most 1000 in all;
  or idle.
So the placement gives a feasible point of this linear program, with the
same objective (its allocated milli):

  maximise  1000 nW + sum_b b nB_b + sum_{s,g} x_{s,g}
  s.t.      nW + sum_b nB_b + nE <= G
            0 <= nW <= whole GPUs asked for in P
            0 <= nB_b <= number of shares of size b in P      (b > 500)
            sum_g x_{s,g} <= s * number of shares of size s   (s <= 500)
            sum_{s <= 1000-b} x_{s,b} <= (1000 - b) nB_b       (each b)
            sum_s x_{s,E} <= 1000 nE
            x >= 0, and x_{s,b} exists only for s <= 1000 - b

(x_{s,g}: milli of shares of size s on GPUs of group g, a big size b or E;
nW, nB_b, nE: GPUs of each kind). Its optimum U is >= A*, hence the bound.
It is solved exactly (glpsol --exact: rational simplex; Debian package
glpk-utils, a bench-only dependency). The bound says what share sizes
alone cost: the 190-milli leftovers beside 810-milli shares that only the
few shares <= 190 milli can fill, and the like. It is not a packing: no
policy is claimed to reach it.

Usage (repository root):
  tools/fill_bound.py --nodes N.csv --jobs P.csv [--seeds 42-51] [--check-order SIM]
Prints, per seed, the GPU asked for at 100% arrived and the bound on
unallocated GPU %, then their mean. --check-order runs sluice-sim (path SIM)
and checks that the number of pods it processed equals this tool's order.
"""

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

M64 = (1 << 64) - 1
GPU_MILLI = 1000
TARGET_PCT = 130  # SIM_FILL_TARGET_PCT


def mix64(x):
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


class Rng:
    """sl_rng (src/core/rng.c): xoshiro256**, seeded by splitmix64."""

    def __init__(self, seed):
        x = seed & M64
        self.s = []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & M64
            self.s.append(mix64(x))

    def next(self):
        s = self.s
        rotl = lambda v, k: ((v << k) | (v >> (64 - k))) & M64
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def below(self, n):
        """Lemire's unbiased draw in [0, n), as sl_rng_below."""
        m = self.next() * n
        lo = m & M64
        if lo < n:
            thresh = ((1 << 64) - n) % n
            while lo < thresh:
                m = self.next() * n
                lo = m & M64
        return m >> 64


def fill_order(req, cap, seed):
    """sim_fill_order: shuffle, then inflate to (or trim at) 130%."""
    rng = Rng(seed)
    n = len(req)
    ord_ = list(range(n))
    for i in range(n, 1, -1):
        k = rng.below(i)
        ord_[i - 1], ord_[k] = ord_[k], ord_[i - 1]
    target = cap // 100 * TARGET_PCT + cap % 100 * TARGET_PCT // 100
    total = sum(req)
    if total < target and any(r > 0 for r in req):
        while total < target:
            k = rng.below(n)
            ord_.append(k)
            total += req[k]
    else:
        while total > target and ord_:
            k = rng.below(len(ord_))
            total -= req[ord_[k]]
            del ord_[k]
    return ord_


def load(nodes_csv, jobs_csv):
    with open(nodes_csv, newline="") as f:
        gpus = sum(int(r["gpu"]) for r in csv.DictReader(f))
    pods = []  # (whole GPUs, share milli): one of them 0 (both 0: CPU only)
    with open(jobs_csv, newline="") as f:
        for r in csv.DictReader(f):
            ng, gm = int(r["num_gpu"]), int(r["gpu_milli"])
            pods.append((0, gm) if ng == 1 and gm < GPU_MILLI else (ng, 0))
    return gpus, pods


def lp_text(gpus, whole, shares):
    """The linear program of the header, in CPLEX LP format."""
    big = sorted(b for b in shares if b > 500)
    small = sorted(s for s in shares if s <= 500)
    obj, cons, bounds = ["1000 nW"], [], ["0 <= nW <= %d" % whole]
    x_of = {s: [] for s in small}
    for b in big:
        obj.append("%d nB%d" % (b, b))
        bounds.append("0 <= nB%d <= %d" % (b, shares[b]))
        fit = [s for s in small if s <= GPU_MILLI - b]
        for s in fit:
            x_of[s].append("x%d_%d" % (s, b))
        if fit:
            cons.append("r%d: %s - %d nB%d <= 0" % (b, " + ".join("x%d_%d" % (s, b) for s in fit),
                                                   GPU_MILLI - b, b))
    for s in small:
        x_of[s].append("x%d_E" % s)
    if small:
        cons.append("e: %s - 1000 nE <= 0" % " + ".join("x%d_E" % s for s in small))
    for s in small:
        obj.extend(x_of[s])
        cons.append("s%d: %s <= %d" % (s, " + ".join(x_of[s]), s * shares[s]))
    cons.append("g: nW + %s nE <= %d" % ("".join("nB%d + " % b for b in big), gpus))
    return ("Maximize\n obj: %s\nSubject To\n %s\nBounds\n %s\nEnd\n"
            % (" + ".join(obj), "\n ".join(cons), "\n ".join(bounds)))


def solve(lp):
    with tempfile.TemporaryDirectory() as d:
        path, out = os.path.join(d, "b.lp"), os.path.join(d, "b.out")
        with open(path, "w") as f:
            f.write(lp)
        subprocess.run(["glpsol", "--lp", path, "--exact", "-o", out], check=True,
                       stdout=subprocess.DEVNULL)
        with open(out) as f:
            text = f.read()
    if not re.search(r"Status:\s+OPTIMAL", text):
        raise SystemExit("glpsol found no optimum:\n" + text[:2000])
    return float(re.search(r"Objective:\s+obj = ([-0-9.eE+]+)", text).group(1))


def seed_bound(gpus, pods, seed):
    cap = gpus * GPU_MILLI
    req = [ng * GPU_MILLI + gm for ng, gm in pods]
    order = fill_order(req, cap, seed)
    arrived, whole, shares = 0, 0, {}
    for k in order:
        if arrived + req[k] > cap:
            break  # the first pod past 100%: the prefix ends here
        arrived += req[k]
        ng, gm = pods[k]
        if ng:
            whole += ng
        elif gm:
            shares[gm] = shares.get(gm, 0) + 1
    u = solve(lp_text(gpus, whole, shares))
    return len(order), 100.0 * arrived / cap, 100.0 * (cap - u) / cap


def parse_seeds(text):
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def main():
    ap = argparse.ArgumentParser(description="lower bound on unallocated GPU at 100% arrived")
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--jobs", required=True)
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--check-order", metavar="SIM", help="sluice-sim to check the pod order against")
    ap.add_argument("--json", help="write the per-seed figures here")
    a = ap.parse_args()
    gpus, pods = load(a.nodes, a.jobs)
    seeds = parse_seeds(a.seeds)
    rows, npods = [], 0
    print("seed  arrived%  bound_unalloc%")
    for s in seeds:
        n, arr, lb = seed_bound(gpus, pods, s)
        npods += n
        rows.append({"seed": s, "arrived_pct": arr, "lower_bound_unalloc_pct": lb})
        print("%4d  %8.3f  %14.3f" % (s, arr, lb))
    mean = sum(r["lower_bound_unalloc_pct"] for r in rows) / len(rows)
    print("mean  %8.3f  %14.3f" % (sum(r["arrived_pct"] for r in rows) / len(rows), mean))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"seeds": rows, "mean_lower_bound_unalloc_pct": mean}, f, indent=1)
    if a.check_order:
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "f.json")
            subprocess.run([a.check_order, "fill", "--nodes", a.nodes, "--jobs", a.jobs,
                            "--placement", "firstfit", "--seeds", a.seeds, "--json", out],
                           check=True, stdout=subprocess.DEVNULL)
            with open(out) as f:
                r = json.load(f)["results"][0]
        if r["pods_scheduled"] != npods:
            print("order differs from sluice-sim: %d pods here, %d there"
                  % (npods, r["pods_scheduled"]), file=sys.stderr)
            return 1
        print("order checked: %d pods, as sluice-sim" % npods)
    return 0


if __name__ == "__main__":
    sys.exit(main())
