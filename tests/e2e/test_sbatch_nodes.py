"""
test_sbatch_nodes.py - Slurm's node semantics and memory defaults against
real daemons on 127.0.0.1 (docs/slurm.md, docs/placement.md, docs/config.md):

 - `-N 2` with one task per node lands on two distinct agents, and each
   task's SLURM_NNODES / SLURM_NODEID / SLURM_JOB_NODELIST say so (real
   agents, as test_steps.py starts them); `-N 2 -n 4` spreads 2 + 2;
 - `--exclusive` (and `--mem=0`) holds whole nodes: the launch enforces,
   and `sluice show` shows, each node's GPUs, CPUs and memory; no other
   job starts there meanwhile; -w / -x choose nodes;
 - memory defaults from the config (scheduler.default_memory_per_gpu,
   pools[].default_memory_per_cpu) and --mem-per-gpu;
 - a script with several problems gets all of them in one answer, each with
   its line, and nothing is submitted; --ignore-unsupported never drops a
   directive that asks for resources;
 - the server's answer for a spec names a bad node field.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import e2e_util as u  # noqa: E402

GI = 1 << 30


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return str(path)


def submit(controller, tmp_path, text, name="job.sh", args=()):
    path = write(tmp_path / name, text)
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    r = u.sluice(["sbatch", "--parsable"] + list(args) + [path], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    return int(r.stdout), env


def test_two_nodes_land_on_two_agents(controller, cluster, tmp_path):
    cluster(2, gpus=4)
    run = tmp_path / "run"
    run.mkdir()
    # Both tasks would fit on one node; -N 2 spreads them, as Slurm does.
    jid, env = submit(controller, tmp_path,
                      "#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=1 --gres=gpu:1 -t 5\n"
                      "#SBATCH -o out-%j-%t.txt\n"
                      "echo nnodes=$SLURM_NNODES list=$SLURM_JOB_NODELIST\n",
                      args=["--chdir", str(run)])
    controller.wait_job(jid, "succeeded")
    job = u.sluice_json(["show", str(jid)], env)
    nodes = [p["node"] for p in job["placement"]]
    assert sorted(nodes) == ["n1", "n2"], job["placement"]
    out = (run / ("out-%d-0.txt" % jid)).read_text()
    assert "nnodes=2 list=n[1-2]" in out, out
    assert job["nodes"] == 2 and job["tasks_per_node"] == 1


def test_tasks_spread_evenly_and_node_lists(controller, fake_agent, tmp_path):
    agents = [fake_agent(n, gpus=8) for n in ("n1", "n2", "n3")]
    jid, env = submit(controller, tmp_path, "#!/bin/sh\n#SBATCH -N 2 -n 4 --gres=gpu:2\n"
                      "#SBATCH -w n3 -x n1\nhostname\n")
    launches = agents[1].wait_message("launch", job=jid, count=2)
    launches += agents[2].wait_message("launch", job=jid, count=2)
    assert len(launches) == 4
    per = {}
    for m in launches:
        per[m["env"]["SLURMD_NODENAME"]] = per.get(m["env"]["SLURMD_NODENAME"], 0) + 1
        assert m["env"]["SLURM_NNODES"] == "2" and m["env"]["SLURM_TASKS_PER_NODE"] == "2(x2)"
    assert per == {"n2": 2, "n3": 2}
    assert not [m for m in agents[0].received if m.get("type") == "launch"]


def test_exclusive_holds_whole_nodes(controller, fake_agent, tmp_path):
    agents = [fake_agent(n, gpus=8, cpus="64", memory="512Gi") for n in ("n1", "n2")]
    # No GPUs asked: an exclusive job's tasks see all of their node's.
    jid, env = submit(controller, tmp_path,
                      "#!/bin/sh\n#SBATCH -N 1 --ntasks-per-node=2 --exclusive\nhostname\n")
    controller.wait_job(jid, "running")
    node = u.sluice_json(["show", str(jid)], env)["placement"][0]["node"]
    launches = [a for a in agents if a.name == node][0].wait_message("launch", job=jid, count=2)
    assert len(launches) == 2
    for m in launches:
        assert len(m["gpus"]) == 8, m
        assert m["cpu_milli"] == 32000 and m["mem_bytes"] == 256 * GI
    job = u.sluice_json(["show", str(jid)], env)
    assert job["exclusive"] is True
    for p in job["placement"]:
        assert p["gpus"] == list(range(8)) and p["cpus"] == "32" and p["memory"] == "256Gi"
    node = job["placement"][0]["node"]
    # The node has nothing free for other jobs while it is held whole.
    nd = [n for n in u.sluice_json(["nodes"], env)["nodes"] if n["name"] == node][0]
    assert nd["exclusive"] is True and nd["free"]["gpus"] == 0 and nd["free"]["cpus"] == "0", nd
    r = u.sluice(["show", str(jid)], env)
    assert "whole nodes: %s: 8 GPUs, 64 CPUs, 512Gi memory (the whole node)" % node in r.stdout, \
        r.stdout
    # A one-GPU job must not join it: it goes to the other node.
    other, _ = submit(controller, tmp_path, "#!/bin/sh\n#SBATCH --gres=gpu:1\ntrue\n", "one.sh")
    other_node = "n2" if node == "n1" else "n1"
    (m,) = [a for a in agents if a.name == other_node][0].wait_message("launch", job=other)
    # --mem=0 is the whole node's memory: the job waits for an idle node.
    third, _ = submit(controller, tmp_path, "#!/bin/sh\n#SBATCH --mem=0\ntrue\n", "m0.sh")
    j3 = u.sluice_json(["show", str(third)], env)
    assert j3["state"] == "pending" and j3["exclusive"] is True
    assert "idle" in j3["reason"], j3["reason"]


def test_memory_defaults_from_config(controller_factory, fake_agent, tmp_path):
    ctl = controller_factory(config_overrides={
        "scheduler": {"default_memory_per_gpu": "48Gi"},
        "pools": [{"name": "default"}, {"name": "cpu", "default_memory_per_cpu": "3Gi"},
                  {"name": "whole", "default_memory_per_node": "node"}]})
    fake_agent("g1", ctl=ctl, gpus=8)
    fake_agent("c1", ctl=ctl, gpus=0, pool="cpu")
    fake_agent("w1", ctl=ctl, gpus=8, pool="whole")
    env = u.cli_env(ctl, ctl.tenant_tokens["alice"], tmpdir=tmp_path)

    def dry(text, name):
        path = write(tmp_path / name, text)
        r = u.sluice(["sbatch", "--parsable", path], env, cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        return u.sluice_json(["show", r.stdout.strip()], env)

    assert dry("#!/bin/sh\n#SBATCH --gres=gpu:2\ntrue\n", "g.sh")["memory"] == "96Gi"
    assert dry("#!/bin/sh\n#SBATCH -p cpu -c 4\ntrue\n", "c.sh")["memory"] == "12Gi"
    # Asked memory stands; --mem-per-gpu is per GPU.
    assert dry("#!/bin/sh\n#SBATCH --gres=gpu:2 --mem=10G\ntrue\n", "m.sh")["memory"] == "10Gi"
    j = dry("#!/bin/sh\n#SBATCH --gres=gpu:4 --mem-per-gpu=20G\ntrue\n", "pg.sh")
    assert j["memory"] == "80Gi" and j["mem_per_gpu"] == "20Gi"
    # A pool that gives the node's memory gives the whole node.
    j = dry("#!/bin/sh\n#SBATCH -p whole --gres=gpu:1\ntrue\n", "w.sh")
    assert j["exclusive"] is True and j["placement"][0]["memory"] == "512Gi", j
    # Without a configured default, the spec's 1Gi.
    assert dry("#!/bin/sh\n#SBATCH -c 2\ntrue\n", "d.sh")["memory"] == "1Gi"


def test_every_problem_at_once_with_its_line(tmp_path):
    path = write(tmp_path / "many.sh", "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --profile=all\n"
                 "#SBATCH --mem=12Q\n#SBATCH --frobnicate\n#SBATCH --acctg-freq=30\n"
                 "#SBATCH --mincpus=8\nsrun true\n")
    env = u.cli_env(tmpdir=tmp_path)
    r = u.sluice(["sbatch", "--dry-run", path], env)
    assert r.returncode == 2 and r.stdout == ""
    for line, word in ((3, "--profile is not supported"), (4, "--mem: \"12Q\" is not a size"),
                       (5, "--frobnicate is not supported"), (6, "--acctg-freq is not supported"),
                       (7, "--mincpus is not supported")):
        assert "%s:%d: %s" % (path, line, word) in r.stderr, r.stderr
    assert "5 problems (above); nothing was submitted" in r.stderr
    # Ignoring the unsupported ones leaves the bad value and --mincpus,
    # which asks for CPUs: dropping it would make the job smaller.
    r = u.sluice(["sbatch", "--dry-run", "--ignore-unsupported", path], env)
    assert r.returncode == 2
    assert "warning: %s:3: --profile" % path in r.stderr
    assert "%s:7: --mincpus is not supported, and it asks for resources" % path in r.stderr
    assert "2 problems" in r.stderr


def test_directives_become_fields(tmp_path):
    path = write(tmp_path / "f.sh", "#!/bin/bash\n#SBATCH -N 2-4 --exclusive\n"
                 "#SBATCH --gpu-bind=closest --hint=nomultithread --wait-all-nodes=1\n"
                 "#SBATCH --open-mode=append --comment 'run 7'\n"
                 "#SBATCH --constraint=[a5000|a6000] -w gpu[01-02] -x gpu09\n"
                 "#SBATCH --gres=gpu:2 --cpus-per-gpu=6\nsrun true\n")
    r = u.sluice(["sbatch", "--dry-run", path], u.cli_env(tmpdir=tmp_path))
    assert r.returncode == 0, r.stderr
    spec = json.loads(r.stdout)
    assert spec["nodes"] == 2 and spec["nodes_max"] == 4 and spec["tasks"] == 2
    assert spec["exclusive"] is True and spec["comment"] == "run 7"
    assert spec["open_mode"] == "append" and spec["constraint"] == "a5000|a6000"
    assert spec["nodelist"] == ["gpu01", "gpu02"] and spec["exclude"] == ["gpu09"]
    assert spec["gpus"] == 2 and spec["cpus"] == "12"


def test_server_names_bad_node_fields(controller, tmp_path):
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    for flags, word in ((["--tasks", "3", "--tasks-per-node", "2"], "tasks_per_node: 3 tasks"),
                        (["--tasks", "1", "--nodes", "2"], "nodes: 2 nodes need at least 2"),
                        (["--nodes-max", "3"], "nodes_max: only allowed with nodes")):
        r = u.sluice(["submit"] + flags + ["--", "true"], env)
        assert r.returncode != 0 and word in r.stderr, (flags, r.stderr)


def test_open_mode_truncates_or_appends(controller, cluster, tmp_path):
    cluster(1)
    run = tmp_path / "run"
    run.mkdir()
    for mode, want in (("truncate", "new\n"), ("append", "old\nnew\n")):
        (run / ("out-%s.txt" % mode)).write_text("old\n")
        jid, _ = submit(controller, tmp_path, "#!/bin/sh\n#SBATCH -o out-%s.txt --open-mode=%s\n"
                        "echo new\n" % (mode, mode), name=mode + ".sh", args=["--chdir", str(run)])
        controller.wait_job(jid, "succeeded")
        assert (run / ("out-%s.txt" % mode)).read_text() == want, mode


def test_server_says_every_bad_field_at_once(controller):
    st, body = controller.request("POST", "/v1/jobs", {"command": ["x"], "gpus": 99, "cpus": "x",
                                                       "nodes": 0}, token=controller.token("alice"))
    assert st == 400, body
    msg = body["error"]["message"]
    assert body["error"]["field"] == "gpus"
    assert msg.startswith("gpus: ") and "; also cpus: " in msg and "; also nodes: " in msg, msg


def test_exclusive_steps_see_the_nodes_gpus(controller, cluster, tmp_path):
    # Slurm's --exclusive without a GPU request: the job has all of the
    # node's GPUs, in the batch step and in srun's steps.
    cluster(1, gpus=4)
    run = tmp_path / "run"
    run.mkdir()
    jid, _ = submit(controller, tmp_path, "#!/bin/sh\n#SBATCH --exclusive -o out.txt\n"
                    "echo batch=$CUDA_VISIBLE_DEVICES\n"
                    "srun -n 1 sh -c 'echo step=$CUDA_VISIBLE_DEVICES'\n",
                    args=["--chdir", str(run)])
    controller.wait_job(jid, "succeeded", timeout=60)
    out = (run / "out.txt").read_text()
    assert "batch=0,1,2,3" in out and "step=0,1,2,3" in out, out


def test_whole_node_survives_controller_restart(controller, cluster):
    # Recovery adopts the running job with its request: its node stays whole.
    cluster(2, gpus=4)
    # One GPU asked: a packing placement would put the next one-GPU job
    # beside it, were the node not whole.
    job = controller.submit({"command": ["sh", "-c", "sleep 4"], "exclusive": True, "gpus": 1})
    j = controller.wait_job(job["id"], "running")
    held = j["placement"][0]["node"]
    controller.kill9()
    controller.start()
    controller.wait_node("n1", "up")
    controller.wait_node("n2", "up")
    other = controller.submit({"command": ["true"], "gpus": 1})
    done = controller.wait_job(other["id"], "succeeded")
    assert done["placement"][0]["node"] != held
    again = controller.job(job["id"])
    assert again["exclusive"] is True and again["placement"][0]["memory"] != "1Gi"


def test_srun_of_its_own_spreads_over_distinct_nodes(controller, cluster, tmp_path):
    cluster(2, gpus=4)
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    r = u.sluice(["srun", "-N", "2", "sh", "-c", "echo on=$SLURMD_NODENAME"], env,
                 cwd=str(tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(line for line in r.stdout.splitlines() if line.startswith("on=")) == \
        ["on=n1", "on=n2"], r.stdout
