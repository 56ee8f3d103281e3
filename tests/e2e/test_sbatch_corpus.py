"""
test_sbatch_corpus.py - a dozen real-world-shaped sbatch scripts
(tests/e2e/sbatch/*.sh), submitted unchanged to `sluice sbatch --dry-run`,
checked field by field against what Slurm 22.05's sbatch made of the same
script: `scontrol show job` recorded in tests/e2e/sbatch/expected/*.json by
tests/e2e/sbatch/record.py, and, when record.py's private Slurm is running
(record.py --setup), against a live `scontrol show job` too.

What Sluice asks per task and Slurm per node or per job is compared
through the rule docs/slurm.md states: a node's tasks are
--ntasks-per-node, else the tasks over the nodes -N asks for, else all of
them; per-node GPUs and memory are divided among them. -N is kept as
distinct nodes (Slurm's NumNodes), --exclusive and --mem=0 as whole nodes
(Slurm's OverSubscribe=NO, MinMemoryNode=0).
"""

import glob
import json
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "sbatch"))

import e2e_util as u  # noqa: E402
import record  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sbatch")
SCRIPTS = sorted(glob.glob(os.path.join(HERE, "*.sh")))
# Directives of the corpus Sluice does not support: each script that has
# them is submitted with --ignore-unsupported, and the warnings must name
# them with their lines.
UNSUPPORTED = {}  # none today: every directive of the corpus is supported


def expected(path):
    with open(os.path.join(HERE, "expected", os.path.basename(path)[:-3] + ".json")) as f:
        return json.load(f)["slurm"]


def sluice_spec(path, cwd):
    name = os.path.basename(path)
    args = ["sbatch", "--dry-run"] + (["--ignore-unsupported"] if name in UNSUPPORTED else [])
    r = u.sluice(args + [path], u.cli_env(tmpdir=cwd), cwd=str(cwd))
    assert r.returncode == 0, r.stderr
    for w in UNSUPPORTED.get(name, []):
        assert "warning: %s:%s" % (path, w) in r.stderr, (w, r.stderr)
    if name not in UNSUPPORTED:
        assert r.stderr == ""
        # Without the flag the same script is accepted as well.
    else:
        r2 = u.sluice(["sbatch", "--dry-run", path], u.cli_env(tmpdir=cwd), cwd=str(cwd))
        assert r2.returncode == 2 and "is not supported" in r2.stderr
    return json.loads(r.stdout)


def slurm_seconds(t):
    """Slurm's [D-]HH:MM:SS (or MM:SS) in seconds."""
    days = 0
    if "-" in t:
        d, t = t.split("-")
        days = int(d)
    parts = [int(x) for x in t.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    return ((days * 24 + parts[0]) * 60 + parts[1]) * 60 + parts[2]


def slurm_bytes(m):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(m[:-1]) * units[m[-1]] if m[-1] in units else int(m) << 20


def sluice_bytes(q):
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}
    return int(q[:-2]) * units[q[-2:]] if q[-2:] in units else int(q)


def expand(pat, jid, name):
    """The patterns Slurm expands at submission (%t, %n, %N stay)."""
    out = re.sub(r"%(\d*)([jxAa%])", lambda m: {"j": str(jid), "A": str(jid), "x": name,
                                                "a": "4294967294", "%": "%"}[m.group(2)], pat)
    return out


def indices(text):
    """An array's indices: 1,3,5-9:2 -> {1,3,5,7,9} (the %N limit apart)."""
    out = set()
    for part in text.split("%")[0].split(","):
        step = 1
        if ":" in part:
            part, step = part.split(":")
            step = int(step)
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1, step))
    return out


def dependency(text):
    """afterok:1:2,singleton -> ["afterok:1", "afterok:2", "singleton"]."""
    out = []
    for part in re.split(r"[,?]", text):
        kind, *ids = part.split(":")
        out += ["%s:%s" % (kind, i) for i in ids] or [kind]
    return out


