"""
test_containers.py - image tasks through a real OCI runtime (runc), inside
the task's own cgroup and limits, as the tenant's user, with only the
task's GPUs (docs/containers.md).

Real sluiced and sluice-agent (root, --cgroup v1 under a root of its own,
--runtime /usr/sbin/runc, an image store of this module's own), real runc
and podman. The images are built here, never pulled: `podman import` of a
tarball holding Debian's static busybox, tagged localhost/sluice-test/busybox
and nvcr.io/megatron (the seed's manifest's image). Two throwaway Unix users
(slct_a, slct_b) are the tenants alice and bob. GPU device files are
stand-ins made with mknod (as test_cgroup_v1.py's). Skipped, with the
reason, unless run as root with runc, podman, busybox-static and the cgroup
v1 controllers (`make deps` installs the packages; CI runs as root). No
assertion depends on elapsed time.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
import ctutil  # noqa: E402
from ctutil import podman  # noqa: E402

RUNC, BUSYBOX = ctutil.RUNC, ctutil.BUSYBOX
USERS = ("slct_a", "slct_b")
MARK = "sluice e2e container test user"
IMAGE = "localhost/sluice-test/busybox"
MEGATRON = "nvcr.io/megatron"
MI = 1 << 20
MOUNTS = u.v1_mounts(u.CGROUP_V1)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _missing():
    return ctutil.missing("the agent switches to the tenants' users")


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


@pytest.fixture(scope="module")
def users():
    with u.unix_users(USERS, MARK) as us:
        yield us


@pytest.fixture(scope="module")
def base():
    d = tempfile.mkdtemp(prefix="sluice-containers-", dir="/tmp")
    os.chmod(d, 0o711)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def store(base):
    """The node's image store, with the busybox image under both names."""
    s = os.path.join(base, "store")
    tar = ctutil.busybox_tar(base)
    r = podman(s, "import", "--change", "ENV=PATH=/bin", "--change",
               'CMD ["/bin/sh", "-c", "echo megatron rank $RANK of $WORLD_SIZE gpus '
               '$CUDA_VISIBLE_DEVICES"]', tar, IMAGE)
    assert r.returncode == 0, r.stderr
    r = podman(s, "tag", IMAGE, MEGATRON)
    assert r.returncode == 0, r.stderr
    yield s
    podman(s, "system", "reset", "--force")


@pytest.fixture(scope="module")
def gpu_files(base):
    """Four stand-in GPU device files (char devices of harmless numbers)."""
    return ctutil.gpu_files(base, ((10, 229), (10, 237), (1, 3), (1, 5)))


@pytest.fixture(scope="module")
def data(base):
    """A directory under the allowed mount prefix, both tenants may write."""
    d = os.path.join(base, "data")
    os.makedirs(d)
    os.chmod(d, 0o1777)
    return d


@pytest.fixture(scope="module")
def node(users, base, store, gpu_files, data, build_dir):
    for b in ("sluiced", "sluice-agent", "sluice-cstart", "sluice-init"):
        if not os.access(os.path.join(build_dir, b), os.X_OK):
            pytest.skip("%s is not built" % b)
    ctl = harness.Controller(os.path.join(base, "main"), tasks_as_root=False, tenants=[
        {"name": "alice", "user": "slct_a"}, {"name": "bob", "user": "slct_b"}],
        config_overrides={"kill_grace": 1, "container_mounts": [data], "priority_classes": [
            {"name": "batch", "value": 10, "signal": "SIGUSR1", "grace": 2},
            {"name": "urgent", "value": 1000, "may_preempt": True, "tenants": ["alice", "bob"]}]})
    os.chmod(ctl.dir, 0o711)
    cg_root = harness.unique_cgroup_root("ctr")
    dirs = u.v1_cg_dirs(MOUNTS, cg_root)
    for d in dirs.values():
        os.makedirs(d)
    agent = None
    try:
        ctl.start()
        agent = harness.Agent(ctl, "n1", gpus=4, cpus="8", memory="16Gi", cgroup="v1",
                              cgroup_root=cg_root, extra_args=[
                                  "--runtime", RUNC, "--image-store", store,
                                  "--image-pull", "never",
                                  "--gpu-device-files", ",".join(gpu_files)])
        agent.start()
        STORES[id(ctl)] = store
        yield ctl, agent, cg_root
    finally:
        if agent:
            agent.stop()
        ctl.stop()
        for d in dirs.values():
            u.remove_cgroup_tree(d)


