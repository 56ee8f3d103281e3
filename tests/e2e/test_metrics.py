"""
test_metrics.py - sluiced's /metrics families of issue 10 (docs/metrics.md)
against a real controller and scripted agents (harness.FakeAgent): jobs
completed by tenant and state, the queueing and scheduling delay
histograms, pending jobs and GPUs per tenant, GPU allocation and
fragmentation, and the fairness figures in a starved and a fair situation;
what each token sees (a tenant's its own tenant's series only, the
monitoring token every tenant's and nothing else).
Every scrape is parsed as the Prometheus text format (0.0.4) by a strict
parser below, and checked by `promtool check metrics` when promtool is
installed (Debian's prometheus package, `make deps`).
"""

import hashlib
import math
import re
import secrets
import shutil
import subprocess
import time

import pytest

import harness
from harness import wait_for

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(r"^(%s)(?:\{(.*)\})? (\S+)$" % NAME)
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def parse(text):
    """Parses the text format strictly: every family has HELP and TYPE
    before its samples, every sample belongs to a declared family (a
    histogram's through _bucket, _sum and _count), labels are well formed
    and unique, values are floats. Histograms: per series, buckets
    cumulative in ascending le, +Inf present and equal to _count. Returns
    ({family: type}, {(name, frozenset(labels.items())): value})."""
    types, helps, values = {}, set(), {}
    assert text.endswith("\n")
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            assert re.fullmatch(NAME, name) and name not in helps, line
            helps.add(name)
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert name in helps and name not in types, line
            assert kind in ("counter", "gauge", "histogram"), line
            types[name] = kind
        else:
            assert line and not line.startswith("#"), repr(line)
            m = SAMPLE.match(line)
            assert m, line
            name, labels, value = m.group(1), {}, float(m.group(3))
            rest = m.group(2) or ""
            while rest:
                lm = LABEL.match(rest)
                assert lm, line
                assert lm.group(1) not in labels, line
                labels[lm.group(1)] = lm.group(2)
                rest = rest[lm.end():]
            fam = name
            for suffix in ("_bucket", "_sum", "_count"):
                if name.endswith(suffix) and types.get(name[:-len(suffix)]) == "histogram":
                    fam = name[:-len(suffix)]
            assert fam in types, "sample before its TYPE: " + line
            if types[fam] == "histogram":
                assert fam != name, "a histogram's samples end in _bucket, _sum or _count: " + line
                assert (name.endswith("_bucket")) == ("le" in labels), line
            if types[fam] == "counter":
                assert name.endswith("_total") and value >= 0, line
            key = (name, frozenset(labels.items()))
            assert key not in values, "duplicate series: " + line
            values[key] = value
    for fam, kind in types.items():
        if kind != "histogram":
            continue
        series = {}
        for (name, labels), v in values.items():
            if name == fam + "_bucket":
                rest = frozenset((k, x) for k, x in labels if k != "le")
                le = dict(labels)["le"]
                series.setdefault(rest, []).append((math.inf if le == "+Inf" else float(le), v))
        assert series, fam
        for rest, buckets in series.items():
            buckets.sort()
            assert buckets[-1][0] == math.inf, fam
            counts = [c for _, c in buckets]
            assert counts == sorted(counts), (fam, buckets)
            assert values[(fam + "_count", rest)] == counts[-1]
            assert values[(fam + "_sum", rest)] >= 0
    return types, values


def scrape(ctl, token=None):
    """One scrape (with the admin token unless token says): parsed, and
    checked by promtool when it is installed. Returns get(name, **labels)
    -> value (KeyError if absent), with get.types and get.values."""
    st, text = ctl.request("GET", "/metrics", token=token or ctl.admin_token)
    assert st == 200, (st, text)
    types, values = parse(text)
    promtool = shutil.which("promtool")
    if promtool:
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr

    def get(name, **labels):
        return values[(name, frozenset(labels.items()))]

    get.types = types
    get.values = values
    return get


def declared(build_dir):
    """{family: who sees it} from `sluiced --help`: "[tenant]" (a tenant
    token, its own series), "[all]" (every token), "[cluster]" (the admin
    and the monitoring token)."""
    import os
    out = subprocess.run([os.path.join(build_dir, "sluiced"), "--help"], capture_output=True,
                         text=True, timeout=10).stdout
    fams = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].startswith("sluice_") and parts[1] in (
                "counter", "gauge", "histogram"):
            fams[parts[0]] = parts[2]
    return fams


def tenant_labels(get):
    return {v for (_, labels) in get.values for k, v in labels if k == "tenant"}


THREE = [{"name": "alice", "weight": 1}, {"name": "bob", "weight": 1},
         {"name": "carol", "weight": 2}]


