"""
test_deploy_prometheus.py - a real Prometheus scrapes a running sluiced.

Debian's prometheus binary is started on 127.0.0.1 (a free port, a
temporary TSDB, a 1 s scrape interval) with the scrape settings of
deploy/prometheus/prometheus.yml (the monitoring token from a file, honor_labels)
pointed at a controller with a real agent, and the rules of
sluice_alerts.yml loaded. Through Prometheus's HTTP API the test checks
that every target is up with no scrape error, that the rules loaded, and
that the values Prometheus stored are those of the controller's own
/metrics. When this build's agent has --metrics-listen, its exporter is
scraped too. A small exporter written here serves GPU series with and
without a `job` label, to check what honor_labels makes of them (the
reason prometheus.yml sets it). The Prometheus process is stopped by PID.
"""

import http.server
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import urllib.parse
import urllib.request

import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

RULES = os.path.join(harness.REPO, "deploy", "prometheus", "sluice_alerts.yml")

# Families whose samples do not change between two scrapes of an idle
# controller (counters of requests, cycles and time do).
STABLE = ("sluice_capacity", "sluice_allocated", "sluice_nodes", "sluice_jobs",
          "sluice_submissions_total", "sluice_jobs_started_total", "sluice_tasks_launched_total",
          "sluice_tenant_gpus", "sluice_queue_length")

FAKE_EXPOSITION = (
    "# HELP sluice_gpu_utilization_ratio GPU utilisation (test exporter).\n"
    "# TYPE sluice_gpu_utilization_ratio gauge\n"
    'sluice_gpu_utilization_ratio{node="fake",gpu="0",uuid="GPU-a",model="H100",job="42",tenant="alice"} 0.25\n'
    'sluice_gpu_utilization_ratio{node="fake",gpu="1",uuid="GPU-b",model="H100",job="",tenant=""} 0\n')


