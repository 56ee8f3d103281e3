"""
test_slurm_filters.py - squeue -O/--Format (Slurm's long fields, each
padded to its width, 20 by default, with no separator but the suffix) and
scancel's filters -u, -n/--name, -t/--state and -p (every pending and
running job that passes all of them, of the ids given when there are
some), against real daemons, in the shapes Slurm 22.05 prints.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402


def squeue(env, args):
    exe = os.path.join(harness.build_dir(), "sluice")
    return subprocess.run([exe, "squeue"] + list(args), env=env, timeout=60, capture_output=True,
                          text=True)


def scancel(env, args):
    return u.sluice(["scancel"] + list(args), env)


def submit(ctl, name, cpus=1):
    return ctl.submit({"name": name, "command": ["sleep", "300"], "cpus": cpus},
                      tenant="alice")["id"]


def test_squeue_long_format(controller, cluster, tmp_path):
    cluster(1, cpus=2)
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    jid = submit(controller, "longname")
    controller.wait_job(jid, "running", timeout=30)
    r = squeue(env, ["-O", "JobID,Name,State"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "%-20s%-20s%-20s" % ("JOBID", "NAME", "STATE"), r.stdout
    assert lines[1] == "%-20s%-20s%-20s" % (jid, "longname", "RUNNING"), r.stdout
    r = squeue(env, ["-h", "--Format=jobid:.8|,statecompact:3,username:.7"])
    assert r.stdout == "%8d|R    alice\n" % jid, repr(r.stdout)
    r = squeue(env, ["-O", "JobID,Bogus"])
    assert r.returncode == 2 and "-O/--Format: Bogus: no such field" in r.stderr, r.stderr
    scancel(env, [str(jid)])


def test_scancel_filters(controller, cluster, tmp_path):
    cluster(1, cpus=2)
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    a = submit(controller, "keep")
    b = submit(controller, "drop")
    c = submit(controller, "drop", cpus=4)  # never fits: pending
    controller.wait_job(a, "running", timeout=30)
    controller.wait_job(b, "running", timeout=30)
    # -n and -t together: only the pending "drop".
    r = scancel(env, ["-n", "drop", "-t", "PENDING"])
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", (r.stdout, r.stderr)
    controller.wait_job(c, "cancelled", timeout=30)
    assert controller.job(b)["state"] == "running"
    # A filter and ids: only the ids that pass it.
    r = scancel(env, ["--name=drop", str(a), str(b)])
    assert r.returncode == 0, r.stderr
    controller.wait_job(b, "cancelled", timeout=30)
    assert controller.job(a)["state"] == "running"
    # Nothing matches: nothing happens, no message (as Slurm's).
    r = scancel(env, ["-u", "bob"])
    assert r.returncode == 0 and r.stderr == ""
    r = scancel(env, ["-p", "gpu"])
    assert r.returncode == 0 and controller.job(a)["state"] == "running"
    r = scancel(env, ["-t", "WAITING"])
    assert r.returncode == 2 and "-t/--state: \"WAITING\"" in r.stderr, r.stderr
    r = scancel(env, ["-u", "alice", "-t", "R"])
    assert r.returncode == 0, r.stderr
    controller.wait_job(a, "cancelled", timeout=30)


def test_squeue_start_shows_the_schedulers_plan(controller, cluster, tmp_path):
    """The first blocked job's backfill reservation (the controller's
    default backfill: easy) is its expected start: when the running job
    reaches its time limit; a job the plan holds nothing for shows N/A, as
    Slurm's squeue --start does."""
    cluster(1, cpus=2)
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    run = controller.submit({"name": "run", "command": ["sleep", "300"], "cpus": 2,
                             "time_limit": 600}, tenant="alice")["id"]
    controller.wait_job(run, "running", timeout=30)
    nxt = controller.submit({"name": "next", "command": ["true"], "cpus": 2, "time_limit": 60},
                            tenant="alice")["id"]
    later = controller.submit({"name": "later", "command": ["true"], "cpus": 2,
                               "time_limit": 60}, tenant="alice")["id"]
    started = controller.job(run)["start_time"]
    harness.wait_for(lambda: controller.job(nxt).get("expected_start") is not None, timeout=20,
                     what="an expected start for the blocked job")
    assert abs(controller.job(nxt)["expected_start"] - (started + 600)) < 1.0
    assert controller.job(later)["expected_start"] is None
    r = squeue(env, ["--start"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["JOBID", "PARTITION", "NAME", "USER", "ST", "START_TIME", "NODES",
                                "SCHEDNODES", "NODELIST(REASON)"], r.stdout
    rows = {int(x.split()[0]): x.split() for x in lines[1:]}
    assert sorted(rows) == [nxt, later], r.stdout  # pending jobs only
    want = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(int(started + 600)))
    assert rows[nxt][5] == want and rows[nxt][7] == "(null)", r.stdout
    assert rows[later][5] == "N/A", r.stdout
    r = squeue(env, ["-h", "-O", "JobID:8,StartTime:20", "-j", str(run)])
    want = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(int(started)))
    assert r.stdout == "%-8d%-20s\n" % (run, want), r.stdout
    scancel(env, ["-u", "alice"])
