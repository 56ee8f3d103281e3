#!/usr/bin/python3
"""
bench/console_heatmap.py - the console's GPU heat map (docs/console.md) of
NODES emulated nodes in headless chromium: how long the page takes to
fetch every node and draw them, how long a redraw takes (zoom), and the
Jobs page's first load with JOBS jobs in the controller.

    make build && bench/console_heatmap.py [--nodes 10000] [--jobs 100000]

Nodes come from `sluice-agent --emulate` (docs/scale.md), half in pool
"train" and half in "infer", 8 H100 each; a third of their GPUs are then
allocated by 1-GPU jobs and some shared by half-GPU jobs (the emulator
runs them until cancelled), and the rest of JOBS stay pending (too large).
Printed: nodes and GPUs drawn, the page's time from opening the map to its
first draw (fetch + layout + draw, performance.now() in the page), the
draw alone, each zoom redraw, and the Jobs page's time to its table.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

import harness  # noqa: E402


def browser(tmp):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    o = Options()
    o.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1000", "--user-data-dir=%s" % os.path.join(tmp, "chromium")):
        o.add_argument(a)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=o)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--jobs", type=int, default=100000)
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="sluice-heat-")
    conns = args.nodes + 256
    ctl = harness.Controller(d, config_overrides={
        "max_finished_jobs": 1000000,
        "limits": {"max_connections": 1024, "max_agent_connections": conns,
                   "max_connections_per_peer": conns, "max_pending_jobs": 1000000,
                   "max_array_size": 200000}})
    ctl.start()
    emus = []
    drv = None
    try:
        half = args.nodes // 2
        for pool, n, name in (("train", half, "t"), ("infer", args.nodes - half, "i")):
            log = open(os.path.join(d, "emu-%s.log" % pool), "ab")
            emus.append(subprocess.Popen(
                [os.path.join(harness.build_dir(), "sluice-agent"), "--emulate", str(n),
                 "--controller", ctl.agent_addr, "--token", ctl.cluster_token, "--name", name,
                 "--pool", pool, "--cpus", "64", "--memory", "512Gi", "--gpus", "8",
                 "--gpu-model", "H100", "--gpu-memory", "80Gi"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))

        def up():
            st, body = ctl.request("GET", "/v1/nodes?limit=1", token=ctl.admin_token, timeout=60)
            st, m = ctl.request("GET", "/metrics", token=ctl.admin_token, timeout=60)
            for line in m.splitlines():
                if line.startswith("sluice_nodes{") and 'state="up"' in line:
                    return float(line.split()[-1]) >= args.nodes
            return False
        harness.wait_for(up, timeout=600, interval=1, what="%d nodes up" % args.nodes)
        gpus = args.nodes * 8
        alloc = gpus // 3
        shared = min(args.nodes, 2000)
        for spec in ({"gpus": 1, "array": "0-%d" % (alloc - 1)},
                     {"gpu_share": 0.5, "array": "0-%d" % (shared - 1)},
                     {"gpus": 16, "array": "0-%d" % max(0, args.jobs - alloc - shared - 1)}):
            body = dict(spec, command=["true"], tenant="alice", name="heat")
            st, j = ctl.request("POST", "/v1/jobs", body, token=ctl.admin_token, timeout=300)
            assert st == 201, (st, j)

        def placed():
            st, m = ctl.request("GET", "/metrics", token=ctl.admin_token, timeout=60)
            for line in m.splitlines():
                if line.startswith("sluice_jobs{") and 'state="running"' in line:
                    if float(line.split()[-1]) >= alloc + shared:
                        return True
            return False
        harness.wait_for(placed, timeout=600, interval=1, what="jobs placed")
        drv = browser(d)
        drv.set_script_timeout(120)
        drv.get(ctl.url + "/ui/")
        harness.wait_for(lambda: drv.find_element("id", "token").is_displayed(), what="login")
        drv.find_element("id", "token").send_keys(ctl.admin_token)
        drv.find_element("css selector", "#login-form button").click()
        harness.wait_for(lambda: drv.find_element("id", "who").text == "admin", what="logged in")
        t_open = drv.execute_script("window.__t0 = performance.now(); location.hash = '#/heatmap'; return 0")
        harness.wait_for(lambda: drv.find_elements("id", "heat") and
                         drv.find_element("id", "heat").get_attribute("data-nodes") == str(args.nodes),
                         timeout=120, interval=0.05, what="the heat map")
        first = drv.execute_script("return performance.now() - window.__t0")
        draw = float(drv.find_element("id", "heat").get_attribute("data-draw-ms"))
        zooms = []
        for z in (2, 8, 16, 4):
            ms = drv.execute_script(
                "var z = document.getElementById('heat-zoom'); z.value = arguments[0];"
                "z.dispatchEvent(new Event('input')); return Number(document.getElementById('heat').dataset.drawMs);", z)
            zooms.append({"cell_px": z, "draw_ms": ms})
        shot = os.path.join(d, "heatmap-%d.png" % args.nodes)
        drv.save_screenshot(shot)
        drv.execute_script("window.__t1 = performance.now(); location.hash = '#/jobs'")
        harness.wait_for(lambda: drv.find_elements("css selector", "#jobs-table tbody tr"), timeout=120,
                         interval=0.05, what="the jobs table")
        jobs_ms = drv.execute_script("return performance.now() - window.__t1")
        print(json.dumps({"nodes": args.nodes, "gpus": gpus, "jobs": args.jobs,
                          "gpus_allocated_whole": alloc, "gpus_shared": shared,
                          "heatmap_open_to_drawn_ms": round(first, 1), "heatmap_draw_ms": draw,
                          "zoom_redraws": zooms, "jobs_page_first_table_ms": round(jobs_ms, 1),
                          "screenshot": shot}, indent=1))
        del t_open
    finally:
        if drv:
            drv.quit()
        for e in emus:
            e.terminate()
        for e in emus:
            try:
                e.wait(timeout=30)
            except subprocess.TimeoutExpired:
                e.kill()
        ctl.stop()


if __name__ == "__main__":
    main()