class _Exporter(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = FAKE_EXPOSITION.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def parse_metrics(text, families):
    """{(name, frozenset(labels)): value} for the samples of families."""
    out = {}
    for ln in text.splitlines():
        if not ln or ln.startswith("#"):
            continue
        series, value = ln.rsplit(" ", 1)
        name = series.split("{", 1)[0]
        if name not in families:
            continue
        labels = {}
        if "{" in series:
            for kv in series[series.index("{") + 1:-1].split(","):
                k, v = kv.split("=", 1)
                labels[k] = json.loads(v)
        out[(name, frozenset(labels.items()))] = float(value)
    return out


class Prometheus:
    def __init__(self, tmp, config):
        self.port = harness.free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.cfg = os.path.join(tmp, "prometheus.yml")
        shutil.copy(RULES, os.path.join(tmp, "sluice_alerts.yml"))
        with open(self.cfg, "w") as f:
            yaml.safe_dump(config, f)
        self.log_path = os.path.join(tmp, "prometheus.log")
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [shutil.which("prometheus"), "--config.file=" + self.cfg,
             "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.port,
             "--storage.tsdb.retention.time=1h"],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")[-4000:]

    def api(self, path, **params):
        q = ("?" + urllib.parse.urlencode(params)) if params else ""
        with urllib.request.urlopen(self.url + path + q, timeout=5) as r:
            body = json.loads(r.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr):
        return self.api("/api/v1/query", query=expr)["result"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()


@pytest.fixture
def stack(tmp_path, controller_factory):
    if shutil.which("prometheus") is None:
        pytest.skip("prometheus is not installed (Debian package prometheus; `make deps`)")
    # Prometheus scrapes with the monitoring token, as deploy/prometheus/
    # prometheus.yml says: it reads every tenant's series and nothing more.
    ctl = controller_factory(config_overrides={"monitoring_token": "mon-" + secrets.token_hex(8)})
    agents = []
    agent_help = subprocess.run([os.path.join(harness.build_dir(), "sluice-agent"), "--help"],
                                capture_output=True, text=True).stdout
    exporter_port = None
    if "--metrics-listen" in agent_help:
        # The exporter reads its GPUs through the fake NVML of the fixtures.
        exporter_port = harness.free_port()
        libdir = u.build_fake_nvml(tmp_path / "nvml")
        a = harness.Agent(ctl, "n1", gpus=0, env={"LD_LIBRARY_PATH": str(libdir),
                                                  "FAKE_NVML_COUNT": "2"},
                          extra_args=["--metrics-listen", "127.0.0.1:%d" % exporter_port])
    else:
        a = harness.Agent(ctl, "n1", gpus=2)
    a.start()
    agents.append(a)
    # A finished job, so that the job and task counters are not all 0.
    jid = ctl.submit({"command": ["true"], "gpus": 1})["id"]
    ctl.wait_job(jid, "succeeded")
    fake = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Exporter)
    threading.Thread(target=fake.serve_forever, daemon=True).start()
    token = tmp_path / "sluice-token"
    token.write_text(ctl.config["monitoring_token"] + "\n")
    os.chmod(token, 0o600)
    scrape = [
        {"job_name": "sluiced", "honor_labels": True, "metrics_path": "/metrics",
         "authorization": {"type": "Bearer", "credentials_file": str(token)},
         "static_configs": [{"targets": ["127.0.0.1:%d" % ctl.port]}]},
        {"job_name": "fake-exporter", "honor_labels": True,
         "static_configs": [{"targets": ["127.0.0.1:%d" % fake.server_address[1]]}]},
    ]
    if exporter_port:
        scrape.append({"job_name": "sluice-agent", "honor_labels": True,
                       "static_configs": [{"targets": ["127.0.0.1:%d" % exporter_port]}]})
    prom = Prometheus(str(tmp_path), {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": ["sluice_alerts.yml"], "scrape_configs": scrape})
    try:
        def ready():
            if prom.proc.poll() is not None:
                raise AssertionError("prometheus exited %s:\n%s" % (prom.proc.returncode, prom.log()))
            with urllib.request.urlopen(prom.url + "/-/ready", timeout=1) as r:
                return r.status == 200
        harness.wait_for(ready, timeout=60, what="prometheus /-/ready")
        yield ctl, prom, exporter_port
    finally:
        prom.stop()
        fake.shutdown()
        fake.server_close()
        for a in agents:
            a.stop()


def test_prometheus_scrapes_the_controller_and_stores_its_values(stack):
    ctl, prom, exporter_port = stack
    want_jobs = {"sluiced", "fake-exporter"} | ({"sluice-agent"} if exporter_port else set())

    def targets_up():
        ts = prom.api("/api/v1/targets")["activeTargets"]
        ok = {t["labels"]["job"] for t in ts if t["health"] == "up" and t["lastError"] == ""}
        return ts if ok == want_jobs and len(ts) == len(want_jobs) else None

    ts = harness.wait_for(targets_up, timeout=60, interval=0.25, what="every target up")
    for t in ts:
        assert t["health"] == "up" and t["lastError"] == "", t
    groups = prom.api("/api/v1/rules")["groups"]
    assert {r["name"] for g in groups for r in g["rules"]} >= {"HighGPUIdle", "NodeDown"}
    assert all(r["health"] == "ok" for g in groups for r in g["rules"])

    # The values Prometheus stored are the controller's, family by family.
    st, text = ctl.request("GET", "/metrics", token=ctl.config["monitoring_token"])
    assert st == 200
    want = parse_metrics(text, STABLE)
    assert want[("sluice_capacity", frozenset({("resource", "gpus")}))] == 2
    assert want[("sluice_submissions_total", frozenset())] == 1

    def stored():
        got = {}
        for name in STABLE:
            for s in prom.query(name):
                labels = {k: v for k, v in s["metric"].items()
                          if k not in ("__name__", "job", "instance")}
                assert s["metric"]["job"] == "sluiced"
                got[(name, frozenset(labels.items()))] = float(s["value"][1])
        return got if got == want else None

    harness.wait_for(stored, timeout=30, interval=0.5, what="Prometheus to hold /metrics' values")
    up = prom.query('up{job="sluiced"}')
    assert len(up) == 1 and up[0]["value"][1] == "1"


def test_honor_labels_keeps_the_job_id_and_drops_an_empty_one(stack):
    """What prometheus.yml's honor_labels makes of the exporter's `job`: a
    GPU held by job 42 keeps job="42"; a free GPU (job="") has no job label,
    so that {job!=""} (JobGPUIdle, the dashboard) selects held GPUs only;
    `up` keeps the scrape job's name."""
    _, prom, _ = stack

    def series():
        r = prom.query("sluice_gpu_utilization_ratio{node=\"fake\"}")
        return r if len(r) == 2 else None

    got = {s["metric"]["gpu"]: s["metric"] for s in
           harness.wait_for(series, timeout=30, interval=0.25, what="the fake exporter's series")}
    assert got["0"]["job"] == "42" and got["0"]["tenant"] == "alice"
    assert "job" not in got["1"] and "tenant" not in got["1"], got["1"]
    held = prom.query('sluice_gpu_utilization_ratio{node="fake",job!=""}')
    assert [s["metric"]["gpu"] for s in held] == ["0"]
    assert prom.query('up{job="fake-exporter"}')[0]["value"][1] == "1"


def test_prometheus_stores_the_agent_exporters_values(stack):
    ctl, prom, exporter_port = stack
    if not exporter_port:
        pytest.skip("this build's sluice-agent has no --metrics-listen: its exporter cannot "
                    "be scraped")
    names = ("sluice_gpu_memory_total_bytes", "sluice_gpu_memory_used_bytes",
             "sluice_gpu_utilization_ratio")

    def served():
        """The exporter's series now. An empty label is no label to
        Prometheus; a series without `job` (honor_labels) takes the scrape
        job's name."""
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % exporter_port,
                                    timeout=5) as r:
            text = r.read().decode()
        return {(n, frozenset((k, v) for k, v in labels if v != "")): x
                for (n, labels), x in parse_metrics(text, names).items()}

    assert any(n == "sluice_gpu_memory_total_bytes" for n, _ in served())

    def stored():
        # Read from both sides each time: the exporter's readings may move
        # between two scrapes (a task ending frees its GPU's labels), and
        # what Prometheus holds catches up within a scrape interval.
        want = served()
        got = {}
        for name in names:
            # This agent's series only: the stack also scrapes a test exporter.
            for s in prom.query('%s{instance="127.0.0.1:%d"}' % (name, exporter_port)):
                labels = {k: v for k, v in s["metric"].items()
                          if k not in ("__name__", "instance") and
                          not (k == "job" and v == "sluice-agent")}
                got[(name, frozenset(labels.items()))] = float(s["value"][1])
        return got if got == want else None

    harness.wait_for(stored, timeout=30, interval=0.5, what="the agent's values in Prometheus")
