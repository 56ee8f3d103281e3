"""
test_api.py - every route of sluiced's HTTP API (docs/api.md), against a
real sluiced with fake agents written in Python (harness.FakeAgent), so that
these tests do not depend on sluice-agent.
"""

import json

import pytest

from harness import wait_for


def err(body):
    assert isinstance(body, dict) and "error" in body, body
    return body["error"]


# ---- /healthz, auth, routing ----

def test_healthz_needs_no_token(controller):
    st, body = controller.request("GET", "/healthz")
    assert st == 200
    assert body["status"] == "ok" and body["version"]


@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/nodes", "/v1/tenants", "/metrics", "/v1/jobs/1"])
def test_missing_or_unknown_token_is_401(controller, path):
    st, body = controller.request("GET", path)
    assert st == 401 and err(body)["code"] == "unauthorized"
    st, body = controller.request("GET", path, token="not-a-token")
    assert st == 401 and err(body)["code"] == "unauthorized"
    st, body = controller.request("GET", path, headers={"Authorization": "Basic abc"})
    assert st == 401


def test_cluster_token_is_refused_on_the_api(controller):
    st, body = controller.request("GET", "/v1/jobs", token=controller.cluster_token)
    assert st == 403 and err(body)["code"] == "forbidden"


def test_unknown_route_and_method(controller):
    st, body = controller.request("GET", "/v1/nope", token=controller.admin_token)
    assert st == 404 and err(body)["code"] == "not_found"
    st, body = controller.request("PUT", "/v1/jobs", token=controller.admin_token, body={})
    assert st == 405 and err(body)["code"] == "method_not_allowed"
    st, body = controller.request("GET", "/v1/jobs/999", token=controller.admin_token)
    assert st == 404 and err(body)["field"] == "id"


# ---- submission and validation ----

def test_submit_show_list_cancel_pending(controller):
    job = controller.submit({"name": "hello", "command": ["echo", "hi"], "gpus": 1,
                             "cpus": "2", "memory": "4Gi"})
    assert job["state"] == "pending" and job["tenant"] == "alice" and job["name"] == "hello"
    assert job["cpus"] == "2" and job["memory"] == "4Gi" and job["gpus"] == 1
    assert job["command"] == ["echo", "hi"] and job["placement"] == []
    jid = job["id"]
    shown = controller.job(jid, "alice")
    assert shown["id"] == jid and shown["submit_time"] == job["submit_time"]
    # No node yet: it waits and says why.
    assert shown["state"] == "pending"
    listed = controller.jobs("alice")
    assert [j["id"] for j in listed] == [jid]
    st, body = controller.request("DELETE", "/v1/jobs/%d" % jid, token=controller.token("alice"))
    assert st == 200 and body["state"] == "cancelled"
    st, body = controller.request("DELETE", "/v1/jobs/%d" % jid, token=controller.token("alice"))
    assert st == 409 and err(body)["code"] == "conflict"
    assert controller.jobs("alice", "?state=cancelled")[0]["id"] == jid
    assert controller.jobs("alice", "?state=pending") == []


def test_defaults_and_normalised_quantities(controller):
    job = controller.submit({"command": ["/usr/bin/python3", "x.py"], "cpus": 0.5,
                             "memory": "1536Mi", "gpu_share": "0.25", "gpu_memory": "10Gi",
                             "env": {"A": "1"}, "on_node_failure": "fail", "priority": 3,
                             "time_limit": 60, "gpu_models": ["H100"], "pool": "default"})
    assert job["name"] == "python3"
    assert job["cpus"] == "500m" and job["memory"] == "1536Mi"
    assert job["gpu_share"] == "0.25" and job["gpu_memory"] == "10Gi" and job["gpus"] == 0
    assert job["tasks"] == 1 and job["min_tasks"] == 1
    assert job["env"] == {"A": "1"} and job["on_node_failure"] == "fail"
    assert job["gpu_models"] == ["H100"] and job["pool"] == "default"
    assert job["priority"] == 3 and job["time_limit"] == 60


def test_malformed_json_names_the_position(controller):
    st, body = controller.request("POST", "/v1/jobs", raw=b'{"command": ["x"], "gpus": }',
                                  token=controller.token("alice"))
    e = err(body)
    assert st == 400 and e["code"] == "bad_json"
    assert e["position"] > 0 and "column" in e["message"]
    st, body = controller.request("POST", "/v1/jobs", raw=b"", token=controller.token("alice"))
    assert st == 400 and err(body)["code"] == "bad_json"
    st, body = controller.request("POST", "/v1/jobs", raw=b"[1,2]", token=controller.token("alice"))
    assert st == 400 and err(body)["code"] == "invalid_field"