def test_a_tenant_token_sees_its_own_tenants_series_only(controller_factory, build_dir):
    """Three tenants with running, pending and finished jobs. A tenant's
    token on /metrics gets its own tenant's series of the per-tenant
    families, the cluster's hardware (nodes, capacity) and the uptime, and
    nothing else: no other tenant's label value, and no cluster-wide total
    (jobs, queue, allocation, fairness, request counters) from which the
    others' figures could be worked out. The admin token sees everything."""
    ctl = controller_factory(tenants=THREE)
    f = harness.FakeAgent(ctl, "n1", gpus=4).start()
    try:
        ids = {}
        for t in ("alice", "bob", "carol"):
            ids[t] = ctl.submit({"command": ["x"], "gpus": 1}, tenant=t)["id"]
            f.wait_message("launch", job=ids[t])
            ctl.submit({"command": ["x"], "gpus": 8}, tenant=t)  # waits: more than the node
        f.exit(ids["bob"], 0, code=0)
        ctl.wait_job(ids["bob"], "succeeded")
        for t in ("alice", "bob", "carol"):
            get = scrape(ctl, ctl.token(t))
            assert tenant_labels(get) == {t}, (t, tenant_labels(get))
            assert "sluice_queue_length" not in get.types and "sluice_jobs" not in get.types
            assert get("sluice_tenant_pending_jobs", tenant=t) == 1
            assert get("sluice_capacity", resource="gpus") == 4
        # Exactly the families `sluiced --help` marks for every token or a tenant's.
        fams = declared(build_dir)
        assert set(fams.values()) == {"[tenant]", "[all]", "[cluster]"}, fams
        seen_by_tenant = {n for n, who in fams.items() if who != "[cluster]"}
        assert {"sluice_nodes", "sluice_capacity"} <= seen_by_tenant
        get = scrape(ctl, ctl.token("carol"))
        assert set(get.types) == seen_by_tenant, set(get.types) ^ seen_by_tenant
        assert scrape(ctl, ctl.token("bob"))("sluice_jobs_completed_total", tenant="bob",
                                             state="succeeded") == 1
        everything = scrape(ctl)
        assert tenant_labels(everything) == {"alice", "bob", "carol"}
        assert set(everything.types) == set(fams)
        assert everything("sluice_queue_length") == 3
    finally:
        f.close()


def test_the_monitoring_token_reads_every_tenant_and_changes_nothing(controller_factory,
                                                                    build_dir, tmp_path):
    """The monitoring token (stored hashed here) reads /metrics and the
    report for every tenant and gets 403 on every other route; it must be
    a token of its own."""
    mon = "mon-" + secrets.token_hex(8)
    ctl = controller_factory(tenants=THREE, config_overrides={
        "monitoring_token": "sha256:" + hashlib.sha256(mon.encode()).hexdigest()})
    for t in ("alice", "bob", "carol"):
        ctl.submit({"command": ["x"], "gpus": 1}, tenant=t)
    get = scrape(ctl, mon)
    assert tenant_labels(get) == {"alice", "bob", "carol"}
    assert set(get.types) == set(declared(build_dir))
    assert get("sluice_tenant_pending_jobs", tenant="carol") == 1
    st, body = ctl.request("GET", "/v1/report", token=mon)
    assert st == 200 and body["tenant"] is None, (st, body)
    assert {t["name"] for t in body["tenants"]} == {"alice", "bob", "carol"}
    for method, path, body in (("GET", "/v1/jobs", None), ("GET", "/v1/jobs/1", None),
                               ("POST", "/v1/jobs", {"command": ["x"], "tenant": "alice"}),
                               ("DELETE", "/v1/jobs/1", None), ("GET", "/v1/tenants", None),
                               ("POST", "/v1/nodes/drain", {"node": "n1"})):
        st, answer = ctl.request(method, path, body, token=mon)
        assert st == 403 and answer["error"]["code"] == "forbidden", (method, path, st, answer)
        assert "monitoring token" in answer["error"]["message"], answer
    assert ctl.job(1)["state"] == "pending"
    bad = harness.Controller(tmp_path / "bad")
    bad.config["monitoring_token"] = bad.admin_token
    bad._write_config()
    with pytest.raises(AssertionError, match="monitoring_token must be non-empty and differ"):
        bad.start(timeout=5)
    bad.stop()


