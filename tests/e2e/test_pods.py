"""
test_pods.py - several containers in one task, as a Kubernetes pod's
(the job spec's `containers`; docs/containers.md "Pods").

Real sluiced and sluice-agent (root, --cgroup v1 under a root of its own,
--runtime /usr/sbin/runc, an image store of this module's own), real runc
and podman, and the real CLI for the Kubernetes manifest. Two images are
built here, never pulled: `podman import` of a tarball holding Debian's
static busybox, under two names (a server's and a client's), so that each
container has an image of its own. A throwaway Unix user (slpod_a) is the
tenant alice. GPU device files are stand-ins made with mknod. Skipped, with
the reason, unless run as root with runc, podman, busybox-static and the
cgroup v1 controllers (`make deps`). No assertion depends on elapsed time.
"""

import json
import os
import shutil
import socket
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
import ctutil  # noqa: E402
from ctutil import podman  # noqa: E402

RUNC, BUSYBOX = ctutil.RUNC, ctutil.BUSYBOX
USERS = ("slpod_a",)
MARK = "sluice e2e pod test user"
SERVER = "localhost/sluice-test/pod-server"
CLIENT = "localhost/sluice-test/pod-client"
MOUNTS = u.v1_mounts(u.CGROUP_V1)


def _missing():
    return ctutil.missing("the agent switches to the tenant's user")


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


@pytest.fixture(scope="module")
def users():
    with u.unix_users(USERS, MARK) as us:
        yield us


@pytest.fixture(scope="module")
def base():
    d = tempfile.mkdtemp(prefix="sluice-pods-", dir="/tmp")
    os.chmod(d, 0o711)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def store(base):
    """The node's image store: busybox as the server's image (its command
    says which image it is) and as the client's, an entrypoint of its own
    (/bin/sh -c) so that Kubernetes' args alone follow it."""
    s = os.path.join(base, "store")
    tar = ctutil.busybox_tar(base)
    r = podman(s, "import", "--change", "ENV=PATH=/bin", "--change",
               'CMD ["/bin/sh", "-c", "echo server image"]', tar, SERVER)
    assert r.returncode == 0, r.stderr
    r = podman(s, "import", "--change", "ENV=PATH=/bin", "--change",
               'ENTRYPOINT ["/bin/sh", "-c"]', "--change", 'CMD ["echo client image"]', tar, CLIENT)
    assert r.returncode == 0, r.stderr
    yield s
    podman(s, "system", "reset", "--force")


@pytest.fixture(scope="module")
def gpu_files(base):
    return ctutil.gpu_files(base, ((10, 229), (10, 237)))


@pytest.fixture(scope="module")
def node(users, base, store, gpu_files, build_dir):
    for b in ("sluiced", "sluice-agent", "sluice-cstart", "sluice-init", "sluice"):
        if not os.access(os.path.join(build_dir, b), os.X_OK):
            pytest.skip("%s is not built" % b)
    ctl = harness.Controller(os.path.join(base, "main"), tasks_as_root=False, tenants=[
        {"name": "alice", "user": "slpod_a"}], config_overrides={"kill_grace": 1})
    os.chmod(ctl.dir, 0o711)
    cg_root = harness.unique_cgroup_root("pod")
    dirs = u.v1_cg_dirs(MOUNTS, cg_root)
    for d in dirs.values():
        os.makedirs(d)
    agent = None
    try:
        ctl.start()
        agent = harness.Agent(ctl, "n1", gpus=2, cpus="8", memory="16Gi", cgroup="v1",
                              cgroup_root=cg_root, extra_args=[
                                  "--runtime", RUNC, "--image-store", store,
                                  "--image-pull", "never",
                                  "--gpu-device-files", ",".join(gpu_files)])
        agent.start()
        yield ctl, agent, cg_root
    finally:
        if agent:
            agent.stop()
        ctl.stop()
        for d in dirs.values():
            u.remove_cgroup_tree(d)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