BAD_SPECS = [
    ({"command": ["x"], "gpus": -1}, "gpus"),
    ({"command": ["x"], "gpus": 17}, "gpus"),
    ({"command": ["x"], "gpus": "2"}, "gpus"),
    ({"command": ["x"], "tasks": 0}, "tasks"),
    ({"command": ["x"], "tasks": 5000}, "tasks"),
    ({"command": ["x"], "tasks": 2, "min_tasks": 3}, "min_tasks"),
    ({"command": ["x"], "cpus": "abc"}, "cpus"),
    ({"command": ["x"], "cpus": "-1"}, "cpus"),
    ({"command": ["x"], "memory": "12Qi"}, "memory"),
    ({"command": ["x"], "memory": "0.5"}, "memory"),
    ({"command": ["x"], "gpus": 1, "gpu_share": "0.5"}, "gpu_share"),
    ({"command": ["x"], "gpu_share": "1.5"}, "gpu_share"),
    ({"command": ["x"], "gpu_memory": "1Gi"}, "gpu_memory"),
    ({"command": ["x"], "gpus": 1, "gpu_models": [3]}, "gpu_models"),
    ({"command": ["x"], "gpu_models": ["H100"]}, "gpu_models"),
    ({"command": ["x"], "pool": ""}, "pool"),
    ({"command": ["x"], "priority": "high"}, "priority"),
    ({"command": ["x"], "time_limit": -5}, "time_limit"),
    ({"command": []}, "command"),
    ({"command": "echo hi"}, "command"),
    ({"command": ["echo", 3]}, "command"),
    ({"gpus": 1}, "command"),
    ({"command": ["x"], "image": ""}, "image"),
    ({"command": ["x"], "env": {"1BAD": "v"}}, "env"),
    ({"command": ["x"], "env": {"K": 1}}, "env"),
    ({"command": ["x"], "on_node_failure": "retry"}, "on_node_failure"),
    ({"command": ["x"], "name": "n" * 64}, "name"),
    ({"command": ["x"], "tenant": "nobody"}, "tenant"),
]


@pytest.mark.parametrize("spec,field", BAD_SPECS, ids=[f for _, f in BAD_SPECS])
def test_bad_fields_are_named(controller, spec, field):
    token = controller.admin_token if spec.get("tenant") == "nobody" else controller.token("alice")
    st, body = controller.request("POST", "/v1/jobs", spec, token=token)
    e = err(body)
    assert st == 400, (st, body)
    assert e["code"] == "invalid_field" and e["field"] == field
    assert e["message"].startswith(field + ":")


def test_unknown_field_is_rejected(controller):
    st, body = controller.request("POST", "/v1/jobs", {"command": ["x"], "gpu": 1},
                                  token=controller.token("alice"))
    e = err(body)
    assert st == 400 and e["code"] == "unknown_field" and e["field"] == "gpu"


def test_tenant_of_the_submission(controller):
    # A tenant token cannot submit for another tenant.
    st, body = controller.request("POST", "/v1/jobs", {"command": ["x"], "tenant": "bob"},
                                  token=controller.token("alice"))
    assert st == 403 and err(body)["field"] == "tenant"
    # The admin must say which tenant.
    st, body = controller.request("POST", "/v1/jobs", {"command": ["x"]}, token=controller.admin_token)
    assert st == 400 and err(body)["field"] == "tenant"
    job = controller.submit({"command": ["x"], "tenant": "bob"}, tenant="admin")
    assert job["tenant"] == "bob"


def test_tenants_see_only_their_own_jobs(controller):
    a = controller.submit({"command": ["a"]}, tenant="alice")
    b = controller.submit({"command": ["b"]}, tenant="bob")
    assert [j["id"] for j in controller.jobs("alice")] == [a["id"]]
    assert [j["id"] for j in controller.jobs("bob")] == [b["id"]]
    assert sorted(j["id"] for j in controller.jobs("admin")) == sorted([a["id"], b["id"]])
    assert [j["id"] for j in controller.jobs("admin", "?tenant=bob")] == [b["id"]]
    st, body = controller.request("GET", "/v1/jobs?tenant=bob", token=controller.token("alice"))
    assert st == 403
    for method in ("GET", "DELETE"):
        st, body = controller.request(method, "/v1/jobs/%d" % a["id"], token=controller.token("bob"))
        assert st == 403 and err(body)["code"] == "forbidden"
    st, body = controller.request("GET", "/v1/jobs/%d/logs" % a["id"], token=controller.token("bob"))
    assert st == 403
    # The admin may cancel anyone's job.
    st, body = controller.request("DELETE", "/v1/jobs/%d" % a["id"], token=controller.admin_token)
    assert st == 200 and body["state"] == "cancelled"


def test_list_query_validation_and_limit(controller):
    for _ in range(3):
        controller.submit({"command": ["x"]})
    assert len(controller.jobs("alice", "?limit=2")) == 2
    for q, field in (("?state=bogus", "state"), ("?limit=-1", "limit"), ("?tenant=zed", "tenant")):
        st, body = controller.request("GET", "/v1/jobs" + q, token=controller.admin_token)
        assert st == 400 and err(body)["field"] == field


# ---- scheduling, launches and task ends with a fake agent ----

