"""
test_console.py - the web console (/ui/, docs/console.md) in a real
browser: Debian's chromium, headless, driven by chromedriver through
python3-selenium, against a real sluiced with a fake agent.

Log in with a token; a submitted job appears on the Jobs page without a
reload and shows its reason; it is cancelled from its page; a job named
`<img src=x onerror=alert(1)>` shows as text and runs no script (the DOM,
the absence of an alert and the browser's console say so); tenant A's page
never receives B's jobs; the admin drains and resumes a node; the Submit
form submits. A screenshot of every page goes into the test's tmp_path.
Every wait polls with a deadline; nothing depends on elapsed time.
"""

import json
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import (NoAlertPresentException, NoSuchElementException,  # noqa: E402
                                        StaleElementReferenceException)
from selenium.webdriver.common.by import By  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
XSS = "<img src=x onerror=alert(1)>"

pytestmark = pytest.mark.skipif(not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)),
                                reason="chromium and chromium-driver are not installed (make deps)")


@pytest.fixture
def browser(tmp_path):
    """A headless chromium; quit (with its processes) at teardown."""
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    opts = Options()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1000", "--user-data-dir=%s" % (tmp_path / "chromium"),
              "--no-first-run", "--disable-extensions"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(CHROMEDRIVER, log_output=str(tmp_path / "chromedriver.log"))
                         if "log_output" in Service.__init__.__code__.co_varnames
                         else Service(CHROMEDRIVER), options=opts)
    d.set_page_load_timeout(30)
    yield d
    d.quit()


def wait_dom(d, pred, what, timeout=15.0):
    """Polls pred() (which reads the page) until truthy; an element the
    page redrew meanwhile (a live update) counts as not yet."""
    def check():
        try:
            return pred()
        except (StaleElementReferenceException, NoSuchElementException):
            return None
    return harness.wait_for(check, timeout=timeout, interval=0.05, what=what)


def text_of(d, css):
    els = d.find_elements(By.CSS_SELECTOR, css)
    return els[0].text if els else None


def login(d, controller, token):
    d.get(controller.url + "/ui/")
    wait_dom(d, lambda: d.find_element(By.ID, "token").is_displayed(), "the login form")
    d.find_element(By.ID, "token").send_keys(token)
    d.find_element(By.CSS_SELECTOR, "#login-form button").click()
    wait_dom(d, lambda: d.find_element(By.ID, "who").text, "logged in")
    wait_dom(d, lambda: d.find_element(By.ID, "live").text == "live", "the event stream")


def go(d, page):
    d.execute_script("location.hash = arguments[0]", "#/" + page)


def shot(d, tmp_path, name):
    p = str(tmp_path / ("console-%s.png" % name))
    assert d.save_screenshot(p), p
    assert os.path.getsize(p) > 1000, p


def row_for(d, name):
    """The cells' texts (textContent) of the Jobs table's row of job name."""
    for tr in d.find_elements(By.CSS_SELECTOR, "#jobs-table tbody tr"):
        cells = [td.get_attribute("textContent") for td in tr.find_elements(By.TAG_NAME, "td")]
        if len(cells) > 1 and cells[1] == name:
            return cells
    return None


def severe_logs(d):
    return [e for e in d.get_log("browser") if e["level"] == "SEVERE"]


def test_served_with_a_strict_policy(controller):
    st, body = controller.request("GET", "/ui/")
    assert st == 200 and "<script src=\"/ui/app.js\"" in body
    assert "<script>" not in body  # no inline script
    conn = controller._connect(10)
    conn.request("GET", "/ui/app.js")
    r = conn.getresponse()
    js = r.read().decode()
    csp = r.getheader("Content-Security-Policy")
    assert r.status == 200 and r.getheader("Content-Type").startswith("text/javascript")
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe" not in csp
    assert r.getheader("X-Content-Type-Options") == "nosniff"
    assert r.getheader("Set-Cookie") is None
    assert ".innerHTML" not in js and "eval(" not in js and "document.cookie" not in js
    for extra in ("charts.js", "jobpage.js", "reportpage.js"):
        st, other = controller.request("GET", "/ui/" + extra)
        assert st == 200 and "<script src=\"/ui/%s\"" % extra in body, extra
        assert ".innerHTML" not in other and "eval(" not in other and "document.cookie" not in other, extra
    conn.close()
    st, body = controller.request("GET", "/ui/nope.js")
    assert st == 404 and body["error"]["code"] == "not_found"


