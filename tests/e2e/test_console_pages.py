"""
test_console_pages.py - the console's pages beyond test_console.py, in
headless chromium against real daemons: the heat map shows an unhealthy
GPU (fenced through the fake NVML's ECC reading, the path of
test_gpu_health.py) and an idle allocated GPU (its task's utilisation, 0%,
from the same fake NVML) beside an allocated and a free one; a job's page
shows its attempts and tails its output live (a line printed after the
page opened appears without a reload); tenant A's page of B's job shows
no line of B's output; the Report and Tenants pages draw their charts
from GET /v1/report?buckets=, which is checked at the HTTP level too; an
elastic job's page shows its size history (each size with its time, in
the table and as a step chart) and draws the growth when an agent joins,
without a reload. A screenshot of each page goes into the test's tmp_path.
"""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
from test_console import browser, login, go, shot, wait_dom, text_of, severe_logs  # noqa: E402,F401
from test_gpu_health import GpuNode, gpu_health  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

HEALTH_CONFIG = {"heartbeat": 1, "kill_grace": 1, "node_timeout": 10}


def test_heat_map_unhealthy_and_idle_allocated(controller_factory, browser, tmp_path):
    d = browser
    ctl = controller_factory(HEALTH_CONFIG)
    nvml = u.build_fake_nvml(tmp_path / "nvml")
    g = GpuNode(ctl, tmp_path, nvml, "h1", count=4, extra=("--metrics-interval", "0.2"))
    g.agent.start()
    try:
        g.script("2 ecc_dbe=1\n")
        harness.wait_for(lambda: (gpu_health(ctl, "h1", 2) or {}).get("fenced"), timeout=15, what="GPU 2 fenced")
        g.script("")
        a = ctl.submit({"gpus": 1, "command": u.sh("sleep 300")})
        b = ctl.submit({"gpus": 1, "command": u.sh("sleep 300")})
        ga = ctl.wait_job(a["id"], "running")["placement"][0]["gpus"][0]
        gb = ctl.wait_job(b["id"], "running")["placement"][0]["gpus"][0]
        g.script("%d util=0\n%d util=95\n" % (ga, gb))

        def utils():
            v = ctl.node("h1")["gpu_util"]
            return v if v[ga] is not None and v[ga] < 0.05 and v[gb] is not None and v[gb] > 0.5 else None
        v = harness.wait_for(utils, timeout=20, what="the GPUs' utilisation")
        assert v[2] is None  # fenced, nothing runs there
        assert len(v) == 4 and v[({0, 1, 3} - {ga, gb}).pop()] is None  # free: not measured
        login(d, ctl, ctl.admin_token)
        go(d, "heatmap")
        want = {"unhealthy": 1, "idle": 1, "alloc": 1, "free": 1}
        wait_dom(d, lambda: json.loads(d.find_element(By.ID, "heat").get_attribute("data-states") or "{}") == want,
                 "the heat map's states")
        assert "idle but allocated" in d.find_element(By.CSS_SELECTOR, ".legend").text
        shot(d, tmp_path, "heatmap-states")
        go(d, "overview")
        wait_dom(d, lambda: d.find_elements(By.CSS_SELECTOR, ".card"), "the overview")
        cards = {c.find_element(By.CSS_SELECTOR, ".k").text: c.find_element(By.CSS_SELECTOR, ".v").text
                 for c in d.find_elements(By.CSS_SELECTOR, ".card")}
        assert cards["idle but allocated"] == "1" and cards["GPUs unhealthy"] == "1", cards
        assert severe_logs(d) == [], severe_logs(d)
    finally:
        g.agent.stop()


