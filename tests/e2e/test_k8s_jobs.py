"""
test_k8s_jobs.py - Kubernetes manifests as written, against real daemons
(docs/jobspec.md, "Kubernetes"): every problem of a file in one answer,
YAML nulls as absent, several documents submitting each, namespaces as
tenants (another tenant's is a 403), an Indexed Job as an array with a
limit (each index once, never more than parallelism at once, from the
tasks' own time stamps), backoffLimit as retries, a Kubeflow PyTorchJob
of 1 master + 3 workers as one gang doing a gloo all_reduce on two
agents, and the `volumes` / `secrets` fields a manifest's volumes, env
references and envFrom become.

Plain tasks: the manifests here name no image, so their commands run on
the node as the tenant's user (Debian's python3-torch for the
PyTorchJob); with an image they would run through the node's OCI runtime
the same way (test_containers.py). No assertion depends on elapsed time:
the time stamps are only ordered.
"""

import json
import os
import shutil
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
PY = "/usr/bin/python3"


@pytest.fixture
def cli_bin(build_dir):
    exe = os.path.join(build_dir, "sluice")
    if not os.access(exe, os.X_OK):
        pytest.skip("sluice is not built")
    return exe


def _has_torch():
    if not os.access(PY, os.X_OK):
        return False
    import subprocess
    return subprocess.run([PY, "-c", "import torch.distributed"], capture_output=True,
                          timeout=120).returncode == 0


