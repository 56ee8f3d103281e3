"""
test_report.py - `sluice report` and GET /v1/report on a known history.

Six jobs are submitted through the API and run by a real agent (4 GPUs),
so that the store holds the rows sluiced writes (spec, tasks with GPU masks
and shares); the test then stops both daemons, rewrites the jobs' times and
states to a history it knows, adds scheduling delays (job_sched) and agent
summaries (job_eff), restarts both, and checks every figure against the
hand-computed one (docs/observability.md says how each is computed).

The history (B = two hours before the test; times in seconds from B):

  job  tenant  GPUs  submit  start  end        state      queue  sched    util  mem peak
  1    alice   2     0       10     1810       succeeded  10 s   250 us   0.40  20 of 80 GiB
  2    alice   1     100     130    1930       succeeded  30 s   1 ms     -     -
  3    bob     1     0       70     3670       succeeded  70 s   4 ms     0.90  60 of 80 GiB
  4    bob     1     200     205    1105       failed     5 s    -        -     -
  5    alice   -     300     -      400        cancelled  (never ran: no tasks)
  6    alice   1     3 days before B, ran 1 hour after 60 s in the queue (outside 24 h)

Weights: alice 1, bob 3. Capacity: 4 GPUs.
"""

import json
import math
import os
import sqlite3
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

GIB = 1 << 30
US = 1000000

# (tenant, gpus, submit, start, end, state) in seconds from B; None: NULL.
HISTORY = [
    ("alice", 2, 0, 10, 1810, "succeeded"),
    ("alice", 1, 100, 130, 1930, "succeeded"),
    ("bob", 1, 0, 70, 3670, "succeeded"),
    ("bob", 1, 200, 205, 1105, "failed"),
    ("alice", 1, 300, None, 400, "cancelled"),
    ("alice", 1, -3 * 86400, -3 * 86400 + 60, -3 * 86400 + 3660, "succeeded"),
]
SCHED_US = {1: 250, 2: 1000, 3: 4000}
EFF = {1: (0.40, 20 * GIB, 80 * GIB), 3: (0.90, 60 * GIB, 80 * GIB)}


@pytest.fixture(scope="module")
def hist(tmp_path_factory):
    bd = harness.build_dir()
    for exe in ("sluiced", "sluice-agent", "sluice"):
        if not os.access(os.path.join(bd, exe), os.X_OK):
            pytest.skip("%s is not built" % exe)
    tmp = tmp_path_factory.mktemp("report")
    ctl = harness.Controller(tmp / "ctl", tenants=[{"name": "alice", "weight": 1},
                                                   {"name": "bob", "weight": 3}])
    agent = harness.Agent(ctl, "n1", gpus=4)
    try:
        ctl.start()
        agent.start()
        ids = []
        for tenant, gpus, *_ in HISTORY:
            ids.append(ctl.submit({"command": ["true"], "gpus": gpus}, tenant=tenant)["id"])
        for jid in ids:
            ctl.wait_job(jid, "succeeded")
        agent.stop()
        ctl.stop()
        b = int(time.time()) - 7200
        db = sqlite3.connect(ctl.db_path)
        with db:
            for jid, (tenant, gpus, sub, start, end, state) in zip(ids, HISTORY):
                t = lambda s: None if s is None else (b + s) * US  # noqa: E731
                db.execute("UPDATE jobs SET state=?, submit_us=?, start_us=?, end_us=?, "
                           "exit_code=? WHERE id=?",
                           (state, t(sub), t(start), t(end), 1 if state == "failed" else 0, jid))
                db.execute("UPDATE tasks SET start_us=?, end_us=? WHERE job=?",
                           (t(start), t(end), jid))
                if start is None:
                    db.execute("DELETE FROM tasks WHERE job=?", (jid,))
            # The controller recorded a decision time for every job it
            # started; the known history replaces them.
            recorded = dict(db.execute("SELECT job, sched_delay_us FROM job_sched"))
            assert set(recorded) == set(ids), recorded
            assert all(us >= 0 for us in recorded.values()), recorded
            db.execute("DELETE FROM job_sched")
            for jid, us in SCHED_US.items():
                db.execute("INSERT INTO job_sched(job, sched_delay_us) VALUES(?, ?)", (ids[jid - 1], us))
            for jid, (util, peak, total) in EFF.items():
                db.execute("INSERT INTO job_eff(job, gpu_util_mean, gpu_util_peak, gpu_mem_peak,"
                           " gpu_mem_total, cpu_seconds, mem_peak, samples)"
                           " VALUES(?, ?, ?, ?, ?, 0, 0, 10)", (ids[jid - 1], util, util, peak, total))
        # The masks the real agent placed: 2 GPUs for job 1, 1 for the others.
        masks = dict(db.execute("SELECT job, sum(gpu_milli) FROM tasks GROUP BY job"))
        assert masks[ids[0]] == 1000 and masks[ids[1]] == 1000, masks
        db.close()
        ctl.start()
        agent.start()
        ctl.history_base = b
        yield ctl
    finally:
        agent.stop()
        ctl.stop()