def test_submission_is_launched_with_distributed_env(controller, fake_agent):
    a1 = fake_agent("n1", gpus=8)
    a2 = fake_agent("n2", gpus=8)
    job = controller.submit({"name": "gang", "command": ["train"], "tasks": 4, "gpus": 4,
                             "cpus": "8", "memory": "64Gi", "env": {"LR": "0.1"}})
    launches = a1.wait_message("launch", job=job["id"], count=2) + \
        a2.wait_message("launch", job=job["id"], count=2)
    assert sorted(m["rank"] for m in launches) == [0, 1, 2, 3]
    nodes_by_rank = {}
    for m in launches:
        assert m["task"] == m["rank"] and m["world_size"] == 4
        assert m["argv"] == ["train"] and m["env"] == {"LR": "0.1"}
        assert len(m["gpus"]) == 4 and m["gpu_milli"] == 1000
        assert m["cpu_milli"] == 8000 and m["mem_bytes"] == 64 << 30
        assert m["master_addr"] == "127.0.0.1" and m["master_port"] == 29500 + job["id"] % 1000
        nodes_by_rank[m["rank"]] = m
    for agent in (a1, a2):
        ms = agent.messages("launch", job=job["id"])
        assert sorted(m["local_rank"] for m in ms) == [0, 1]
        assert len({g for m in ms for g in m["gpus"]}) == 8  # no GPU given twice
    j = controller.wait_job(job["id"], "running")
    wait_for(lambda: all(p["state"] == "running" for p in controller.job(job["id"])["placement"]),
             what="all tasks running")
    j = controller.job(job["id"])
    assert sorted(p["task"] for p in j["placement"]) == [0, 1, 2, 3]
    for m in launches:
        agent = a1 if m in a1.messages("launch") else a2
        agent.exit(job["id"], m["task"], 0)
    j = controller.wait_job(job["id"], "succeeded")
    assert j["exit_code"] == 0 and j["end_time"] >= j["start_time"]
    assert all(p["exit_code"] == 0 for p in j["placement"])
    # Every exit was acknowledged after it was recorded.
    wait_for(lambda: len(a1.messages("ack", job=job["id"])) + len(a2.messages("ack", job=job["id"])) == 4,
             what="4 acks")
    wait_for(lambda: controller.node("n1")["free"]["gpus"] == 8, what="GPUs released")


def test_gang_that_does_not_fit_waits_with_a_reason(controller, fake_agent):
    fake_agent("n1", gpus=8)
    job = controller.submit({"command": ["x"], "tasks": 2, "gpus": 8})
    small = controller.submit({"command": ["x"], "gpus": 8})
    j = controller.job(job["id"])
    assert j["state"] == "pending" and j["reason"]
    # Backfill lets a job that fits run past it.
    controller.wait_job(small["id"], "running")


def test_task_failure_fails_the_gang_and_kills_the_rest(controller, fake_agent):
    a = fake_agent("n1", gpus=8)
    job = controller.submit({"command": ["x"], "tasks": 2, "gpus": 1})
    a.wait_message("launch", job=job["id"], count=2)
    a.exit(job["id"], 1, code=3)
    j = controller.wait_job(job["id"], "failed")
    assert "task 1" in j["reason"] and j["exit_code"] == 3
    kill = a.wait_message("kill", job=job["id"], task=0)
    assert kill[0]["grace_ms"] >= 0
    # The fake agent answers the kill with an exit; then the GPUs are free.
    wait_for(lambda: controller.node("n1")["free"]["gpus"] == 8, what="GPUs released")


def test_launch_failure_is_reported(controller, fake_agent):
    a = fake_agent("n1", gpus=8)
    job = controller.submit({"image": "nvcr.io/x", "gpus": 1})
    m = a.wait_message("launch", job=job["id"])[0]
    assert m["image"] == "nvcr.io/x" and m["argv"] is None
    a.send({"type": "failed", "job": job["id"], "task": 0,
            "reason": "image given but no container launcher is configured on node n1"})
    j = controller.wait_job(job["id"], "failed")
    assert "no container launcher" in j["reason"]
    a.wait_message("ack", job=job["id"])


def test_cancel_running_job_kills_and_releases(controller, fake_agent):
    a = fake_agent("n1", gpus=8)
    job = controller.submit({"command": ["sleep"], "gpus": 8})
    a.wait_message("launch", job=job["id"])
    waiting = controller.submit({"command": ["next"], "gpus": 8})
    assert controller.job(waiting["id"])["state"] == "pending"
    st, body = controller.request("DELETE", "/v1/jobs/%d" % job["id"], token=controller.token("alice"))
    assert st == 200 and body["state"] == "cancelled"
    a.wait_message("kill", job=job["id"], task=0)
    # The kill's exit frees the GPUs; the waiting job starts on them.
    a.wait_message("launch", job=waiting["id"])
    assert controller.job(job["id"])["state"] == "cancelled"
    controller.wait_job(waiting["id"], "running")


def test_gpu_turnover_starts_next_job(controller, fake_agent):
    a = fake_agent("n1", gpus=2)
    jobs = [controller.submit({"command": ["x"], "gpus": 1}) for _ in range(5)]
    a.wait_message("launch", count=2)
    assert len(a.messages("launch")) == 2
    for k in range(3):
        first = a.messages("launch")[k]
        a.exit(first["job"], 0, 0)
        a.wait_message("launch", count=3 + k)
    launched = [m["job"] for m in a.messages("launch")]
    assert launched == [j["id"] for j in jobs]  # FIFO within one tenant


def test_drf_between_two_tenants(controller, fake_agent):
    # Queue everything first, then let one 8-GPU node join: DRF gives each
    # tenant (weight 1) half of the GPUs.
    for _ in range(8):
        controller.submit({"command": ["a"], "gpus": 1, "cpus": "1"}, tenant="alice")
        controller.submit({"command": ["b"], "gpus": 1, "cpus": "1"}, tenant="bob")
    a = fake_agent("n1", gpus=8, cpus="64")
    a.wait_message("launch", count=8)
    running = controller.jobs("admin", "?state=running")
    by_tenant = {}
    for j in running:
        by_tenant[j["tenant"]] = by_tenant.get(j["tenant"], 0) + 1
    assert by_tenant == {"alice": 4, "bob": 4}
    st, body = controller.request("GET", "/v1/tenants", token=controller.admin_token)
    assert st == 200
    shares = {t["name"]: t for t in body["tenants"]}
    assert shares["alice"]["usage"]["gpus"] == 4 and shares["bob"]["usage"]["gpus"] == 4
    assert shares["alice"]["running"] == 4 and shares["alice"]["pending"] == 4
    assert shares["alice"]["dominant_share"] == pytest.approx(0.5)
    st, body = controller.request("GET", "/v1/tenants", token=controller.token("bob"))
    assert [t["name"] for t in body["tenants"]] == ["bob"]


