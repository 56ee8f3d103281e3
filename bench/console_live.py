#!/usr/bin/python3
"""
bench/console_live.py - how long a job submitted through the API takes to
show on the console's Jobs page (docs/console.md), with its reason, in
headless chromium: POST /v1/jobs answered (the job is durable) to its row
in the page's DOM, carried by GET /v1/events.

    make build && bench/console_live.py [--jobs 50]

The page is the tenant's Jobs page (pending and running); each job asks
for more GPUs than the one node has, so it waits with a reason. The page is
polled from the test side every 5 ms (execute_script), which bounds the
resolution. Printed: min / median / p90 / max milliseconds.
"""

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, HERE)

import harness  # noqa: E402
from console_heatmap import browser  # noqa: E402

FIND = """
for (const tr of document.querySelectorAll('#jobs-table tbody tr')) {
  const td = tr.querySelectorAll('td');
  if (td.length > 6 && td[1].textContent === arguments[0] && td[6].textContent) return true;
}
return false;
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=50)
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="sluice-live-")
    ctl = harness.Controller(d)
    ctl.start()
    fake = harness.FakeAgent(ctl, "n1", gpus=2)
    fake.start()
    drv = None
    try:
        drv = browser(d)
        drv.get(ctl.url + "/ui/")
        harness.wait_for(lambda: drv.find_element("id", "token").is_displayed(), what="login")
        drv.find_element("id", "token").send_keys(ctl.token("alice"))
        drv.find_element("css selector", "#login-form button").click()
        harness.wait_for(lambda: drv.find_element("id", "live").text == "live", what="live")
        drv.execute_script("location.hash = '#/jobs'")
        harness.wait_for(lambda: drv.find_elements("id", "jobs-table"), what="jobs page")
        ms = []
        for i in range(args.jobs):
            name = "live-%d" % i
            ctl.submit({"name": name, "gpus": 4, "command": ["true"]})
            t1 = time.monotonic()
            harness.wait_for(lambda: drv.execute_script(FIND, name), timeout=30, interval=0.005,
                             what=name)
            ms.append((time.monotonic() - t1) * 1000)
        ms.sort()
        print(json.dumps({"jobs": args.jobs, "submitted_to_row_ms": {
            "min": round(ms[0], 1), "median": round(ms[len(ms) // 2], 1),
            "p90": round(ms[int(len(ms) * 0.9)], 1), "max": round(ms[-1], 1)}}, indent=1))
    finally:
        if drv:
            drv.quit()
        fake.close()
        ctl.stop()


if __name__ == "__main__":
    main()