def _write(tmp_path, text, name="job.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _offline(tmp_path):
    return u.cli_env(extra={"SLUICE_SERVER": "http://127.0.0.1:%d" % harness.free_port()},
                     tmpdir=tmp_path)


JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: %(name)s
%(meta)sspec:
%(spec)s  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        command: %(command)s
        resources:
          limits: {cpu: 100m, memory: 64Mi}
"""


def job(name="k", meta="", spec="", command='["true"]'):
    return JOB % {"name": name, "meta": meta, "spec": spec, "command": command}


# ---- errors, nulls, documents: the CLI alone ----

def test_every_problem_is_reported_at_once_with_its_path(cli_bin, tmp_path):
    text = """apiVersion: batch/v1
kind: Job
metadata:
  name: bad
  finalizers: [x]
spec:
  backoffLimit: 5000
  podFailurePolicy: {rules: []}
  template:
    spec:
      restartPolicy: Always
      containers:
      - name: c
        image: busybox
        env:
        - {name: A, value: x}
        - {name: B, value: y}
        - name: C
          valueFrom: {resourceFieldRef: {resource: limits.cpu}}
        resources:
          limits: {nvidia.com/gpu: "0.5", hugepages-2Mi: 1Gi}
        livenessProbe: {exec: {command: ["true"]}}
"""
    r = u.sluice(["submit", "-f", _write(tmp_path, text)], _offline(tmp_path))
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    want = ["metadata.finalizers: not supported",
            'spec.backoffLimit: "5000" is not a whole number from 0 to 1000',
            "spec.podFailurePolicy: not supported",
            "spec.template.spec.containers[0].env[2].valueFrom.resourceFieldRef: not supported",
            'spec.template.spec.containers[0].resources.limits.nvidia.com/gpu: "0.5" is not a whole number',
            "spec.template.spec.containers[0].resources.limits.hugepages-2Mi: not supported",
            "spec.template.spec.containers[0].livenessProbe: not supported",
            'spec.template.spec.restartPolicy: "Always" is not supported']
    for w in want:
        assert w in r.stderr, (w, r.stderr)
    # One line each, every line naming the file: nothing else.
    lines = r.stderr.strip().splitlines()
    assert len(lines) == len(want), r.stderr
    assert all(ln.startswith("sluice submit: %s: " % (tmp_path / "job.yaml")) for ln in lines), r.stderr


def test_kind_and_api_version_come_first(cli_bin, tmp_path):
    env = _offline(tmp_path)
    for text, msg in (
            (job().replace("kind: Job", "kind: Deployment") + "  replicas: 2\n",
             'kind: "Deployment" is not supported (batch/v1 Job, kubeflow.org/v1 PyTorchJob'),
            (job().replace("batch/v1", "batch/v1beta1") + "  bogus: 1\n",
             'apiVersion: "batch/v1beta1" is not supported (a Job is batch/v1)'),
            ("apiVersion: kubeflow.org/v1\nkind: TFJob\nspec: {tfReplicaSpecs: {}}\n",
             'kind: "TFJob" is not supported'),
            ("apiVersion: kubeflow.org/v1alpha2\nkind: MPIJob\nspec: {mpiReplicaSpecs: {}}\n",
             'apiVersion: "kubeflow.org/v1alpha2" is not supported (a MPIJob is kubeflow.org/v2beta1)')):
        r = u.sluice(["submit", "-f", _write(tmp_path, text)], env)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and msg in lines[0], r.stderr


def test_yaml_nulls_are_absent_fields(cli_bin, tmp_path):
    env = _offline(tmp_path)
    plain = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, job(), "a.yaml")], env)
    assert plain.returncode == 0, plain.stderr
    nulls = job(meta="  labels:\n  annotations: ~\n", spec="  backoffLimit: null\n").replace(
        "        command:", "        args:\n        env:\n        envFrom: ~\n        command:")
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, nulls, "b.yaml")], env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == json.loads(plain.stdout)
    assert r.stderr == ""


def test_several_documents_submit_each(cli_bin, controller, tmp_path):
    text = job("first") + "---\n" + job("second", spec="  completions: 3\n") + \
        "---\nname: third\ncommand: [\"true\"]\n"
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    path = _write(tmp_path, text)
    r = u.sluice(["submit", "--dry-run", "-f", path], env)
    assert r.returncode == 0, r.stderr
    assert [j["name"] for j in json.loads(r.stdout)] == ["first", "second", "third"]
    r = u.sluice(["submit", "-f", path], env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 3, r.stdout
    assert lines[0].startswith("submitted job ") and "(first)" in lines[0], lines
    assert lines[1].startswith("submitted array job ") and "(second), indexes 0-2" in lines[1], lines
    ids = [int(ln.split()[3 if "array" in ln else 2]) for ln in lines]
    assert [controller.job(i)["name"] for i in ids] == ["first", "second", "third"]
    # A problem in any document: nothing is submitted, the document named.
    before = len(controller.jobs())
    bad = text + "---\n" + job("fourth").replace("restartPolicy: Never", "restartPolicy: Always")
    r = u.sluice(["submit", "-f", _write(tmp_path, bad, "bad.yaml")], env)
    assert r.returncode == 2 and "bad.yaml: document 4: spec.template.spec.restartPolicy" in r.stderr, r.stderr
    assert len(controller.jobs()) == before


def test_fields_without_meaning_here_warn_and_the_job_is_submitted(cli_bin, controller, tmp_path):
    text = job().replace("      restartPolicy: Never\n", "      restartPolicy: Never\n"
                         "      serviceAccountName: trainer\n"
                         "      imagePullSecrets: [{name: regcred}]\n"
                         "      tolerations:\n"
                         "      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute,"
                         " tolerationSeconds: 300}\n"
                         "      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n")
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    r = u.sluice(["submit", "-f", _write(tmp_path, text)], env)
    assert r.returncode == 0, r.stderr
    for w in ("spec.template.spec.serviceAccountName: no meaning here",
              "spec.template.spec.imagePullSecrets: no meaning here",
              "spec.template.spec.tolerations[0]: no meaning here: \"node.kubernetes.io/not-ready\""):
        assert "sluice submit: warning: " in r.stderr and w in r.stderr, (w, r.stderr)
    jid = int(r.stdout.split()[2])
    assert controller.job(jid)["tolerations"] == ["nvidia.com/gpu:NoSchedule"]


# ---- namespaces and identity ----

TENANTS = [{"name": "alice", "weight": 1, "token": "tok-alice-ns", "namespaces": ["research", "ml-team"]},
           {"name": "bob", "weight": 1, "token": "tok-bob-ns"}]


def test_a_namespace_is_its_tenant_and_another_tenants_is_403(cli_bin, controller_factory, tmp_path):
    ctl = controller_factory(config_overrides={"tenants": TENANTS})
    alice = u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path)
    bob = u.cli_env(ctl, ctl.token("bob"), tmpdir=tmp_path)
    admin = u.cli_env(ctl, ctl.admin_token, tmpdir=tmp_path)
    for ns in ("research", "alice"):
        path = _write(tmp_path, job(meta="  namespace: %s\n" % ns))
        j = u.sluice_json(["submit", "-f", path], alice)
        assert j["tenant"] == "alice" and j["namespace"] == ns, j
    # The admin token: the namespace says whose job it is.
    j = u.sluice_json(["submit", "-f", _write(tmp_path, job(meta="  namespace: ml-team\n"))], admin)
    assert j["tenant"] == "alice", j
    # Bob may not use alice's namespace, nor one that names no tenant.
    for ns in ("research", "nowhere"):
        r = u.sluice(["submit", "-f", _write(tmp_path, job(meta="  namespace: %s\n" % ns))], bob)
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert ('namespace: namespace "%s" is not tenant "bob"\'s (its namespaces: bob)' % ns) in r.stderr, \
            r.stderr
    st, body = ctl.request("POST", "/v1/jobs", {"command": ["true"], "namespace": "research"},
                           token=ctl.token("bob"))
    assert st == 403 and body["error"]["field"] == "namespace", (st, body)
    assert '"research"' in body["error"]["message"], body
    st, body = ctl.request("POST", "/v1/jobs", {"command": ["true"], "namespace": "nowhere"},
                           token=ctl.admin_token)
    assert st == 400 and body["error"]["field"] == "namespace", (st, body)
    # metadata.namespace and metadata.name as fieldRef variables.
    text = job(meta="  namespace: research\n").replace(
        "        command:", "        env:\n        - name: NS\n          valueFrom: {fieldRef: {fieldPath: "
        "metadata.namespace}}\n        - name: POD\n          valueFrom: {fieldRef: {fieldPath: "
        "metadata.name}}\n        command:")
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, text)], alice)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["env"] == {"NS": "research", "POD": "k"}


def test_a_namespace_must_not_be_another_tenants_name_in_the_config(controller_factory):
    ctl = controller_factory(config_overrides={"tenants": [
        {"name": "alice", "namespaces": ["bob"]}, {"name": "bob"}]}, start=False)
    with pytest.raises(Exception):
        ctl.start(timeout=5)
    assert "tenants[].namespaces" in open(ctl.log_path).read()


def test_run_as_user_must_be_the_tenants(cli_bin, controller, tmp_path):
    # The harness's tenants run as root (default_user: root).
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    ok = job().replace("      restartPolicy: Never\n", "      restartPolicy: Never\n"
                       "      securityContext: {runAsUser: 0, runAsGroup: 0}\n")
    j = u.sluice_json(["submit", "-f", _write(tmp_path, ok)], env)
    assert j["run_as_user"] == 0 and j["run_as_group"] == 0, j
    r = u.sluice(["submit", "-f", _write(tmp_path, ok.replace("runAsUser: 0", "runAsUser: 1000"))], env)
    assert r.returncode == 1 and 'run_as_user: 1000 is not tenant "alice"\'s user root (uid 0)' in r.stderr, \
        r.stderr
    r = u.sluice(["submit", "-f", _write(tmp_path, ok.replace("runAsGroup: 0", "runAsGroup: 7"))], env)
    assert r.returncode == 1 and "run_as_group: 7 is not tenant" in r.stderr, r.stderr


# ---- job semantics ----

def _events(path):
    """[(time, +1 | -1, index)] from lines "start|end INDEX TIME"."""
    out = []
    for ln in open(path).read().split("\n"):
        f = ln.split()
        if len(f) == 3:
            out.append((float(f[2]), 1 if f[0] == "start" else -1, int(f[1])))
    return out


def test_indexed_job_runs_each_index_once_at_most_parallelism_at_once(cli_bin, controller, cluster,
                                                                      tmp_path):
    cluster(2, gpus=0, cpus="8", memory="8Gi")
    stamps = tmp_path / "stamps"
    cmd = json.dumps(["sh", "-c", 'echo "start $JOB_COMPLETION_INDEX $(date +%%s.%%N)" >> %s; sleep 0.3; '
                      'echo "end $JOB_COMPLETION_INDEX $(date +%%s.%%N)" >> %s' % (stamps, stamps)])
    text = job("indexed", spec="  completions: 8\n  parallelism: 2\n  completionMode: Indexed\n",
               command=cmd)
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, text)], env)
    assert r.returncode == 0 and json.loads(r.stdout)["array"] == "0-7%2", r.stdout
    j = u.sluice_json(["submit", "-f", _write(tmp_path, text)], env)
    first = j["id"]
    for k in range(8):
        done = controller.wait_job(first + k, "succeeded", timeout=60)
        assert done["array_index"] == k, done
    ev = sorted(_events(str(stamps)))
    starts = sorted(i for _, d, i in ev if d == 1)
    ends = sorted(i for _, d, i in ev if d == -1)
    assert starts == list(range(8)) and ends == list(range(8)), ev
    running, most = 0, 0
    for _, d, _ in ev:  # an end and a start at the same time: the end first
        running += d
        most = max(most, running)
    assert most <= 2, ev


def test_parallelism_with_completions_is_independent_and_a_pod_group_is_a_gang(cli_bin, tmp_path):
    env = _offline(tmp_path)
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, job(spec="  completions: 6\n  parallelism: 3\n"))],
                 env)
    j = json.loads(r.stdout)
    assert j["array"] == "0-5%3" and "tasks" not in j, j
    gang = job(spec="  completions: 3\n  parallelism: 3\n").replace(
        "    spec:\n      restartPolicy", "    metadata:\n      labels: {scheduling.x-k8s.io/pod-group: g}\n"
        "    spec:\n      restartPolicy")
    j = json.loads(u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, gang)], env).stdout)
    assert j["tasks"] == 3 and "array" not in j, j
    # A work queue (no completions) is a gang, unless sluice.io/gang says not.
    j = json.loads(u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, job(spec="  parallelism: 4\n"))],
                            env).stdout)
    assert j["tasks"] == 4, j
    wq = job(meta="  annotations: {sluice.io/gang: \"false\"}\n", spec="  parallelism: 4\n")
    j = json.loads(u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, wq)], env).stdout)
    assert j["array"] == "0-3" and "tasks" not in j, j


def test_backoff_limit_retries_a_failing_pod_twice_then_fails_with_the_reason(cli_bin, controller,
                                                                              cluster, tmp_path):
    cluster(1, gpus=0, cpus="4", memory="4Gi")
    runs = tmp_path / "runs"
    cmd = json.dumps(["sh", "-c", "echo run >> %s; exit 3" % runs])
    text = job("flaky", spec="  backoffLimit: 2\n", command=cmd)
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    # The back-off between attempts is Sluice's own (10 s doubling); the
    # flag makes it none, the manifest as written.
    j = u.sluice_json(["submit", "-f", _write(tmp_path, text), "--retry-backoff", "0"], env)
    assert j["retries"] == 2, j
    done = controller.wait_job(j["id"], "failed", timeout=60)
    assert runs.read_text().split() == ["run"] * 3
    assert done["attempt"] == 3 and [a["reason"] for a in done["attempts"]] == \
        ["task 0 exited with code 3"] * 2, done
    assert "exited with code 3" in done["reason"], done


@pytest.mark.skipif(not _has_torch(), reason="Debian's python3-torch is not installed")
def test_pytorchjob_master_and_three_workers_all_reduce_over_gloo_on_two_agents(cli_bin, controller,
                                                                                 cluster, tmp_path):
    agents = cluster(2, gpus=2, cpus="4", memory="8Gi")
    out = tmp_path / "allreduce"
    out.mkdir()
    replica = """      replicas: %d
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            command: [%s, %s]
            env:
            - {name: ALLREDUCE_OUT, value: "%s"}
            - {name: OMP_NUM_THREADS, value: "1"}
            resources:
              limits: {nvidia.com/gpu: 1, cpu: 500m, memory: 1Gi}
"""
    args = (PY, os.path.join(FIX, "allreduce.py"), out)
    text = ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: ddp}\nspec:\n"
            "  runPolicy: {backoffLimit: 0, cleanPodPolicy: None}\n  pytorchReplicaSpecs:\n"
            "    Master:\n" + replica % ((1,) + args) + "    Worker:\n" + replica % ((3,) + args))
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, text)], env)
    assert r.returncode == 0, r.stderr
    spec = json.loads(r.stdout)
    assert spec["tasks"] == 4 and spec["gpus"] == 1 and spec["env"]["PYTHONUNBUFFERED"] == "1", spec
    j = u.sluice_json(["submit", "-f", _write(tmp_path, text)], env)
    done = controller.wait_job(j["id"], "succeeded", timeout=180)
    assert {p["node"] for p in done["placement"]} == {a.name for a in agents}, done["placement"]
    results = sorted(open(os.path.join(str(out), f)).read().split() for f in os.listdir(str(out)))
    assert [r[:3] for r in results] == [[str(k), "4", "4"] for k in range(4)], results
    # Master and workers must agree on the command; of two sizes, each
    # task gets the larger.
    bigger = text.replace("cpu: 500m", "cpu: 1", 1)
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, bigger)], env)
    assert r.returncode == 0 and json.loads(r.stdout)["cpus"] == "1", r.stdout
    assert "the Master asks for 1 cpus, each Worker for 500m: every task of the gang gets 1" in r.stderr
    bad = text.replace("allreduce.py", "other.py", 1)
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, bad)], env)
    assert r.returncode == 2 and "spec.pytorchReplicaSpecs.Worker.template: differs from the Master's " \
        "in command" in r.stderr, r.stderr


ELASTIC = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: elastic}
spec:
  elasticPolicy: {rdzvBackend: c10d, minReplicas: 2, maxReplicas: 4, maxRestarts: 10}
  nprocPerNode: "2"
  pytorchReplicaSpecs:
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        spec:
          affinity:
            podAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
              - {labelSelector: {matchLabels: {app: x}}, topologyKey: topology.kubernetes.io/zone}
          containers:
          - name: pytorch
            command: [python3, -m, torch.distributed.run, train.py]
            resources:
              limits: {nvidia.com/gpu: 2}
"""


def test_elastic_pytorchjob_is_an_elastic_gang_with_torchruns_variables(cli_bin, tmp_path):
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, ELASTIC)], _offline(tmp_path))
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert (j["tasks"], j["min_tasks"], j["gpus"]) == (3, 2, 2), j
    assert {k: v for k, v in j["env"].items() if k.startswith("PET_")} == {
        "PET_NNODES": "2:4", "PET_RDZV_BACKEND": "c10d", "PET_MAX_RESTARTS": "10",
        "PET_NPROC_PER_NODE": "2"}, j["env"]
    # The rendezvous is the first task: a shell sets it from MASTER_ADDR.
    assert j["command"][:2] == ["/bin/sh", "-c"] and "$MASTER_ADDR:$MASTER_PORT" in j["command"][2]
    assert j["command"][3:] == ["sh", "python3", "-m", "torch.distributed.run", "train.py"], j["command"]
    assert "podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]: no meaning here: a Sluice " \
        "cluster is one zone" in r.stderr, r.stderr
    # nprocPerNode without an elastic rendezvous: each task's rank is unknown.
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, ELASTIC.replace(
        "  elasticPolicy: {rdzvBackend: c10d, minReplicas: 2, maxReplicas: 4, maxRestarts: 10}\n", ""))],
        _offline(tmp_path))
    assert r.returncode == 2 and 'spec.nprocPerNode: "2" is supported with elasticPolicy only' in r.stderr