def test_console_live_jobs_reason_cancel_and_xss(controller, fake_agent, browser, tmp_path):
    d = browser
    fake_agent("n1", gpus=2)
    controller.wait_node("n1")
    login(d, controller, controller.token("alice"))
    assert json.loads(d.execute_script("return JSON.stringify(Object.keys(sessionStorage))")) == ["sluice.token"]
    assert d.get_cookies() == []
    assert "tenant alice" in d.find_element(By.ID, "who").text
    wait_dom(d, lambda: d.find_elements(By.CSS_SELECTOR, ".card"), "the overview's cards")
    shot(d, tmp_path, "overview")

    go(d, "jobs")
    wait_dom(d, lambda: d.find_elements(By.ID, "jobs-table"), "the jobs table")
    d.execute_script("window.__noReload = 1")
    # A job that cannot fit waits, and its reason shows on the page, live.
    j = controller.submit({"name": "waits-for-gpus", "gpus": 4, "command": ["true"]})
    tds = wait_dom(d, lambda: (lambda t: t if t and t[6] else None)(row_for(d, "waits-for-gpus")),
                   "the new job's row with its reason")
    assert tds[0] == str(j["id"]) and tds[3] == "pending" and "GPU" in tds[6], tds
    assert d.execute_script("return window.__noReload") == 1  # no reload happened
    shot(d, tmp_path, "jobs")

    # Its page; cancel from the UI.
    d.find_element(By.CSS_SELECTOR, "#jobs-table a[href='#/job/%d']" % j["id"]).click()
    wait_dom(d, lambda: text_of(d, "#job-state") == "pending", "the job page")
    assert "GPU" in text_of(d, "#job-reason")
    shot(d, tmp_path, "job")
    d.find_element(By.ID, "cancel").click()
    wait_dom(d, lambda: text_of(d, "#job-state") == "cancelled", "the job cancelled")
    assert controller.job(j["id"])["state"] == "cancelled"

    # A name that is markup stays text and runs nothing.
    go(d, "jobs")
    wait_dom(d, lambda: d.find_elements(By.ID, "jobs-table"), "the jobs table")
    x = controller.submit({"name": XSS, "gpus": 4, "command": ["true"]})
    tds = wait_dom(d, lambda: row_for(d, XSS), "the markup-named job's row")
    assert tds[1] == XSS and tds[0] == str(x["id"])
    assert d.find_elements(By.CSS_SELECTOR, "#jobs-table img") == []
    assert d.find_elements(By.CSS_SELECTOR, "main img") == []
    d.execute_script("location.hash = arguments[0]", "#/job/%d" % x["id"])
    wait_dom(d, lambda: (text_of(d, "#page h1") or "").endswith(XSS), "the markup-named job's page")
    assert d.find_elements(By.CSS_SELECTOR, "main img") == []
    with pytest.raises(NoAlertPresentException):
        d.switch_to.alert.text
    assert severe_logs(d) == [], severe_logs(d)  # no CSP violation, no error
    # The token never went into a URL: not in any request the page made.
    urls = d.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert any("/v1/jobs" in u for u in urls), urls  # (a stream still open is not listed)
    assert not any(controller.token("alice") in u for u in urls + [d.current_url]), urls


