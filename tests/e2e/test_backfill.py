"""
test_backfill.py - EASY backfill and the held reservation with real daemons
(docs/scheduling.md; docs/config.md, "default_time_limit").

A job blocked at the head holds back only what its reservation needs, and
a job whose start time nobody can know holds nothing back:

- running jobs without a time limit get their pool's default as the
  estimate backfill plans with, so the head job waiting for the A100 GPUs
  such a job holds gets a reservation on the A100 node alone, and another
  tenant's job (without a limit either) starts at once on the H100 node,
  whose 4 GPUs are free;
- a gang that needs a node that is down has no reservation possible, and
  another tenant's job starts on the node that is up meanwhile.

Every wait polls with a deadline; nothing depends on elapsed time.
"""

import harness


def test_head_job_without_time_limits_leaves_a_free_node_to_others(controller_factory):
    ctl = controller_factory()
    a100 = harness.Agent(ctl, "a100", gpus=4, gpu_model="A100").start()
    h100 = harness.Agent(ctl, "h100", gpus=4, gpu_model="H100").start()
    try:
        busy = ctl.submit({"gpus": 4, "gpu_models": ["A100"], "command": ["sleep", "600"]})
        assert ctl.wait_job(busy["id"], "running")["placement"][0]["node"] == "a100"
        head = ctl.submit({"gpus": 4, "gpu_models": ["A100"], "command": ["true"]})
        harness.wait_for(lambda: ctl.job(head["id"])["reason"], what="the head job's reason")
        other = ctl.submit({"gpus": 4, "command": ["true"]}, tenant="bob")
        done = ctl.wait_job(other["id"], ["succeeded", "failed"], timeout=30)
        assert done["state"] == "succeeded" and done["placement"][0]["node"] == "h100", done
        # The head job still waits, with a reservation on the A100 node only.
        j = ctl.job(head["id"])
        assert j["state"] == "pending" and "reserved from t=" in j["reason"], j
        assert "on 1 nodes" in j["reason"], j["reason"]
        st, _ = ctl.request("DELETE", "/v1/jobs/%d" % busy["id"], token=ctl.token("alice"))
        assert st == 200
        assert ctl.wait_job(head["id"], ["succeeded", "failed"], timeout=30)["state"] == "succeeded"
    finally:
        a100.stop()
        h100.stop()


def test_gang_needing_a_down_node_holds_nothing_back(controller_factory):
    ctl = controller_factory(config_overrides={"node_timeout": 3})
    n1 = harness.Agent(ctl, "n1", gpus=4).start()
    n2 = harness.Agent(ctl, "n2", gpus=4).start()
    try:
        n2.stop()
        ctl.wait_node("n2", "down", timeout=30)
        gang = ctl.submit({"tasks": 2, "gpus": 4, "command": ["true"]})
        harness.wait_for(lambda: "no reservation possible" in ctl.job(gang["id"])["reason"],
                         what="the gang's reason")
        other = ctl.submit({"gpus": 1, "command": ["true"]}, tenant="bob")
        done = ctl.wait_job(other["id"], ["succeeded", "failed"], timeout=30)
        assert done["state"] == "succeeded" and done["placement"][0]["node"] == "n1", done
        assert ctl.job(gang["id"])["state"] == "pending"
        n2.start()
        assert ctl.wait_job(gang["id"], ["succeeded", "failed"], timeout=30)["state"] == "succeeded"
    finally:
        n1.stop()
        n2.stop()