def test_a_service_beside_a_job_is_skipped_and_kueue_suspend_is_admission(cli_bin, tmp_path):
    svc = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {clusterIP: None}\n---\n"
    kq = job(meta="  labels: {kueue.x-k8s.io/queue-name: lq}\n", spec="  suspend: true\n")
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, svc + kq)], _offline(tmp_path))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["name"] == "k"  # one job: the Service made none
    assert "document 1: kind: a Service has no meaning here" in r.stderr, r.stderr
    assert "document 2: spec.suspend: Kueue admits a suspended job by resuming it" in r.stderr, r.stderr
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, job(spec="  suspend: true\n"))],
                 _offline(tmp_path))
    assert r.returncode == 2 and "spec.suspend: true is not supported" in r.stderr, r.stderr
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, svc)], _offline(tmp_path))
    assert r.returncode == 2 and "no job in the file" in r.stderr, r.stderr


# ---- volumes and secrets: what the manifest becomes ----

VOLS = """apiVersion: batch/v1
kind: Job
metadata: {name: vols, namespace: alice}
spec:
  template:
    spec:
      restartPolicy: Never
      volumes:
      - {name: shm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}
      - {name: data, persistentVolumeClaim: {claimName: imagenet, readOnly: true}}
      - {name: scratch, hostPath: {path: /scratch, type: Directory}}
      - {name: home, nfs: {server: nfs1, path: /export/home}}
      - name: creds
        secret:
          secretName: wandb
          defaultMode: 0400
          items: [{key: token, path: wandb/token}]
      - {name: conf, configMap: {name: settings}}
      containers:
      - name: c
        command: ["true"]
        env:
        - name: WANDB_API_KEY
          valueFrom: {secretKeyRef: {name: wandb, key: token}}
        - name: LR
          valueFrom: {configMapKeyRef: {name: settings, key: lr, optional: true}}
        envFrom:
        - {secretRef: {name: hf}, prefix: HF_}
        - configMapRef: {name: settings}
        volumeMounts:
        - {name: shm, mountPath: /dev/shm}
        - {name: data, mountPath: /data, subPath: train}
        - {name: scratch, mountPath: /scratch, readOnly: true}
        - {name: home, mountPath: /home/me}
        - {name: creds, mountPath: /etc/creds}
        - {name: conf, mountPath: /etc/conf, readOnly: true}
"""


