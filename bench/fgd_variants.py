#!/usr/bin/python3
"""
fgd_variants.py - the FGD paper's six baselines (and Sluice's fgdbal) on
every workload variant the FGD artifact publishes, against its published
results, at 100% arrived GPU (bench/RESULTS.md, "Issue 12 (FGD baselines)").

For each variant (the default pod list and the 16 variants under
TRACES/alibaba-gpu-v2023/variants/ that have published results) it runs

  sluice-sim fill --nodes openb_node_list_gpu_node.csv --jobs <variant>
                  --placement random,dotprod,gpuclustering,gpupacking,bestfit,fgd,fgdbal
                  --seeds SEEDS --json <tmp>

and prints one Markdown table: for each variant and policy, our mean
unallocated GPU % at 100% arrived (over the seeds), the published mean
(variants/published_results.csv, `unalloc_mean` at arrived 100, seeds
42-51), and the difference (ours - published), with a mark where it is
above the tolerance; then fgdbal's figure and its margin under the
published FGD. Exits 1 if any difference is above the tolerance or
fgdbal is above the published FGD on some variant. With --bound, a last column gives the
lower bound of tools/fill_bound.py (mean over the same seeds; needs
glpsol): no policy can leave less unallocated on those seeds.

Usage (from the repository root after `make build`):
  bench/fgd_variants.py [--seeds 42-51] [--variants default,gpushare100,...]
                        [--tol 0.5] [--sim ./build/sluice-sim]
                        [--traces ../shared/traces] [--json OUT] [--bound]
Each variant takes a few seconds per seed for all seven policies (the
Random baseline is the slowest: it scores every node that fits).
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

# Sluice's placement name -> the FGD artifact's policy directory name.
POLICIES = [
    ("random", "01-Random"),
    ("dotprod", "02-DotProd"),
    ("gpuclustering", "03-GpuClustering"),
    ("gpupacking", "04-GpuPacking"),
    ("bestfit", "05-BestFit"),
    ("fgd", "06-FGD"),
]
VARIANTS = ("default cpu050 cpu100 cpu200 cpu250 gpushare40 gpushare60 gpushare80 "
            "gpushare100 gpuspec10 gpuspec20 gpuspec25 gpuspec33 multigpu20 multigpu30 "
            "multigpu40 multigpu50").split()


def published(path):
    """(workload, policy) -> published unallocated GPU % at 100% arrived."""
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["arrived_pct_of_gpu_capacity"] == "100":
                out[(r["workload"], r["policy"])] = float(r["unalloc_mean"])
    return out


def run_variant(sim, nodes, jobs, seeds, placements):
    """placement -> mean unallocated GPU % at 100% arrived."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "fill.json")
        subprocess.run([sim, "fill", "--nodes", nodes, "--jobs", jobs,
                        "--placement", ",".join(placements), "--seeds", seeds,
                        "--json", out], check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            res = json.load(f)["results"]
    return {r["placement"]: r["unallocated_pct"]["100"]["mean"] for r in res}


def lower_bound(nodes, jobs, seeds):
    tool = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools",
                        "fill_bound.py")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "bound.json")
        subprocess.run([tool, "--nodes", nodes, "--jobs", jobs, "--seeds", seeds, "--json", out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)["mean_lower_bound_unalloc_pct"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--tol", type=float, default=0.5, help="points of GPU %% (default 0.5)")
    ap.add_argument("--sim", default="./build/sluice-sim")
    ap.add_argument("--traces", default="../shared/traces")
    ap.add_argument("--json", help="also write every figure here")
    ap.add_argument("--bound", action="store_true", help="add tools/fill_bound.py's lower bound")
    a = ap.parse_args()
    base = os.path.join(a.traces, "alibaba-gpu-v2023")
    pub = published(os.path.join(base, "variants", "published_results.csv"))
    nodes = os.path.join(base, "openb_node_list_gpu_node.csv")
    placements = [p for p, _ in POLICIES] + ["fgdbal"]
    rows, bad, all_res = [], [], {}
    for v in a.variants.split(","):
        jobs = (os.path.join(base, "openb_pod_list_default.csv") if v == "default"
                else os.path.join(base, "variants", "openb_pod_list_%s.csv" % v))
        res = run_variant(a.sim, nodes, jobs, a.seeds, placements)
        all_res[v] = res
        cells = []
        for p, ref in POLICIES:
            diff = res[p] - pub[(v, ref)]
            mark = " **!**" if abs(diff) > a.tol else ""
            if mark:
                bad.append("%s/%s %+.2f" % (v, p, diff))
            cells.append("%.2f / %.2f (%+.2f)%s" % (res[p], pub[(v, ref)], diff, mark))
        margin = res["fgdbal"] - pub[(v, "06-FGD")]
        if margin > 0:
            bad.append("%s/fgdbal above the published FGD by %.2f" % (v, margin))
        cells.append("%.2f (%+.2f)" % (res["fgdbal"], margin))
        if a.bound:
            res["bound"] = lower_bound(nodes, jobs, a.seeds)
            cells.append("%.2f" % res["bound"])
        rows.append("| %s | %s |" % (v, " | ".join(cells)))
        print("done: %s" % v, file=sys.stderr, flush=True)
    extra = " lower bound |" if a.bound else ""
    print("| variant | %s | fgdbal (vs published FGD) |%s" % (" | ".join(p for p, _ in POLICIES), extra))
    print("|---|%s---|%s" % ("---|" * len(POLICIES), "---|" if a.bound else ""))
    print("\n".join(rows))
    print("\nCells: ours / published (ours - published), unallocated GPU %% at 100%% arrived, "
          "mean of seeds %s; **!** = beyond %.1f points." % (a.seeds, a.tol))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(all_res, f, indent=1, sort_keys=True)
    if bad:
        print("\nbeyond tolerance: " + "; ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
