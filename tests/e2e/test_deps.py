"""
test_deps.py - job dependencies (docs/arrays.md) against a real sluiced:
each kind's semantics with fake agents whose tasks end when the test says,
DependencyNeverSatisfied, singleton, errors that name the field, the
held state across a restart, and a chain of 1,000 jobs on real agents.
"""

import time

from harness import wait_for


def err(body):
    assert isinstance(body, dict) and "error" in body, body
    return body["error"]


def launched(fake, job):
    return [m for m in fake.messages("launch") if m["job"] == job]


def submit(ctl, dep=None, tenant="alice", **kw):
    spec = {"command": ["true"], "gpus": 1}
    spec.update(kw)
    if dep is not None:
        spec["dependency"] = dep
    return ctl.submit(spec, tenant=tenant)["id"]


def test_afterok_waits_then_runs(controller, fake_agent):
    f = fake_agent("n1", auto=False)
    a = submit(controller)
    b = submit(controller, "afterok:%d" % a)
    wait_for(lambda: launched(f, a), what="a launched")
    jb = controller.job(b)
    assert jb["state"] == "pending" and jb["reason"] == "Dependency: waits for %d (afterok)" % a
    assert not launched(f, b)
    f.exit(a, 0, 0)
    wait_for(lambda: launched(f, b), what="b launched after a succeeded")


def test_afterok_on_failure_never_satisfied(controller, fake_agent):
    f = fake_agent("n1", auto=False)
    a = submit(controller)
    b = submit(controller, "afterok:%d" % a)
    c = submit(controller, "afterok:%d" % b)  # a chain fails through
    wait_for(lambda: launched(f, a), what="a launched")
    f.exit(a, 0, 3)
    controller.wait_job(b, "failed")
    jb, jc = controller.job(b), controller.job(c)
    assert jb["reason"].startswith("DependencyNeverSatisfied: job %d did not succeed" % a)
    assert controller.wait_job(c, "failed")["reason"].startswith("DependencyNeverSatisfied")
    assert not launched(f, b) and not launched(f, c) and jc["placement"] == []
    # Submitting against a job that already failed fails at once.
    d = controller.submit({"command": ["true"], "dependency": "afterok:%d" % a})
    assert d["state"] == "failed" and d["reason"].startswith("DependencyNeverSatisfied")


def test_afternotok_afterany_after(controller, fake_agent):
    f = fake_agent("n1", auto=False, gpus=4)
    a = submit(controller)
    notok = submit(controller, "afternotok:%d" % a)
    anyj = submit(controller, "afterany:%d" % a)
    started = submit(controller, "after:%d" % a)
    wait_for(lambda: launched(f, a), what="a launched")
    wait_for(lambda: launched(f, started), what="after: runs once a has started")
    assert controller.job(anyj)["state"] == "pending"
    f.exit(a, 0, 0)
    wait_for(lambda: launched(f, anyj), what="afterany runs after a's end")
    controller.wait_job(notok, "failed")
    assert controller.job(notok)["reason"].startswith(
        "DependencyNeverSatisfied: job %d succeeded (afternotok)" % a)
    # afternotok is met by a failure; '?' needs any one term.
    x = submit(controller)
    y = submit(controller, "afterok:%d?afternotok:%d" % (x, x))
    wait_for(lambda: launched(f, x), what="x launched")
    f.exit(x, 0, 1)
    wait_for(lambda: launched(f, y), what="y runs after x failed")


def test_singleton_one_at_a_time(controller, fake_agent):
    f = fake_agent("n1", auto=False, gpus=8)
    ids = [submit(controller, "singleton", name="nightly") for _ in range(3)]
    other = submit(controller, "singleton", name="nightly", tenant="bob")  # another tenant
    wait_for(lambda: launched(f, ids[0]) and launched(f, other), what="first singletons")
    for k in range(3):
        wait_for(lambda: launched(f, ids[k]), what="singleton %d launched" % k)
        for later in ids[k + 1:]:
            j = controller.job(later)
            assert j["state"] == "pending" and "singleton" in j["reason"], j
            assert not launched(f, later)
        f.exit(ids[k], 0, 0)
        controller.wait_job(ids[k], "succeeded")


