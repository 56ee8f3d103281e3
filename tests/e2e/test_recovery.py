"""
test_recovery.py - durability and failure handling of sluiced:
kill -9 and restart loses no acknowledged job and re-adopts running tasks
from the agents' hello reports (no second launch); agents that stop
reporting are declared down and their jobs requeued or failed.
Uses harness.FakeAgent so that it does not depend on sluice-agent.
"""

import time

from harness import FakeAgent, wait_for


def running_report(agent, job_ids):
    """The hello `tasks` list a real agent would send for what it runs."""
    out = []
    for (job, task), pid in sorted(agent.running.items()):
        if job in job_ids:
            out.append({"job": job, "task": task, "pid": pid, "state": "running"})
    return out


def test_kill9_loses_no_acknowledged_job(controller):
    ids = [controller.submit({"command": ["x"], "name": "j%d" % i})["id"] for i in range(40)]
    controller.kill9()
    controller.start()
    jobs = controller.jobs("admin")
    assert sorted(j["id"] for j in jobs) == ids
    assert all(j["state"] == "pending" for j in jobs)
    # Ids keep increasing after a restart.
    assert controller.submit({"command": ["x"]})["id"] == ids[-1] + 1


def test_kill9_readopts_running_tasks_without_relaunch(controller):
    a = FakeAgent(controller, "n1", gpus=8).start()
    run = controller.submit({"command": ["train"], "tasks": 2, "gpus": 4})
    a.wait_message("launch", job=run["id"], count=2)
    wait_for(lambda: all(p["state"] == "running" for p in controller.job(run["id"])["placement"]),
             what="tasks running")
    before = controller.job(run["id"])
    waiting = controller.submit({"command": ["next"], "gpus": 8})
    assert controller.job(waiting["id"])["state"] == "pending"

    controller.kill9()
    a.close()
    controller.start()
    # Until its agent says hello the node is down, the job still running.
    assert controller.node("n1")["state"] == "down"
    assert controller.job(run["id"])["state"] == "running"
    assert controller.job(waiting["id"])["state"] == "pending"

    b = FakeAgent(controller, "n1", gpus=8, tasks=running_report(a, {run["id"]}))
    b.running = dict(a.running)
    b.start()
    controller.wait_node("n1", "up")
    after = controller.job(run["id"])
    assert after["state"] == "running"
    assert [(p["task"], p["node"], p["gpus"], p["pid"]) for p in after["placement"]] == \
        [(p["task"], p["node"], p["gpus"], p["pid"]) for p in before["placement"]]
    assert after["start_time"] == before["start_time"]
    # The GPUs are still held: the waiting job must not start, and the
    # re-adopted tasks were not launched again.
    # A logs request is answered by the agent after everything sent to it
    # before (one TCP stream): a barrier that makes "no launch" certain.
    st, _ = controller.request("GET", "/v1/jobs/%d/logs" % run["id"], token=controller.admin_token)
    assert st == 404
    assert controller.job(waiting["id"])["state"] == "pending"
    assert b.messages("launch") == []
    # When the re-adopted job ends, the waiting job gets the GPUs.
    b.exit(run["id"], 0)
    b.exit(run["id"], 1)
    controller.wait_job(run["id"], "succeeded")
    b.wait_message("launch", job=waiting["id"])
    b.close()


def test_exits_reported_in_hello_after_restart_are_recorded(controller):
    a = FakeAgent(controller, "n1", gpus=8).start()
    job = controller.submit({"command": ["x"], "gpus": 1})
    a.wait_message("launch", job=job["id"])
    controller.kill9()
    a.close()
    controller.start()
    done = [{"job": job["id"], "task": 0, "state": "exited", "exit_code": 7, "signal": 0,
             "end_time": time.time()}]
    b = FakeAgent(controller, "n1", gpus=8, tasks=done).start()
    j = controller.wait_job(job["id"], "failed")
    assert j["exit_code"] == 7 and "exited with code 7" in j["reason"]
    b.wait_message("ack", job=job["id"], task=0)
    b.close()


def test_launch_not_received_before_crash_is_resent(controller):
    a = FakeAgent(controller, "n1", gpus=8, auto=False).start()
    job = controller.submit({"command": ["x"], "gpus": 1})
    a.wait_message("launch", job=job["id"])
    # The agent drops the launch (it never reports the task) and reconnects.
    a.close()
    b = FakeAgent(controller, "n1", gpus=8).start()
    m = b.wait_message("launch", job=job["id"])[0]
    assert m["rank"] == 0 and m["world_size"] == 1
    wait_for(lambda: controller.job(job["id"])["placement"][0]["state"] == "running",
             what="relaunched task running")
    b.close()


