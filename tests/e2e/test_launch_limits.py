"""
test_launch_limits.py - a job whose launch could never reach its agent is
refused at submission, and a launch its agent does not acknowledge goes
back to the queue after launch_timeout with a reason a person can read
(docs/config.md), instead of holding its resources in `launching`.
"""

import json
import os
import signal

import harness

MIB = 1024 * 1024


def batch_spec(body_bytes):
    """A batch job whose JSON body is body_bytes long: a small script and
    an environment that fills the rest (each value under 1 MiB)."""
    spec = {"script": "#!/bin/sh\necho hi\n", "command": ["job.sh"],
            "env": {"PAD%d" % i: "" for i in range(4)}}
    room = body_bytes - len(json.dumps(spec))
    for i in range(4):
        spec["env"]["PAD%d" % i] = "x" * (room // 4 + (1 if i < room % 4 else 0))
    assert len(json.dumps(spec)) == body_bytes
    return spec


def test_job_whose_launch_exceeds_1mib_is_refused_naming_the_field(controller):
    """The body is within the API's 1 MiB; the launch adds the batch
    runner and Slurm's variables to the same bytes and would not be."""
    spec = batch_spec(MIB - 600)
    st, body = controller.request("POST", "/v1/jobs", spec, token=controller.token("alice"))
    assert st == 400, (st, body)
    assert body["error"]["field"] == "env", body
    assert "1048576 bytes per message" in body["error"]["message"], body
    assert controller.jobs(query="?state=pending,running") == []
    # One well within the line is accepted.
    st, body = controller.request("POST", "/v1/jobs", batch_spec(900 * 1024),
                                  token=controller.token("alice"))
    assert st == 201, (st, body)


def test_unacknowledged_launch_is_requeued_with_a_reason(controller_factory):
    """The agent is stopped (SIGSTOP) right after its hello, so it reads
    nothing: its launch is never acknowledged. node_timeout is long, so
    what requeues the job is launch_timeout."""
    ctl = controller_factory({"launch_timeout": 2, "node_timeout": 60})
    agent = harness.Agent(ctl, "n1", gpus=1).start()
    stopped = False
    try:
        os.kill(agent.proc.pid, signal.SIGSTOP)
        stopped = True
        j = ctl.submit({"command": ["true"], "gpus": 1})

        def requeued():
            job = ctl.job(j["id"])
            return job if job["state"] == "pending" and job["requeues"] == 1 else None

        job = harness.wait_for(requeued, timeout=20, what="the launch timeout's requeue")
        assert "task 0 was not acknowledged by node n1 within 2.0 s" in job["reason"], job
        assert "launch_timeout" in job["reason"], job
        assert ctl.node("n1")["state"] == "up"  # not the node's timeout
    finally:
        if stopped:
            os.kill(agent.proc.pid, signal.SIGCONT)
        agent.stop()