# ---- logs, nodes, metrics ----

def test_logs_are_fetched_from_the_agent(controller, fake_agent):
    a = fake_agent("n1", gpus=8)
    pending = controller.submit({"command": ["x"], "gpus": 16 - 8 + 8, "tasks": 2})  # never fits
    job = controller.submit({"command": ["x"], "tasks": 2, "gpus": 1})
    a.wait_message("launch", job=job["id"], count=2)
    a.logs[(job["id"], 1)] = "hello from task 1\n"
    tok = controller.token("alice")
    st, body = controller.request("GET", "/v1/jobs/%d/logs?task=1" % job["id"], token=tok)
    assert st == 200, body
    assert body == {"job": job["id"], "task": 1, "offset": 0, "data": "hello from task 1\n",
                    "eof": True}
    st, body = controller.request("GET", "/v1/jobs/%d/logs?task=1&offset=6&limit=4" % job["id"],
                                  token=tok)
    assert st == 200 and body["data"] == "from" and body["offset"] == 6 and body["eof"] is False
    req = a.messages("logs")[-1]
    assert req["job"] == job["id"] and req["task"] == 1 and req["offset"] == 6 and req["limit"] == 4
    st, body = controller.request("GET", "/v1/jobs/%d/logs?task=0" % job["id"], token=tok)
    assert st == 404 and "no log" in err(body)["message"]
    st, body = controller.request("GET", "/v1/jobs/%d/logs?task=5" % job["id"], token=tok)
    assert st == 400 and err(body)["field"] == "task"
    st, body = controller.request("GET", "/v1/jobs/%d/logs" % pending["id"], token=tok)
    assert st == 409 and err(body)["code"] == "conflict"


def test_nodes_route(controller, fake_agent):
    fake_agent("n1", gpus=4, gpu_model="A100", gpu_memory="40Gi", cpus="32", memory="256Gi",
               pool="train", labels="rack=a")
    fake_agent("n2", gpus=0, cpus="16", memory="64Gi")
    nodes = {n["name"]: n for n in controller.nodes()}
    n1 = nodes["n1"]
    assert n1["state"] == "up" and n1["pool"] == "train" and n1["labels"] == "rack=a"
    assert n1["gpus"] == 4 and n1["gpu_model"] == "A100" and n1["gpu_memory"] == "40Gi"
    assert n1["cpus"] == "32" and n1["memory"] == "256Gi" and n1["free"]["gpus"] == 4
    assert n1["free"]["gpu_milli"] == [1000] * 4 and n1["tasks"] == 0 and n1["last_seen"] > 0
    assert nodes["n2"]["gpus"] == 0 and nodes["n2"]["gpu_model"] is None
    job = controller.submit({"command": ["x"], "gpu_share": "0.25", "pool": "train"})
    controller.wait_job(job["id"], "running")
    n1 = controller.node("n1")
    assert sorted(n1["free"]["gpu_milli"]) == [750, 1000, 1000, 1000] and n1["tasks"] == 1


def test_agent_with_bad_token_is_rejected(controller):
    from harness import FakeAgent
    f = FakeAgent(controller, "intruder", token="wrong")
    msg = f.connect()
    assert msg["type"] == "error" and "token" in msg["message"]
    f.close()
    assert controller.node("intruder") is None


def test_metrics(controller, fake_agent):
    fake_agent("n1", gpus=8)
    job = controller.submit({"command": ["x"], "gpus": 2})
    controller.wait_job(job["id"], "running")
    st, text = controller.request("GET", "/metrics", token=controller.admin_token)
    assert st == 200
    lines = text.splitlines()
    assert "# TYPE sluice_jobs gauge" in lines
    assert 'sluice_jobs{state="running"} 1' in lines
    assert 'sluice_nodes{state="up"} 1' in lines
    assert 'sluice_capacity{resource="gpus"} 8' in lines
    assert 'sluice_allocated{resource="gpus"} 2' in lines
    assert "sluice_submissions_total 1" in lines
    assert any(line.startswith("sluice_db_commits_total ") for line in lines)
    for line in lines:
        if line and not line.startswith("#"):
            name_labels, value = line.rsplit(" ", 1)
            float(value)


def test_keepalive_connection_serves_many_requests(controller):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", controller.port, timeout=10)
    hdrs = {"Authorization": "Bearer " + controller.token("alice"),
            "Content-Type": "application/json"}
    ids = []
    for i in range(20):
        conn.request("POST", "/v1/jobs", body=json.dumps({"command": ["x"], "name": "k%d" % i}),
                     headers=hdrs)
        r = conn.getresponse()
        assert r.status == 201
        ids.append(json.loads(r.read())["id"])
    conn.close()
    assert ids == sorted(ids) and len(set(ids)) == 20


# ---- the daemon's command line and config ----