def test_tenant_session_never_receives_another_tenants_jobs(controller, browser, tmp_path):
    d = browser
    login(d, controller, controller.token("alice"))
    go(d, "jobs")
    wait_dom(d, lambda: d.find_elements(By.ID, "jobs-table"), "the jobs table")
    # Count every job event the page receives, and keep their tenants.
    d.execute_script("window.__tenants = []; S.listeners.push(function (ev) {"
                     " if (ev.data && ev.data.job) window.__tenants.push(ev.data.job.tenant); });")
    controller.submit({"name": "bob-secret", "gpus": 4, "command": ["true"]}, tenant="bob")
    controller.submit({"name": "alice-marker", "gpus": 4, "command": ["true"]}, tenant="alice")
    wait_dom(d, lambda: row_for(d, "alice-marker"), "alice's marker job")
    assert "bob-secret" not in d.page_source
    tenants = d.execute_script("return window.__tenants")
    assert tenants and set(tenants) == {"alice"}, tenants
    shot(d, tmp_path, "tenant-jobs")


def test_admin_pages_drain_resume_and_submit(controller, fake_agent, browser, tmp_path):
    d = browser
    fake_agent("n1", gpus=4, pool="train")
    fake_agent("n2", gpus=8)
    controller.wait_node("n1")
    controller.wait_node("n2")
    controller.submit({"name": "runs", "gpus": 3, "command": ["sleep", "100"]})
    login(d, controller, controller.admin_token)
    assert d.find_element(By.ID, "who").text == "admin"

    wait_dom(d, lambda: d.find_elements(By.ID, "jobs-by-state"), "the admin's overview")
    assert "running 1" in d.find_element(By.ID, "jobs-by-state").text
    shot(d, tmp_path, "overview-admin")

    go(d, "heatmap")
    wait_dom(d, lambda: d.find_element(By.ID, "heat").get_attribute("data-nodes") == "2", "the heat map")
    shot(d, tmp_path, "heatmap")

    go(d, "nodes")
    wait_dom(d, lambda: d.find_elements(By.CSS_SELECTOR, "#nodes-table button.drain"), "the nodes table")
    shot(d, tmp_path, "nodes")
    d.find_elements(By.CSS_SELECTOR, "#nodes-table button.drain")[0].click()
    alert = wait_dom(d, lambda: d.switch_to.alert, "the drain prompt")
    alert.send_keys("fan")
    alert.accept()
    wait_dom(d, lambda: controller.node("n1")["state"] == "draining", "n1 draining")
    wait_dom(d, lambda: d.find_elements(By.CSS_SELECTOR, "#nodes-table button.resume"), "a resume button")
    d.find_element(By.CSS_SELECTOR, "#nodes-table button.resume").click()
    wait_dom(d, lambda: controller.node("n1")["state"] == "up", "n1 resumed")

    go(d, "tenants")
    wait_dom(d, lambda: d.find_elements(By.ID, "tenants-table"), "the tenants table")
    shot(d, tmp_path, "tenants")

    go(d, "submit")
    wait_dom(d, lambda: d.find_elements(By.ID, "submit-form"), "the submit form")
    d.find_element(By.ID, "s-name").send_keys("from-the-form")
    d.find_element(By.ID, "s-tenant").send_keys("alice")
    d.find_element(By.ID, "s-command").send_keys("echo hi")
    d.find_element(By.ID, "s-gpus").send_keys("1")
    shot(d, tmp_path, "submit")
    d.find_element(By.CSS_SELECTOR, "#submit-form button[type=submit]").click()
    res = wait_dom(d, lambda: text_of(d, "#submit-result"), "the submission's answer")
    assert res.startswith("submitted job "), res
    jobs = [jb for jb in controller.jobs(query="?state=pending,running,succeeded,failed,cancelled")
            if jb["name"] == "from-the-form"]
    assert jobs and jobs[0]["command"] == ["sh", "-c", "echo hi"] and jobs[0]["gpus"] == 1
    # A field the server refuses is named on the page.
    d.find_element(By.ID, "s-gpus").clear()
    d.find_element(By.ID, "s-gpus").send_keys("99")
    d.find_element(By.CSS_SELECTOR, "#submit-form button[type=submit]").click()
    wait_dom(d, lambda: (text_of(d, "#submit-result") or "").startswith("gpus:"), "the refusal")
    assert severe_logs(d) == [] or all("400" in e["message"] for e in severe_logs(d)), severe_logs(d)