def test_volumes_and_secret_references_become_the_spec_fields(cli_bin, controller, tmp_path):
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    path = _write(tmp_path, VOLS)
    r = u.sluice(["submit", "--dry-run", "-f", path], env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    j = json.loads(r.stdout)
    assert j["volumes"] == [
        {"path": "/dev/shm", "read_only": False, "empty_dir": {"medium": "Memory", "size_limit": "8Gi"}},
        {"path": "/data", "read_only": True, "sub_path": "train", "pvc": "imagenet"},
        {"path": "/scratch", "read_only": True, "host_path": "/scratch"},
        {"path": "/home/me", "read_only": False, "nfs": {"server": "nfs1", "path": "/export/home"}},
    ], j["volumes"]
    assert j["secrets"] == [
        {"secret": "wandb", "key": "token", "env": "WANDB_API_KEY"},
        {"config_map": "settings", "key": "lr", "env": "LR", "optional": True},
        {"secret": "hf", "env_prefix": "HF_"},
        {"config_map": "settings", "env_prefix": ""},
        {"secret": "wandb", "path": "/etc/creds", "mode": 256, "items": {"token": "wandb/token"}},
        {"config_map": "settings", "path": "/etc/conf"},
    ], j["secrets"]
    # The server knows both fields; this controller maps no claim and alice
    # has no secret, so the submission is refused naming them (a 400).
    r = u.sluice(["--json", "submit", "-f", path], env)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "unknown_field" not in r.stdout, r.stdout
    assert "imagenet" in r.stdout or "wandb" in r.stdout, r.stdout


def test_a_sluice_spec_file_carries_volumes_and_secrets_as_written(cli_bin, tmp_path):
    """A Sluice spec file (not a manifest) passes its volumes and secrets
    lists through as JSON: booleans, whole numbers (0440 is octal, as YAML
    1.1 and Kubernetes read it) and strings as written."""
    path = _write(tmp_path, """name: t
command: ["true"]
volumes:
  - path: /dev/shm
    empty_dir: {medium: Memory, size_limit: 8Gi}
  - {path: /data, read_only: true, host_path: /datasets/x}
secrets:
  - {secret: db, key: password, env: DB_PASSWORD}
  - {config_map: cfg, path: /etc/cfg, mode: 0440, items: {a: "007"}}
""")
    r = u.sluice(["submit", "--dry-run", "-f", path], _offline(tmp_path))
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["volumes"] == [
        {"path": "/dev/shm", "empty_dir": {"medium": "Memory", "size_limit": "8Gi"}},
        {"path": "/data", "read_only": True, "host_path": "/datasets/x"}], j
    assert j["secrets"] == [
        {"secret": "db", "key": "password", "env": "DB_PASSWORD"},
        {"config_map": "cfg", "path": "/etc/cfg", "mode": 0o440, "items": {"a": "007"}}], j
    bad = _write(tmp_path, "name: t\ncommand: [\"true\"]\nvolumes: {path: /x}\n", "bad.yaml")
    r = u.sluice(["submit", "--dry-run", "-f", bad], _offline(tmp_path))
    assert r.returncode == 2 and "volumes" in r.stderr, r.stderr


def test_volume_and_reference_errors_name_their_paths(cli_bin, tmp_path):
    text = VOLS.replace("mountPath: /etc/conf, readOnly: true}", "mountPath: /etc/conf, readOnly: true}\n"
                        "        - {name: ghost, mountPath: /ghost}").replace(
        "{name: home, nfs: {server: nfs1, path: /export/home}}", "{name: home, nfs: {server: nfs1}}").replace(
        "- {secretRef: {name: hf}, prefix: HF_}", "- {prefix: HF_}").replace(
        "        envFrom:", "        - name: IP\n          valueFrom: {fieldRef: {fieldPath: status.podIP}}\n"
        "        envFrom:")
    text = text.replace("        volumeMounts:", "        env2: 1\n        volumeMounts:")
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, text)], _offline(tmp_path))
    assert r.returncode == 2, r.stderr
    for w in ('volumeMounts[6]: volume "ghost" is not among the pod\'s volumes',
              "spec.template.spec.volumes[3].nfs: needs server and path",
              "spec.template.spec.containers[0].envFrom[0]: needs secretRef or configMapRef",
              "spec.template.spec.containers[0].env[2].valueFrom.fieldRef: fieldPath \"status.podIP\" "
              "is not supported",
              "spec.template.spec.containers[0].env2: not supported"):
        assert w in r.stderr, (w, r.stderr)


