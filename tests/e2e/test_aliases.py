"""
test_aliases.py - a site's names for pools, accounts and QoS (docs/config.md
"Aliases"), and unknown names refused at submission with the known ones
listed, with real daemons.

A partition, account or QoS the config maps (pools[].aliases,
tenants[].accounts, priority_classes[].aliases) resolves to its real name,
which the job is stored and shown with; `sluice sbatch -p -A -q` keeps a
script's names. A name that is neither is a 400 naming the field and
listing the names that exist, so that a script's partition no longer waits
forever for a node no pool has.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

SITE = {
    "pools": [{"name": "a100", "aliases": ["gpu", "batch"]}, "cpu"],
    "tenants": [{"name": "alice", "weight": 1, "token": "tok-alice-aliases",
                 "accounts": ["proj-vision", "PROJ-NLP"]},
                {"name": "bob", "weight": 1, "token": "tok-bob-aliases"}],
    "priority_classes": [{"name": "high", "value": 100, "aliases": ["urgent"]},
                         {"name": "low", "value": -10}],
}


def test_aliases_resolve_to_real_names(controller_factory, tmp_path):
    ctl = controller_factory(config_overrides=SITE)
    started = []
    try:
        u.start_agents(ctl, 1, started, gpus=1, pool="a100")
        st, body = ctl.request("POST", "/v1/jobs",
                               {"tenant": "proj-vision", "pool": "gpu", "priority_class": "urgent",
                                "gpus": 1, "command": ["true"]}, token=ctl.admin_token)
        assert st == 201, body
        job = ctl.wait_job(body["id"], "succeeded")
        assert job["tenant"] == "alice" and job["pool"] == "a100", job
        assert job["priority_class"] == "high" and job["priority"] == 100, job

        # Accounts match without regard to case, as Slurm keeps them.
        st, body = ctl.request("POST", "/v1/jobs", {"tenant": "proj-nlp", "command": ["true"]},
                               token=ctl.admin_token)
        assert st == 201 and ctl.job(body["id"])["tenant"] == "alice", body

        # A tenant's token may submit under its own account, not another's.
        st, body = ctl.request("POST", "/v1/jobs", {"tenant": "proj-vision", "command": ["true"]},
                               token=ctl.token("bob"))
        assert st == 403 and body["error"]["field"] == "tenant", body

        # sbatch keeps the script's -p, -A and -q.
        script = tmp_path / "site.sh"
        script.write_text("#!/bin/sh\n#SBATCH -p batch\n#SBATCH -A Proj-Vision\n"
                          "#SBATCH -q urgent\n#SBATCH --gres=gpu:1\ntrue\n")
        env = u.cli_env(ctl, ctl.admin_token, tmpdir=tmp_path)
        r = u.sluice(["sbatch", "--parsable", str(script)], env, cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        job = ctl.wait_job(int(r.stdout.strip()), "succeeded")
        assert (job["tenant"], job["pool"], job["priority_class"]) == ("alice", "a100", "high"), job
    finally:
        for a in started:
            a.stop()


def test_unknown_names_are_refused_with_the_known_ones(controller_factory):
    ctl = controller_factory(config_overrides=SITE)
    adm = ctl.admin_token
    st, body = ctl.request("POST", "/v1/jobs", {"tenant": "alice", "pool": "gpux",
                                                "command": ["true"]}, token=adm)
    assert st == 400 and body["error"]["field"] == "pool", body
    msg = body["error"]["message"]
    assert '"gpux"' in msg and "a100 (gpu, batch)" in msg and "cpu" in msg, msg

    st, body = ctl.request("POST", "/v1/jobs", {"tenant": "nobody", "command": ["true"]}, token=adm)
    assert st == 400 and body["error"]["field"] == "tenant", body
    msg = body["error"]["message"]
    assert '"nobody"' in msg and "alice (proj-vision, PROJ-NLP)" in msg and "bob" in msg, msg

    st, body = ctl.request("POST", "/v1/jobs", {"tenant": "alice", "priority_class": "normal",
                                                "command": ["true"]}, token=adm)
    assert st == 400 and body["error"]["field"] == "priority_class", body
    msg = body["error"]["message"]
    assert '"normal"' in msg and "high (urgent)" in msg and "low" in msg, msg


def test_without_configured_pools_a_pool_must_be_a_nodes(controller_factory):
    ctl = controller_factory()
    started = []
    try:
        u.start_agents(ctl, 1, started, gpus=0, pool="cpu")
        st, body = ctl.request("POST", "/v1/jobs", {"pool": "debug", "command": ["true"]},
                               token=ctl.token("alice"))
        assert st == 400 and body["error"]["field"] == "pool", body
        msg = body["error"]["message"]
        assert '"debug"' in msg and "the pools of this cluster's nodes: " in msg, body
        assert "cpu" in msg.split("nodes: ")[1], body
        st, body = ctl.request("POST", "/v1/jobs", {"pool": "cpu", "command": ["true"]},
                               token=ctl.token("alice"))
        assert st == 201, body
        ctl.wait_job(body["id"], "succeeded")
    finally:
        for a in started:
            a.stop()

    # scheduler.unknown_pools: accept keeps the older rule: the job waits.
    acc = controller_factory(config_overrides={"scheduler": {"unknown_pools": "accept"}}, sub="acc")
    st, body = acc.request("POST", "/v1/jobs", {"pool": "later", "command": ["true"]},
                           token=acc.token("alice"))
    assert st == 201 and acc.job(body["id"])["state"] == "pending", body


def test_config_refuses_an_alias_that_is_a_name(tmp_path):
    bad = dict(SITE, pools=[{"name": "a100", "aliases": ["cpu"]}, "cpu"])
    ctl = harness.Controller(tmp_path / "bad", config_overrides=bad)
    exe = ctl.binary
    import subprocess
    r = subprocess.run([exe, "--config", ctl.config_path, "--init"], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == 2, r
    assert 'pools[].aliases: "cpu" is itself a configured name' in r.stderr, r.stderr
