"""End-to-end tests of job arrays in sluice-sim (docs/sim.md): an `array`
row expands into one job per index, named ID_INDEX; the replay never runs
more elements of an array at once than its limit; a bad array text names
the job and the column; `gen sweep --array` writes such rows.
SLUICE_BUILD names the build directory (default: build/).
"""
import csv
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
SIM = os.path.join(BUILD, "sluice-sim")

pytestmark = pytest.mark.skipif(not os.path.exists(SIM), reason="sluice-sim not built")

HEADER = ("id,tenant,submit,duration,tasks,cpu,memory,gpus,gpu_share,gpu_models,pool,"
          "priority,time_limit,gpu_memory,array\n")


def run(*args, ok=True):
    p = subprocess.run([SIM, *map(str, args)], capture_output=True, text=True, timeout=300)
    if ok and p.returncode != 0:
        raise AssertionError(f"sluice-sim {' '.join(map(str, args))} -> {p.returncode}\n{p.stderr}")
    return p


def most_at_once(rows):
    events = []
    for r in rows:
        events.append((float(r["start"]), 1))
        events.append((float(r["end"]), -1))
    cur = peak = 0
    for _, d in sorted(events):  # an end before a start at the same time
        cur += d
        peak = max(peak, cur)
    return peak


def test_array_limit_in_replay(tmp_path):
    nodes, jobs, out = tmp_path / "n.csv", tmp_path / "j.csv", tmp_path / "o.csv"
    run("gen", "cluster", "--nodes", 4, "--gpus", 8, "-o", nodes)
    with open(jobs, "w") as f:
        f.write(HEADER)
        f.write("sweep,t1,0,600,1,1,1Gi,1,,,,0,,,0-29%4\n")
        f.write("steps,t1,10,300,1,1,1Gi,1,,,,0,,,1-9:4\n")
        f.write("plain,t2,20,100,1,1,1Gi,1,,,,0,,,\n")
    run("replay", "--nodes", nodes, "--jobs", jobs, "--check", "--jobs-csv", out)
    rows = list(csv.DictReader(open(out)))
    names = [r["id"] for r in rows]
    assert names[:30] == ["sweep_%d" % i for i in range(30)]
    assert names[30:] == ["steps_1", "steps_5", "steps_9", "plain"]
    sweep = [r for r in rows if r["id"].startswith("sweep_")]
    assert all(r["start"] for r in rows)
    assert most_at_once(sweep) == 4  # 32 GPUs free, but the limit is 4
    # Elements wait for the limit, in index order: 30 / 4 -> 8 waves of 600 s.
    assert max(float(r["end"]) for r in sweep) == pytest.approx(8 * 600)
    starts = [float(r["start"]) for r in sweep]
    assert starts == sorted(starts)


def test_bad_array_names_job_and_column(tmp_path):
    nodes, jobs = tmp_path / "n.csv", tmp_path / "j.csv"
    run("gen", "cluster", "--nodes", 1, "-o", nodes)
    with open(jobs, "w") as f:
        f.write(HEADER)
        f.write("a1,t1,0,600,1,1,1Gi,1,,,,0,,,5-1\n")
    p = run("replay", "--nodes", nodes, "--jobs", jobs, ok=False)
    assert p.returncode != 0
    assert "job a1: array: \"5-1\"" in p.stderr and "below its start" in p.stderr


def test_gen_sweep_as_arrays(tmp_path):
    f = tmp_path / "s.csv"
    run("gen", "sweep", "--seed", 42, "--jobs", 5, "--interarrival", 2000, "--array", "0-9%2",
        "-o", f)
    rows = list(csv.DictReader(open(f)))
    assert len(rows) == 5 and all(r["array"] == "0-9%2" for r in rows)
    p = run("gen", "megatron", "--array", "0-9", "-o", tmp_path / "m.csv", ok=False)
    assert p.returncode != 0 and "sweep" in p.stderr