def test_metrics_issue10_families_are_declared(controller):
    get = scrape(controller)
    expect = {
        "sluice_jobs_completed_total": "counter",
        "sluice_job_queueing_delay_seconds": "histogram",
        "sluice_job_scheduling_delay_seconds": "histogram",
        "sluice_drf_fairness_ratio": "gauge",
        "sluice_jain_fairness_index": "gauge",
        "sluice_tenant_share_deficit_ratio": "gauge",
        "sluice_gpu_allocation_ratio": "gauge",
        "sluice_gpu_fragmentation_ratio": "gauge",
        "sluice_tenant_pending_jobs": "gauge",
        "sluice_tenant_pending_gpus": "gauge",
    }
    for name, kind in expect.items():
        assert get.types[name] == kind, name
    # An empty cluster: nothing waits, nothing is allocated, all is fair.
    assert get("sluice_drf_fairness_ratio") == 1
    assert get("sluice_jain_fairness_index") == 1
    assert get("sluice_gpu_allocation_ratio") == 0
    assert get("sluice_gpu_fragmentation_ratio") == 0
    # Series exist for every configured tenant (and only those) from the start.
    for t in ("alice", "bob"):
        for s in ("succeeded", "failed", "cancelled"):
            assert get("sluice_jobs_completed_total", tenant=t, state=s) == 0
        assert get("sluice_job_queueing_delay_seconds_count", tenant=t) == 0
        assert get("sluice_job_queueing_delay_seconds_bucket", tenant=t, le="86400") == 0
        assert get("sluice_job_scheduling_delay_seconds_bucket", tenant=t, le="0.0001") == 0
        assert get("sluice_tenant_share_deficit_ratio", tenant=t) == 0
    with pytest.raises(KeyError):
        get("sluice_tenant_pending_jobs", tenant="carol")


def test_metrics_completions_and_delay_histograms(controller, fake_agent):
    # a1 waits for a node for at least 1.2 s: its queueing delay is over 1 s.
    a1 = controller.submit({"command": ["x"], "gpus": 1})
    time.sleep(1.2)
    f = fake_agent("n1", gpus=8)
    f.wait_message("launch", job=a1["id"])
    b1 = controller.submit({"command": ["x"], "gpus": 1}, tenant="bob")
    f.wait_message("launch", job=b1["id"])
    a2 = controller.submit({"command": ["x"], "gpus": 16})  # more than any node: waits
    f.exit(a1["id"], 0, code=0)
    f.exit(b1["id"], 0, code=3)
    controller.wait_job(a1["id"], "succeeded")
    controller.wait_job(b1["id"], "failed")
    st, _ = controller.request("DELETE", "/v1/jobs/%d" % a2["id"], token=controller.token("alice"))
    assert st in (200, 202)
    controller.wait_job(a2["id"], "cancelled")

    get = scrape(controller)
    done = {(t, s): get("sluice_jobs_completed_total", tenant=t, state=s)
            for t in ("alice", "bob") for s in ("succeeded", "failed", "cancelled")}
    assert done == {("alice", "succeeded"): 1, ("alice", "failed"): 0, ("alice", "cancelled"): 1,
                    ("bob", "succeeded"): 0, ("bob", "failed"): 1, ("bob", "cancelled"): 0}

    q = "sluice_job_queueing_delay_seconds"
    # One start each (a2 never started): alice's above 1 s, so not in le="1".
    assert get(q + "_count", tenant="alice") == 1
    assert get(q + "_count", tenant="bob") == 1
    assert get(q + "_bucket", tenant="alice", le="1") == 0
    assert get(q + "_bucket", tenant="alice", le="86400") == 1
    assert get(q + "_bucket", tenant="alice", le="+Inf") == 1
    assert get(q + "_sum", tenant="alice") >= 1.2
    assert get(q + "_sum", tenant="bob") <= get(q + "_sum", tenant="alice")

    s = "sluice_job_scheduling_delay_seconds"
    for t in ("alice", "bob"):
        assert get(s + "_count", tenant=t) == 1
        assert get(s + "_bucket", tenant=t, le="+Inf") == 1
        assert get(s + "_sum", tenant=t) >= 0
    # Nothing waits or runs any more.
    assert get("sluice_tenant_pending_jobs", tenant="alice") == 0
    assert get("sluice_gpu_allocation_ratio") == 0