def test_an_extended_gpu_resource_is_the_configs_gpu_model(cli_bin, controller_factory, build_dir, tmp_path):
    if not os.access(os.path.join(build_dir, "sluice-agent"), os.X_OK):
        pytest.skip("sluice-agent is not built")
    ctl = controller_factory(config_overrides={"gpu_resources": {"nvidia.com/a100": "A100"}})
    agents = [harness.Agent(ctl, "h1", gpus=2, gpu_model="H100", cpus="4", memory="4Gi"),
              harness.Agent(ctl, "a1", gpus=2, gpu_model="A100", cpus="4", memory="4Gi")]
    try:
        for a in agents:
            a.start()
        env = u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path)
        text = job().replace("limits: {cpu: 100m, memory: 64Mi}",
                             "limits: {cpu: 100m, memory: 64Mi, nvidia.com/a100: 2}")
        j = u.sluice_json(["submit", "-f", _write(tmp_path, text)], env)
        assert (j["gpus"], j["gpu_models"], j["gpu_resource"]) == (2, ["A100"], "nvidia.com/a100"), j
        done = ctl.wait_job(j["id"], "succeeded", timeout=30)
        assert [p["node"] for p in done["placement"]] == ["a1"], done["placement"]
        r = u.sluice(["submit", "-f", _write(tmp_path, text.replace("nvidia.com/a100", "nvidia.com/l4"))], env)
        assert r.returncode == 1 and 'gpu_resource: "nvidia.com/l4" is not a GPU resource of this cluster ' \
            "(the config's gpu_resources: nvidia.com/a100: A100)" in r.stderr, r.stderr
        r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, text.replace("nvidia.com/a100",
                                                                               "nvidia.com/mig-1g.10gb"))], env)
        assert r.returncode == 2 and "nvidia.com/mig-1g.10gb: not supported" in r.stderr, r.stderr
    finally:
        for a in agents:
            a.stop()