MANIFEST = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: server-and-client
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: server
        image: %(server)s
        command: ["/bin/sh", "-c"]
        args:
        - >-
          echo server gpus=$CUDA_VISIBLE_DEVICES role=$ROLE; ls /dev | grep nvidia;
          mkdir /tmp/www && echo hello-from-server > /tmp/www/index.html && touch /results/marker &&
          httpd -p 127.0.0.1:%(port)d -h /tmp/www; echo httpd=$?;
          while [ ! -e /results/done ]; do sleep 0.05; done; echo server saw done
        env:
        - {name: ROLE, value: server}
        resources:
          limits: {nvidia.com/gpu: 1, memory: 64Mi, cpu: "1"}
        volumeMounts:
        - {name: results, mountPath: /results}
      - name: client
        image: %(client)s
        args:
        - >-
          echo client gpus=$CUDA_VISIBLE_DEVICES role=$ROLE; ls /dev | grep nvidia;
          ls /; until wget -q -O /results/got http://127.0.0.1:%(port)d/; do sleep 0.05; done;
          cat /results/got; until wget -q -O /dev/null http://127.0.0.1:%(port2)d/; do sleep 0.05; done;
          touch /results/done
        env:
        - {name: ROLE, value: client}
        resources:
          limits: {nvidia.com/gpu: 1, memory: 32Mi, cpu: "1"}
        volumeMounts:
        - {name: results, mountPath: /results}
      - name: bystander
        image: %(client)s
        args:
        - >-
          until wget -q -O /dev/null http://127.0.0.1:%(port)d/; do sleep 0.05; done;
          echo bystander sees [$(ls /results)] gpus=[$CUDA_VISIBLE_DEVICES];
          mkdir /tmp/w && touch /tmp/w/index.html && httpd -p 127.0.0.1:%(port2)d -h /tmp/w;
          while wget -q -O /dev/null http://127.0.0.1:%(port)d/; do sleep 0.05; done
      volumes:
      - name: results
        emptyDir: {}
