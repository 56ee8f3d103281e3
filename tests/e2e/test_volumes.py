"""
test_volumes.py - a job's volumes against real daemons (docs/jobspec.md
"Volumes", docs/containers.md): emptyDir of medium Memory as a container's
/dev/shm of 8 GiB, read-only host paths, sub paths, a claim and an NFS
export mapped by the config, an emptyDir shared by the tasks of one job on
one node and removed after it, bind mounts of a plain task in a mount
namespace of its own, and the refusals: a host path outside the prefixes,
an unknown claim, "..", a symbolic link out of an allowed directory, and
the agent's own work directory (every tenant's job directories), a
container volume no longer the inode the agent checked, and a claim the
config stopped mapping between submission and launch.

Real sluiced and sluice-agent (root, --runtime /usr/sbin/runc, an image
store of this module's own), real runc and podman; the image is built here
from Debian's static busybox (`podman import`), never pulled, as in
test_containers.py. Two throwaway Unix users are the tenants. Skipped,
with the reason, unless run as root with runc, podman and busybox-static.
No assertion depends on elapsed time.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
import ctutil  # noqa: E402
from ctutil import podman  # noqa: E402

RUNC = ctutil.RUNC
USERS = ("slvt_a", "slvt_b")
MARK = "sluice e2e volumes test user"
IMAGE = "localhost/sluice-test/busybox-volumes"
GI = 1 << 30


def _missing():
    return ctutil.missing("the agent mounts volumes and switches to the tenants' users",
                          cgroups=False)


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


@pytest.fixture(scope="module")
def users():
    with u.unix_users(USERS, MARK) as us:
        yield us


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


@pytest.fixture(scope="module")
def tree():
    """The node's directories: an allowed prefix (data), a claim's and an
    export's node paths, a directory outside every prefix, a mount point
    for plain tasks; each searchable by the tenants."""
    b = tempfile.mkdtemp(prefix="sluice-volumes-", dir="/tmp")
    os.chmod(b, 0o711)
    t = {k: os.path.join(b, k) for k in ("data", "pvc", "nfs", "outside", "mnt", "store",
                                          "main")}
    for d in t.values():
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o755)
    write(os.path.join(t["data"], "ro", "file"), "read-only data\n")
    write(os.path.join(t["data"], "sub", "inner", "file"), "inner file\n")
    os.makedirs(os.path.join(t["data"], "rw"))
    os.chmod(os.path.join(t["data"], "rw"), 0o1777)
    write(os.path.join(t["pvc"], "imagenet", "labels.txt"), "claim contents\n")
    write(os.path.join(t["nfs"], "export", "x", "f"), "nfs contents\n")
    write(os.path.join(t["outside"], "secret"), "not for tenants\n", 0o644)
    # A tenant's link out of an allowed directory (planted in rw, which
    # every tenant may write), and a link in the middle of a sub_path.
    os.symlink(t["outside"], os.path.join(t["data"], "rw", "evil"))
    os.makedirs(os.path.join(t["mnt"], "ro"))
    t["base"] = b
    yield t
    shutil.rmtree(b, ignore_errors=True)


@pytest.fixture(scope="module")
def store(tree):
    s = tree["store"]
    tar = ctutil.busybox_tar(tree["base"])
    r = podman(s, "import", "--change", "ENV=PATH=/bin", tar, IMAGE)
    assert r.returncode == 0, r.stderr
    yield s
    podman(s, "system", "reset", "--force")


@pytest.fixture(scope="module")
def node(users, tree, store, build_dir):
    for b in ("sluiced", "sluice-agent", "sluice-cstart", "sluice-init"):
        if not os.access(os.path.join(build_dir, b), os.X_OK):
            pytest.skip("%s is not built" % b)
    # The last prefix holds the agent's work directory: the agent refuses it.
    ctl = harness.Controller(tree["main"], tasks_as_root=False, tenants=[
        {"name": "alice", "user": USERS[0]}, {"name": "bob", "user": USERS[1]}],
        config_overrides={"kill_grace": 1, "volumes": {
            "host_path_prefixes": [tree["data"], tree["mnt"], tree["main"]],
            "claims": {"imagenet": os.path.join(tree["pvc"], "imagenet")},
            "nfs": {"nfs1:/export": os.path.join(tree["nfs"], "export")}}})
    os.chmod(ctl.dir, 0o711)
    agent = None
    try:
        ctl.start()
        agent = harness.Agent(ctl, "n1", gpus=0, cpus="8", memory="16Gi", extra_args=[
            "--runtime", RUNC, "--image-store", store, "--image-pull", "never"])
        agent.start()
        os.chmod(agent.workdir, 0o711)
        yield ctl, agent
    finally:
        if agent:
            agent.stop()
        ctl.stop()


def image_spec(script, volumes, **kw):
    s = {"image": IMAGE, "command": u.sh(script), "cpus": "1", "memory": "64Mi",
         "volumes": volumes}
    s.update(kw)
    return s


def plain_spec(script, volumes, **kw):
    s = {"command": u.sh(script), "cpus": "1", "memory": "64Mi", "volumes": volumes}
    s.update(kw)
    return s


def run(ctl, spec, state="succeeded", tenant="alice"):
    j = ctl.submit(spec, tenant=tenant)
    done = ctl.wait_job(j["id"], ["succeeded", "failed"], timeout=60)
    st, _ = ctl.request("GET", "/v1/jobs/%d/logs?task=0" % j["id"], token=ctl.token("admin"))
    out = u.job_log(ctl, j["id"]) if st == 200 else ""  # none: it failed before its log
    assert done["state"] == state, (done, out)
    return done, out


def test_refusals_are_all_named_at_once_with_their_place(node, tree):
    ctl, _ = node
    vols = [
        {"path": "/a", "host_path": tree["outside"]},
        {"path": "/b", "pvc": "no-such-claim"},
        {"path": "/c", "host_path": tree["data"] + "/../outside"},
        {"path": "/d", "host_path": tree["data"], "sub_path": "ro/../../outside"},
        {"path": "/e", "nfs": {"server": "nfs2", "path": "/export"}},
    ]
    # The shape first: .. and a bad sub_path, every one of them.
    st, body = ctl.request("POST", "/v1/jobs", plain_spec("true", vols),
                           token=ctl.token("alice"))
    assert st == 400, (st, body)
    e = body["error"]
    assert e["field"] == "volumes", e
    assert "volumes[2].host_path: must be an absolute path without . or .. parts" in \
        e["message"], e
    assert "volumes[3].sub_path: must be a relative path without . or .. parts" in \
        e["message"], e
    # Then the config: outside the prefixes, an unknown claim, an export
    # the cluster does not map, all in one answer.
    st, body = ctl.request("POST", "/v1/jobs", plain_spec("true", vols[:2] + vols[4:]),
                           token=ctl.token("alice"))
    assert st == 400, (st, body)
    m = body["error"]["message"]
    assert m.startswith("volumes[0].host_path: %s is not under a path the cluster allows "
                        "(volumes.host_path_prefixes: %s" % (tree["outside"], tree["data"])), m
    assert 'volumes[1].pvc: unknown claim "no-such-claim" (volumes.claims: imagenet)' in m, m
    assert "volumes[2].nfs: nfs2:/export is not an export the cluster maps" in m, m
    # Two sources, none, and an unknown key.
    st, body = ctl.request("POST", "/v1/jobs", plain_spec("true", [
        {"path": "/x", "pvc": "imagenet", "host_path": tree["data"]}, {"path": "/y"},
        {"path": "/z", "empty_dir": {}, "mountPropagation": "x"}]), token=ctl.token("alice"))
    assert st == 400, (st, body)
    m = body["error"]["message"]
    assert "volumes[0]: has 2 sources" in m and "volumes[1]: has no source" in m, m
    assert "volumes[2].mountPropagation: unknown key" in m, m


def test_empty_dir_of_memory_at_dev_shm_is_an_8gib_tmpfs_in_a_container(node):
    ctl, _ = node
    done, out = run(ctl, image_spec(
        "df -k /dev/shm | tail -1; stat -f -c 'type=%T' /dev/shm",
        [{"path": "/dev/shm", "empty_dir": {"medium": "Memory", "size_limit": "8Gi"}}]))
    fields = [ln for ln in out.splitlines() if ln.endswith("/dev/shm")][0].split()
    assert fields[1] == str(8 * GI // 1024), out  # 1K-blocks: 8 GiB
    assert "type=tmpfs" in out, out


def test_container_read_only_host_path_sub_path_claim_and_export(node, tree):
    ctl, _ = node
    script = ("cat /in/file; touch /in/new 2>&1 || echo ro-refused; cat /deep/file; "
              "cat /claim/labels.txt; cat /n/f; echo env=$SLUICE_VOLUME_CLAIM; "
              "echo w > /scratch/out && echo scratch-ok; df -k /cache | tail -1")
    done, out = run(ctl, image_spec(script, [
        {"path": "/in", "host_path": os.path.join(tree["data"], "ro"), "read_only": True},
        {"path": "/deep", "host_path": tree["data"], "sub_path": "sub/inner"},
        {"path": "/claim", "pvc": "imagenet", "read_only": True},
        {"path": "/n", "nfs": {"server": "nfs1", "path": "/export/x"}},
        {"path": "/scratch", "empty_dir": {}, "sub_path": "made/here"},
        {"path": "/cache", "empty_dir": {"medium": "Memory", "size_limit": "256Mi"}}]))
    lines = out.splitlines()
    # The job object shows the volumes as submitted.
    assert [v["path"] for v in done["volumes"]] == ["/in", "/deep", "/claim", "/n", "/scratch",
                                                   "/cache"], done
    assert done["volumes"][2] == {"path": "/claim", "pvc": "imagenet", "read_only": True}, done
    assert "read-only data" in lines and "ro-refused" in lines, out
    assert "Read-only file system" in out, out
    assert not os.path.exists(os.path.join(tree["data"], "ro", "new"))
    assert "inner file" in lines and "claim contents" in lines and "nfs contents" in lines, out
    assert "env=/claim" in lines and "scratch-ok" in lines, out
    cache = [ln for ln in lines if ln.endswith("/cache")][0].split()
    assert cache[1] == str(256 * 1024), out


def test_plain_task_binds_in_its_own_mount_namespace_and_the_node_sees_nothing(node, tree):
    ctl, _ = node
    target = os.path.join(tree["mnt"], "ro")
    script = ("cat %s/file; touch %s/new 2>&1 || echo ro-refused; "
              "echo env=$SLUICE_VOLUME_%s; echo tmp=$SLUICE_VOLUME_NOT_ON_NODE; "
              "ls $SLUICE_VOLUME_NOT_ON_NODE" % (target, target,
                                                  re.sub("[^A-Z0-9]+", "_", target.upper())
                                                  .strip("_")))
    done, out = run(ctl, plain_spec(script, [
        {"path": target, "host_path": os.path.join(tree["data"], "ro"), "read_only": True},
        {"path": "/not-on-node", "host_path": os.path.join(tree["data"], "sub")}]))
    lines = out.splitlines()
    assert "read-only data" in lines and "ro-refused" in lines, out
    assert "env=%s" % target in lines, out  # mounted where it was asked for
    # A path the node lacks is not made: the variable names the node path.
    assert "tmp=%s" % os.path.join(tree["data"], "sub") in lines and "inner" in lines, out
    assert "volume /not-on-node: no directory there on node n1, not mounted" in out, out
    # Nothing of it on the node's own mount table.
    assert os.listdir(target) == []
    with open("/proc/self/mountinfo") as f:
        assert target not in f.read()


def test_empty_dir_is_shared_by_the_jobs_tasks_on_a_node_and_removed_after(node, users):
    ctl, agent = node
    # Two tasks on the one node: task 0 writes, task 1 waits for it; the
    # path is not on the node, so each finds it by its variable.
    script = ('d=$SLUICE_VOLUME_SLUICE_NO_SUCH_DIR_WORK; echo dir=$d; '
              'if [ "$SLUICE_TASK_INDEX" = 0 ]; then echo hi > $d/from0; else '
              'i=0; while [ ! -e $d/from0 ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; '
              'cat $d/from0; fi; stat -c owner=%u $d')
    j = ctl.submit(plain_spec(script, [{"path": "/sluice-no-such-dir/work", "empty_dir": {}}],
                              tasks=2))
    done = ctl.wait_job(j["id"], ["succeeded", "failed"], timeout=60)
    out0, out1 = u.job_log(ctl, j["id"], 0), u.job_log(ctl, j["id"], 1)
    assert done["state"] == "succeeded", (done, out0, out1)
    d = [ln[4:] for ln in out0.splitlines() if ln.startswith("dir=")][0]
    assert "dir=%s" % d in out1.splitlines() and "hi" in out1.splitlines(), (out0, out1)
    assert d.startswith(os.path.join(os.path.realpath(agent.workdir), "volumes")), d
    assert "owner=%d" % users[USERS[0]].pw_uid in out0.splitlines(), out0
    harness.wait_for(lambda: not os.path.exists(os.path.dirname(d)),
                     what="the job's empty_dirs removed after its last task")


def test_a_symbolic_link_out_of_an_allowed_directory_is_refused_on_the_node(node, tree):
    ctl, _ = node
    rw = os.path.join(tree["data"], "rw")
    for vol in ({"path": "/x", "host_path": os.path.join(rw, "evil")},
                {"path": "/x", "host_path": rw, "sub_path": "evil"}):
        done, out = run(ctl, image_spec("cat /x/secret", [vol]), state="failed")
        assert "evil is a symbolic link (not followed)" in done["reason"], done
        assert "not for tenants" not in out
    done, _ = run(ctl, plain_spec("cat /x/secret", [
        {"path": "/x", "host_path": rw, "sub_path": "evil"}]), state="failed")
    assert "evil is a symbolic link (not followed)" in done["reason"], done


def test_the_agents_work_directory_is_refused_even_under_an_allowed_prefix(node, tree):
    ctl, agent = node
    # bob's job directory (and every other) is under the agent's work
    # directory; a prefix that happens to hold it does not expose it.
    b, _ = run(ctl, plain_spec("echo secret-of-bob > $TMPDIR/mine", []), tenant="bob")
    jobs = os.path.join(agent.workdir, "jobs")
    for hp in (jobs, tree["main"]):
        done, out = run(ctl, image_spec("cat /x/*/mine", [{"path": "/x", "host_path": hp}]),
                        state="failed")
        assert "the agent's work directory" in done["reason"], done
        assert "secret-of-bob" not in out


def test_a_container_volume_swapped_after_the_agents_check_is_not_mounted(node, tree, build_dir):
    """sluice-cstart binds a volume only when its source is still the inode
    the agent checked: a bundle whose recorded inode no longer matches (as
    after a tenant renamed another directory into place) fails to start."""
    ctl, agent = node
    src = os.path.join(tree["data"], "sub")
    done, out = run(ctl, image_spec("cat /v/inner/file", [{"path": "/v", "host_path": src}]))
    assert "inner file" in out, out
    bundle = os.path.join(agent.workdir, "containers", u.task_key(ctl, done["id"]))
    with open(os.path.join(bundle, "spec.json")) as f:
        spec = json.load(f)
    (m,) = [m for m in spec["mounts"] if m.get("destination") == "/v"]
    assert m["source"] == os.path.realpath(src) and m["ino"] == os.stat(src).st_ino, m
    # The same bundle again, its volume now said to be another inode.
    again = tempfile.mkdtemp(prefix="bundle-", dir=os.path.join(agent.workdir, "containers"))
    m["ino"] += 1
    spec["id"] += "-swapped"
    spec["reason"] = os.path.join(again, "failed")
    with open(os.path.join(again, "spec.json"), "w") as f:
        json.dump(spec, f)
    r = subprocess.run([os.path.join(build_dir, "sluice-cstart"), again], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 125, (r.returncode, r.stderr)
    with open(os.path.join(again, "failed")) as f:
        why = f.read()
    assert "volume /v: %s is no longer what the agent checked" % os.path.realpath(src) in why, why
    shutil.rmtree(again, ignore_errors=True)


def test_a_claim_the_config_no_longer_maps_fails_the_job_at_launch(tree, build_dir):
    """Accepted under one config, launched under the next: the task fails
    with the reason instead of running without its volume."""
    d = os.path.join(tree["base"], "reload")
    claim = os.path.join(d, "claim")
    os.makedirs(claim)
    go = os.path.join(d, "go")
    ctl = harness.Controller(os.path.join(d, "ctl"), config_overrides={
        "volumes": {"claims": {"ds": claim}}})
    agent = None
    try:
        ctl.start()
        agent = harness.Agent(ctl, "r1", gpus=0, cpus="4", memory="8Gi")
        agent.start()
        first = ctl.submit({"command": u.sh("while [ ! -e %s ]; do sleep 0.05; done" % go),
                            "cpus": "1", "memory": "64Mi"})
        held = ctl.submit({"command": ["true"], "cpus": "1", "memory": "64Mi",
                           "dependency": "afterok:%d" % first["id"],
                           "volumes": [{"path": "/data", "pvc": "ds"}]})
        u.wait_running_pids(ctl, first["id"])
        ctl.stop()
        ctl.config["volumes"] = {"claims": {"other": claim}}
        ctl._write_config()
        ctl.start()
        open(go, "w").close()
        done = ctl.wait_job(held["id"], ["succeeded", "failed"], timeout=60)
        assert done["state"] == "failed", done
        assert 'volumes[0].pvc: unknown claim "ds" (volumes.claims: other)' in done["reason"], done
    finally:
        open(go, "w").close()
        if agent:
            agent.stop()
        ctl.stop()


GCS_JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: gcs
spec:
  template:
    metadata:
      annotations: {gke-gcsfuse/volumes: "true"}
    spec:
      restartPolicy: Never
      containers:
      - name: c
        command: ["/bin/sh", "-c", "cat %(at)s/model/weights; touch %(at)s/new 2>&1 || echo ro-refused"]
        resources:
          limits: {cpu: 100m, memory: 64Mi}
        volumeMounts:
        - {name: gcs-fuse-csi-ephemeral, mountPath: %(at)s, readOnly: true}
      volumes:
      - name: gcs-fuse-csi-ephemeral
        csi:
          driver: gcsfuse.csi.storage.gke.io
          volumeAttributes:
            bucketName: %(bucket)s
            mountOptions: implicit-dirs
"""