def _listed(ctl, jid):
    st, body = ctl.request("GET", "/v1/jobs?limit=10000", token=ctl.admin_token)
    assert st == 200, (st, body)
    return any(j["id"] == jid for j in body["jobs"])


def test_ttl_seconds_after_finished_leaves_the_queue_and_stays_in_history(cli_bin, controller,
                                                                          cluster, tmp_path):
    """ttlSecondsAfterFinished: 1 -> ttl_after_finished: the finished job
    leaves GET /v1/jobs and `sluice queue -a` one second after it ended,
    while one without it stays (job_retention, an hour here); the store
    keeps it (GET /v1/jobs/{id}, sluice history)."""
    cluster(1, gpus=0, cpus="4", memory="4Gi")
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    text = job("ttl", spec="  ttlSecondsAfterFinished: 1\n")
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, text)], env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ttl_after_finished"] == 1, r.stdout
    assert "ttlSecondsAfterFinished" not in r.stderr, r.stderr  # mapped, no warning
    # A PyTorchJob's runPolicy.ttlSecondsAfterFinished likewise.
    ptj = ELASTIC.replace("spec:\n  elasticPolicy:",
                          "spec:\n  runPolicy: {ttlSecondsAfterFinished: 600}\n  elasticPolicy:")
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, ptj, "ptj.yaml")], env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ttl_after_finished"] == 600, r.stdout
    assert "ttlSecondsAfterFinished" not in r.stderr, r.stderr
    gone = u.sluice_json(["submit", "-f", _write(tmp_path, text)], env)["id"]
    kept = u.sluice_json(["submit", "-f", _write(tmp_path, job("kept"), "kept.yaml")], env)["id"]
    assert controller.job(gone)["ttl_after_finished"] == 1
    for jid in (gone, kept):
        controller.wait_job(jid, "succeeded", timeout=60)
    for _ in range(300):  # bounded: up to 30 s for a 1 s ttl
        if not _listed(controller, gone):
            break
        time.sleep(0.1)
    assert not _listed(controller, gone), "job %d is still listed after its ttl" % gone
    assert _listed(controller, kept)
    q = u.sluice(["queue", "-a"], env)
    assert q.returncode == 0, q.stderr
    ids = [ln.split()[0] for ln in q.stdout.splitlines()[1:] if ln.split()]
    assert str(kept) in ids and str(gone) not in ids, q.stdout
    # Still in the store: by id, and in the history.
    st, body = controller.request("GET", "/v1/jobs/%d" % gone, token=controller.token("alice"))
    assert st == 200 and body["state"] == "succeeded", (st, body)
    h = u.sluice(["history", "--json"], env)
    assert h.returncode == 0, h.stderr
    assert '"id": %d' % gone in h.stdout or '"id":%d' % gone in h.stdout, h.stdout[:2000]