def report(ctl, query="", who="admin"):
    st, body = ctl.request("GET", "/v1/report" + query, token=ctl.token(who))
    assert st == 200, (st, body)
    return body


def approx(a, b):
    return a is not None and math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-6)


def test_report_figures_by_hand(hist):
    r = report(hist, "?since=86400")
    assert r["window"]["seconds"] == 86400
    assert r["tenant"] is None
    t = r["throughput"]
    assert (t["jobs_ran"], t["succeeded"], t["failed"], t["cancelled"]) == (4, 3, 1, 1)
    assert approx(t["jobs_per_hour"], 4 / 24)
    q = r["queueing_delay"]  # sorted 5, 10, 30, 70 s; nearest rank
    assert q["jobs"] == 4
    assert (q["p50_seconds"], q["p90_seconds"], q["p99_seconds"]) == (10, 70, 70)
    assert approx(q["mean_seconds"], 28.75) and q["max_seconds"] == 70
    s = r["scheduling_delay"]  # 250 us, 1 ms, 4 ms; job 4 has none
    assert s["jobs"] == 3
    assert (s["p50_seconds"], s["p90_seconds"], s["p99_seconds"]) == (0.001, 0.004, 0.004)
    ten = {x["name"]: x for x in r["tenants"]}
    assert approx(ten["alice"]["gpu_hours"], 1.5) and approx(ten["bob"]["gpu_hours"], 1.25)
    assert ten["alice"]["jobs"] == 3 and ten["bob"]["jobs"] == 2
    assert approx(ten["alice"]["fair_share"], 0.25) and approx(ten["bob"]["fair_share"], 0.75)
    assert approx(ten["alice"]["usage_share"], 1.5 / 2.75)
    assert approx(ten["alice"]["usage_to_fair"], (1.5 / 2.75) / 0.25)
    assert approx(ten["bob"]["usage_to_fair"], (1.25 / 2.75) / 0.75)
    ra, rb = (1.5 / 2.75) / 0.25, (1.25 / 2.75) / 0.75
    f = r["fairness"]
    assert f["tenants"] == 2
    assert approx(f["min_over_max"], rb / ra)
    assert approx(f["jain_index"], (ra + rb) ** 2 / (2 * (ra * ra + rb * rb)))
    a = r["gpu_allocation"]
    assert a["capacity_gpus"] == 4 and approx(a["gpu_hours_available"], 96)
    assert approx(a["gpu_hours_allocated"], 2.75) and approx(a["ratio"], 2.75 / 96)
    g = r["gpu_utilization"]
    assert g["jobs_with_data"] == 2 and approx(g["gpu_hours_with_data"], 2.0)
    assert approx(g["gpu_hours"], 2.75)
    assert approx(g["mean_ratio"], 0.65)          # (0.40 * 1 GPU-h + 0.90 * 1) / 2
    assert approx(g["idle_memory_ratio"], 0.5)    # (0.75 * 1 + 0.25 * 1) / 2
    assert r["fragmentation"]["ratio"] is None
    assert r["fragmentation"]["metric"] == "sluice_gpu_fragmentation_ratio"


def test_report_longer_window_reaches_old_jobs(hist):
    r = report(hist, "?since=%d" % (30 * 86400))
    assert r["throughput"]["jobs_ran"] == 5
    assert r["queueing_delay"]["p50_seconds"] == 30  # 5, 10, 30, 60, 70
    assert approx({x["name"]: x for x in r["tenants"]}["alice"]["gpu_hours"], 2.5)


