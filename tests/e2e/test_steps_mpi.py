"""
test_steps_mpi.py - real launchers on Sluice's allocations and steps
(docs/slurm.md): Debian's OpenMPI (`mpirun`, whose plm and ras slurm
components read the allocation's SLURM_* variables and start one orted a
node through Sluice's srun) runs 4 ranks of a 2-node x 2-task allocation,
each answering from its node. Skipped without openmpi-bin (make deps).
"""

import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

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