def test_metrics_pending_allocation_fragmentation(controller, fake_agent):
    f = fake_agent("n1", gpus=8)
    run = [controller.submit({"command": ["x"], "gpus": 1}) for _ in range(3)]
    for j in run:
        f.wait_message("launch", job=j["id"])
    get = scrape(controller)
    assert get("sluice_gpu_allocation_ratio") == 3 / 8
    assert get("sluice_gpu_fragmentation_ratio") == 0  # nothing pending
    assert get("sluice_tenant_pending_jobs", tenant="alice") == 0
    # bob's 2-GPU job fits (5 of 8 allocated); then three 8-GPU jobs wait,
    # and the 3 free GPUs are of no use to them (FGD: the node has fewer
    # usable GPUs than the shape needs, so all its free GPUs are
    # fragmented): 3 / 8.
    b = controller.submit({"command": ["x"], "gpus": 2, "cpus": "4"}, tenant="bob")
    f.wait_message("launch", job=b["id"])
    for _ in range(2):
        controller.submit({"command": ["x"], "gpus": 8})
    controller.submit({"command": ["x"], "gpus": 8}, tenant="bob")

    def settled():
        g = scrape(controller)
        return g if g("sluice_tenant_pending_jobs", tenant="alice") == 2 else None

    get = wait_for(settled, what="alice's two jobs pending")
    assert get("sluice_gpu_allocation_ratio") == 5 / 8
    assert get("sluice_tenant_pending_jobs", tenant="bob") == 1
    assert get("sluice_tenant_pending_gpus", tenant="alice") == 16
    assert get("sluice_tenant_pending_gpus", tenant="bob") == 8
    assert get("sluice_gpu_fragmentation_ratio") == pytest.approx(3 / 8)
    # A restart starts the counters again and rebuilds the pending gauges
    # from the store.
    controller.restart()
    get = scrape(controller)
    assert get("sluice_tenant_pending_jobs", tenant="alice") == 2
    assert get("sluice_tenant_pending_gpus", tenant="bob") == 8
    assert get("sluice_job_queueing_delay_seconds_count", tenant="alice") == 0


def test_metrics_fairness_starved_then_fair(controller, fake_agent):
    f = fake_agent("n1", gpus=8)
    alice = [controller.submit({"command": ["x"], "gpus": 1}) for _ in range(12)]
    for j in alice[:8]:
        f.wait_message("launch", job=j["id"])
    bob = [controller.submit({"command": ["x"], "gpus": 1}, tenant="bob") for _ in range(2)]

    def pending(get, t):
        return get("sluice_tenant_pending_jobs", tenant=t)

    get = wait_for(lambda: (lambda g: g if pending(g, "bob") == 2 else None)(scrape(controller)),
                   what="bob's jobs pending")
    # Starved: alice holds all 8 GPUs and wants 12; bob wants 2 and holds
    # none. Progressive filling owes bob 2/8 and alice the other 6/8, so
    # bob's held / fair share is 0 (the ratio) and alice's 8/6; Jain's
    # index of (4/3, 0) is 1/2.
    assert pending(get, "alice") == 4
    assert get("sluice_drf_fairness_ratio") == 0
    assert get("sluice_jain_fairness_index") == pytest.approx(0.5)
    assert get("sluice_tenant_share_deficit_ratio", tenant="bob") == pytest.approx(0.25)
    assert get("sluice_tenant_share_deficit_ratio", tenant="alice") == pytest.approx(-0.25)

    # Four of alice's jobs end: DRF gives bob his two GPUs first, then
    # alice two more. alice (6 held, 2 pending) holds the 6/8 she is owed.
    for j in alice[:4]:
        f.exit(j["id"], 0, code=0)
    for j in bob:
        f.wait_message("launch", job=j["id"])

    def fair():
        g = scrape(controller)
        return g if pending(g, "alice") == 2 and pending(g, "bob") == 0 else None

    get = wait_for(fair, what="alice with 2 pending, bob with none")
    assert get("sluice_drf_fairness_ratio") == pytest.approx(1)
    assert get("sluice_jain_fairness_index") == pytest.approx(1)
    assert get("sluice_tenant_share_deficit_ratio", tenant="alice") == pytest.approx(0)
    assert get("sluice_tenant_share_deficit_ratio", tenant="bob") == pytest.approx(0)
    assert get("sluice_jobs_completed_total", tenant="alice", state="succeeded") == 4


def test_metrics_node_failure_handling_histogram(controller_factory, fake_agent):
    """sluice_node_failure_handling_seconds (issue 14): one observation per
    node declared down, none before; checked by the strict parser and
    promtool like every scrape."""
    ctl = controller_factory(config_overrides={"node_timeout": 1, "heartbeat": 1})
    h = "sluice_node_failure_handling_seconds"
    get = scrape(ctl)
    assert get.types[h] == "histogram"
    assert get(h + "_count") == 0 and get(h + "_bucket", le="+Inf") == 0 and get(h + "_sum") == 0
    f = fake_agent("n1", ctl=ctl, gpus=8)
    f.start_heartbeats(0.2)
    jobs = [ctl.submit({"command": ["x"], "gpus": 1}) for _ in range(3)]
    for j in jobs:
        ctl.wait_job(j["id"], "running")
    f.close()  # no more heartbeats: node_timeout later it is down
    ctl.wait_node("n1", "down", timeout=20)
    get = scrape(ctl)
    assert get("sluice_node_failures_total") == 1
    assert get(h + "_count") == 1 and get(h + "_bucket", le="+Inf") == 1
    assert get(h + "_bucket", le="86400") == 1  # a day: no handling takes that long
    assert get(h + "_sum") >= 0
    for j in jobs:
        assert ctl.job(j["id"])["requeues"] == 1