def compare(spec, s, submit_dir, script_path):
    """Checks Sluice's spec against Slurm's fields s, field by field."""
    with open(script_path) as f:
        assert spec["script"] == f.read()
    name = spec.get("name", spec["command"][0])
    assert name == s["JobName"]
    assert spec["command"] == [os.path.basename(script_path)]
    ntasks = spec["tasks"]
    assert ntasks == int(s["NumTasks"])
    assert int(spec.get("cpus", "1")) == int(s["CPUs/Task"])
    assert spec.get("time_limit", 0) == slurm_seconds(s["TimeLimit"])
    assert spec.get("pool", "main") == s["Partition"]  # main: the private cluster's default
    assert spec.get("tenant", "(null)") == s["Account"]
    # A node's tasks, as sluice derives them (docs/slurm.md).
    text = spec["script"]
    m = re.search(r"--ntasks-per-node[= ](\d+)", text)
    explicit_nodes = re.fullmatch(r"(\d+)-\1", s["NumNodes"])
    tpn = int(m.group(1)) if m else -(-ntasks // int(explicit_nodes.group(1))) if explicit_nodes else ntasks
    # GPUs per task from Slurm's per-node, per-task or per-job request.
    gpus, model = 0, None
    for key, per in (("TresPerNode", tpn), ("TresPerTask", 1), ("TresPerJob", ntasks)):
        if key in s:
            parts = s[key].strip().split(":")  # gres:gpu[:type]:N
            gpus = int(parts[-1]) // per
            model = parts[2] if len(parts) == 4 else None
    assert spec.get("gpus", 0) == gpus
    assert spec.get("gpu_models") == ([model] if model else None)
    # Memory per task.
    if "MinMemoryCPU" in s:
        assert sluice_bytes(spec["memory"]) == slurm_bytes(s["MinMemoryCPU"]) * int(s["CPUs/Task"])
    elif s.get("MinMemoryNode", "0") != "0":
        assert sluice_bytes(spec["memory"]) * tpn == slurm_bytes(s["MinMemoryNode"])
    else:
        assert "memory" not in spec
    # Where it runs and writes.
    workdir = s["WorkDir"].replace("$SUBMIT_DIR", submit_dir)
    assert spec.get("chdir", spec["submit_dir"]) == workdir
    assert spec["submit_dir"] == submit_dir
    jid = int(s["JobId"])
    if "output" in spec:
        out = expand(spec["output"], jid, name)
        assert os.path.join(workdir, out) == s["StdOut"].replace("$SUBMIT_DIR", submit_dir)
        err = expand(spec.get("error", spec["output"]), jid, name)
        assert os.path.join(workdir, err) == s["StdErr"].replace("$SUBMIT_DIR", submit_dir)
    else:
        assert s["StdOut"].endswith("/slurm-%d.out" % jid)  # Sluice: the job's log instead
    # Arrays and dependencies: Slurm's text, which the controller reads.
    if "array" in spec:
        assert indices(spec["array"]) == indices(s["ArrayTaskId"])
        if "%" in spec["array"]:
            assert spec["array"].split("%")[1] == s["ArrayTaskThrottle"]
    else:
        assert "ArrayTaskId" not in s
    if "dependency" in spec:
        assert dependency(spec["dependency"]) == [d.replace("(unfulfilled)", "")
                                                  for d in s["Dependency"].split(",")]
    else:
        assert s["Dependency"] == "(null)"
    # Distinct nodes, as Slurm counts them ("4-4": at least and at most 4).
    if re.search(r"^#SBATCH.*(-N|--nodes)[= ]", text, re.M):
        lo, _, hi = s["NumNodes"].partition("-")
        assert spec["nodes"] == int(lo)
        assert spec.get("nodes_max", int(lo)) == int(hi or lo)
    else:
        assert "nodes" not in spec
    # Whole nodes: --exclusive (Slurm shares none of them), and --mem=0
    # (all of each node's memory).
    if "--exclusive" in text:
        assert s["OverSubscribe"] == "NO" and spec["exclusive"] is True
    if re.search(r"--mem=0[GMK]?\b", text):
        assert s["MinMemoryNode"] == "0" and spec["exclusive"] is True
    if "--constraint" in text:  # node features are Sluice's node labels
        assert spec["constraint"] == s["Features"]
    # Mail goes through the config's notify (docs/slurm.md, Notifications);
    # --requeue keeps Slurm's meaning, a requeue after a node's loss.
    for d, field in (("--mail-type=", "mail_type"), ("--mail-user=", "mail_user")):
        if d in text:
            assert spec[field] == text.split(d)[1].split()[0]
    if "--requeue" in text:
        assert spec["on_node_failure"] == "requeue"


def test_corpus_is_a_dozen_scripts():
    assert len(SCRIPTS) >= 12
    for p in SCRIPTS:
        assert os.path.exists(os.path.join(HERE, "expected", os.path.basename(p)[:-3] + ".json")), p
    text = "".join(open(p).read() for p in SCRIPTS)
    for d in ("--array", "%8", "--dependency", "-d ", "singleton", "--gres=gpu:", "--gpus=",
              "--gpus-per-task", "--gpus-per-node", "--mem-per-cpu", "--chdir", "--export",
              "-o", "-e", "%x", "%j", "%A", "%a", "-p", "-A", "-N", "--ntasks-per-node", "-c"):
        assert d in text, d


@pytest.mark.parametrize("path", SCRIPTS, ids=[os.path.basename(p) for p in SCRIPTS])
def test_script_matches_recorded_slurm(path, tmp_path):
    spec = sluice_spec(path, tmp_path)
    compare(spec, expected(path), str(tmp_path), path)


@pytest.mark.parametrize("path", SCRIPTS, ids=[os.path.basename(p) for p in SCRIPTS])
def test_script_matches_live_slurm(path, tmp_path):
    if not record.up():
        pytest.skip("record.py's private Slurm is not running (tests/e2e/sbatch/record.py --setup)")
    os.chmod(str(tmp_path), 0o755)
    live, script = record.submit(path, cwd=str(tmp_path))
    assert "error" not in live, live
    with open(path) as f:
        assert script == f.read()
    # The live answer is the recorded one (but for the job's id).
    rec = expected(path)
    for k, v in rec.items():
        if k in ("StdOut", "StdErr"):  # %j: the job's id
            want = v.replace("$SUBMIT_DIR", str(tmp_path))
            want = re.sub(r"(?<![0-9])%d(?![0-9])" % rec["JobId"], str(live["JobId"]), want)
            assert live[k].replace("$SUBMIT_DIR", str(tmp_path)) == want, k
        elif k != "JobId":
            assert live[k] == v, k
    compare(sluice_spec(path, tmp_path), live, str(tmp_path), path)