def test_job_page_attempts_and_live_log_tail(controller, cluster, browser, tmp_path):
    d = browser
    cluster(1, gpus=0)
    assert controller.node("n1")["gpu_util"] == []  # a node without GPUs
    counter, gofile = tmp_path / "runs", tmp_path / "go"
    cmd = u.sh('n=$(cat %s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %s; '
               '[ "$n" -ge 2 ] || exit 3; echo "attempt two"; while [ ! -e %s ]; do sleep 0.05; done; '
               'echo "after go"' % (counter, counter, gofile))
    j = controller.submit({"retries": 1, "retry_backoff": 0, "command": cmd})
    harness.wait_for(lambda: controller.job(j["id"]).get("attempt") == 2 and
                     controller.job(j["id"])["state"] == "running", what="the second attempt")
    b = controller.submit({"command": u.sh("echo bob-secret-line; sleep 300")}, tenant="bob")
    controller.wait_job(b["id"], "running")
    login(d, controller, controller.token("alice"))
    d.execute_script("location.hash = arguments[0]", "#/job/%d" % j["id"])
    wait_dom(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#job-attempts tbody tr")) == 2, "the attempts")
    rows = [r.text for r in d.find_elements(By.CSS_SELECTOR, "#job-attempts tbody tr")]
    assert "exited with code 3" in rows[0] and "this one" in rows[1], rows
    assert text_of(d, "#job-attempt").startswith("2 of 2")
    wait_dom(d, lambda: "attempt two" in d.find_element(By.ID, "job-log").text, "the log so far")
    d.execute_script("window.__noReload = 1")
    gofile.write_text("")
    wait_dom(d, lambda: "after go" in d.find_element(By.ID, "job-log").text, "a new line, live")
    assert d.execute_script("return window.__noReload") == 1
    wait_dom(d, lambda: text_of(d, "#job-state") == "succeeded", "the job's end")
    shot(d, tmp_path, "job-attempts-log")
    # Bob's job from alice's session: refused, and none of its output.
    d.execute_script("location.hash = arguments[0]", "#/job/%d" % b["id"])
    wait_dom(d, lambda: "another tenant" in (text_of(d, "#page .error") or ""), "the refusal")
    assert "bob-secret-line" not in d.page_source
    st = d.execute_script("return fetch('/v1/jobs/%d/logs/stream', {headers: {Authorization: 'Bearer ' + S.token}})"
                          ".then(r => r.status)" % b["id"])
    assert st == 403
    controller.request("DELETE", "/v1/jobs/%d" % b["id"], token=controller.admin_token)


def test_report_and_tenants_pages_chart_the_window(controller, cluster, browser, tmp_path):
    d = browser
    cluster(1, gpus=2)
    ids = [controller.submit({"gpus": 1, "command": ["true"]}, tenant=t)["id"] for t in ("alice", "bob", "alice")]
    for i in ids:
        controller.wait_job(i, "succeeded")
    st, rep = controller.request("GET", "/v1/report?since=3600&buckets=12", token=controller.admin_token)
    assert st == 200 and len(rep["series"]["buckets"]) == 12 and rep["series"]["bucket_seconds"] == 300
    assert sum(b["queueing_delay"]["jobs"] for b in rep["series"]["buckets"]) == rep["queueing_delay"]["jobs"] == 3
    st, err = controller.request("GET", "/v1/report?buckets=0", token=controller.admin_token)
    assert st == 400 and err["error"]["field"] == "buckets"
    st, mine = controller.request("GET", "/v1/report?since=3600&buckets=4", token=controller.token("alice"))
    assert st == 200 and {t["name"] for b in mine["series"]["buckets"] for t in b["tenants"]} <= {"alice"}
    login(d, controller, controller.admin_token)
    go(d, "report")
    wait_dom(d, lambda: d.find_elements(By.CSS_SELECTOR, "#chart-queueing path.series"), "the delay chart")
    pts = d.find_element(By.CSS_SELECTOR, "#chart-queueing path.series").get_attribute("data-points")
    assert int(pts) >= 1
    assert d.find_elements(By.CSS_SELECTOR, "#chart-utilisation path.series")
    assert d.find_elements(By.ID, "chart-idle-memory")
    shot(d, tmp_path, "report")
    go(d, "tenants")
    wait_dom(d, lambda: d.find_elements(By.CSS_SELECTOR, "#tenants-history path.series"), "the tenants' history")
    names = {p.get_attribute("data-name") for p in d.find_elements(By.CSS_SELECTOR, "#tenants-history path.series")}
    assert {"alice", "bob"} <= names, names
    assert d.find_elements(By.ID, "tenants-shares") and d.find_elements(By.ID, "tenants-pending")
    shot(d, tmp_path, "tenants-history")
    assert severe_logs(d) == [], severe_logs(d)


ELASTIC_CLASSES = {"priority_classes": [
    {"name": "elastic", "value": 10, "grace": 1},
    {"name": "urgent", "value": 1000, "may_preempt": True, "tenants": ["alice", "bob"]},
]}


def test_job_page_elastic_size_history(controller_factory, browser, tmp_path):
    """An elastic job of 2..4 one-GPU tasks starts at 2 on a 2-GPU node,
    grows to 4 when a second node joins, shrinks to 2 for an urgent job
    that needs that node and grows back once it is done (the path of
    test_elastic.py). Its page, open all along, draws each change without
    a reload, and shows each size of GET /v1/jobs/{id}'s size_history with
    its time (as the browser writes that instant) and its reason; the step
    chart has a point per change and one for now."""
    d = browser
    ctl = controller_factory(config_overrides=ELASTIC_CLASSES)
    agents = [harness.Agent(ctl, "n1", gpus=2)]
    agents[0].start()
    try:
        e = ctl.submit({"tasks": 4, "min_tasks": 2, "gpus": 1, "name": "grows", "priority_class": "elastic",
                        "command": u.sh("trap 'exit 0' TERM; while true; do sleep 0.05; done")})
        ctl.wait_job(e["id"], "running")
        assert ctl.job(e["id"])["size"] == 2 and ctl.job(e["id"])["size_history"] == []
        login(d, ctl, ctl.token("alice"))
        d.execute_script("location.hash = arguments[0]", "#/job/%d" % e["id"])
        wait_dom(d, lambda: text_of(d, "#job-size") == "2 of 2 to 4 tasks", "the size now, 2", timeout=30)
        assert not d.find_elements(By.ID, "job-sizes")  # no change yet
        d.execute_script("window.__noReload = 1")

        def rows():
            return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
                    for tr in d.find_elements(By.CSS_SELECTOR, "#job-sizes tbody tr")]

        def sized(n, changes):
            j = ctl.job(e["id"])
            return j if j["size"] == n and len(j["size_history"]) == changes else None

        agents.append(harness.Agent(ctl, "n2", gpus=2))
        agents[1].start()
        harness.wait_for(lambda: sized(4, 1), timeout=30, what="grown to 4")
        wait_dom(d, lambda: text_of(d, "#job-size") == "4 of 2 to 4 tasks" and len(rows()) == 1,
                 "the growth, live", timeout=30)
        go_file = tmp_path / "go"
        urg = ctl.submit({"gpus": 2, "priority_class": "urgent",
                          "command": u.sh("while [ ! -e %s ]; do sleep 0.05; done" % go_file)}, tenant="bob")
        ctl.wait_job(urg["id"], "running", timeout=30)
        harness.wait_for(lambda: sized(2, 2), timeout=30, what="shrunk to 2")
        wait_dom(d, lambda: text_of(d, "#job-size") == "2 of 2 to 4 tasks" and len(rows()) == 2,
                 "the shrink, live", timeout=30)
        go_file.write_text("")
        ctl.wait_job(urg["id"], "succeeded", timeout=30)
        j = harness.wait_for(lambda: sized(4, 3), timeout=30, what="grown back to 4")
        wait_dom(d, lambda: text_of(d, "#job-size") == "4 of 2 to 4 tasks" and len(rows()) == 3,
                 "the growth back, live", timeout=30)
        assert d.execute_script("return window.__noReload") == 1
        hist = j["size_history"]
        assert [z["size"] for z in hist] == [4, 2, 4], hist
        assert hist[0]["time"] <= hist[1]["time"] <= hist[2]["time"], hist
        assert all(z["why"] for z in hist), hist
        # Each size with its time, as this browser writes the API's instant.
        want = [[d.execute_script("return new Date(arguments[0] * 1000).toLocaleString()", z["time"]),
                 str(z["size"]), z["why"]] for z in hist]
        wait_dom(d, lambda: rows() == want, "the sizes with their times and reasons")
        assert all(r[0] for r in want)
        pts = d.find_element(By.CSS_SELECTOR, "#job-size-chart path.series").get_attribute("data-points")
        assert int(pts) == len(hist) + 1  # each change, and the size now
        d.execute_script("document.getElementById('job-size-chart').scrollIntoView({block: 'center'})")
        shot(d, tmp_path, "job-elastic-sizes")
        assert severe_logs(d) == [], severe_logs(d)
        ctl.request("DELETE", "/v1/jobs/%d" % e["id"], token=ctl.admin_token)
        ctl.wait_job(e["id"], "cancelled", timeout=30)
    finally:
        for a in agents:
            a.stop()