def test_report_shorter_window_clips_usage(hist):
    # The last hour and a half: from B + d on, d a little over 1800 s (the
    # seconds since the history was written). Usage counts only the part of
    # each run inside the window.
    r = report(hist, "?since=5400")
    assert r["window"]["seconds"] == 5400
    assert approx(r["window"]["until"] - r["window"]["since"], 5400)
    d = r["window"]["since"] - hist.history_base
    assert 1800 <= d < 1900

    def inside(gpus, start, end):
        return gpus * max(0.0, end - max(start, d)) / 3600

    alice = inside(2, 10, 1810) + inside(1, 130, 1930)
    bob = inside(1, 70, 3670) + inside(1, 205, 1105)
    ten = {x["name"]: x for x in r["tenants"]}
    assert approx(ten["alice"]["gpu_hours"], alice), (ten, alice)
    assert approx(ten["bob"]["gpu_hours"], bob), (ten, bob)
    assert approx(r["gpu_allocation"]["gpu_hours_allocated"], alice + bob)
    assert approx(r["gpu_allocation"]["gpu_hours_available"], 4 * 1.5)
    # Every job ended after B + d except job 4 (B + 1105) and job 5 (B + 400).
    assert r["throughput"]["jobs_ran"] == 3 and r["throughput"]["cancelled"] == 0


def test_report_tenant_filter(hist):
    r = report(hist, "?tenant=alice")
    assert r["tenant"] == "alice"
    assert r["throughput"]["jobs_ran"] == 2 and r["throughput"]["cancelled"] == 1
    q = r["queueing_delay"]
    assert (q["jobs"], q["p50_seconds"], q["p90_seconds"]) == (2, 10, 30)
    assert r["scheduling_delay"]["p50_seconds"] == 0.00025
    assert [x["name"] for x in r["tenants"]] == ["alice"]
    assert r["fairness"]["tenants"] == 2  # fairness weighs every tenant
    g = r["gpu_utilization"]
    assert approx(g["gpu_hours"], 1.5) and g["jobs_with_data"] == 1
    assert approx(g["mean_ratio"], 0.40) and approx(g["idle_memory_ratio"], 0.75)
    assert r["scope"] == "cluster"  # the admin asked: the cluster's totals stay
    assert approx(r["gpu_allocation"]["gpu_hours_allocated"], 2.75)
    # A tenant's token reports on its own jobs without asking, and only them.
    assert report(hist, who="bob")["tenant"] == "bob"
    st, body = hist.request("GET", "/v1/report?tenant=alice", token=hist.token("bob"))
    assert st == 403 and body["error"]["field"] == "tenant"


def test_a_tenants_report_holds_its_own_figures_and_the_capacity_only(hist, tmp_path):
    """Bob's token: his jobs, his GPU-hours against the cluster's capacity,
    and nothing from which alice's use could be worked out (the cluster's
    GPU-hours, the usage and fair shares, the fairness summary)."""
    r = report(hist, who="bob")
    assert r["tenant"] == "bob"
    assert r["throughput"]["jobs_ran"] == 2 and r["throughput"]["failed"] == 1
    assert [x["name"] for x in r["tenants"]] == ["bob"]
    bob = r["tenants"][0]
    assert approx(bob["gpu_hours"], 1.25) and bob["jobs"] == 2 and bob["weight"] == 3
    assert (bob["usage_share"], bob["fair_share"], bob["usage_to_fair"]) == (None, None, None)
    assert r["fairness"] == {"tenants": None, "min_over_max": None, "jain_index": None}
    a = r["gpu_allocation"]
    assert a["capacity_gpus"] == 4 and approx(a["gpu_hours_available"], 96)
    assert approx(a["gpu_hours_allocated"], 1.25) and approx(a["ratio"], 1.25 / 96)
    assert approx(r["gpu_utilization"]["gpu_hours"], 1.25)
    assert "alice" not in json.dumps(r)
    assert r["scope"] == "tenant"
    env = u.cli_env(hist, hist.token("bob"), tmpdir=tmp_path)
    out = u.sluice(["report"], env)
    assert out.returncode == 0, out.stderr
    assert "1.3% of the cluster held by this tenant (1.2 of 96.0 GPU-hours" in out.stdout or \
        "1.3% of the cluster held by this tenant (1.3 of 96.0 GPU-hours" in out.stdout, out.stdout
    assert "Fairness           not shown to a tenant's token" in out.stdout, out.stdout
    assert "alice" not in out.stdout


@pytest.mark.parametrize("query,field", [
    ("?since=abc", "since"), ("?since=0", "since"), ("?since=-5", "since"),
    ("?since=999999999999", "since"), ("?tenant=nobody", "tenant")])
def test_report_bad_parameters_name_the_field(hist, query, field):
    st, body = hist.request("GET", "/v1/report" + query, token=hist.admin_token)
    assert st == 400, (st, body)
    assert body["error"]["field"] == field
    assert field in body["error"]["message"]


