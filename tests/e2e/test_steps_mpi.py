"""
test_steps_mpi.py - real launchers on Sluice's allocations and steps
(docs/slurm.md): Debian's OpenMPI (`mpirun`, whose plm and ras slurm
components read the allocation's SLURM_* variables and start one orted a
node through Sluice's srun) runs 4 ranks of a 2-node x 2-task allocation,
each answering from its node; PyTorch's torchrun, started once per node by
`srun --ntasks-per-node=1`, completes a gloo all_reduce over 4 workers.
Each is skipped without its package (make deps: openmpi-bin, python3-torch).
"""

import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import netns_util  # noqa: E402
from test_steps import sbatch, two_nodes  # noqa: E402,F401 - the fixture


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="openmpi-bin is not installed")
def test_mpirun_starts_its_daemons_through_srun(controller, two_nodes, tmp_path):
    out = tmp_path / "out.txt"
    jid = sbatch(controller, tmp_path, """#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=2 -o %s
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,tcp OMPI_MCA_plm=slurm OMPI_MCA_ras=slurm
mpirun -n 4 bash -c 'echo M $OMPI_COMM_WORLD_RANK $(hostname) $OMPI_COMM_WORLD_SIZE'
echo "mpirun=$?"
""" % out)
    done = controller.wait_job(jid, ["succeeded", "failed"], timeout=120)
    text = out.read_text()
    assert done["state"] == "succeeded" and "mpirun=0" in text, text
    got = sorted(x.split()[1:] for x in text.splitlines() if x.startswith("M "))
    assert [g[0] for g in got] == ["0", "1", "2", "3"], text
    assert all(g[2] == "4" for g in got), text
    if netns_util.available():  # each node its own hostname
        assert sorted(g[1] for g in got) == ["n1", "n1", "n2", "n2"], text


TORCHRUN = shutil.which("torchrun", path="/usr/bin:/usr/local/bin")


@pytest.mark.skipif(TORCHRUN is None, reason="torchrun (Debian's python3-torch) is not installed")
def test_torchrun_once_per_node_all_reduces_over_gloo(controller, two_nodes, tmp_path):
    out = tmp_path / "out.txt"
    res = tmp_path / "ranks"
    res.mkdir()
    # The first node's address as the other node reaches it (its veth end,
    # in network namespaces; else loopback): there is no DNS for n1 here.
    master = two_nodes[0].nodes.addr["n1"] if hasattr(two_nodes[0], "nodes") else "127.0.0.1"
    port = harness.free_port()
    fix = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "allreduce.py")
    jid = sbatch(controller, tmp_path, """#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=2 -o %s
export MASTER_ADDR=%s MASTER_PORT=%d OMP_NUM_THREADS=1 ALLREDUCE_OUT=%s
# gloo binds the address of its host name, which nothing here resolves:
# name the node's interface instead (its veth end, else loopback).
srun --ntasks-per-node=1 bash -c 'export GLOO_SOCKET_IFNAME=$(ls /sys/class/net | grep -vx lo | head -1); \
    GLOO_SOCKET_IFNAME=${GLOO_SOCKET_IFNAME:-lo} %s --nnodes=2 --nproc_per_node=2 --node_rank=$SLURM_NODEID \\
    --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT --redirects=7:1 --tee=7:1 %s'
echo "srun=$?"
""" % (out, master, port, res, TORCHRUN, fix))
    done = controller.wait_job(jid, ["succeeded", "failed"], timeout=240)
    text = out.read_text()
    assert done["state"] == "succeeded" and "srun=0" in text, text
    got = sorted(open(os.path.join(res, f)).read().split() for f in os.listdir(res))
    assert [g[:3] for g in got] == [[str(r), "4", "4"] for r in range(4)], (got, text)
    if hasattr(two_nodes[0], "nodes"):
        assert sorted(g[3] for g in got) == ["n1", "n1", "n2", "n2"], got


MPIJOB = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: pi
spec:
  slotsPerWorker: 1
  runPolicy:
    cleanPodPolicy: Running
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - name: launcher
            env:
            - {name: OMPI_ALLOW_RUN_AS_ROOT, value: "1"}
            - {name: OMPI_ALLOW_RUN_AS_ROOT_CONFIRM, value: "1"}
            - {name: OMPI_MCA_btl, value: "self,tcp"}
            command: ["/bin/bash", "-c"]
            args:
            - >-
              cat /etc/mpi/hostfile 2>/dev/null; echo hostfile:; cat $OMPI_MCA_orte_default_hostfile;
              mpirun -n 2 --hostfile /etc/mpi/hostfile
              bash -c 'echo M $OMPI_COMM_WORLD_RANK $(hostname) $OMPI_COMM_WORLD_SIZE $CUDA_VISIBLE_DEVICES';
              echo mpirun=$?
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: worker
            command: ["/usr/sbin/sshd", "-De"]
            resources:
              limits: {nvidia.com/gpu: 1, cpu: "1", memory: 256Mi}
"""


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="openmpi-bin is not installed")
def test_mpijob_launcher_runs_mpirun_once_over_the_workers_nodes(controller, two_nodes, tmp_path):
    import json
    import e2e_util as u
    path = tmp_path / "mpijob.yaml"
    path.write_text(MPIJOB)
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    r = u.sluice(["--json", "submit", "-f", str(path)], env)
    assert r.returncode == 0, r.stderr
    job = json.loads(r.stdout)
    assert job["allocation"] is True and job["tasks"] == 2 and job["nodes"] == 2, job
    assert job["gpus"] == 1 and job["tasks_per_node"] == 1, job
    done = controller.wait_job(job["id"], ["succeeded", "failed"], timeout=120)
    text = u.job_log(controller, job["id"])
    assert done["state"] == "succeeded" and "mpirun=0" in text, text
    # The hostfile: each Worker's node with its slots, where the command named it.
    hf = text.split("hostfile:\n", 1)[1].splitlines()
    nodes = sorted(pl["node"] for pl in done["placement"])
    assert sorted(hf[:2]) == ["%s slots=1" % n for n in nodes], text
    got = sorted(x.split()[1:] for x in text.splitlines() if x.startswith("M "))
    assert [g[0] for g in got] == ["0", "1"] and all(g[2] == "2" for g in got), text
    if netns_util.available():  # a rank on each Worker's node
        assert sorted(g[1] for g in got) == ["n1", "n2"], text


def test_mpijob_with_an_image_is_refused_naming_it(build_dir, tmp_path):
    import e2e_util as u
    text = MPIJOB.replace("          - name: worker\n", "          - name: worker\n            image: mpioperator/openmpi\n")
    path = tmp_path / "img.yaml"
    path.write_text(text)
    r = u.sluice(["submit", "--dry-run", "-f", str(path)], u.cli_env(tmpdir=tmp_path))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].image: not supported: an MPIJob " \
        "runs as an allocation" in r.stderr, r.stderr
