"""End-to-end tests of topology in sluice-sim (docs/sim.md, docs/placement.md
"Topology"): `gen cluster --blocks --racks` writes a topology column of
racks that differ by at most one node; a replay on a nodes file with
topology keeps each gang in one rack where the blind placement
(`--topology off`) spreads it, and reports the racks and blocks a gang
spans; a `topology_required` job no rack can hold is rejected; a
`topology_preferred` gang stays in one block where the default spreads it
over two in fewer racks; a bad path or level names its column.
SLUICE_BUILD names the build directory (default: build/).
"""
import collections
import csv
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
SIM = os.path.join(BUILD, "sluice-sim")

pytestmark = pytest.mark.skipif(not os.path.exists(SIM), reason="sluice-sim not built")

JOBS = ("id,tenant,submit,duration,tasks,cpu,memory,gpus,gpu_share,gpu_models,pool,"
        "priority,time_limit,gpu_memory,topology_required\n")


def run(*args, ok=True):
    p = subprocess.run([SIM, *map(str, args)], capture_output=True, text=True, timeout=300)
    if ok and p.returncode != 0:
        raise AssertionError(f"sluice-sim {' '.join(map(str, args))} -> {p.returncode}\n{p.stderr}")
    return p


def test_gen_cluster_writes_blocks_of_racks(tmp_path):
    out = tmp_path / "nodes.csv"
    run("gen", "cluster", "--nodes", 10, "--blocks", 2, "--racks", 2, "-o", out)
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 10
    sizes = collections.Counter(r["topology"] for r in rows)
    assert set(sizes) == {"b0/r0", "b0/r1", "b1/r2", "b1/r3"}
    assert max(sizes.values()) - min(sizes.values()) <= 1
    plain = tmp_path / "plain.csv"
    run("gen", "cluster", "--nodes", 4, "-o", plain)
    assert "topology" not in open(plain).readline()


def interleaved_nodes(path):
    """8 nodes of 8 GPUs, racks r0 and r1 alternating by name."""
    with open(path, "w") as f:
        f.write("name,cpu,memory,gpus,gpu_model,gpu_memory,pool,topology\n")
        for i in range(8):
            f.write(f"n{i},64,512Gi,8,A100,80Gi,,b0/r{i % 2}\n")
    return {f"n{i}": f"r{i % 2}" for i in range(8)}


def test_replay_keeps_gangs_in_one_rack_and_reports_the_span(tmp_path):
    nodes = tmp_path / "nodes.csv"
    rack = interleaved_nodes(nodes)
    jobs = tmp_path / "jobs.csv"
    with open(jobs, "w") as f:
        f.write(JOBS)
        for i in range(40):  # 2-node gangs, a few at a time
            f.write(f"j{i},t,{i * 600},1800,2,8,64Gi,8,,,,0,3600,,\n")
    spans = {}
    for mode in ("on", "off"):
        js, per_job = tmp_path / f"r-{mode}.json", tmp_path / f"jobs-{mode}.csv"
        p = run("replay", "--nodes", nodes, "--jobs", jobs, "--placement", "bestfit",
                "--topology", mode, "--check", "--quiet", "--json", js, "--jobs-csv", per_job)
        res = json.load(open(js))
        res = res["results"][0] if "results" in res else res[0] if isinstance(res, list) else res
        assert res["topology_gangs"] == 40
        spans[mode] = res["topology_racks_per_gang_mean"]
        assert "racks blocks" in p.stdout
        if mode == "on":
            for r in csv.DictReader(open(per_job)):
                assert len({rack[n] for n in r["nodes"].split(";")}) == 1, r
    assert spans["on"] == 1.0
    assert spans["off"] > 1.0


def test_required_rack_no_rack_can_hold_is_rejected_and_bad_values_name_the_column(tmp_path):
    nodes = tmp_path / "nodes.csv"
    interleaved_nodes(nodes)
    jobs = tmp_path / "jobs.csv"
    with open(jobs, "w") as f:
        f.write(JOBS)
        f.write("big,t,0,60,5,8,64Gi,8,,,,0,,,rack\n")    # 5 nodes: no rack has them
        f.write("fits,t,0,60,4,8,64Gi,8,,,,0,,,rack\n")   # one whole rack
    p = run("replay", "--nodes", nodes, "--jobs", jobs, "--check", "--quiet")
    assert "1 jobs can never fit" in p.stdout, p.stdout
    with open(jobs, "w") as f:
        f.write(JOBS)
        f.write("j1,t,0,60,2,8,64Gi,8,,,,0,,,switch\n")
    p = run("replay", "--nodes", nodes, "--jobs", jobs, ok=False)
    assert p.returncode == 1 and "topology_required" in p.stderr and "switch" in p.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("name,cpu,memory,gpus,topology\nn0,8,64Gi,0,b0//r1\n")
    p = run("replay", "--nodes", bad, "--jobs", jobs, ok=False)
    assert p.returncode == 1 and "topology" in p.stderr and "b0//r1" in p.stderr


def test_preferred_block_stays_in_one_block(tmp_path):
    """Block b0 has three racks of 2 nodes, b1 a rack of 4, b2 a rack of 3:
    a 6-node gang by default spans the racks of 4 and 3 (2 racks, 2 blocks),
    with topology_preferred (any level) the three racks of b0."""
    nodes = tmp_path / "nodes.csv"
    with open(nodes, "w") as f:
        f.write("name,cpu,memory,gpus,gpu_model,gpu_memory,pool,topology\n")
        racks = ["b0/r0"] * 2 + ["b0/r1"] * 2 + ["b0/r2"] * 2 + ["b1/r3"] * 4 + ["b2/r4"] * 3
        for i, path in enumerate(racks):
            f.write(f"n{i},64,512Gi,8,A100,80Gi,,{path}\n")
    block = {f"n{i}": path.split("/")[0] for i, path in enumerate(racks)}
    header = JOBS.strip() + ",topology_preferred\n"
    seen = {}
    for pref in ("", "block", "rack"):
        jobs, per_job = tmp_path / f"jobs-{pref}.csv", tmp_path / f"out-{pref}.csv"
        jobs.write_text(header + f"g,t,0,60,6,8,64Gi,8,,,,0,,,,{pref}\n")
        run("replay", "--nodes", nodes, "--jobs", jobs, "--placement", "bestfit", "--check",
            "--quiet", "--jobs-csv", per_job)
        (row,) = list(csv.DictReader(open(per_job)))
        seen[pref] = {block[n] for n in row["nodes"].split(";")}
    assert seen[""] == {"b1", "b2"}
    assert seen["block"] == seen["rack"] == {"b0"}
    jobs = tmp_path / "bad.csv"
    jobs.write_text(header + "g,t,0,60,6,8,64Gi,8,,,,0,,,,spine\n")
    p = run("replay", "--nodes", nodes, "--jobs", jobs, ok=False)
    assert p.returncode == 1 and "topology_preferred" in p.stderr and "spine" in p.stderr