STORES = {}


def store_of(ctl):
    return STORES[id(ctl)]


def spec(command, **kw):
    s = {"image": IMAGE, "command": command, "cpus": "1", "memory": "64Mi"}
    s.update(kw)
    return s


def log(ctl, jid, task=0):
    return u.job_log(ctl, jid, task)


def container_pids(cg_root, ctl, jid):
    """The pids in the task's memory cgroup."""
    return u.cg_procs(os.path.join(MOUNTS["memory"] + cg_root, u.task_key(ctl, jid)))


def uid_of(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^Uid:\s+(\d+)", f.read(), re.M).group(1))


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def test_container_runs_in_its_task_cgroup_as_the_tenant_with_its_gpus_env_and_shm(
        node, users, data):
    ctl, agent, cg_root = node
    a = users["slct_a"]
    go = os.path.join(data, "go-basic")
    script = ("id -u; echo cwd=$(pwd); echo tmp=$TMPDIR; echo K=$K; "
              "echo job=$SLUICE_JOB_ID cuda=$CUDA_VISIBLE_DEVICES; ls /dev; df -k /dev/shm; "
              "echo mine > $TMPDIR/out; cat /etc/passwd 2>&1 | head -1; "
              "while [ ! -e %s ]; do sleep 0.05; done; echo done" % go)
    j = ctl.submit(spec(u.sh(script), gpus=2, env={"K": "V"}, shm_size="96Mi",
                        mounts=["%s:%s" % (data, data)]))
    (pid,) = u.wait_running_pids(ctl, j["id"])
    name = u.task_key(ctl, j["id"])
    try:
        harness.wait_for(lambda: "job=" in log(ctl, j["id"]), what="the container's output")
        harness.wait_for(lambda: any(comm(p) == "sleep" for p in container_pids(cg_root, ctl, j["id"])),
                         what="the container's processes in the task's cgroup")
        pids = container_pids(cg_root, ctl, j["id"])
        # Every process of the container is in the task's cgroup, in every
        # hierarchy, as the tenant's user; the monitor is not.
        inside = [p for p in pids if comm(p) in ("sh", "sleep", "sluice-init")]
        assert inside, pids
        for p in inside:
            assert uid_of(p) == a.pw_uid, (p, comm(p))
        for ctl_name, d in u.v1_cg_dirs(MOUNTS, cg_root, name).items():
            got = u.cg_procs(d)
            assert all(p in got for p in inside), (ctl_name, got, inside)
        monitor = int(re.search(r"job=%d task=0 pid=%d monitor=(\d+)" % (j["id"], pid),
                                agent.log()).group(1))
        assert monitor not in pids
    finally:
        open(go, "w").close()
    done = ctl.wait_job(j["id"], "succeeded", timeout=30)
    assert done["placement"][0]["exit_code"] == 0
    out = log(ctl, j["id"])
    lines = out.splitlines()
    assert lines[0] == "0", out  # root of its user namespace: the tenant's uid outside
    jobdir = os.path.join(os.path.realpath(agent.workdir), "jobs", u.job_name(ctl, j["id"]))
    assert "cwd=%s" % jobdir in lines and "tmp=%s" % jobdir in lines, out
    assert "K=V" in lines, out
    gpus = done["placement"][0]["gpus"]
    assert "job=%d cuda=%s" % (j["id"], ",".join(map(str, gpus))) in lines, out
    # Only its GPUs' device files (by their names), none of the others.
    for g in range(4):
        assert (("nvidia%d" % g) in lines) == (g in gpus), (g, gpus, out)
    shm = [ln for ln in lines if ln.endswith("/dev/shm")]
    assert shm and shm[0].split()[1] == str(96 * 1024), out
    assert "No such file" in out  # the host's /etc/passwd is not there
    st = os.stat(os.path.join(jobdir, "out"))
    assert st.st_uid == a.pw_uid
    assert lines[-1] == "done"


def test_exit_codes_and_signals_are_those_of_a_plain_task(node):
    ctl, agent, _ = node
    bad = ctl.submit(spec(u.sh("exit 3")))
    sig = ctl.submit(spec(u.sh("kill -KILL $$")))
    j = ctl.wait_job(bad["id"], "failed", timeout=30)
    assert j["placement"][0]["exit_code"] == 3 and j["placement"][0]["signal"] in (0, None), j
    j = ctl.wait_job(sig["id"], "failed", timeout=30)
    assert j["placement"][0]["signal"] == 9 and j["placement"][0]["exit_code"] == 137, j


def test_cancel_sigterm_reaches_the_task_and_a_term_ignorer_is_killed_after_grace(node):
    ctl, agent, cg_root = node
    polite = ctl.submit(spec(["sleep", "1000"]))
    ignorer = ctl.submit(spec(u.sh("trap '' TERM; echo ready; while :; do sleep 0.2; done")))
    (ppid,) = u.wait_running_pids(ctl, polite["id"])
    (ipid,) = u.wait_running_pids(ctl, ignorer["id"])
    harness.wait_for(lambda: "ready" in log(ctl, ignorer["id"]), what="the ignorer's trap")
    harness.wait_for(lambda: any(comm(p) == "sleep" for p in container_pids(cg_root, ctl, polite["id"])),
                     what="the polite task's sleep")
    inside = container_pids(cg_root, ctl, ignorer["id"])
    for jid in (polite["id"], ignorer["id"]):
        st, body = ctl.request("DELETE", "/v1/jobs/%d" % jid, token=ctl.token("alice"))
        assert st == 200 and body["state"] == "cancelled", (st, body)
    # SIGTERM suffices for the one (sleep, PID 2 under sluice-init), SIGKILL
    # after the grace for the other, every process of its container with it.
    harness.wait_for(lambda: "job=%d task=0 pid=%d exited exit_code=143 signal=15"
                     % (polite["id"], ppid) in agent.log(), what="polite exit reported")
    harness.wait_for(lambda: "job=%d task=0 pid=%d exited exit_code=137 signal=9"
                     % (ignorer["id"], ipid) in agent.log(), what="ignorer exit reported")
    assert "grace over, SIGKILL" in agent.log()
    harness.wait_for(lambda: not any(u.pid_alive(p) for p in inside),
                     what="the ignorer's container processes gone")


def test_past_110_percent_of_memory_is_oom_killed_and_reported(node):
    ctl, agent, _ = node
    # busybox sh holds a command substitution's output in its memory.
    j = ctl.submit(spec(u.sh("a=$(head -c 150000000 /dev/zero | tr '\\0' x); echo ${#a}"),
                        memory="64Mi"))
    done = ctl.wait_job(j["id"], "failed", timeout=60)
    p = done["placement"][0]
    assert p["oom_killed"] is True, done
    assert p["signal"] == signal.SIGKILL or p["exit_code"] == 128 + signal.SIGKILL, done
    assert p["mem_limit_bytes"] == 64 * MI * 11 // 10 // 4096 * 4096, p
    assert done["reason"].startswith("OOMKilled: task 0 used"), done["reason"]


def test_agent_kill9_then_the_container_task_is_readopted(node, data):
    ctl, agent, cg_root = node
    go = os.path.join(data, "go-readopt")
    j = ctl.submit(spec(u.sh("while [ ! -e /data/go-readopt ]; do sleep 0.05; done; exit 7"),
                        mounts=["%s:/data:ro" % data]))
    (pid,) = u.wait_running_pids(ctl, j["id"])
    harness.wait_for(lambda: any(comm(p) == "sleep" for p in container_pids(cg_root, ctl, j["id"])),
                     what="the container running")
    try:
        agent.kill9()
        agent.start()
        harness.wait_for(lambda: "pid=%d re-adopted" % pid in agent.log(), what="re-adoption")
        assert any(comm(p) == "sleep" for p in container_pids(cg_root, ctl, j["id"]))
    finally:
        open(go, "w").close()
    done = ctl.wait_job(j["id"], "failed", timeout=30)
    assert done["placement"][0]["exit_code"] == 7, done


def test_mount_read_only_and_workdir(node, data):
    ctl, agent, _ = node
    with open(os.path.join(data, "hello"), "w") as f:
        f.write("hello from the host\n")
    j = ctl.submit(spec(u.sh("pwd; cat /in/hello; touch /in/x 2>&1 || echo refused"),
                        mounts=["%s:/in:ro" % data], workdir="/work/space"))
    ctl.wait_job(j["id"], "succeeded", timeout=30)
    out = log(ctl, j["id"]).splitlines()
    assert out[0] == "/work/space" and out[1] == "hello from the host", out
    assert out[-1] == "refused", out


def test_mount_outside_the_allowed_prefixes_is_refused_naming_it(node):
    ctl, _, _ = node
    st, body = ctl.request("POST", "/v1/jobs", body=spec(["true"], mounts=["/etc:/etc2"]),
                           token=ctl.token("alice"))
    assert st == 400, (st, body)
    err = body["error"]
    assert err["field"] == "mounts" and err["message"].startswith("mounts: /etc is not under"), body
    assert ctl.config["container_mounts"][0] in err["message"], body
    st, body = ctl.request("POST", "/v1/jobs", body={"command": ["true"], "shm_size": "1Gi"},
                           token=ctl.token("alice"))
    assert st == 400 and body["error"]["field"] == "shm_size", body
    assert "only allowed with image" in body["error"]["message"], body
    st, body = ctl.request("POST", "/v1/jobs", body=spec(["true"], mounts=["data:/d"]),
                           token=ctl.token("alice"))
    assert st == 400 and body["error"]["field"] == "mounts", body


def test_missing_image_fails_the_task_with_a_reason_naming_it(node):
    ctl, _, _ = node
    j = ctl.submit(spec(["true"], image="registry.example/nothing:1"))
    done = ctl.wait_job(j["id"], "failed", timeout=30)
    reason = done["placement"][0].get("reason") or done.get("reason") or ""
    assert "registry.example/nothing:1" in reason and "pull policy is never" in reason, done


def test_tenant_a_cannot_see_tenant_bs_files_or_processes(node, users):
    ctl, agent, cg_root = node
    b = ctl.submit(spec(u.sh("echo secret > $TMPDIR/bfile; exec sleep 1000")), tenant="bob")
    u.wait_running_pids(ctl, b["id"])
    harness.wait_for(lambda: any(comm(p) == "sleep" for p in container_pids(cg_root, ctl, b["id"])),
                     what="bob's container running")
    bdir = os.path.join(os.path.realpath(agent.workdir), "jobs", u.job_name(ctl, b["id"]))
    try:
        a = ctl.submit(spec(u.sh("ps -o pid,comm; cat %s/bfile 2>&1; ls %s 2>&1; echo end"
                                 % (bdir, os.path.realpath(agent.workdir)))))
        ctl.wait_job(a["id"], "succeeded", timeout=30)
        out = log(ctl, a["id"])
        assert "sleep" not in out and "1000" not in out, out   # bob's processes: not in its PID namespace
        assert "secret" not in out and "No such file" in out, out
    finally:
        ctl.request("DELETE", "/v1/jobs/%d" % b["id"], token=ctl.token("bob"))
    ctl.wait_job(b["id"], "cancelled", timeout=30)


def test_seeds_megatron_manifest_unchanged_as_8_tasks_of_4_gpus(base, store, users, build_dir,
                                                                tmp_path):
    """examples/megatron-3b.yaml as it is, on two agents of 16 emulated GPUs
    each: eight containers of nvcr.io/megatron (its command, the image's),
    each with its own four GPUs."""
    ctl = harness.Controller(os.path.join(base, "mega"), tasks_as_root=False,
                             tenants=[{"name": "alice", "user": "slct_a"}])
    os.chmod(ctl.dir, 0o711)
    roots = [harness.unique_cgroup_root("mega") for _ in range(2)]
    for r in roots:
        for d in u.v1_cg_dirs(MOUNTS, r).values():
            os.makedirs(d)
    agents = []
    try:
        ctl.start()
        for i, r in enumerate(roots):
            a = harness.Agent(ctl, "m%d" % (i + 1), gpus=16, cpus="64", memory="1100Gi",
                              cgroup="v1", cgroup_root=r,
                              extra_args=["--runtime", RUNC, "--image-store", store,
                                          "--image-pull", "if-not-present"])
            agents.append(a)
            a.start()
        env = u.cli_env(ctl, token=ctl.token("alice"), tmpdir=tmp_path)
        r = u.sluice(["submit", "-f", os.path.join(REPO, "examples", "megatron-3b.yaml")], env)
        assert r.returncode == 0, (r.stdout, r.stderr)
        jid = int(re.search(r"\d+", r.stdout).group(0))
        done = ctl.wait_job(jid, ["succeeded", "failed"], timeout=90)
        assert done["state"] == "succeeded", (done, [log(ctl, jid, t) for t in range(8)])
        seen = set()
        for t, p in enumerate(done["placement"]):
            assert len(p["gpus"]) == 4
            out = log(ctl, jid, t).strip()
            assert out == "megatron rank %d of 8 gpus %s" % (t, ",".join(map(str, p["gpus"]))), out
            seen |= {(p["node"], g) for g in p["gpus"]}
        assert len(seen) == 32
    finally:
        for a in agents:
            a.stop()
        ctl.stop()
        for r in roots:
            for d in u.v1_cg_dirs(MOUNTS, r).values():
                u.remove_cgroup_tree(d)


def test_sbatch_pyxis_directives_run_the_script_in_the_container(node, data, users, tmp_path):
    """#SBATCH --container-image/-mounts/-workdir/-name (pyxis') as image,
    mounts, workdir and the job's name; the script runs in the container."""
    ctl, agent, _ = node
    tmp_path.chmod(0o755)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n"
                      "#SBATCH --container-image=localhost\\#sluice-test/busybox\n"
                      "#SBATCH --container-mounts=%s:/data,%s\n"
                      "#SBATCH --container-workdir=/data\n"
                      "#SBATCH --container-name=trainer\n"
                      "#SBATCH --mem=64M\n"
                      "pwd; ls /bin/busybox; test -d %s && echo both; echo args $1\n"
                      % (data, data, data))
    env = u.cli_env(ctl, token=ctl.token("alice"), tmpdir=tmp_path)
    r = u.sluice(["sbatch", "--dry-run", str(script)], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    sp = json.loads(r.stdout)
    assert sp["image"] == IMAGE and sp["workdir"] == "/data" and sp["name"] == "trainer", sp
    assert sp["mounts"] == ["%s:/data" % data, "%s:%s" % (data, data)], sp
    r = u.sluice(["sbatch", "--parsable", str(script), "one"], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    jid = int(r.stdout.strip().split(";")[0])
    done = ctl.wait_job(jid, ["succeeded", "failed"], timeout=30)
    out = log(ctl, jid)
    assert done["state"] == "succeeded", (done, out)
    assert out.splitlines() == ["/data", "/bin/busybox", "both", "args one"], out
    # A squashfs file (enroot's) is refused, naming the directive.
    script.write_text("#!/bin/sh\n#SBATCH --container-image=/images/pytorch.sqsh\ntrue\n")
    r = u.sluice(["sbatch", "--dry-run", str(script)], env, cwd=str(tmp_path))
    assert r.returncode != 0 and "--container-image" in r.stderr and "squashfs" in r.stderr, r


TRAIN = r"""
import os
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
print("rank %d world %d sum %d uid %d" % (dist.get_rank(), dist.get_world_size(), int(t.item()),
                                          os.getuid()), flush=True)
dist.destroy_process_group()
"""


@pytest.mark.skipif(not os.path.exists("/usr/lib/python3/dist-packages/torch"),
                    reason="python3-torch is not installed (make deps)")
def test_torchrun_gang_over_gloo_in_containers_on_two_agents(base, store, users, tmp_path):
    """A gang of two tasks on two agents, each in a container of an image
    that has no Python: Debian's python3-torch is the node's /usr, bound
    read-only with /etc/alternatives (its BLAS is a link there), both
    allowed by container_mounts; torchrun's static rendezvous
    at MASTER_ADDR:MASTER_PORT over the host's network, one gloo
    all_reduce."""
    root = os.path.join(base, "torchroot")
    os.makedirs(os.path.join(root, "bin"))
    shutil.copy(BUSYBOX, os.path.join(root, "bin", "busybox"))
    os.symlink("busybox", os.path.join(root, "bin", "sh"))
    for link in ("lib", "lib64"):
        os.symlink("usr/" + link, os.path.join(root, link))
    tar = os.path.join(base, "torchroot.tar")
    subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True, timeout=60)
    r = podman(store, "import", tar, "localhost/sluice-test/usr-from-host")
    assert r.returncode == 0, r.stderr
    job = os.path.join(base, "torchjob")
    os.makedirs(job)
    os.chmod(job, 0o755)
    with open(os.path.join(job, "train.py"), "w") as f:
        f.write(TRAIN)
    ctl = harness.Controller(os.path.join(base, "torch"), tasks_as_root=False,
                             tenants=[{"name": "alice", "user": "slct_a"}],
                             config_overrides={"container_mounts": ["/usr", "/etc/alternatives", job]})
    os.chmod(ctl.dir, 0o711)
    roots = [harness.unique_cgroup_root("torch") for _ in range(2)]
    for r_ in roots:
        for d in u.v1_cg_dirs(MOUNTS, r_).values():
            os.makedirs(d)
    agents = []
    try:
        ctl.start()
        for i, r_ in enumerate(roots):
            a = harness.Agent(ctl, "t%d" % (i + 1), gpus=1, cpus="2", memory="8Gi",
                              cgroup="v1", cgroup_root=r_,
                              extra_args=["--runtime", RUNC, "--image-store", store,
                                          "--image-pull", "never"])
            agents.append(a)
            a.start()
        cmd = ("exec /usr/bin/python3 -m torch.distributed.run --nnodes 2 --nproc_per_node 1 "
               "--redirects=1:1 --tee=1:1 "
               "--node_rank $RANK --master_addr $MASTER_ADDR --master_port $MASTER_PORT "
               "/job/train.py")
        j = ctl.submit({"image": "localhost/sluice-test/usr-from-host", "tasks": 2, "gpus": 1,
                        "cpus": "1", "memory": "3Gi", "command": u.sh(cmd),
                        "mounts": ["/usr:/usr:ro", "/etc/alternatives:/etc/alternatives:ro",
                                   "%s:/job:ro" % job]})
        done = ctl.wait_job(j["id"], ["succeeded", "failed"], timeout=240)
        outs = [log(ctl, j["id"], t) for t in range(2)]
        assert done["state"] == "succeeded", (done, outs)
        assert {p["node"] for p in done["placement"]} == {"t1", "t2"}
        ranks = set()
        for out in outs:
            for ln in out.splitlines():
                if ln.startswith("rank "):
                    f = ln.split()
                    assert (f[3], f[5], f[7]) == ("2", "2", "0"), ln
                    ranks.add(int(f[1]))
        assert ranks == {0, 1}, outs
    finally:
        for a in agents:
            a.stop()
        ctl.stop()
        for r_ in roots:
            for d in u.v1_cg_dirs(MOUNTS, r_).values():
                u.remove_cgroup_tree(d)


def test_gpus_through_the_toolkits_cdi_spec_where_the_node_has_one(node, base, gpu_files):
    """A node with a CDI spec (kind nvidia.com/gpu, as nvidia-ctk writes it):
    the container gets its GPUs' deviceNodes (by index), the spec's own
    devices, mounts and env, and no other GPU."""
    ctl, _, _ = node
    cdi = os.path.join(base, "cdi")
    drv = os.path.join(base, "driver")
    os.makedirs(cdi)
    os.makedirs(drv)
    os.chmod(drv, 0o755)
    lib = os.path.join(drv, "libcuda.so.1")
    with open(lib, "w") as f:
        f.write("not really the driver\n")
    os.chmod(lib, 0o644)
    devices = "\n".join(
        "- name: \"%d\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia%d\n"
        "      hostPath: %s" % (i, i, f) for i, f in enumerate(gpu_files))
    with open(os.path.join(cdi, "nvidia.yaml"), "w") as f:
        f.write("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n%s\n"
                "containerEdits:\n  env:\n  - NVIDIA_VISIBLE_DEVICES=void\n"
                "  deviceNodes:\n  - path: /dev/nvidiactl\n    hostPath: %s\n"
                "  mounts:\n  - hostPath: %s\n    containerPath: /usr/lib/libcuda.so.1\n"
                "    options: [ro, nosuid, nodev, bind]\n" % (devices, gpu_files[3], lib))
    root = harness.unique_cgroup_root("cdi")
    dirs = u.v1_cg_dirs(MOUNTS, root)
    for d in dirs.values():
        os.makedirs(d)
    a = harness.Agent(ctl, "c1", gpus=4, cpus="8", memory="16Gi", cgroup="v1", cgroup_root=root,
                      extra_args=["--runtime", RUNC, "--image-store", store_of(ctl),
                                  "--image-pull", "never", "--labels", "cdi=yes",
                                  "--gpu-device-files", ",".join(gpu_files), "--cdi-dirs", cdi])
    try:
        a.start()
        j = ctl.submit(spec(u.sh("ls /dev; cat /usr/lib/libcuda.so.1; echo vis=$NVIDIA_VISIBLE_DEVICES"),
                            gpus=1, node_selector=["cdi=yes"]))
        done = ctl.wait_job(j["id"], ["succeeded", "failed"], timeout=30)
        out = log(ctl, j["id"])
        assert done["state"] == "succeeded", (done, out)
        (g,) = done["placement"][0]["gpus"]
        lines = out.splitlines()
        assert "nvidia%d" % g in lines and "nvidiactl" in lines, out
        assert [x for x in lines if x.startswith("nvidia") and x != "nvidiactl"] == ["nvidia%d" % g], out
        assert "not really the driver" in lines and "vis=void" in lines, out
        with open(os.path.join(a.workdir, "containers", "%s.0" % u.job_name(ctl, j["id"]),
                               "spec.json")) as f:
            assert json.load(f)["cdi"] == os.path.join(cdi, "nvidia.yaml")
    finally:
        a.stop()
        for d in dirs.values():
            u.remove_cgroup_tree(d)


def test_time_limit_stops_a_container_as_a_plain_task(node):
    """The controller's time limit ends a container with SIGTERM (the task's
    own handler runs inside) and the job fails with the limit's reason."""
    ctl, agent, _ = node
    j = ctl.submit(spec(u.sh("trap 'echo got TERM; exit 0' TERM; echo up; "
                             "while :; do sleep 0.1; done"), time_limit=1))
    done = ctl.wait_job(j["id"], "failed", timeout=30)
    assert done["reason"] == "time limit of 1 s exceeded", done
    harness.wait_for(lambda: "got TERM" in log(ctl, j["id"]), what="the trap's line")
    assert "up" in log(ctl, j["id"])


def test_root_only_where_the_config_allows_it_and_then_inside_the_tasks_cgroup(base, store,
                                                                              users):
    """A tenant mapped to root (allow_root: true) runs its container as root
    (no user namespace), still inside the task's cgroup tree under its
    limits; every other tenant's container is its own user's."""
    ctl = harness.Controller(os.path.join(base, "rootctl"), tasks_as_root=False,
                             tenants=[{"name": "ops", "user": "root"},
                                      {"name": "alice", "user": "slct_a"}],
                             config_overrides={"allow_root": True})
    os.chmod(ctl.dir, 0o711)
    root = harness.unique_cgroup_root("root")
    dirs = u.v1_cg_dirs(MOUNTS, root)
    for d in dirs.values():
        os.makedirs(d)
    a = None
    try:
        ctl.start()
        a = harness.Agent(ctl, "r1", gpus=0, cpus="4", memory="8Gi", cgroup="v1",
                          cgroup_root=root, extra_args=["--runtime", RUNC, "--image-store", store,
                                                        "--image-pull", "never"]).start()
        for tenant, want in (("ops", 0), ("alice", users["slct_a"].pw_uid)):
            j = ctl.submit({"image": IMAGE, "cpus": "1", "memory": "64Mi",
                            "command": u.sh("id -u; exec sleep 1000")}, tenant=tenant)
            u.wait_running_pids(ctl, j["id"])
            mem = os.path.join(MOUNTS["memory"] + root, u.task_key(ctl, j["id"]))

            def sleeper():
                for dirpath, _, _ in os.walk(mem):
                    for p in u.cg_procs(dirpath):
                        if comm(p) == "sleep":
                            return p
                return None
            p = harness.wait_for(sleeper, what="the container's sleep in the task's cgroup tree")
            assert uid_of(p) == want, (tenant, p)
            ctl.request("DELETE", "/v1/jobs/%d" % j["id"], token=ctl.token(tenant))
            ctl.wait_job(j["id"], "cancelled", timeout=30)
            harness.wait_for(lambda: re.search(r"job=%d task=0 pid=\d+ exited exit_code=143 signal=15"
                                               % j["id"], open(a.log_path).read()),
                             timeout=30, what="the container's end by SIGTERM")
            assert "0" in log(ctl, j["id"]).splitlines(), log(ctl, j["id"])
    finally:
        if a:
            a.stop()
        ctl.stop()
        for d in dirs.values():
            u.remove_cgroup_tree(d)
        # runc as root makes the task's path in the hierarchies the agent
        # does not use (blkio, cpuset, freezer, ...); it removes the task's
        # own directory, not its parents.
        for h in os.listdir("/sys/fs/cgroup"):
            u.remove_cgroup_tree(os.path.join("/sys/fs/cgroup", h) + root)


def test_submit_flags_and_yaml_carry_the_container_fields(node, tmp_path):
    ctl, _, _ = node
    env = u.cli_env(ctl, token=ctl.token("alice"), tmpdir=tmp_path)
    r = u.sluice(["submit", "--dry-run", "--image", IMAGE, "--mount", "/a:/b:ro,/c:/d",
                  "--mount", "/e:/f", "--shm-size", "1Gi", "--workdir", "/w", "--", "true"], env)
    assert r.returncode == 0, r.stderr
    sp = json.loads(r.stdout)
    assert sp["mounts"] == ["/a:/b:ro", "/c:/d", "/e:/f"], sp
    assert (sp["shm_size"], sp["workdir"]) == ("1Gi", "/w"), sp
    f = tmp_path / "job.yaml"
    f.write_text("image: %s\ncommand: [\"true\"]\nmounts: [\"/a:/b:ro\"]\nshm_size: 2Gi\n"
                 "workdir: /w\n" % IMAGE)
    r = u.sluice(["submit", "--dry-run", "-f", str(f)], env)
    assert r.returncode == 0, r.stderr
    sp = json.loads(r.stdout)
    assert sp["mounts"] == ["/a:/b:ro"] and sp["shm_size"] == "2Gi" and sp["workdir"] == "/w", sp
    r = u.sluice(["submit", "--mount", "/a:/b", "--", "true"], env)  # the server checks
    assert r.returncode != 0 and "mounts" in r.stderr and "only allowed with image" in r.stderr, r


def test_preemption_signal_and_grace_reach_the_container_as_a_plain_task(node):
    """A preempted container gets its class's SIGUSR1 (with the deadline in
    SLUICE_PREEMPT_FILE, inside), SIGKILL after the class's grace, and is
    requeued, as a plain task is (test_preempt.py)."""
    ctl, agent, cg_root = node
    v = ctl.submit(spec(u.sh("trap 'echo usr1 $(cat $SLUICE_PREEMPT_FILE)' USR1; trap '' TERM; "
                             "echo start; while :; do sleep 0.05; done"),
                        gpus=4, priority_class="batch"))
    (vpid,) = u.wait_running_pids(ctl, v["id"])
    harness.wait_for(lambda: "start" in log(ctl, v["id"]), what="the victim's container")
    urgent = ctl.submit({"gpus": 4, "priority_class": "urgent", "command": ["true"],
                         "cpus": "1", "memory": "64Mi"}, tenant="bob")
    ctl.wait_job(urgent["id"], "succeeded", timeout=60)
    harness.wait_for(lambda: re.search(r"job=%d task=0 pid=%d exited exit_code=137 signal=9"
                                       % (v["id"], vpid), agent.log()),
                     what="the victim killed after the grace")
    # The first attempt's log is 0.log until the requeued job starts again,
    # then 0.log~1: read both until the stamp is there.
    first = os.path.join(agent.workdir, "logs", u.job_name(ctl, v["id"]), "0.log~1")

    def stamped():
        text = (open(first).read() if os.path.exists(first) else "") + log(ctl, v["id"])
        return re.search(r"usr1 SLUICE_PREEMPT_DEADLINE=\d+\.\d+", text)
    harness.wait_for(stamped, what="the victim's USR1 stamp with its deadline")
    harness.wait_for(lambda: ctl.job(v["id"])["requeues"] >= 1, what="the victim requeued")
    ctl.request("DELETE", "/v1/jobs/%d" % v["id"], token=ctl.token("alice"))
    ctl.wait_job(v["id"], "cancelled", timeout=30)


def test_a_name_given_to_another_image_runs_that_image(node, base):
    """The image's name is looked up again once the store's list changes
    (the agent keeps what a name was only while the store is unchanged)."""
    ctl, _, _ = node
    tar = os.path.join(base, "busybox.tar")
    name = "localhost/sluice-test/retag"
    for word in ("first", "second"):
        r = podman(store_of(ctl), "import", "--change", 'CMD ["/bin/echo", "%s"]' % word, tar, name)
        assert r.returncode == 0, r.stderr
        for _ in range(2):
            j = ctl.submit({"image": name, "cpus": "1", "memory": "64Mi"})
            ctl.wait_job(j["id"], "succeeded", timeout=30)
            assert log(ctl, j["id"]).strip() == word, log(ctl, j["id"])