def test_report_without_summaries_says_so(tmp_path, controller):
    st, r = controller.request("GET", "/v1/report", token=controller.admin_token)
    assert st == 200
    g = r["gpu_utilization"]
    assert g["mean_ratio"] is None and g["idle_memory_ratio"] is None
    assert r["queueing_delay"]["p50_seconds"] is None
    env = u.cli_env(controller, controller.admin_token, tmpdir=tmp_path)
    out = u.sluice(["report"], env)
    assert out.returncode == 0, out.stderr
    assert "no utilisation data" in out.stdout
    assert "no scheduling delay recorded" in out.stdout


def test_cli_report_text_and_json(hist, tmp_path):
    env = u.cli_env(hist, hist.admin_token, tmpdir=tmp_path)
    r = u.sluice(["report", "--since", "24h"], env)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert "(24 hours), all tenants" in text
    assert "0.1667 jobs per hour (4 jobs ran and ended: 3 succeeded, 1 failed, 1 cancelled)" in text
    assert "p50 10.0 s, p90 1.2 min, p99 1.2 min" in text
    assert "p50 1 ms, p90 4 ms, p99 4 ms" in text
    assert "2.9% of the cluster (2.8 of 96.0 GPU-hours; 4 GPUs now" in text
    assert "65.0% mean of the allocated GPUs" in text
    assert "50.0% of the allocated GPUs' memory never used" in text
    assert "sluice_gpu_fragmentation_ratio" in text
    lines = {ln.split()[0]: ln.split() for ln in text.splitlines() if ln[:5] in ("alice", "bob  ")}
    assert lines["alice"][1:4] == ["1", "3", "1.5"] and lines["alice"][4:6] == ["54.5%", "25.0%"]
    assert lines["bob"][1:4] == ["3", "2", "1.2"] or lines["bob"][1:4] == ["3", "2", "1.3"]
    # The window's ends as local dates in ISO form.
    assert time.strftime("%Y-%m-%d", time.localtime()) in text.splitlines()[0]
    j = u.sluice_json(["report", "--since", "30d", "--tenant", "alice"], env)
    assert j["tenant"] == "alice" and j["window"]["seconds"] == 30 * 86400
    assert j["throughput"]["jobs_ran"] == 3
    r = u.sluice(["report", "--since", "1h30m"], env)
    assert r.returncode == 0 and "(1.5 hours)" in r.stdout


@pytest.mark.parametrize("since", ["yesterday", "24x", "0", "-1h", ""])
def test_cli_report_bad_since_names_the_flag(hist, tmp_path, since):
    env = u.cli_env(hist, hist.admin_token, tmpdir=tmp_path)
    r = u.sluice(["report", "--since", since], env)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "--since" in r.stderr


def test_cli_report_unknown_tenant_is_the_servers_error(hist, tmp_path):
    env = u.cli_env(hist, hist.admin_token, tmpdir=tmp_path)
    r = u.sluice(["report", "--tenant", "nobody"], env)
    assert r.returncode == 1
    assert "tenant" in r.stderr and "nobody" in r.stderr


