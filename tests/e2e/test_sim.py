"""End-to-end tests of sluice-sim: generate small workloads, run fill and
replay on them with --check (the simulator asserts no over-allocation and
gang all-or-none after every event), and check the JSON, the per-job CSV,
the SVGs and the error messages.

SLUICE_BUILD names the build directory (default: build/).
"""
import csv
import json
import os
import subprocess
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
SIM = os.path.join(BUILD, "sluice-sim")

pytestmark = pytest.mark.skipif(not os.path.exists(SIM), reason="sluice-sim not built")


def run(*args, ok=True):
    p = subprocess.run([SIM, *map(str, args)], capture_output=True, text=True, timeout=300)
    if ok and p.returncode != 0:
        raise AssertionError(f"sluice-sim {' '.join(map(str, args))} -> {p.returncode}\n{p.stderr}")
    return p


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sim")
    f = {
        "nodes": d / "nodes.csv",
        "sweep": d / "sweep.csv",
        "mega": d / "mega.csv",
        "mix": d / "mix.csv",
        "dir": d,
    }
    run("gen", "cluster", "--nodes", 6, "--gpus", 8, "-o", f["nodes"])
    run("gen", "sweep", "--seed", 1, "--jobs", 300, "--interarrival", 5, "-o", f["sweep"])
    run("gen", "megatron", "--seed", 2, "--jobs", 12, "--interarrival", 600, "-o", f["mega"])
    run("gen", "mix", "--seed", 3, "--jobs", 200, "--interarrival", 30, "-o", f["mix"])
    # Pods in Alibaba's 5-column form for fill.
    pods = d / "pods.csv"
    with open(pods, "w") as out:
        out.write("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n")
        shapes = [(4000, 8192, 1, 250), (8000, 16384, 1, 500), (16000, 65536, 1, 1000),
                  (32000, 131072, 2, 1000), (64000, 262144, 4, 1000), (2000, 4096, 0, 0)]
        for i in range(120):
            c, m, g, mg = shapes[i % len(shapes)]
            out.write(f"p{i},{c},{m},{g},{mg}\n")
    f["pods"] = pods
    return f


def test_gen_is_seeded(files, tmp_path):
    a, b, c = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv"
    run("gen", "mix", "--seed", 9, "--jobs", 50, "-o", a)
    run("gen", "mix", "--seed", 9, "--jobs", 50, "-o", b)
    run("gen", "mix", "--seed", 10, "--jobs", 50, "-o", c)
    assert a.read_text() == b.read_text()
    assert a.read_text() != c.read_text()
    rows = list(csv.DictReader(open(files["mega"])))
    assert len(rows) == 12
    assert all(r["tasks"] == "8" and r["gpus"] == "4" for r in rows)
    rows = list(csv.DictReader(open(files["sweep"])))
    assert all(r["gpus"] == "0" and 0 < float(r["gpu_share"]) < 1 and r["gpu_memory"] for r in rows)


def test_fill_json(files, tmp_path):
    js, svg = tmp_path / "fill.json", tmp_path / "svg"
    p = run("fill", "--nodes", files["nodes"], "--jobs", files["pods"], "--placement",
            "bestfit,fgd,random", "--seeds", "1-3", "--check", "--json", js, "--svg", svg)
    assert "unalloc@100%" in p.stdout
    res = json.load(open(js))["results"]
    assert [r["placement"] for r in res] == ["bestfit", "fgd", "random"]
    for r in res:
        assert r["queue"] == "fifo" and r["backfill"] == "none"
        assert r["seeds"] == [1, 2, 3]
        for k in ("100", "130"):
            u = r["unallocated_pct"][k]
            assert 0 <= u["mean"] <= 100 and u["sd"] >= 0
        curve = r["curve"]
        assert curve[0]["arrived_pct"] == 0 and curve[0]["mean"] == 100
        assert curve[-1]["arrived_pct"] == 130
        # Unallocated never exceeds what has not arrived yet.
        for pt in curve:
            assert pt["mean"] >= 100 - pt["arrived_pct"] - 1e-6
    root = ET.parse(svg / "fill_unallocated.svg").getroot()
    assert root.tag.endswith("svg")
    assert len(root.findall(".//{http://www.w3.org/2000/svg}polyline")) == 3


def check_replay_result(r, njobs):
    assert r["jobs_completed"] + r["jobs_rejected"] == njobs
    assert r["jobs_completed"] > 0
    assert r["throughput_jobs_per_hour"] > 0
    for key in ("queue_delay_s", "jct_s"):
        s = r[key]
        assert 0 <= s["p50"] <= s["p95"] <= s["p99"]
        assert s["mean"] >= 0
    assert r["jct_s"]["mean"] >= r["queue_delay_s"]["mean"]
    assert 0 < r["gpu_allocation_ratio_mean"] <= 1
    assert 0 <= r["fragmentation_ratio_mean"] <= 1
    assert 0 <= r["drf_fairness_ratio_mean"] <= 1
    assert 0 < r["jain_index_mean"] <= 1
    assert 0 <= r["sched_latency_us"]["p50"] <= r["sched_latency_us"]["p99"]
    assert r["invariant_checks"] > 0
    assert sum(t["jobs"] for t in r["per_tenant"].values()) == njobs


