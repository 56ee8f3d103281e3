"""
test_reservations.py - advance reservations with real daemons (docs/scheduling.md
"Advance reservations", docs/cli.md `sluice reservation`, docs/api.md
/v1/reservations, docs/slurm.md scontrol's reservations).

A reservation is created, listed, shown (also in `sluice nodes`) and deleted
through the CLI, scontrol's shape and the API; it survives a controller
restart; bad input is a 400 (or 409, 403) whose JSON names the field. With
real agents: a job of the reservation runs on its node inside its window and
is stopped at its end; another tenant's job that would run into the window
is kept off the node, while a short one is backfilled there before it.
Every wait polls with a deadline.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402


def create(ctl, body, token=None):
    return ctl.request("POST", "/v1/reservations", body, token=token or ctl.admin_token)


def get(ctl, name):
    return ctl.request("GET", "/v1/reservations/%s" % name, token=ctl.admin_token)


def test_reservation_cli_api_errors_and_restart(controller, cluster, tmp_path):
    cluster(2, gpus=2)
    env = u.cli_env(controller, controller.admin_token, tmpdir=tmp_path)

    r = u.sluice(["reservation", "create", "--nodelist", "n2", "--start", "now+1hour",
                  "--duration", "2:00:00", "--tenants", "alice", "--name", "maint"], env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "reservation maint: n2 (2 GPUs)" in r.stdout
    st, m = get(controller, "maint")
    assert st == 200, m
    assert m["nodes"] == ["n2"] and m["tenants"] == ["alice"] and m["gpus"] == 2
    assert m["duration"] == 7200 and m["state"] == "waiting"
    assert abs(m["start"] - (time.time() + 3600)) < 120

    r = u.sluice(["reservation", "list"], env)
    assert r.returncode == 0 and "maint" in r.stdout and "waiting" in r.stdout, r.stdout
    r = u.sluice(["reservation", "show", "maint"], env)
    assert r.returncode == 0 and "duration:  02:00:00" in r.stdout and "n2" in r.stdout, r.stdout
    r = u.sluice(["nodes"], env)
    assert r.returncode == 0 and "reservations:" in r.stdout, r.stdout
    assert "n2: reserved for maint from" in r.stdout, r.stdout
    n = controller.node("n2")
    assert n["reservation"]["name"] == "maint" and n["reservation"]["active"] is False
    assert controller.node("n1")["reservation"] is None

    # A GPU count picks whole nodes; any token reads, only the admin writes.
    st, g = create(controller, {"name": "gpu", "start": time.time() + 7200 * 3, "duration": "1h",
                                "gpus": 2, "tenants": ["bob"]})
    assert st == 201 and len(g["nodes"]) == 1 and g["gpus"] == 2, g
    st, body = controller.request("GET", "/v1/reservations", token=controller.token("bob"))
    assert st == 200 and [x["name"] for x in body["reservations"]] == ["maint", "gpu"], body
    st, body = create(controller, {"duration": 60, "node_count": 1, "tenants": "alice"},
                      token=controller.token("alice"))
    assert st == 403, body
    st, body = controller.request("DELETE", "/v1/reservations/gpu", token=controller.token("bob"))
    assert st == 403, body

    # Bad input: 400 (409 for a conflict) with the field named.
    now = time.time()
    for bad, field, status in [
        ({"start": "soon", "duration": 60, "node_count": 1, "tenants": "alice"}, "start", 400),
        ({"duration": -5, "node_count": 1, "tenants": "alice"}, "duration", 400),
        ({"duration": 60, "tenants": "alice"}, "nodes", 400),
        ({"duration": 60, "node_count": 1, "gpus": 1, "tenants": "alice"}, "nodes", 400),
        ({"duration": 60, "nodes": ["nope"], "tenants": "alice"}, "nodes", 400),
        ({"duration": 60, "node_count": 1, "tenants": "carol"}, "tenants", 400),
        ({"duration": 60, "node_count": 1}, "tenants", 400),
        ({"duration": 60, "node_count": 0, "tenants": "alice"}, "node_count", 400),
        ({"duration": 60, "node_count": 1, "tenants": "alice", "flags": "MAINT"}, "flags", 400),
        ({"name": "maint", "duration": 60, "node_count": 1, "tenants": "alice"}, "name", 409),
        ({"start": now + 3000, "duration": 3600, "nodes": "n2", "tenants": "bob"}, "nodes", 409),
        ({"duration": 60, "node_count": 5, "tenants": "alice"}, "node_count", 409),
        ({"duration": 60, "gpus": 9, "tenants": "alice"}, "gpus", 409),
    ]:
        st, body = create(controller, bad)
        assert st == status and body["error"]["field"] == field, (bad, st, body)
    st, body = controller.request("POST", "/v1/jobs", {"command": ["true"], "reservation": "nope"},
                                  token=controller.token("alice"))
    assert st == 400 and body["error"]["field"] == "reservation", body
    st, body = controller.request("POST", "/v1/jobs", {"command": ["true"], "reservation": "maint"},
                                  token=controller.token("bob"))
    assert st == 403 and body["error"]["field"] == "reservation", body
    r = u.sluice(["reservation", "create", "--nodes", "1", "--start", "tomorrow-ish",
                  "--duration", "10", "--tenants", "alice"], env)
    assert r.returncode == 2 and "--start" in r.stderr, (r.stdout, r.stderr)
    r = u.sluice(["reservation", "create", "--nodes", "1", "--gpus", "1", "--duration", "10",
                  "--tenants", "alice"], env)
    assert r.returncode == 2, (r.stdout, r.stderr)

    # scontrol's shape: create, show, delete.
    r = u.sluice(["scontrol", "create", "reservation", "ReservationName=s1", "StartTime=now+3hours",
                  "Duration=60", "NodeCnt=1", "Accounts=bob"], env)
    assert r.returncode == 0 and r.stdout.strip() == "Reservation created: s1", (r.stdout, r.stderr)
    r = u.sluice(["scontrol", "show", "reservation", "s1"], env)
    assert r.returncode == 0, r.stderr
    assert "ReservationName=s1 " in r.stdout and "Duration=01:00:00" in r.stdout, r.stdout
    assert "Accounts=bob" in r.stdout and "State=INACTIVE" in r.stdout, r.stdout
    r = u.sluice(["scontrol", "create", "reservation", "ReservationName=s2", "Flags=MAINT",
                  "Duration=60", "NodeCnt=1", "Users=bob"], env)
    assert r.returncode == 2 and "Flags=MAINT" in r.stderr, (r.stdout, r.stderr)
    r = u.sluice(["scontrol", "delete", "ReservationName=s1"], env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    r = u.sluice(["scontrol", "show", "reservation", "s1"], env)
    assert r.returncode == 1, (r.stdout, r.stderr)

    # Durable: a restarted controller still holds them, with their windows.
    controller.restart()
    st, m2 = get(controller, "maint")
    assert st == 200 and m2["start"] == m["start"] and m2["nodes"] == ["n2"], m2
    r = u.sluice(["scontrol", "show", "reservations"], env)
    assert r.returncode == 0 and "ReservationName=maint" in r.stdout and "gpu" in r.stdout, r.stdout

    r = u.sluice(["reservation", "delete", "maint"], env)
    assert r.returncode == 0 and "deleted" in r.stdout, (r.stdout, r.stderr)
    st, body = get(controller, "maint")
    assert st == 404 and body["error"]["field"] == "name", body
    r = u.sluice(["reservation", "delete", "maint"], env)
    assert r.returncode == 1, (r.stdout, r.stderr)
    controller.restart()
    st, body = get(controller, "maint")
    assert st == 404, body


def test_reservation_keeps_node_backfills_before_and_runs_its_job_inside(controller, cluster,
                                                                         tmp_path):
    cluster(2, gpus=1)
    env = u.cli_env(controller, controller.admin_token, tmpdir=tmp_path)
    go = tmp_path / "go"
    # n1 is busy until the test says; n2 will be reserved.
    x = controller.submit({"gpus": 1, "command": ["sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done" % go]},
                          tenant="bob")
    assert controller.wait_job(x["id"], "running")["placement"][0]["node"] == "n1"

    start = time.time() + 10
    st, r = create(controller, {"name": "win", "start": start, "duration": 6, "nodes": ["n2"],
                                "tenants": ["alice"]})
    assert st == 201, r
    # bob's long job would still run at the window's start: kept off n2.
    long_job = controller.submit({"gpus": 1, "time_limit": 3600, "command": ["true"]}, tenant="bob")
    # bob's short job ends before it: backfilled onto n2 now.
    short = controller.submit({"gpus": 1, "time_limit": 3, "command": ["true"]}, tenant="bob")
    s = controller.wait_job(short["id"], "succeeded")
    assert s["placement"][0]["node"] == "n2"
    # alice's job of the reservation waits for the window, submitted with sbatch's option.
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH --reservation=win\n#SBATCH --gres=gpu:1\nsleep 600\n")
    out = u.sluice(["sbatch", "--parsable", str(script)],
                   u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path))
    assert out.returncode == 0, (out.stdout, out.stderr)
    rid = int(out.stdout.strip().split(";")[0])
    j = controller.job(rid)
    assert j["state"] == "pending" and j["reservation"] == "win", j
    assert time.time() < start, "the machine was too slow for this test's window"
    assert "waiting for reservation win" in j["reason"], j
    r = u.sluice(["show", str(rid)], env)
    assert r.returncode == 0 and "reservation: win" in r.stdout, r.stdout
    lj = controller.job(long_job["id"])
    assert lj["state"] == "pending" and "reserved nodes" in lj["reason"], lj

    # The window begins: the reservation's job runs on n2; bob's long job still waits.
    j = controller.wait_job(rid, "running", timeout=30)
    assert j["placement"][0]["node"] == "n2" and j["start_time"] >= start - 0.5, j
    assert controller.job(long_job["id"])["state"] == "pending"
    r = u.sluice(["nodes"], env)
    assert "n2: reserved for win until" in r.stdout, r.stdout

    # Its end stops the job and ends the reservation; n2 is everyone's again.
    j = controller.wait_job(rid, "failed", timeout=30)
    assert "reservation win ended" in j["reason"], j
    st, body = get(controller, "win")
    assert st == 404, body
    lj = controller.wait_job(long_job["id"], "succeeded", timeout=30)
    assert lj["placement"][0]["node"] == "n2"
    go.write_text("")
    controller.wait_job(x["id"], "succeeded")
