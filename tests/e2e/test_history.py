"""
test_history.py - `sluice history` (`sluice sacct`) and GET /v1/history on
a known history.

Six jobs are submitted through the API and run by a real agent (4 GPUs),
so that the store holds the rows sluiced writes (spec, tasks with GPU
masks); the test then stops both daemons, rewrites the jobs' times, states
and reasons to a history it knows, restarts them, and checks filters,
columns, JSON and paging. B is two hours before the test, times are in
seconds from B:

  job  tenant  name   GPUs  start  end    state      reason / Slurm state
  1    alice   train  2     10     3610   succeeded  COMPLETED, 2.00 GPU-hours
  2    alice   train  1     100    1900   failed     exit 3: FAILED
  3    bob     eval   1     0      600    failed     time limit: TIMEOUT
  4    bob     prep   0     50     600    succeeded  COMPLETED (ends with 3: by id)
  5    alice   train  1     -      400    cancelled  never ran (no tasks)
  6    alice   old    1     3 days before B: outside every window asked for
"""

import os
import sqlite3
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

US = 1000000
# (tenant, name, gpus, start, end, state, exit, reason) in seconds from B.
HISTORY = [
    ("alice", "train", 2, 10, 3610, "succeeded", 0, ""),
    ("alice", "train", 1, 100, 1900, "failed", 3, "task 0 exited with code 3"),
    ("bob", "eval", 1, 0, 600, "failed", None, "time limit of 600 s exceeded"),
    ("bob", "prep", 0, 50, 600, "succeeded", 0, ""),
    ("alice", "train", 1, None, 400, "cancelled", None, "cancelled by the user"),
    ("alice", "old", 1, -3 * 86400, -3 * 86400 + 60, "succeeded", 0, ""),
]


@pytest.fixture(scope="module")
def hist(tmp_path_factory):
    bd = harness.build_dir()
    for exe in ("sluiced", "sluice-agent", "sluice"):
        if not os.access(os.path.join(bd, exe), os.X_OK):
            pytest.skip("%s is not built" % exe)
    tmp = tmp_path_factory.mktemp("history")
    ctl = harness.Controller(tmp / "ctl")
    agent = harness.Agent(ctl, "n1", gpus=4)
    try:
        ctl.start()
        agent.start()
        ids = [ctl.submit({"name": name, "command": ["true"], "gpus": gpus}, tenant=tenant)["id"]
               for tenant, name, gpus, *_ in HISTORY]
        for jid in ids:
            ctl.wait_job(jid, "succeeded")
        agent.stop()
        ctl.stop()
        b = int(time.time()) - 7200
        db = sqlite3.connect(ctl.db_path)
        with db:
            for jid, (_, _, _, start, end, state, code, why) in zip(ids, HISTORY):
                t = lambda s: None if s is None else (b + s) * US  # noqa: E731
                db.execute("UPDATE jobs SET state=?, submit_us=?, start_us=?, end_us=?, "
                           "exit_code=?, reason=? WHERE id=?",
                           (state, t(-100 if start is None else start - 5), t(start), t(end),
                            code, why, jid))
                if start is None:
                    db.execute("DELETE FROM tasks WHERE job=?", (jid,))
        db.close()
        ctl.start()
        agent.start()
        ctl.ids = ids
        ctl.base = b
        yield ctl
    finally:
        agent.stop()
        ctl.stop()


def when(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))


def run(hist, args, who="admin", tmp=None):
    env = u.cli_env(hist, hist.token(who), extra={"TZ": "UTC"})
    env["SLUICE_DIR"] = "/nonexistent-sluice-dir"
    return u.sluice(["history"] + args, env)


def window(hist):
    return ["-S", when(hist.base - 60), "-E", when(hist.base + 4000)]


def test_columns_states_and_gpu_hours(hist):
    ids = hist.ids
    r = run(hist, window(hist) + ["-P", "-n", "--format",
                                  "JobID,JobName,Account,State,ExitCode,Elapsed,AllocTRES,"
                                  "GPUHours,NTasks"])
    assert r.returncode == 0, r.stderr
    # In the order they ended.
    assert r.stdout.splitlines() == [
        "%d|train|alice|CANCELLED|0:0|00:00:00|gres/gpu=0|0.00|1" % ids[4],
        "%d|eval|bob|TIMEOUT|0:0|00:10:00|gres/gpu=1|0.17|1" % ids[2],
        "%d|prep|bob|COMPLETED|0:0|00:09:10|gres/gpu=0|0.00|1" % ids[3],
        "%d|train|alice|FAILED|3:0|00:30:00|gres/gpu=1|0.50|1" % ids[1],
        "%d|train|alice|COMPLETED|0:0|01:00:00|gres/gpu=2|2.00|1" % ids[0],
    ]
    # The default columns, with a header.
    r = run(hist, window(hist) + ["--state", "CD"])
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["JobID", "JobName", "Tenant", "State", "ExitCode", "Elapsed",
                                "AllocGPUs", "GPUHours"]
    assert [line.split()[0] for line in lines[2:]] == [str(ids[3]), str(ids[0])]
    # sacct is the same command; start and end in Slurm's form.
    env = u.cli_env(hist, hist.admin_token, extra={"TZ": "UTC"})
    r = u.sluice(["sacct", "-P", "-n", "-o", "JobID,Start,End"] + window(hist) + ["--name", "eval"],
                 env)
    assert r.stdout == "%d|%s|%s\n" % (ids[2], when(hist.base), when(hist.base + 600)), r.stdout