def _nearest_rank(sorted_us, p):
    if not sorted_us:
        return None
    return sorted_us[max(0, -(-len(sorted_us) * p // 100) - 1)] / US


def test_report_matches_a_naive_reference_on_a_random_history(controller_factory):
    """400 finished jobs with random tenants, GPUs (whole and shared),
    times over three days, scheduling delays and summaries for some, written
    straight into the store; every figure of the 24-hour and 48-hour reports
    equals the one computed here, job by job, the slow way."""
    import random
    rng = random.Random(20261201)
    ctl = controller_factory(tenants=[{"name": "a", "weight": 1}, {"name": "b", "weight": 2},
                                      {"name": "c", "weight": 5}])
    ctl.stop()
    def spec(tenant, ntasks):
        return json.dumps({"name": "x", "tenant": tenant, "tasks": ntasks, "min_tasks": ntasks,
                           "cpus": "1", "memory": "1Gi", "gpus": 1, "gpu_share": None,
                           "gpu_memory": None, "gpu_models": [], "pool": None, "priority": 0,
                           "time_limit": 0, "command": ["true"], "image": None, "env": {},
                           "on_node_failure": "requeue"}, separators=(",", ":"))
    now = int(time.time() * US)
    jobs = []
    db = sqlite3.connect(ctl.db_path)
    with db:
        for jid in range(1, 401):
            tenant = rng.choice("abc")
            submit = now - rng.randint(60, 3 * 86400) * US
            ran = rng.random() < 0.9
            start = submit + rng.randint(0, 7200) * US if ran else None
            end = (start if ran else submit) + rng.randint(1, 4 * 3600) * US
            end = min(end, now - US)
            if ran and start >= end:
                start = end - 1
            state = rng.choice(["succeeded", "succeeded", "failed"]) if ran else "cancelled"
            tasks = []
            if ran:
                for idx in range(rng.randint(1, 3)):
                    share = rng.random() < 0.3
                    mask = 1 << rng.randint(0, 7) if share else rng.choice([1, 3, 15, 255])
                    milli = rng.choice([250, 500]) if share else 1000
                    tasks.append((mask, milli))
                    db.execute("INSERT INTO tasks(job, idx, node, gpu_mask, gpu_milli, gpu_mem, state, pid,"
                               " exit_code, signal, start_us, end_us) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                               (jid, idx, "n1", mask, milli, 0, "exited", 100, 0, 0, start, end))
            sched = rng.randint(10, 50000) if ran and rng.random() < 0.7 else None
            eff = None
            if ran and rng.random() < 0.5:
                eff = (rng.random(), rng.randint(0, 80) * GIB, 80 * GIB)
                db.execute("INSERT INTO job_eff VALUES (?,?,?,?,?,?,?,?)",
                           (jid, eff[0], 1.0, eff[1], eff[2], 1.0, 0, 5))
            if sched is not None:
                db.execute("INSERT INTO job_sched VALUES (?,?)", (jid, sched))
            db.execute("INSERT INTO jobs VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (jid, tenant, spec(tenant, max(1, len(tasks))), state, submit, start, end,
                        "", 0, 0, 0))
            jobs.append(dict(tenant=tenant, submit=submit, start=start, end=end, state=state,
                             gpus=sum(bin(m).count("1") * ml for m, ml in tasks) / 1000,
                             sched=sched, eff=eff))
    db.close()
    ctl.start()
    weights = {"a": 1, "b": 2, "c": 5}
    for secs in (86400, 2 * 86400):
        r = report(ctl, "?since=%d" % secs)
        until = round(r["window"]["until"] * US)
        since = until - secs * US
        inw = [j for j in jobs if since <= j["end"] <= until]
        ran = [j for j in inw if j["start"] is not None]
        t = r["throughput"]
        assert t["jobs_ran"] == len(ran)
        for st in ("succeeded", "failed", "cancelled"):
            assert t[st] == sum(1 for j in inw if j["state"] == st)
        q = sorted(j["start"] - j["submit"] for j in ran)
        s = sorted(j["sched"] for j in ran if j["sched"] is not None)
        for key, vals in (("queueing_delay", q), ("scheduling_delay", s)):
            for p in (50, 90, 99):
                assert r[key]["p%d_seconds" % p] == _nearest_rank(vals, p), (key, p)
            assert r[key]["jobs"] == len(vals)
        use = {}
        util_w = mem_w = eff_h = 0.0
        for j in ran:
            h = j["gpus"] * (j["end"] - max(j["start"], since)) / US / 3600
            use[j["tenant"]] = use.get(j["tenant"], 0.0) + h
            if j["eff"] and h > 0:
                eff_h += h
                util_w += j["eff"][0] * h
                mem_w += (1 - j["eff"][1] / j["eff"][2]) * h
        total = sum(use.values())
        ten = {x["name"]: x for x in r["tenants"]}
        demand = {j["tenant"] for j in inw}
        wsum = sum(weights[n] for n in demand)
        ratios = []
        for n in demand:
            assert approx(ten[n]["gpu_hours"], use.get(n, 0.0)), n
            assert approx(ten[n]["fair_share"], weights[n] / wsum)
            ratios.append((use.get(n, 0.0) / total) / (weights[n] / wsum))
        assert approx(r["fairness"]["min_over_max"], min(ratios) / max(ratios))
        assert approx(r["fairness"]["jain_index"],
                      sum(ratios) ** 2 / (len(ratios) * sum(x * x for x in ratios)))
        assert approx(r["gpu_allocation"]["gpu_hours_allocated"], total)
        g = r["gpu_utilization"]
        assert approx(g["gpu_hours_with_data"], eff_h)
        assert approx(g["mean_ratio"], util_w / eff_h)
        assert approx(g["idle_memory_ratio"], mem_w / eff_h)