"""


def test_a_manifests_server_and_client_share_localhost_and_an_empty_dir(node, tmp_path):
    ctl, agent, _ = node
    port = free_port()
    path = tmp_path / "pod.yaml"
    # The client ends the server once the bystander, which sees no volume,
    # has answered on a port of its own; the bystander ends with the server.
    path.write_text(MANIFEST % {"server": SERVER, "client": CLIENT, "port": port,
                                "port2": free_port()})
    env = u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path)
    dry = u.sluice(["submit", "--dry-run", "-f", str(path)], env)
    assert dry.returncode == 0, dry.stderr
    r = u.sluice(["submit", "-f", str(path)], env)
    assert r.returncode == 0, r.stderr
    jid = int(r.stdout.split()[2])
    job = ctl.job(jid)
    # The pod asks for the sum of its containers' resources.
    assert job["gpus"] == 2 and job["memory"] == "96Mi" and job["cpus"] == "2", job
    assert [c["name"] for c in job["containers"]] == ["server", "client", "bystander"], job
    try:
        done = ctl.wait_job(jid, ("succeeded", "failed"), timeout=60)
    except AssertionError:
        raise AssertionError("the pod did not end: %s" % u.job_log(ctl, jid))
    out = u.job_log(ctl, jid)
    assert done["state"] == "succeeded", (done, out)
    lines = out.splitlines()
    assert "hello-from-server" in lines, out       # the client reached the server on 127.0.0.1
    assert "server saw done" in lines, out         # the server saw the client's file
    gpus = done["placement"][0]["gpus"]
    assert len(gpus) == 2, done
    # Each container sees only its own GPU (its CUDA_VISIBLE_DEVICES and its
    # device file), its own env, and its own image's root.
    assert "server gpus=%d role=server" % gpus[0] in lines, out
    assert "client gpus=%d role=client" % gpus[1] in lines, out
    # The bystander mounts no volume: the server's marker (there before its
    # server answered) is not in the bystander's /results, and it has no GPU.
    assert "bystander sees [] gpus=[]" in lines, out
    assert lines.count("nvidia%d" % gpus[0]) == 1 and lines.count("nvidia%d" % gpus[1]) == 1, out
    for name in ("server", "client", "bystander"):
        assert "sluice-cstart: container %s exited with status 0" % name in lines, out


def spec(containers, **kw):
    s = {"name": "pod", "containers": containers, "cpus": "1", "memory": "64Mi"}
    s.update(kw)
    return s


def test_one_failing_container_fails_the_task_naming_it_after_all_have_ended(node):
    ctl, agent, _ = node
    j = ctl.submit(spec([
        {"name": "ok", "image": SERVER, "command": u.sh("sleep 0.3; echo ok ended")},
        {"name": "bad", "image": CLIENT, "command": u.sh("exit 3")}]))
    done = ctl.wait_job(j["id"], ("succeeded", "failed"), timeout=60)
    out = u.job_log(ctl, j["id"])
    assert done["state"] == "failed" and done["placement"][0]["exit_code"] == 3, (done, out)
    lines = out.splitlines()
    assert "sluice-cstart: container bad exited with status 3" in lines, out
    assert "sluice-cstart: the pod fails as container bad did (its first failure)" in lines, out
    # The other container ran to its end: the pod ends when all have.
    assert "ok ended" in lines and "sluice-cstart: container ok exited with status 0" in lines, out


def test_cancel_stops_every_container(node):
    ctl, agent, cg_root = node
    j = ctl.submit(spec([
        {"name": "a", "image": SERVER, "command": u.sh("echo a up; exec sleep 1000")},
        {"name": "b", "image": CLIENT, "args": ["sleep 1000"]}]))
    u.wait_running_pids(ctl, j["id"])
    cg = os.path.join(MOUNTS["memory"] + cg_root, u.task_key(ctl, j["id"]))

    def two_sleeps():
        n = 0
        for p in u.cg_procs(cg):
            try:
                with open("/proc/%d/comm" % p) as f:
                    n += f.read().strip() == "sleep"
            except OSError:
                pass
        return n == 2
    harness.wait_for(two_sleeps, what="both containers' sleep in the task's cgroup")
    st, body = ctl.request("DELETE", "/v1/jobs/%d" % j["id"], token=ctl.token("alice"))
    assert st == 200 and body["state"] == "cancelled", (st, body)
    harness.wait_for(lambda: not os.path.isdir(cg) or not u.cg_procs(cg),
                     what="no process left in the task's cgroup")
    out = u.job_log(ctl, j["id"])
    assert "sluice-cstart: container a was killed by signal 15" in out or \
        "sluice-cstart: container a exited with status 143" in out, out


def test_containers_are_checked_naming_the_field(node):
    ctl, agent, _ = node
    st, body = ctl.request("POST", "/v1/jobs", token=ctl.token("alice"), body=spec(
        [{"name": "Bad_Name", "image": SERVER, "gpus": 1},
         {"name": "b", "command": ["true"], "volumes": ["/nowhere"], "bogus": 1}], gpus=2))
    assert st == 400, (st, body)
    m = body["error"]["message"] if "error" in body else body["message"]
    assert "containers[0].name: must be 1 to 63 of a-z, 0-9 and -" in m, m
    assert "containers[1].image: required" in m, m
    assert "containers[1].bogus: unknown field" in m, m
    st, body = ctl.request("POST", "/v1/jobs", token=ctl.token("alice"), body=spec(
        [{"name": "a", "image": SERVER, "gpus": 1, "volumes": ["/nowhere"]},
         {"name": "b", "image": SERVER}], gpus=2))
    assert st == 400, (st, body)
    m = body["error"]["message"] if "error" in body else body["message"]
    assert "containers[0].volumes: /nowhere is not the path of one of the job's volumes" in m, m
    assert "containers: their gpus add up to 1, the job asks for 2" in m, m
    st, body = ctl.request("POST", "/v1/jobs", token=ctl.token("alice"), body=dict(
        spec([{"name": "a", "image": SERVER}]), image=SERVER))
    assert st == 400 and "image: cannot be combined with containers" in str(body), body


ARGS_ONLY = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: args-only
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: %s
        args: ["echo entrypoint got $0 and more"]
"""