def test_bad_dependencies_name_the_field(controller, fake_agent):
    fake_agent("n1", auto=False)
    a = submit(controller, tenant="bob")
    cases = [("afterok:999999", 400, "no job 999999"),
             ("afterok:%d" % a, 403, "belongs to another tenant"),
             ("afterok:%d_3" % a, 400, "no array with this id"),
             ("afterok", 400, "needs job ids"),
             ("afterok:1,afterok:2?afterok:3", 400, "do not mix"),
             ("aftercorr:1", 400, "not supported")]
    for text, status, frag in cases:
        st, body = controller.request("POST", "/v1/jobs", {"command": ["true"], "dependency": text},
                                      token=controller.tenant_tokens["alice"])
        assert st == status, (text, body)
        assert err(body)["field"] == "dependency" and frag in err(body)["message"], (text, body)


def test_cancel_held_and_array_dependency(controller, fake_agent):
    f = fake_agent("n1", auto=False, gpus=4)
    a = submit(controller)
    b = submit(controller, "afterany:%d" % a)
    st, body = controller.request("DELETE", "/v1/jobs/%d" % b, token=controller.admin_token)
    assert st == 200 and body["state"] == "cancelled"
    # An array waits as a whole; a job after the whole array waits for all of it.
    arr = controller.submit({"command": ["true"], "gpus": 1, "array": "0-2",
                             "dependency": "afterok:%d" % a})["id"]
    after_arr = submit(controller, "afterok:%d" % arr)
    assert controller.job(arr + 1)["reason"] == "Dependency: waits for %d (afterok)" % a
    assert controller.job(after_arr)["reason"] == "Dependency: waits for array %d (afterok)" % arr
    wait_for(lambda: launched(f, a), what="a launched")
    f.exit(a, 0, 0)
    for k in range(3):
        wait_for(lambda: launched(f, arr + k), what="element %d launched" % k)
    for k in range(2):
        f.exit(arr + k, 0, 0)
    controller.wait_job(arr + 1, "succeeded")
    assert controller.job(after_arr)["state"] == "pending"
    f.exit(arr + 2, 0, 0)
    wait_for(lambda: launched(f, after_arr), what="the job after the array")


def test_held_jobs_survive_restart(controller, fake_agent):
    f = fake_agent("n1", auto=False)
    a = submit(controller)
    b = submit(controller, "afterok:%d" % a)
    wait_for(lambda: launched(f, a), what="a launched")
    f.close()
    controller.restart()
    f2 = fake_agent("n1", auto=False, tasks=[{"job": a, "task": 0, "pid": 7, "state": "running"}])
    controller.wait_node("n1")
    jb = controller.job(b)
    assert jb["state"] == "pending" and jb["reason"] == "Dependency: waits for %d (afterok)" % a
    time.sleep(0.3)  # a cycle or two: b must stay out of the queue
    assert not launched(f2, b)
    f2.exit(a, 0, 0)
    wait_for(lambda: launched(f2, b), what="b launched after the restart")


def test_chain_of_1000_runs_in_order(controller, cluster):
    cluster(4, gpus=0)
    first = submit(controller, gpus=0)
    ids = [first]
    for _ in range(999):
        ids.append(submit(controller, "afterok:%d" % ids[-1], gpus=0))
    last = controller.wait_job(ids[-1], ["succeeded", "failed"], timeout=300)
    assert last["state"] == "succeeded", last
    jobs = {}
    after = 0
    while True:  # bounded: 1,000 jobs, pages of 1,000
        st, body = controller.request("GET", "/v1/jobs?limit=1000&after=%d" % after,
                                      token=controller.admin_token)
        assert st == 200
        for j in body["jobs"]:
            jobs[j["id"]] = j
        if not body["next_after"]:
            break
        after = body["next_after"]
    for prev, nxt in zip(ids, ids[1:]):
        assert jobs[nxt]["state"] == "succeeded"
        assert jobs[nxt]["start_time"] >= jobs[prev]["end_time"], (prev, nxt)
