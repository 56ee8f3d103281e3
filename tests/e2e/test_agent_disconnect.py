"""
test_agent_disconnect.py - a node whose agent closed its connection takes
no new placements at once (not node_timeout later), and a launch it never
acknowledged goes elsewhere at once: it never started, so there is nothing
to fence.

node_timeout is 60 s here, longer than any wait of these tests, so what
they see cannot be the node's timeout and its fence; every wait is a
bounded poll.
"""

import harness

SLOW = {"node_timeout": 60}


def test_array_after_an_agent_stopped_runs_on_the_other(controller_factory):
    """SIGTERM to one agent, which closes its connection; an array
    submitted after that runs every element on the other agent."""
    ctl = controller_factory(SLOW)
    n1 = harness.Agent(ctl, "n1", gpus=2).start()
    n2 = harness.Agent(ctl, "n2", gpus=2).start()
    try:
        n1.stop()  # SIGTERM: it has no task, so it closes its connection and exits
        harness.wait_for(lambda: ctl.node("n1")["connected"] is False, what="n1 disconnected")
        shown = ctl.node("n1")["state"]
        first = ctl.submit({"command": ["true"], "gpus": 1, "array": "0-1"})["id"]
        for jid in (first, first + 1):
            done = ctl.wait_job(jid, ["succeeded", "failed"], timeout=20)
            assert done["state"] == "succeeded", done
            assert [p["node"] for p in done["placement"]] == ["n2"], done
        assert shown == "disconnected"  # what `sluice nodes` says of it meanwhile
    finally:
        n2.stop()


def test_launch_never_acknowledged_goes_elsewhere_when_the_agent_leaves(controller_factory):
    """A job placed on an agent that closes its connection without having
    acknowledged the launch is requeued at once (whatever its
    on_node_failure: it never ran) and runs on the other agent."""
    ctl = controller_factory(SLOW)
    silent = harness.FakeAgent(ctl, "f1", gpus=1, auto=False).start()
    try:
        j = ctl.submit({"command": ["true"], "gpus": 1, "on_node_failure": "fail"})
        silent_launch = harness.wait_for(lambda: silent.messages("launch", job=j["id"]),
                                         what="the launch on f1")
        other = harness.Agent(ctl, "n2", gpus=1).start()
        try:
            silent.close()
            done = ctl.wait_job(j["id"], ["succeeded", "failed"], timeout=20)
            assert done["state"] == "succeeded", done
            assert [p["node"] for p in done["placement"]] == ["n2"], done
            assert done["requeues"] == 1, done
            assert silent_launch[0].get("attempt") == 0, silent_launch
        finally:
            other.stop()
    finally:
        silent.close()