def test_args_alone_follow_the_images_entrypoint(node, tmp_path):
    """Kubernetes' args without command replace the image's command, not
    its entrypoint: one container (the spec's args) as in a pod."""
    ctl, agent, _ = node
    path = tmp_path / "args.yaml"
    path.write_text(ARGS_ONLY % CLIENT)
    env = u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path)
    r = u.sluice(["--json", "submit", "-f", str(path)], env)
    assert r.returncode == 0, r.stderr
    job = json.loads(r.stdout)
    assert job["args"] == ["echo entrypoint got $0 and more"] and job["command"] is None, job
    done = ctl.wait_job(job["id"], ("succeeded", "failed"), timeout=60)
    out = u.job_log(ctl, job["id"])
    # The client image's entrypoint is /bin/sh -c: it ran the args, not "echo client image".
    assert done["state"] == "succeeded" and "entrypoint got /bin/sh and more" in out, (done, out)
    assert "client image" not in out, out
    st, body = ctl.request("POST", "/v1/jobs", token=ctl.token("alice"), body={
        "command": ["true"], "args": ["x"], "cpus": "1", "memory": "64Mi"})
    assert st == 400 and body["error"]["field"] == "args", body


INIT_AND_SIDECAR = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: init-and-sidecar
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      initContainers:
      - name: fetch
        image: %(server)s
        command: ["/bin/sh", "-c", "echo fetched > /work/data; echo init %(fail)s; exit %(code)d"]
        volumeMounts: [{name: work, mountPath: /work}]
      - name: shipper
        image: %(client)s
        restartPolicy: Always
        args:
        - >-
          trap 'echo sidecar got TERM; exit 0' TERM; echo sidecar up; touch /work/sidecar-up;
          while true; do sleep 0.05; done
        volumeMounts: [{name: work, mountPath: /work}]
      containers:
      - name: main
        image: %(server)s
        command: ["/bin/sh", "-c", "until [ -e /work/sidecar-up ]; do sleep 0.05; done; echo main read $(cat /work/data)"]
        volumeMounts: [{name: work, mountPath: /work}]
      volumes:
      - {name: work, emptyDir: {}}
"""


def _submit_manifest(ctl, tmp_path, text, name="m.yaml"):
    path = tmp_path / name
    path.write_text(text)
    r = u.sluice(["--json", "submit", "-f", str(path)], u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_init_containers_run_first_and_a_native_sidecar_is_stopped_after_the_main(node, tmp_path):
    ctl, agent, _ = node
    job = _submit_manifest(ctl, tmp_path, INIT_AND_SIDECAR % {
        "server": SERVER, "client": CLIENT, "fail": "ok", "code": 0})
    assert [(c["name"], c.get("role")) for c in job["containers"]] == [
        ("fetch", "init"), ("shipper", "sidecar"), ("main", None)], job
    done = ctl.wait_job(job["id"], ("succeeded", "failed"), timeout=90)
    out = u.job_log(ctl, job["id"])
    lines = out.splitlines()
    assert done["state"] == "succeeded", (done, out)
    # The init container ended before the main one read what it wrote.
    assert lines.index("sluice-cstart: container fetch exited with status 0") < \
        lines.index("main read fetched"), out
    # The sidecar ran beside the main one and was stopped once it ended.
    assert lines.index("sidecar up") < lines.index("sluice-cstart: stopping sidecar shipper (SIGTERM)"), out
    assert lines.index("sluice-cstart: container main exited with status 0") < \
        lines.index("sluice-cstart: stopping sidecar shipper (SIGTERM)") < \
        lines.index("sidecar got TERM"), out


def test_a_failing_init_container_fails_the_pod_before_its_containers_start(node, tmp_path):
    ctl, agent, _ = node
    job = _submit_manifest(ctl, tmp_path, INIT_AND_SIDECAR % {
        "server": SERVER, "client": CLIENT, "fail": "failing", "code": 4}, "f.yaml")
    done = ctl.wait_job(job["id"], ("succeeded", "failed"), timeout=90)
    out = u.job_log(ctl, job["id"])
    assert done["state"] == "failed" and done["placement"][0]["exit_code"] == 4, (done, out)
    assert "sluice-cstart: the pod fails as container fetch did (its first failure)" in out, out
    assert "main read" not in out and "sidecar up" not in out, out