def test_config_errors_name_the_line(tmp_path, build_dir):
    import os
    import subprocess
    binary = os.path.join(build_dir, "sluiced")
    if not os.access(binary, os.X_OK):
        pytest.skip("sluiced is not built")
    cases = [
        ("listen: 127.0.0.1:0\nscheduler:\n  queu: fifo\n", ":3:", "queu"),
        ("tenants:\n  - name: a\n    weight: zero\n", ":3:", "weight"),
        ("bogus: 1\n", ":1:", "bogus"),
        ("scheduler:\n  placement: nosuch\n", "", "nosuch"),
        ("tenants: [\n", "", ""),
        ("admin_token: same\ncluster_token: same\n", "", "must differ"),
    ]
    for text, line, word in cases:
        cfg = tmp_path / "bad.yaml"
        cfg.write_text(text)
        r = subprocess.run([binary, "--config", str(cfg), "--state", str(tmp_path / "x.db")],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 2, (text, r.stderr)
        assert line in r.stderr and word in r.stderr, (text, r.stderr)


def test_config_nested_a_million_deep_is_refused_at_once(tmp_path, build_dir):
    """A config of 1,000,000 "[" is refused with the line and column of the
    66th level; libyaml's own parse of that nesting is quadratic (it used
    to run for many minutes, found by fuzzing the config loader). The
    subprocess timeout only bounds a regression."""
    import os
    import subprocess
    binary = os.path.join(build_dir, "sluiced")
    if not os.access(binary, os.X_OK):
        pytest.skip("sluiced is not built")
    for text in ("[" * 1000000, "listen: " + "{a: " * 1000000 + "\n"):
        cfg = tmp_path / "deep.yaml"
        cfg.write_text(text)
        r = subprocess.run([binary, "--config", str(cfg), "--state", str(tmp_path / "x.db")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, r.stderr
        assert ":1:" in r.stderr and "too deep" in r.stderr, r.stderr


def test_config_with_300000_keys_names_its_duplicate_at_once(tmp_path, build_dir):
    """Duplicate keys are found by sorting, not by comparing every pair: a
    map of 300,000 keys (pairwise: minutes) is answered at once with the
    line of the first key that repeats an earlier one."""
    import os
    import subprocess
    binary = os.path.join(build_dir, "sluiced")
    if not os.access(binary, os.X_OK):
        pytest.skip("sluiced is not built")
    keys = ["k%d: 1\n" % i for i in range(300000)]
    keys.insert(200000, "k123: 2\n")  # line 200001 repeats line 124
    keys.append("k7: 3\n")
    cfg = tmp_path / "wide.yaml"
    cfg.write_text("".join(keys))
    r = subprocess.run([binary, "--config", str(cfg), "--state", str(tmp_path / "x.db")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert ':200001:1: duplicate key "k123"' in r.stderr, r.stderr


def test_help_lists_every_route(build_dir):
    import os
    import subprocess
    binary = os.path.join(build_dir, "sluiced")
    if not os.access(binary, os.X_OK):
        pytest.skip("sluiced is not built")
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10).stdout
    for route in ("GET    /healthz", "POST   /v1/jobs", "GET    /v1/jobs/{id}/logs",
                  "DELETE /v1/jobs/{id}", "GET    /v1/nodes", "GET    /v1/tenants",
                  "GET    /metrics"):
        assert route in out
    ver = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    assert ver.startswith("sluiced ")


def test_time_limit_is_enforced(controller, fake_agent):
    a = fake_agent("n1", gpus=8)
    job = controller.submit({"command": ["x"], "gpus": 1, "time_limit": 1})
    assert a.wait_message("launch", job=job["id"])[0]["time_limit"] == 1
    a.wait_message("kill", job=job["id"], timeout=20)
    j = controller.wait_job(job["id"], "failed")
    assert "time limit" in j["reason"]


def test_configured_pools_restrict_job_pools(controller_factory):
    ctl = controller_factory({"pools": ["default", {"name": "a100", "description": "old"}]})
    assert ctl.submit({"command": ["x"], "pool": "a100"})["pool"] == "a100"
    st, body = ctl.request("POST", "/v1/jobs", {"command": ["x"], "pool": "h200"},
                           token=ctl.token("alice"))
    assert st == 400 and err(body)["field"] == "pool"


def test_tenant_quota_holds_jobs_back(controller_factory):
    from harness import FakeAgent
    ctl = controller_factory(tenants=[{"name": "alice", "weight": 1, "quota": {"gpus": 2}},
                                      {"name": "bob", "weight": 1}])
    a = FakeAgent(ctl, "n1", gpus=8).start()
    jobs = [ctl.submit({"command": ["x"], "gpus": 1}) for _ in range(3)]
    a.wait_message("launch", count=2)
    j = ctl.job(jobs[2]["id"])
    assert j["state"] == "pending" and j["reason"]
    st, body = ctl.request("GET", "/v1/tenants", token=ctl.admin_token)
    alice = [t for t in body["tenants"] if t["name"] == "alice"][0]
    assert alice["quota"]["gpus"] == 2 and alice["usage"]["gpus"] == 2
    a.close()


# ---- GET /v1/jobs?view=table: the text table `sluice queue` prints ----

def parse_table(text):
    """The rows of a ?view=table reply as dicts keyed by the header's names.
    Columns are cut at the header words' positions, so this also checks
    that every row lines up under the header (two blanks between columns)."""
    import re
    lines = text.split("\n")
    assert lines[-1] == "", "the table ends with a newline"
    header = lines[0]
    cols = [(m.start(), m.group()) for m in re.finditer(r"\S+", header)]
    assert [n for _, n in cols] == ["ID", "NAME", "TENANT", "STATE", "TASKS", "EACH", "NODES",
                                    "TIME", "REASON"]
    rows = []
    for line in lines[1:-1]:
        row = {}
        for k, (start, name) in enumerate(cols):
            end = cols[k + 1][0] if k + 1 < len(cols) else None
            if k > 0:
                assert line[start - 2:start] == "  ", (name, line)
            row[name] = line[start:end].rstrip(" ") if end is not None else line[start:]
        rows.append(row)
    return rows


def table(controller, query="", who="admin"):
    st, body = controller.request("GET", "/v1/jobs?view=table" + query, token=controller.token(who))
    assert st == 200, (st, body)
    assert isinstance(body, str), body
    return parse_table(body)


def test_list_view_table_matches_the_job_objects(controller, fake_agent):
    import re
    fake_agent("n1", gpus=8)
    fake_agent("n2", gpus=8)
    gang = controller.submit({"name": "gang", "command": ["x"], "tasks": 2, "gpus": 8,
                              "cpus": "4", "memory": "16Gi"})
    wait_for(lambda: controller.job(gang["id"])["state"] == "running", what="gang running")
    share = controller.submit({"name": "entra\u00eenement", "command": ["x"], "gpu_share": "0.25",
                               "gpu_memory": "10Gi", "cpus": 0.5})
    bobs = controller.submit({"command": ["/bin/true"], "gpus": 1}, tenant="bob")
    gone = controller.submit({"command": ["x"], "gpus": 1})
    st, _ = controller.request("DELETE", "/v1/jobs/%d" % gone["id"], token=controller.admin_token)
    assert st == 200

    st, text = controller.request("GET", "/v1/jobs?view=table", token=controller.admin_token)
    assert st == 200 and text.startswith("ID  ")
    rows = parse_table(text)
    objs = controller.jobs("admin")
    assert [int(r["ID"]) for r in rows] == [j["id"] for j in objs]
    for r, j in zip(rows, objs):
        assert r["NAME"] == (j["name"] or "-")
        assert (r["TENANT"], r["STATE"], r["TASKS"]) == (j["tenant"], j["state"], str(j["tasks"]))
        gpu = j["gpu_share"] if j["gpu_share"] is not None else str(j["gpus"])
        assert r["EACH"] == "%s GPU, %s CPU, %s" % (gpu, j["cpus"], j["memory"])
        nodes = []
        for p in j["placement"]:
            if p["node"] and p["node"] not in nodes:
                nodes.append(p["node"])
        assert r["NODES"] == (",".join(nodes) or "-")
        assert r["REASON"] == j["reason"]
        assert re.fullmatch(r"-|\d+s|\d+m\d\ds|\d+h\d\dm|\d+d\d\dh", r["TIME"]), r["TIME"]
    by_id = {int(r["ID"]): r for r in rows}
    assert by_id[gang["id"]]["NODES"] in ("n1,n2", "n2,n1")
    assert by_id[share["id"]]["EACH"] == "%s GPU, 500m CPU, 1Gi" % share["gpu_share"]
    assert by_id[share["id"]]["STATE"] == "pending" and by_id[share["id"]]["REASON"]
    assert by_id[gone["id"]]["STATE"] == "cancelled"

    # A list of states, in the order of the job list: by id (the API pages by id, issue 8).
    rows = table(controller, "&state=pending,running")
    objs = controller.jobs("admin", "?state=pending,running")
    assert [int(r["ID"]) for r in rows] == [j["id"] for j in objs]
    assert [j["id"] for j in objs] == sorted([j["id"] for j in controller.jobs("admin", "?state=pending")] +
                                             [j["id"] for j in controller.jobs("admin", "?state=running")])
    assert {r["STATE"] for r in rows} == {"pending", "running"}
    assert gone["id"] not in [int(r["ID"]) for r in rows]
    # Filters: limit, tenant, a tenant token sees only its own jobs.
    assert len(table(controller, "&limit=2")) == 2
    assert [int(r["ID"]) for r in table(controller, "&tenant=bob")] == [bobs["id"]]
    assert {r["TENANT"] for r in table(controller, who="alice")} == {"alice"}
    # Nothing listed: the header alone.
    st, text = controller.request("GET", "/v1/jobs?view=table&state=succeeded",
                                  token=controller.admin_token)
    assert st == 200 and text.count("\n") == 1 and text.split() == [
        "ID", "NAME", "TENANT", "STATE", "TASKS", "EACH", "NODES", "TIME", "REASON"]


def test_list_view_and_state_list_are_validated(controller):
    for q, field in (("?view=tables", "view"), ("?view=", "view"), ("?state=pending,bogus", "state"),
                     ("?state=pending,", "state"), ("?view=table&state=run", "state")):
        st, body = controller.request("GET", "/v1/jobs" + q, token=controller.admin_token)
        assert st == 400 and err(body)["field"] == field, (q, body)
        assert err(body)["code"] == "invalid_field"
    st, body = controller.request("GET", "/v1/jobs?view=table&tenant=bob", token=controller.token("alice"))
    assert st == 403


def test_list_view_table_keeps_each_job_on_one_line(controller, fake_agent):
    a = fake_agent("n1", gpus=8)
    job = controller.submit({"name": "two\u00e9", "command": ["x"], "gpus": 1})
    a.wait_message("launch", job=job["id"])
    a.send({"type": "failed", "job": job["id"], "task": 0, "reason": "line one\nline two\tend"})
    j = controller.wait_job(job["id"], "failed")
    assert "line one\nline two" in j["reason"]
    rows = table(controller)
    assert len(rows) == 1
    assert rows[0]["REASON"] == j["reason"].replace("\n", "?").replace("\t", "?")
    assert rows[0]["NAME"] == "two\u00e9"


# ---- finished jobs leave memory (job_retention, max_finished_jobs) ----

def _finish(ctl, agent, spec, code=0, tenant="alice"):
    """Submits spec, waits for its launch on agent, exits its tasks with
    code and waits until the job has finished; returns the job object."""
    jid = ctl.submit(spec, tenant=tenant)["id"]
    launches = agent.wait_message("launch", job=jid, count=spec.get("tasks", 1))
    for m in launches:
        agent.exit(jid, m["task"], code=code)
    return ctl.wait_job(jid, ["succeeded", "failed"])


def _listed(ctl, query="", who="admin"):
    return [j["id"] for j in ctl.jobs(who, query)]


def test_retention_0_forgets_finished_jobs_but_serves_them_by_id(controller_factory, fake_agent):
    ctl = controller_factory({"job_retention": 0})
    a = fake_agent("n1", ctl=ctl, gpus=8)
    ok = ctl.submit({"command": ["ok"], "tasks": 2, "gpus": 2})
    bad = ctl.submit({"command": ["bad"], "gpus": 1}, tenant="bob")
    for m in a.wait_message("launch", job=ok["id"], count=2):
        a.exit(ok["id"], m["task"], code=0)
    a.wait_message("launch", job=bad["id"])
    a.exit(bad["id"], 0, code=3)
    wait_for(lambda: not {ok["id"], bad["id"]} & set(_listed(ctl)), what="finished jobs forgotten")
    assert _listed(ctl, "?state=succeeded,failed") == []

    # By id they come back from SQLite: the same object, exit codes and placement.
    j = ctl.job(ok["id"])
    assert j["state"] == "succeeded" and j["exit_code"] == 0 and j["tenant"] == "alice"
    assert [(p["task"], p["node"], p["state"], p["exit_code"]) for p in j["placement"]] == \
        [(0, "n1", "exited", 0), (1, "n1", "exited", 0)]
    assert sorted(len(p["gpus"]) for p in j["placement"]) == [2, 2]
    assert j["start_time"] and j["end_time"] >= j["start_time"]
    b = ctl.job(bad["id"], who="bob")
    assert b["state"] == "failed" and b["exit_code"] == 3 and "exited with code 3" in b["reason"]
    assert b["placement"][0]["exit_code"] == 3

    # The same permissions as before: a tenant sees only its own.
    st, body = ctl.request("GET", "/v1/jobs/%d" % bad["id"], token=ctl.token("alice"))
    assert st == 403 and err(body)["code"] == "forbidden"
    st, body = ctl.request("GET", "/v1/jobs/%d/logs" % bad["id"], token=ctl.token("alice"))
    assert st == 403
    st, body = ctl.request("DELETE", "/v1/jobs/%d" % ok["id"], token=ctl.token("bob"))
    assert st == 403
    # Cancelling a forgotten job: 409, as for any finished job; unknown ids stay 404.
    st, body = ctl.request("DELETE", "/v1/jobs/%d" % ok["id"], token=ctl.token("alice"))
    assert st == 409 and err(body)["code"] == "conflict" and "succeeded" in err(body)["message"]
    st, body = ctl.request("GET", "/v1/jobs/%d" % (bad["id"] + 1), token=ctl.admin_token)
    assert st == 404
    # Logs are still fetched from the agent that ran the task.
    a.logs[(ok["id"], 1)] = "rank 1 done\n"
    st, body = ctl.request("GET", "/v1/jobs/%d/logs?task=1" % ok["id"], token=ctl.token("alice"))
    assert st == 200 and body["data"] == "rank 1 done\n" and body["eof"] is True

    st, text = ctl.request("GET", "/metrics", token=ctl.admin_token)
    assert "sluice_jobs_forgotten_total 2" in text.splitlines()
    assert 'sluice_jobs{state="succeeded"} 0' in text.splitlines()


def test_cancelled_pending_job_is_answered_then_forgotten(controller_factory):
    ctl = controller_factory({"job_retention": 0})
    jid = ctl.submit({"command": ["x"], "gpus": 1})["id"]  # no node: stays pending
    st, body = ctl.request("DELETE", "/v1/jobs/%d" % jid, token=ctl.token("alice"))
    assert st == 200 and body["id"] == jid and body["state"] == "cancelled"
    wait_for(lambda: jid not in _listed(ctl), what="cancelled job forgotten")
    assert ctl.job(jid, who="alice")["state"] == "cancelled"


def test_max_finished_jobs_keeps_the_newest(controller_factory, fake_agent):
    ctl = controller_factory({"max_finished_jobs": 3})
    a = fake_agent("n1", ctl=ctl, gpus=8)
    ids = [_finish(ctl, a, {"command": ["j%d" % i], "gpus": 1})["id"] for i in range(6)]
    wait_for(lambda: _listed(ctl) == ids[3:], what="the newest 3 finished jobs kept")
    running = ctl.submit({"command": ["still"], "gpus": 1})["id"]
    a.wait_message("launch", job=running)
    assert _listed(ctl) == ids[3:] + [running]  # by id (issue 8: paged by id)
    assert _listed(ctl, "?state=succeeded&limit=2") == ids[3:5]
    for jid in ids[:3]:
        assert ctl.job(jid)["state"] == "succeeded"


# ---- HEAD, 405 and the Allow header, /metrics as a whole ----

def _raw(controller, method, path, token=None):
    """One request with http.client; returns (status, headers dict, body bytes)."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", controller.port, timeout=10)
    try:
        hdrs = {"Authorization": "Bearer " + token} if token else {}
        conn.request(method, path, headers=hdrs)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def test_head_is_answered_as_get_without_a_body(controller):
    st, hdrs, body = _raw(controller, "HEAD", "/healthz")
    assert st == 200 and body == b""
    assert "json" in hdrs.get("content-type", "")
    # HEAD goes through the same auth as GET.
    st, hdrs, body = _raw(controller, "HEAD", "/v1/jobs")
    assert st == 401 and body == b""
    assert hdrs.get("www-authenticate") == "Bearer"
    for path in ("/v1/jobs", "/v1/nodes", "/v1/tenants", "/metrics"):
        st, hdrs, body = _raw(controller, "HEAD", path, token=controller.admin_token)
        assert (st, body) == (200, b""), path
    st, _, body = _raw(controller, "HEAD", "/v1/jobs/999", token=controller.admin_token)
    assert (st, body) == (404, b"")


@pytest.mark.parametrize("method,path,allow", [
    ("PUT", "/v1/jobs/1", "GET, DELETE"),
    ("POST", "/v1/jobs/1", "GET, DELETE"),
    ("DELETE", "/v1/jobs", "POST, GET"),
    ("POST", "/healthz", "GET"),
    ("DELETE", "/v1/nodes", "GET"),
    ("PATCH", "/v1/tenants", "GET"),
    ("POST", "/metrics", "GET"),
    ("DELETE", "/v1/jobs/1/logs", "GET"),
])
def test_405_names_the_allowed_methods(controller, method, path, allow):
    st, hdrs, body = _raw(controller, method, path, token=controller.admin_token)
    assert st == 405
    assert hdrs.get("allow") == allow
    e = json.loads(body)["error"]
    assert e["code"] == "method_not_allowed"
    assert e["message"] == "%s %s: allowed methods: %s" % (method, path, allow)
    # A path that no route matches is 404 whatever the method.
    st, hdrs, _ = _raw(controller, method, path + "/nope", token=controller.admin_token)
    assert st == 404 and "allow" not in hdrs


def test_metrics_lists_every_declared_metric_and_counts_requests(controller, build_dir):
    import os
    import subprocess
    binary = os.path.join(build_dir, "sluiced")
    helptext = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10).stdout
    declared, tenant_sees = {}, set()
    for line in helptext.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].startswith("sluice_") and parts[1] in ("gauge", "counter",
                                                                                 "histogram"):
            declared[parts[0]] = parts[1]
            if parts[2] != "[cluster]":
                tenant_sees.add(parts[0])
    assert len(declared) >= 20 and "sluice_http_requests_total" in declared

    def scrape(token):
        st, hdrs, body = _raw(controller, "GET", "/metrics", token=token)
        assert st == 200
        assert hdrs["content-type"].startswith("text/plain; version=0.0.4")
        vals, types = {}, {}
        for line in body.decode().splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split()
                types[name] = kind
            elif line and not line.startswith("#"):
                key, v = line.rsplit(" ", 1)
                vals[key] = float(v)
        return vals, types

    # A tenant token may read /metrics too (every route but /healthz takes
    # one), but sees only its own tenant's series and no cluster-wide family.
    va, types = scrape(controller.token("alice"))
    assert set(types) == tenant_sees and "sluice_tenant_gpus" in types
    assert not any('tenant="bob"' in k for k in va)
    v1, types = scrape(controller.admin_token)
    assert types == declared  # the help and the endpoint come from one table
    # Per-job efficiency gauges have a series only while a job runs (issue
    # 10, docs/metrics-agent.md); none runs here.
    per_running_job = {"sluice_job_gpu_utilization_ratio", "sluice_job_gpu_memory_peak_bytes",
                       "sluice_job_memory_peak_bytes"}
    # Per-GPU health series exist once a node with GPUs has registered; none has.
    per_running_job |= {"sluice_gpu_health", "sluice_gpu_fenced"}
    for name in set(declared) - per_running_job:
        sample = name + "_count" if declared[name] == "histogram" else name
        assert any(k == sample or k.startswith(sample + "{") for k in v1), name
    assert v1['sluice_tenant_dominant_share{tenant="alice"}'] == 0
    assert v1['sluice_jobs{state="pending"}'] == 0
    # Three more requests, one of them an error, then this scrape: counters move by exactly that.
    assert controller.request("GET", "/healthz")[0] == 200
    assert controller.request("GET", "/v1/nope", token=controller.admin_token)[0] == 404
    job = controller.submit({"command": ["x"], "gpus": 1})
    v2, _ = scrape(controller.admin_token)
    assert v2["sluice_http_requests_total"] == v1["sluice_http_requests_total"] + 4
    assert v2["sluice_http_errors_total"] == v1["sluice_http_errors_total"] + 1
    assert v2["sluice_submissions_total"] == v1["sluice_submissions_total"] + 1
    assert v2['sluice_jobs{state="pending"}'] == 1  # no node: it waits
    assert controller.job(job["id"])["state"] == "pending"
