"""
test_array.py - job arrays (docs/arrays.md) against a real sluiced: with
fake agents (harness.FakeAgent, auto=False) the test decides when each
element ends, so that the concurrency limit is watched at every step; with
real agents the elements' environment is checked.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import e2e_util as u  # noqa: E402
from harness import build_dir, wait_for  # noqa: E402


def err(body):
    assert isinstance(body, dict) and "error" in body, body
    return body["error"]


def sluice(ctl, *args, token=None):
    env = u.cli_env(ctl, token=token or ctl.admin_token, tmpdir=ctl.dir)
    return subprocess.run([os.path.join(build_dir(), "sluice")] + list(args), env=env,
                          capture_output=True, text=True, timeout=60)


def launched_live(fake):
    """(job, task) pairs launched to fake and not yet ended by the test."""
    return set(fake.running)


def test_array_limit_never_exceeded(controller, fake_agent):
    f1 = fake_agent("n1", auto=False)
    f2 = fake_agent("n2", auto=False)
    ids = controller.submit({"command": ["true"], "gpus": 1, "array": "0-19%3"})
    a = ids["id"]
    assert ids["array_id"] == a and ids["array_index"] == 0
    ended = set()
    peak = 0
    for step in range(40):  # bounded: 20 elements, one end per step
        def launches():
            got = {}
            for f in (f1, f2):
                for m in f.messages("launch"):
                    got[m["job"]] = f
            return got

        def settled():
            live = [j for j in launches() if j not in ended]
            return live if len(live) == min(3, 20 - len(ended)) else None

        if len(ended) == 20:
            break
        live = wait_for(settled, what="the limit's elements launched")
        running = [j for j in controller.jobs(query="?state=running")]
        peak = max(peak, len(running), len(live))
        assert len(running) <= 3 and len(live) <= 3, (running, live)
        job = min(live)
        launches()[job].exit(job, 0, 0)
        ended.add(job)
        controller.wait_job(job, "succeeded")
    assert len(ended) == 20 and peak == 3
    for k in range(20):
        j = controller.job(a + k)
        assert j["state"] == "succeeded" and j["array_id"] == a and j["array_index"] == k


def test_array_ids_listing_and_cancel(controller, fake_agent):
    fake_agent("n1", gpus=2)  # auto: elements start and keep running
    body = controller.submit({"command": ["sleep", "100"], "gpus": 1, "array": "1,3,5-9:2%2"})
    a = body["id"]
    # A_I names an element; indexes 1,3,5,7,9 are the ids a..a+4.
    st, e = controller.request("GET", "/v1/jobs/%d_7" % a, token=controller.admin_token)
    assert st == 200 and e["id"] == a + 3 and e["array_index"] == 7
    st, e = controller.request("GET", "/v1/jobs/%d_4" % a, token=controller.admin_token)
    assert st == 404 and "no element of this index" in err(e)["message"]
    controller.wait_job(a, "running")
    controller.wait_job(a + 1, "running")
    held = controller.job(a + 2)
    assert held["state"] == "pending"
    assert held["reason"].startswith("JobArrayTaskLimit: at most 2 elements of array %d" % a)
    # The queue: the running elements one per line, the pending rest folded.
    out = sluice(controller, "queue")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    ids = [ln.split()[0] for ln in lines[1:]]
    assert ids == ["%d_1" % a, "%d_3" % a, "%d_[5,7,9%%2]" % a], out.stdout
    # One element cancelled by its A_I name, then the whole array by A.
    out = sluice(controller, "cancel", "%d_9" % a)
    assert out.returncode == 0, out.stderr
    assert controller.job(a + 4)["state"] == "cancelled"
    out = sluice(controller, "queue")
    assert "%d_[5-7%%2]" % a not in out.stdout and "%d_[5,7%%2]" % a in out.stdout, out.stdout
    out = sluice(controller, "cancel", str(a))
    assert out.returncode == 0, out.stderr
    for k in range(5):
        controller.wait_job(a + k, "cancelled")
    st, e = controller.request("DELETE", "/v1/jobs/%d" % a, token=controller.admin_token)
    assert st == 409


def test_array_bad_specs_name_the_field(controller_factory):
    ctl = controller_factory(config_overrides={"limits": {"max_array_size": 100}})
    for text, frag in [("0-100", "index 100 is too large"), ("0-9%0", "concurrency limit"),
                       ("1,,2", "is not an index"), ("0-9,0-9,0-9,0-9,0-9,0-9,0-9,0-9,0-9,0-9,0",
                                                     "more than 100 elements")]:
        st, body = ctl.request("POST", "/v1/jobs", {"command": ["true"], "array": text},
                               token=ctl.tenant_tokens["alice"])
        assert st == 400, (text, body)
        assert err(body)["field"] == "array" and frag in err(body)["message"], (text, body)
    st, body = ctl.request("POST", "/v1/jobs", {"command": ["true"], "array": 5},
                           token=ctl.tenant_tokens["alice"])
    assert st == 400 and err(body)["field"] == "array"
    out = sluice(ctl, "submit", "--array", "3-1", "--", "true")
    assert out.returncode != 0 and "--array" in out.stderr and "below its start" in out.stderr


def test_array_elements_see_their_ids(controller, cluster, tmp_path):
    cluster(2, gpus=2)
    outdir = tmp_path / "out"
    outdir.mkdir()
    script = ("echo $SLUICE_ARRAY_JOB_ID $SLUICE_ARRAY_TASK_ID $SLURM_ARRAY_JOB_ID "
              "$SLURM_ARRAY_TASK_ID > %s/$SLURM_ARRAY_TASK_ID" % outdir)
    body = controller.submit({"command": ["/bin/sh", "-c", script], "array": "2,4,6"})
    a = body["id"]
    for k in range(3):
        controller.wait_job(a + k, "succeeded", timeout=30)
    for i in (2, 4, 6):
        assert (outdir / str(i)).read_text().split() == [str(a), str(i), str(a), str(i)]


def test_array_survives_restart(controller, fake_agent):
    f = fake_agent("n1", auto=False)
    body = controller.submit({"command": ["true"], "gpus": 1, "array": "0-5%2"})
    a = body["id"]
    wait_for(lambda: len(f.messages("launch")) == 2, what="two launches")
    f.exit(a, 0, 0)
    controller.wait_job(a, "succeeded")
    wait_for(lambda: len(f.messages("launch")) == 3, what="the third launch")
    f.close()
    controller.restart()
    f2 = fake_agent("n1", auto=False, tasks=[{"job": a + 1, "task": 0, "pid": 1, "state": "running"},
                                              {"job": a + 2, "task": 0, "pid": 2, "state": "running"}])
    controller.wait_node("n1")
    j = controller.job(a + 3)
    assert j["state"] == "pending" and j["array_id"] == a and j["array_index"] == 3
    assert j["reason"].startswith("JobArrayTaskLimit")
    assert len(controller.jobs(query="?state=running")) == 2
    f2.exit(a + 1, 0, 0)
    controller.wait_job(a + 1, "succeeded")
    wait_for(lambda: [m for m in f2.messages("launch") if m["job"] == a + 3], what="a + 3 launched")
    assert len(controller.jobs(query="?state=running")) == 2


def test_cancel_whole_array_after_its_first_element_ended(controller, fake_agent):
    f = fake_agent("n1", auto=False, gpus=1)  # one element at a time fits
    a = controller.submit({"command": ["true"], "gpus": 1, "array": "0-2"})["id"]
    wait_for(lambda: [m for m in f.messages("launch") if m["job"] == a], what="element 0")
    f.exit(a, 0, 0)
    controller.wait_job(a, "succeeded")
    wait_for(lambda: [m for m in f.messages("launch") if m["job"] == a + 1], what="element 1")
    st, body = controller.request("DELETE", "/v1/jobs/%d" % a, token=controller.admin_token)
    assert st == 200 and body["id"] == a, body
    controller.wait_job(a + 1, "cancelled")
    assert controller.job(a + 2)["state"] == "cancelled"
    assert controller.job(a)["state"] == "succeeded"