def test_stale_task_reported_by_agent_is_killed(controller):
    a = FakeAgent(controller, "n1", gpus=8).start()
    job = controller.submit({"command": ["x"], "gpus": 1})
    a.wait_message("launch", job=job["id"])
    st, _ = controller.request("DELETE", "/v1/jobs/%d" % job["id"], token=controller.admin_token)
    assert st == 200
    a.close()
    # It reconnects still claiming a task of the cancelled job, and one of a
    # job the controller never heard of: both must be killed.
    b = FakeAgent(controller, "n1", gpus=8,
                  tasks=[{"job": job["id"], "task": 0, "pid": 4242, "state": "running"},
                         {"job": 9999, "task": 0, "pid": 4243, "state": "running"}])
    b.running[(job["id"], 0)] = 4242
    b.running[(9999, 0)] = 4243
    b.start()
    b.wait_message("kill", job=job["id"], task=0)
    b.wait_message("kill", job=9999, task=0)
    wait_for(lambda: controller.node("n1")["free"]["gpus"] == 8, what="GPUs released")
    assert controller.job(job["id"])["state"] == "cancelled"
    b.close()


def fast_timeout_controller(controller_factory):
    return controller_factory({"node_timeout": 2})


def test_node_timeout_requeues_job_elsewhere(controller_factory):
    ctl = fast_timeout_controller(controller_factory)
    a1 = FakeAgent(ctl, "n1", gpus=8).start()
    a1.start_heartbeats(0.1)
    job = ctl.submit({"command": ["x"], "gpus": 8})
    a1.wait_message("launch", job=job["id"])
    a2 = FakeAgent(ctl, "n2", gpus=8).start()
    a2.start_heartbeats(0.1)
    # n1 goes silent (its connection stays open but says nothing).
    a1.closed.set()
    ctl.wait_node("n1", "down", timeout=20)
    m = a2.wait_message("launch", job=job["id"], timeout=20)[0]
    assert m["rank"] == 0
    j = ctl.wait_job(job["id"], "running")
    assert j["placement"][0]["node"] == "n2" and j["requeues"] == 1
    a1.close()
    a2.close()


def test_node_timeout_fails_job_that_asks_for_it(controller_factory):
    ctl = fast_timeout_controller(controller_factory)
    a1 = FakeAgent(ctl, "n1", gpus=8).start()
    a2 = FakeAgent(ctl, "n2", gpus=8).start()
    a2.start_heartbeats(0.1)
    job = ctl.submit({"command": ["x"], "tasks": 2, "gpus": 8, "on_node_failure": "fail"})
    a1.wait_message("launch", job=job["id"])
    a2.wait_message("launch", job=job["id"])
    a1.close()  # n1 disconnects and never comes back
    j = ctl.wait_job(job["id"], "failed", timeout=20)
    assert "n1" in j["reason"]
    # The surviving task on n2 is asked to stop; its exit frees n2.
    a2.wait_message("kill", job=job["id"])
    wait_for(lambda: ctl.node("n2")["free"]["gpus"] == 8, what="n2 released")
    a2.close()


def test_agent_that_never_returns_after_restart_is_requeued(controller_factory):
    ctl = fast_timeout_controller(controller_factory)
    a = FakeAgent(ctl, "n1", gpus=8).start()
    job = ctl.submit({"command": ["x"], "gpus": 4})
    a.wait_message("launch", job=job["id"])
    ctl.kill9()
    a.close()
    ctl.start()
    j = ctl.wait_job(job["id"], "pending", timeout=20)
    assert j["requeues"] == 1 and "n1" in j["reason"]
    b = FakeAgent(ctl, "n2", gpus=8).start()
    b.start_heartbeats(0.1)
    b.wait_message("launch", job=job["id"], timeout=20)
    b.close()


def test_clean_restart_keeps_finished_jobs(controller, fake_agent):
    a = fake_agent("n1", gpus=8)
    job = controller.submit({"command": ["x"], "gpus": 1})
    a.wait_message("launch", job=job["id"])
    a.exit(job["id"], 0)
    controller.wait_job(job["id"], "succeeded")
    a.close()
    controller.restart()
    j = controller.job(job["id"])
    assert j["state"] == "succeeded" and j["placement"][0]["exit_code"] == 0
    assert controller.node("n1")["state"] == "down"


# ---- the same with real sluice-agent processes (skipped until built) ----

def test_real_agent_task_survives_controller_kill9(controller, cluster):
    cluster(1, gpus=8)
    job = controller.submit({"command": ["sh", "-c", "sleep 2; echo done $RANK"], "gpus": 2})
    j = wait_for(lambda: (lambda x: x if x["placement"] and x["placement"][0]["state"] == "running"
                          else None)(controller.job(job["id"])), what="task running")
    pid = j["placement"][0]["pid"]
    controller.kill9()
    controller.start()
    controller.wait_node("n1", "up")
    again = controller.job(job["id"])
    assert again["state"] == "running" and again["placement"][0]["pid"] == pid
    done = controller.wait_job(job["id"], ["succeeded", "failed"])
    assert done["state"] == "succeeded" and done["placement"][0]["pid"] == pid
    st, body = controller.request("GET", "/v1/jobs/%d/logs" % job["id"], token=controller.admin_token)
    assert st == 200 and body["data"] == "done 0\n"