def test_limits_above_requests_become_memory_limit_and_cpu_limit(cli_bin, tmp_path):
    env = _offline(tmp_path)
    text = job().replace("          limits: {cpu: 100m, memory: 64Mi}",
                         "          requests: {cpu: 100m, memory: 64Mi}\n"
                         "          limits: {cpu: \"2\", memory: 1Gi}")
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, text)], env)
    assert r.returncode == 0, r.stderr
    spec = json.loads(r.stdout)
    assert (spec["cpus"], spec["memory"]) == ("100m", "64Mi"), spec
    assert (spec["cpu_limit"], spec["memory_limit"]) == ("2", "1Gi"), spec
    # A limit alone is both (Kubernetes' request then), with no limit field.
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, job(), "b.yaml")], env)
    spec = json.loads(r.stdout)
    assert spec["memory"] == "64Mi" and "memory_limit" not in spec, spec
    bad = job().replace("          limits: {cpu: 100m, memory: 64Mi}",
                        "          requests: {memory: 2Gi}\n          limits: {memory: 1Gi}")
    r = u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, bad, "c.yaml")], env)
    assert r.returncode == 2, r.stderr
    assert 'containers[0].resources.limits.memory: "1Gi" is below the request "2Gi"' in r.stderr, \
        r.stderr


