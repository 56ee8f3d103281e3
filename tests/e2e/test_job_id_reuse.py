"""
test_job_id_reuse.py - job ids that repeat after the state database is
made anew (`sluiced --init` on an emptied database, as docs/config.md
advises for a damaged one) never reuse what an earlier job of the same id
left on a node: its directory (with whatever its tenant planted there), its
log, or the cgroup its still-running task holds.

Each test runs job 1 on a controller, stops the controller, removes its
database and starts it again with --init on the same ports, so that the
agent reconnects and the next job is job 1 again, of a new cluster
instance (the store's meta table; docs/protocol.md, "Attempts and the
cluster instance").
"""

import functools
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

SECRET = "sk-new-tenant-5f1c9e"


def reinit(ctl, agents):
    """Stops ctl, removes its state database and starts it anew (--init)
    on the same ports; returns once every agent is back."""
    ctl.stop()
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(ctl.db_path + suffix)
        except FileNotFoundError:
            pass
    ctl.start()
    for a in agents:
        ctl.wait_node(a.name, "up")


def test_new_job_1_gets_a_fresh_directory_and_log(controller, cluster, tmp_path):
    """The old job 1 plants a link at slurm_script.0 in its directory
    (pointing at a file it could read back) and writes its log; after the
    re-initialisation the new job 1, a batch script holding a secret, must
    write its script into a directory of its own, and `sluice logs` must
    show its own output only."""
    (agent,) = cluster(1, gpus=1)
    stolen = tmp_path / "stolen"
    old = controller.submit({"command": u.sh("echo OLD-JOB-LOG; ln -s %s \"$TMPDIR/slurm_script.0\""
                                             % stolen)})
    assert old["id"] == 1
    controller.wait_job(1, "succeeded")
    assert "OLD-JOB-LOG" in u.job_log(controller, 1)
    old_instance = u.instance(controller)

    old_dir = os.path.join(agent.workdir, "jobs", u.job_name(controller, 1))
    reinit(controller, [agent])
    new = controller.submit({"script": "#!/bin/sh\necho NEW-JOB-LOG key=%s\n" % SECRET,
                             "command": ["job.sh"]})
    assert new["id"] == 1, new
    done = controller.wait_job(1, ["succeeded", "failed"])
    assert done["state"] == "succeeded", done
    assert not stolen.exists() or SECRET not in stolen.read_text(), \
        "the new job's script was written through the old job's link"
    log = u.job_log(controller, 1)
    assert "NEW-JOB-LOG" in log and "OLD-JOB-LOG" not in log, log
    # A new instance, and the old job's directory left as it was beside
    # the new one.
    assert u.instance(controller) not in (None, old_instance)
    assert os.path.islink(os.path.join(old_dir, "slurm_script.0"))
    new_dir = os.path.join(agent.workdir, "jobs", u.job_name(controller, 1))
    assert new_dir != old_dir and os.path.isfile(os.path.join(new_dir, "slurm_script.0"))


MOUNTS = u.v1_mounts()
cg_dirs = functools.partial(u.v1_cg_dirs, MOUNTS)


@pytest.mark.skipif(not u.have_cgroup_v1(), reason="needs root and the cgroup v1 controllers")
def test_new_job_1_launches_beside_the_live_task_of_the_old_job_1(controller_factory, tmp_path):
    """The old job 1's task ignores SIGTERM and outlives the controller's
    re-initialisation (on_node_failure: fail, so nothing fences it, and the
    agent's grace is long): the new job 1 must run its own command, in a
    cgroup of its own, while the old task still holds its cgroup."""
    ctl = controller_factory({"kill_grace": 120})
    root = harness.unique_cgroup_root("reuse")
    for d in cg_dirs(root).values():
        os.makedirs(d)
    agent = harness.Agent(ctl, "n1", gpus=2, cgroup="v1", cgroup_root=root,
                          extra_args=["--grace", "120"])
    old_pid = None
    try:
        agent.start()
        pidfile = tmp_path / "old.pid"
        old = ctl.submit({"command": u.sh("trap '' TERM; echo $$ > %s; exec sleep 300" % pidfile),
                          "gpus": 1, "cpus": "0.5", "memory": "64Mi", "on_node_failure": "fail"})
        assert old["id"] == 1
        (old_pid,) = u.wait_running_pids(ctl, 1)
        old_cgroup = {c: os.path.join(d, u.task_key(ctl, 1)) for c, d in cg_dirs(root).items()}
        assert old_pid in u.cg_procs(old_cgroup["memory"])

        reinit(ctl, [agent])
        marker = tmp_path / "new-ran"
        new = ctl.submit({"command": u.sh("echo $$ > %s" % marker), "gpus": 1, "cpus": "0.5",
                          "memory": "64Mi"})
        assert new["id"] == 1, new
        done = ctl.wait_job(1, ["succeeded", "failed"], timeout=30)
        assert done["state"] == "succeeded", done
        assert marker.exists(), "the new job 1's command never ran"
        # The old task lived through it, in its own cgroup.
        assert u.pid_alive(old_pid)
        assert old_pid in u.cg_procs(old_cgroup["memory"])
    finally:
        if old_pid is not None:
            u.kill_pid_group(old_pid)
        agent.stop()
        ctl.stop()
        for d in cg_dirs(root).values():
            u.remove_cgroup_tree(d)