def test_a_csi_bucket_the_config_maps_is_the_nodes_mount_read_only(tree, build_dir, tmp_path):
    """A GKE Cloud Storage FUSE volume of a Kubernetes Job: the config maps
    the driver's bucketName to the node path where every node mounted that
    bucket; the plain task sees it read-only at its mountPath. A bucket or
    driver the config does not map is a 400 naming it."""
    d = os.path.join(tree["base"], "csi")
    bucket = os.path.join(d, "gcs", "ckpts")
    write(os.path.join(bucket, "model", "weights"), "bucket contents\n")
    at = os.path.join(d, "mnt")
    os.makedirs(at)
    ctl = harness.Controller(os.path.join(d, "ctl"), config_overrides={"volumes": {"csi": {
        "gcsfuse.csi.storage.gke.io": {"attribute": "bucketName",
                                       "paths": {"ckpts": bucket}}}}})
    agent = None
    try:
        ctl.start()
        agent = harness.Agent(ctl, "c1", gpus=0, cpus="4", memory="8Gi")
        agent.start()
        env = u.cli_env(ctl, token=ctl.token("alice"), tmpdir=tmp_path)
        f = tmp_path / "gcs.yaml"
        f.write_text(GCS_JOB % {"at": at, "bucket": "ckpts"})
        j = u.sluice_json(["submit", "-f", str(f)], env)
        jid = j["id"] if isinstance(j, dict) else j[0]["id"]
        done = ctl.wait_job(jid, ["succeeded", "failed"], timeout=60)
        out = u.job_log(ctl, jid)
        assert done["state"] == "succeeded", (done, out)
        lines = out.splitlines()
        assert "bucket contents" in lines and "ro-refused" in lines, out
        assert not os.path.exists(os.path.join(bucket, "new"))
        assert os.listdir(at) == []  # the bind was the task's own
        # The job keeps the csi source as the CLI wrote it.
        st, got = ctl.request("GET", "/v1/jobs/%d" % jid, token=ctl.token("alice"))
        vol = got["spec"]["volumes"][0] if "spec" in got else got["volumes"][0]
        assert vol["csi"] == {"driver": "gcsfuse.csi.storage.gke.io",
                              "attributes": {"bucketName": "ckpts",
                                             "mountOptions": "implicit-dirs"}}, got
        assert vol["read_only"] is True, got
        # Unmapped: the bucket, and a driver of no mapping, each named.
        f.write_text(GCS_JOB % {"at": at, "bucket": "other"})
        r = u.sluice(["submit", "-f", str(f)], env)
        assert r.returncode != 0, r.stdout
        assert ('volumes[0].csi: gcsfuse.csi.storage.gke.io bucketName "other" is not mapped '
                "to a node path (volumes.csi.gcsfuse.csi.storage.gke.io.paths: ckpts)"
                in r.stderr), r.stderr
        st, body = ctl.request("POST", "/v1/jobs", body={
            "command": ["true"], "cpus": "1", "memory": "64Mi",
            "volumes": [{"path": "/e", "csi": {"driver": "efs.csi.aws.com",
                                               "attributes": {"fs": "x"}}}]},
            token=ctl.token("alice"))
        assert st == 400, (st, body)
        assert ("volumes[0].csi.driver: CSI driver efs.csi.aws.com is not one the cluster maps "
                "to its nodes (volumes.csi: gcsfuse.csi.storage.gke.io)" in json.dumps(body)), body
    finally:
        if agent:
            agent.stop()
        ctl.stop()