# ---- HAMi's shares of one GPU ----

def _hami(limits, command='["true"]', name="h"):
    return job(name=name, command=command).replace(
        "limits: {cpu: 100m, memory: 64Mi}", "limits: {cpu: 100m, memory: 64Mi, %s}" % limits)


def test_hami_shares_of_a_gpu_become_gpu_share(cli_bin, controller, cluster, tmp_path):
    off = _offline(tmp_path)

    def dry(limits):
        return u.sluice(["submit", "--dry-run", "-f", _write(tmp_path, _hami(limits))], off)
    r = dry('nvidia.com/gpu: 1, nvidia.com/gpumem-percentage: 50')
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["gpu_share"] == "0.50" and "gpus" not in j, j
    # The larger of memory and compute; gpumem (MiB) is gpu_memory.
    j = json.loads(dry('nvidia.com/gpu: 1, nvidia.com/gpumem-percentage: 25, '
                       'nvidia.com/gpucores: 40, nvidia.com/gpumem: 8000').stdout)
    assert j["gpu_share"] == "0.40" and j["gpu_memory"] == "8000Mi", j
    # 100% is the whole GPU.
    j = json.loads(dry('nvidia.com/gpu: 1, nvidia.com/gpumem-percentage: 100').stdout)
    assert j["gpus"] == 1 and "gpu_share" not in j, j
    # Refused, naming the field: several vGPUs, a share past 100, gpumem alone.
    for limits, words in (('nvidia.com/gpu: 2, nvidia.com/gpucores: 30', "needs nvidia.com/gpu: 1"),
                          ('nvidia.com/gpu: 1, nvidia.com/gpucores: 130', "whole percentage"),
                          ('nvidia.com/gpu: 1, nvidia.com/gpumem: 4000', "gpumem alone")):
        r = dry(limits)
        assert r.returncode == 2 and words in r.stderr, (limits, r.stderr)
        assert "resources.limits.nvidia.com/" in r.stderr, r.stderr

    # Live: two 50% jobs share the one GPU of a node, at once; a third waits.
    cluster(1, gpus=1)
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    os.chmod(str(stamps), 0o777)
    cmd = '["sh", "-c", "touch %s/$SLUICE_JOB_ID; sleep 30"]' % stamps
    ids = []
    for i in range(3):
        r = u.sluice(["submit", "-q", "-f", _write(tmp_path, _hami(
            'nvidia.com/gpu: 1, nvidia.com/gpumem-percentage: 50', command=cmd, name="h%d" % i),
            "h%d.yaml" % i)], env)
        assert r.returncode == 0, r.stderr
        ids.append(int(r.stdout.strip()))
    for jid in ids[:2]:
        controller.wait_job(jid, "running")
    got = controller.job(ids[2])
    assert got["state"] == "pending", got
    harness.wait_for(lambda: len(os.listdir(str(stamps))) == 2, what="both shares started")
    for jid in ids:
        controller.request("DELETE", "/v1/jobs/%d" % jid, token=controller.admin_token)