def test_real_agent_killed_its_job_requeued(controller_factory, build_dir):
    import os
    import pytest
    from harness import Agent
    if not os.access(os.path.join(build_dir, "sluice-agent"), os.X_OK):
        pytest.skip("sluice-agent is not built")
    ctl = controller_factory({"node_timeout": 3})
    a1 = Agent(ctl, "n1", gpus=8).start()
    a2 = None
    try:
        job = ctl.submit({"command": ["sleep", "4"], "gpus": 8})
        wait_for(lambda: ctl.job(job["id"])["placement"] and
                 ctl.job(job["id"])["placement"][0]["state"] == "running", what="running on n1")
        a2 = Agent(ctl, "n2", gpus=8).start()
        a1.kill9()
        ctl.wait_node("n1", "down", timeout=20)
        j = wait_for(lambda: (lambda x: x if x["state"] == "running" and x["placement"]
                              and x["placement"][0]["node"] == "n2" else None)(ctl.job(job["id"])),
                     timeout=20, what="requeued onto n2")
        assert j["requeues"] == 1
        assert ctl.wait_job(job["id"], ["succeeded", "failed"], timeout=20)["state"] == "succeeded"
    finally:
        a1.stop()
        if a2:
            a2.stop()


def test_restart_loads_only_retained_finished_jobs(controller_factory):
    ctl = controller_factory({"max_finished_jobs": 2})
    a = FakeAgent(ctl, "n1", gpus=8).start()
    done = []
    for i in range(4):
        jid = ctl.submit({"command": ["j%d" % i], "gpus": 1})["id"]
        a.wait_message("launch", job=jid)
        a.exit(jid, 0, code=i)
        done.append(jid)
        ctl.wait_job(jid, ["succeeded", "failed"])
    running = ctl.submit({"command": ["run"], "gpus": 2})["id"]
    a.wait_message("launch", job=running)
    pending = ctl.submit({"command": ["wait"], "gpus": 8})["id"]
    wait_for(lambda: sorted(j["id"] for j in ctl.jobs()) == sorted([running, pending] + done[2:]),
             what="only the newest 2 finished jobs in memory")

    # A restart with a larger cap loads the newest finished jobs it allows
    # (what is on disk), and still every active one.
    ctl.stop()
    a.close()
    ctl.config["max_finished_jobs"] = 3
    ctl._write_config()
    ctl.start()
    assert sorted(j["id"] for j in ctl.jobs()) == sorted([running, pending] + done[1:])
    assert ctl.job(running)["state"] == "running"
    assert ctl.job(pending)["state"] == "pending"
    assert [ctl.job(j)["exit_code"] for j in done] == [0, 1, 2, 3]

    # With job_retention 0 none is loaded, yet each is still served by id.
    ctl.stop()
    ctl.config["job_retention"] = 0
    ctl._write_config()
    ctl.start()
    assert sorted(j["id"] for j in ctl.jobs()) == sorted([running, pending])
    assert [ctl.job(j)["state"] for j in done] == ["succeeded", "failed", "failed", "failed"]
    assert ctl.job(done[3])["placement"][0]["node"] == "n1"
    assert ctl.submit({"command": ["x"]})["id"] == pending + 1


def test_out_of_range_exit_status_is_a_failure_with_code_255(controller):
    """An exit status no real process has (signal 2^31-1 without exit_code,
    exit_code 2^32 or -1) is recorded as exit code 255 and fails the job:
    not wrapped into int32 (2^32 read as 0 would be a success; 128 + 2^31-1
    overflowed under UBSan)."""
    a = FakeAgent(controller, "n1", gpus=8).start()
    jobs = [controller.submit({"command": ["x"], "gpus": 1}) for _ in range(3)]
    for j in jobs:
        a.wait_message("launch", job=j["id"])
    a.send({"type": "exited", "job": jobs[0]["id"], "task": 0, "signal": 2**31 - 1})
    a.send({"type": "exited", "job": jobs[1]["id"], "task": 0, "exit_code": 2**32, "signal": 0})
    a.send({"type": "exited", "job": jobs[2]["id"], "task": 0, "exit_code": -1, "signal": 0})
    for j in jobs:
        got = controller.wait_job(j["id"], ["failed", "succeeded"])
        assert got["state"] == "failed" and got["exit_code"] == 255, got
        assert got["placement"][0]["exit_code"] == 255, got
        a.wait_message("ack", job=j["id"], task=0)
    assert controller.alive()
    a.close()