def test_filters(hist):
    ids = hist.ids

    def got(args, who="admin", win=None):
        r = run(hist, (win or window(hist)) + ["-P", "-n", "-o", "JobID"] + args, who)
        assert r.returncode == 0, r.stderr
        return [int(x) for x in r.stdout.split()]

    assert got(["-s", "TO,CA"]) == [ids[4], ids[2]]
    assert got(["--state", "failed"]) == [ids[1]]  # FAILED only, not TIMEOUT
    assert got(["--name", "train,prep"]) == [ids[4], ids[3], ids[1], ids[0]]
    assert got(["-A", "bob"]) == [ids[2], ids[3]]
    assert got(["--limit", "2"]) == [ids[4], ids[2]]
    # A tenant's token sees its own jobs only, and may not ask for others.
    assert got([], who="alice") == [ids[4], ids[1], ids[0]]
    r = run(hist, window(hist) + ["-A", "bob"], who="alice")
    assert r.returncode == 1 and "own tenant" in r.stderr
    # The old job is outside the window; a wider one finds it.
    assert got([], win=["-S", when(hist.base - 4 * 86400)])[0] == ids[5]
    # The default window starts at midnight (local time, here UTC).
    midnight = int(time.time()) // 86400 * 86400
    r = run(hist, ["-P", "-n", "-o", "JobID"])
    want = [jid for jid, h in zip(ids, HISTORY) if hist.base + h[4] >= midnight]
    assert sorted(int(x) for x in r.stdout.split()) == sorted(want)


def test_json_and_paging(hist):
    ids = hist.ids
    env = u.cli_env(hist, hist.admin_token, extra={"TZ": "UTC"})
    out = u.sluice_json(["history"] + window(hist) + ["--name", "train"], env)
    jobs = out["jobs"]
    assert [j["id"] for j in jobs] == [ids[4], ids[1], ids[0]]
    j = jobs[2]
    assert (j["state"], j["exit_code"], j["gpus"], j["tasks"]) == ("succeeded", 0, 2, 1)
    assert j["elapsed"] == 3600 and j["gpu_hours"] == 2
    assert j["start_time"] == hist.base + 10 and j["end_time"] == hist.base + 3610
    assert jobs[0]["start_time"] is None and jobs[0]["gpus"] == 0
    # The API pages in end order; next_after carries on, also between two
    # jobs that ended at the same time (3 and 4).
    q = "/v1/history?since=%d&until=%d&limit=2" % (hist.base - 60, hist.base + 4000)
    st, p1 = hist.request("GET", q, token=hist.admin_token)
    assert st == 200 and [j["id"] for j in p1["jobs"]] == [ids[4], ids[2]]
    st, p2 = hist.request("GET", q + "&after=" + p1["next_after"], token=hist.admin_token)
    st, p3 = hist.request("GET", q + "&after=" + p2["next_after"], token=hist.admin_token)
    assert [j["id"] for j in p2["jobs"] + p3["jobs"]] == [ids[3], ids[1], ids[0]]
    assert p3["next_after"] is None


@pytest.mark.parametrize("args,word", [
    (["--format", "JobID,Bogus"], "--format: no column \"Bogus\""),
    (["--format", "JobID%x"], "--format"),
    (["-S", "yesterday-ish"], "--starttime: \"yesterday-ish\" is not a time"),
    (["-E", "25:99"], "--endtime"),
    (["-S", "2026-13-01"], "--starttime: \"2026-13-01\" is not a time"),
    (["-S", "2026"], "--starttime"),
    (["-s", "RUNNING"], "--state: \"RUNNING\""),
    (["--limit", "0"], "--limit"),
    (["-S", "now", "-E", "now-1hours"], "--endtime is before --starttime"),
    (["--bogus"], "unknown option --bogus"),
])
def test_bad_flags_name_the_flag(hist, args, word):
    r = run(hist, args)
    assert r.returncode == 2, r.stdout
    assert word in r.stderr, r.stderr


@pytest.mark.parametrize("query,field", [
    ("since=abc", "since"), ("until=-1", "until"), ("limit=0", "limit"),
    ("limit=10001", "limit"), ("after=7", "after"), ("state=running", "state"),
    ("since=100&until=50", "until"),
])
def test_api_names_bad_fields(hist, query, field):
    st, body = hist.request("GET", "/v1/history?" + query, token=hist.admin_token)
    assert st == 400 and body["error"]["field"] == field, body