def test_replay_mix_all_combinations(files, tmp_path):
    js, jobs_csv, svg = tmp_path / "r.json", tmp_path / "jobs.csv", tmp_path / "svg"
    run("replay", "--nodes", files["nodes"], "--jobs", files["mix"], "--queue", "fifo,drf,wfq",
        "--backfill", "none,easy", "--placement", "bestfit,fgd", "--check", "--json", js,
        "--jobs-csv", jobs_csv, "--svg", svg)
    res = json.load(open(js))["results"]
    assert len(res) == 12
    combos = {(r["queue"], r["placement"], r["backfill"]) for r in res}
    assert len(combos) == 12
    for r in res:
        check_replay_result(r, 200)
    # One CSV per combination; gangs hold their nodes, times are ordered.
    out = tmp_path / "jobs.fifo-bestfit-easy.csv"
    rows = list(csv.DictReader(open(out)))
    assert list(rows[0].keys()) == ["id", "tenant", "submit", "start", "end", "tasks", "gpus", "nodes"]
    assert len(rows) == 200
    for row in rows:
        if row["start"] == "":
            continue
        assert float(row["submit"]) <= float(row["start"]) <= float(row["end"])
        assert row["nodes"]
        if int(row["tasks"]) == 8 and row["gpus"] == "4":  # a Megatron gang on 8-GPU nodes
            assert len(row["nodes"].split(";")) == 4
    for name in ("queue_delay_cdf.svg", "gpu_allocation.svg"):
        ET.parse(svg / name)


def test_replay_no_overallocation_from_jobs_csv(files, tmp_path):
    """Recomputes GPU use over time from the per-job CSV: never above capacity."""
    jobs_csv = tmp_path / "j.csv"
    run("replay", "--nodes", files["nodes"], "--jobs", files["mega"], "--check",
        "--jobs-csv", jobs_csv)
    rows = [r for r in csv.DictReader(open(jobs_csv)) if r["start"]]
    events = []
    for r in rows:
        g = int(r["tasks"]) * float(r["gpus"])
        events.append((float(r["start"]), 1, g))
        events.append((float(r["end"]), 0, -g))
    use = 0
    for _, _, g in sorted(events):
        use += g
        assert use <= 6 * 8 + 1e-9
    assert len(rows) == 12


def test_sweep_sharing_saves_gpu_memory(files, tmp_path):
    js = tmp_path / "s.json"
    run("replay", "--nodes", files["nodes"], "--jobs", files["sweep"], "--sharing", "on,off",
        "--check", "--json", js)
    on, off = json.load(open(js))["results"]
    assert on["gpu_sharing"] is True and off["gpu_sharing"] is False
    for r in (on, off):
        check_replay_result(r, 300)
    assert off["gpu_memory_idle_ratio_mean"] > on["gpu_memory_idle_ratio_mean"]


def test_errors_name_file_line_column(files, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,submit,duration,cpu\nj1,0,10,4\nj2,5,10,12Qi\n")
    p = run("replay", "--nodes", files["nodes"], "--jobs", bad, ok=False)
    assert p.returncode == 1
    assert f"{bad}:3:9: field \"cpu\"" in p.stderr
    p = run("fill", "--nodes", files["nodes"], "--jobs", files["pods"], "--placement", "nope",
            ok=False)
    assert p.returncode == 2 and 'unknown placement "nope"' in p.stderr and "fgd" in p.stderr
    p = run("replay", "--nodes", files["nodes"], "--jobs", files["mix"], "--bogus", ok=False)
    assert p.returncode == 2 and "unknown option --bogus" in p.stderr
    p = run("fill", "--nodes", files["nodes"], "--jobs", files["pods"], "--queue", "drf",
            ok=False)
    assert p.returncode == 2 and "replay only" in p.stderr
    p = run("replay", "--nodes", files["nodes"], "--jobs", files["pods"], ok=False)
    assert p.returncode == 1 and "replay needs submit times" in p.stderr


def test_help_lists_registered_policies():
    p = run("replay", "--help")
    for word in ("--queue", "--placement", "--backfill", "--sharing", "--estimate", "--check",
                 "--jobs-csv", "--svg", "--load", "drf", "wfq", "fgd", "easy"):
        assert word in p.stdout
    assert run("help").stdout.startswith("usage: sluice-sim")
    assert run("gen", "--help").stdout.startswith("usage: sluice-sim gen")


def test_replay_preempt_side_by_side(files, tmp_path):
    """--preempt=off,on runs each queue both ways; the invariants hold with
    victims stopping and restarting (--check), and off never preempts."""
    js = tmp_path / "p.json"
    p = run("replay", "--nodes", files["nodes"], "--jobs", files["mix"], "--queue", "las,drf",
            "--preempt=off,on", "--checkpoint", "600", "--check", "--json", js)
    assert "preempts" in p.stdout and "lost GPUh" in p.stdout
    res = json.load(open(js))["results"]
    assert [(r["queue"], r["preempt"]) for r in res] == [
        ("las", False), ("las", True), ("drf", False), ("drf", True)]
    for r in res:
        check_replay_result(r, 200)
        assert r["checkpoint_s"] == 600
        assert r["gpu_hours_lost"] >= 0
        if not r["preempt"]:
            assert r["preemptions"] == 0 and r["gpu_hours_lost"] == 0
    bad = run("replay", "--nodes", files["nodes"], "--jobs", files["mix"], "--preempt=maybe",
              ok=False)
    assert bad.returncode == 2 and "--preempt takes" in bad.stderr
