#!/usr/bin/python3
"""
bench/scale/plot.py - draws bench/scale/results.jsonl (run.py) as one SVG
per figure against cluster size, each with its target as a dashed line
and, dotted, the line through the smallest size's point that linear growth
would follow, so that growth faster than linear shows as points above it.
Plain SVG written here (no plotting library).

    /usr/bin/python3 bench/scale/plot.py [results.jsonl [failure.jsonl]]

and bench/scale/failure.jsonl (run.py --steps failure) as
node_failure_ms.svg: one node failure's handling time against the jobs
known, a line per count of tasks on the failed node.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

FIGURES = [
    # key, title, unit, target
    ("register_s", "Registration of N nodes x 8 GPUs", "s", 10),
    ("idle_cpu_pct", "Idle controller CPU, heartbeats every 2 s", "% of a core", 5),
    ("burst_s", "10,000 one-GPU jobs: first submission to last task started", "s", 5),
    ("churn_p99_ms", "Churn 1,000 starts + 1,000 ends/s: queueing delay p99", "ms", 100),
    ("nodes_ms", "GET /v1/nodes, 100,000 jobs known", "ms", 50),
    ("queue_page_ms", "sluice queue --limit 100, 100,000 jobs known", "ms", 50),
    ("metrics_ms", "GET /metrics, 100,000 jobs known", "ms", 100),
    ("rss_mib", "Controller RSS, 100,000 jobs known", "MiB", 1024),
    ("restart_s", "kill -9 to every node back and task re-adopted", "s", 30),
]


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def frame(title, ymax, sy, geometry):
    """The SVG's opening, title, axes and a y grid of six lines (sy maps a
    value to its y; geometry is (W, H, L, R, T, B): the size and margins)."""
    W, H, L, R, T, B = geometry
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
         'font-size="11">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="20" font-size="13">%s</text>' % (L, title),
         '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - B, W - R, H - B),
         '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T, L, H - B)]
    for i in range(6):
        y = ymax * i / 5
        o.append('<text x="%d" y="%.1f" text-anchor="end">%.3g</text>' % (L - 5, sy(y) + 4, y))
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>' % (L, sy(y), W - R, sy(y)))
    return o


def svg(rows, key, title, unit, target):
    pts = sorted((r["nodes"], r[key]) for r in rows if r.get(key) is not None)
    W, H, L, R, T, B = 560, 340, 70, 20, 40, 50
    xmax = max(p[0] for p in pts) * 1.05
    lin = [(x, pts[0][1] * x / pts[0][0]) for x, _ in pts] if pts[0][0] > 0 else []
    ymax = max([p[1] for p in pts] + [target] + [v for _, v in lin]) * 1.15 or 1
    sx = lambda x: L + (W - L - R) * x / xmax
    sy = lambda y: H - B - (H - T - B) * y / ymax
    o = frame(esc(title), ymax, sy, (W, H, L, R, T, B))
    for x, _ in pts:
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (sx(x), H - B + 15, x))
    o.append('<text x="%d" y="%d" text-anchor="middle">nodes (x 8 GPUs)</text>' % ((L + W - R) // 2, H - 12))
    o.append('<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>'
             % ((T + H - B) // 2, (T + H - B) // 2, esc(unit)))
    o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="red" stroke-dasharray="6,4"/>'
             % (L, sy(target), W - R, sy(target)))
    o.append('<text x="%d" y="%.1f" fill="red" text-anchor="end">target %g %s</text>'
             % (W - R, sy(target) - 4, target, esc(unit)))
    if lin:
        o.append('<polyline fill="none" stroke="#888" stroke-dasharray="2,3" points="%s"/>'
                 % " ".join("%.1f,%.1f" % (sx(x), sy(y)) for x, y in [(0, 0)] + lin))
    o.append('<polyline fill="none" stroke="#1f5fa8" stroke-width="2" points="%s"/>'
             % " ".join("%.1f,%.1f" % (sx(x), sy(y)) for x, y in pts))
    for x, y in pts:
        o.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="#1f5fa8"/>' % (sx(x), sy(y)))
        o.append('<text x="%.1f" y="%.1f" text-anchor="middle">%.3g</text>' % (sx(x), sy(y) - 8, y))
    o.append('<text x="%d" y="%d" fill="#888">dotted: linear from the smallest size</text>'
             % (L + 5, T + 12))
    o.append("</svg>")
    return "\n".join(o) + "\n"


COLOURS = ["#1f5fa8", "#d9822b", "#3a9a4a", "#a83a3a", "#7a4fa8"]


def svg_failure(rows):
    """node_failure_ms.svg: the median handling time of one node failure
    (sluice_node_failure_handling_seconds) against the jobs known, one
    line per count of tasks on the failed node."""
    by = {}
    for r in rows:
        by.setdefault(r["tasks"], {}).setdefault(r["jobs_target"], []).append(r["handling_ms"])
    series = {k: sorted((j, sorted(v)[len(v) // 2]) for j, v in d.items()) for k, d in by.items()}
    W, H, L, R, T, B = 560, 340, 70, 80, 40, 50
    xmax = max(j for pts in series.values() for j, _ in pts) * 1.05
    ymax = max(y for pts in series.values() for _, y in pts) * 1.3 or 1
    sx = lambda x: L + (W - L - R) * x / xmax  # noqa: E731
    sy = lambda y: H - B - (H - T - B) * y / ymax  # noqa: E731
    n = rows[0]["nodes"]
    o = frame("One node failure among %s nodes: handling time (median), by tasks on the node"
              % format(n, ","), ymax, sy, (W, H, L, R, T, B))
    for x in sorted({j for pts in series.values() for j, _ in pts}):
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (sx(x), H - B + 15, format(x, ",")))
    o.append('<text x="%d" y="%d" text-anchor="middle">jobs known (finished, kept in memory)</text>'
             % ((L + W - R) // 2, H - 12))
    o.append('<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">ms</text>'
             % ((T + H - B) // 2, (T + H - B) // 2))
    for i, k in enumerate(sorted(series)):
        pts, col = series[k], COLOURS[i % len(COLOURS)]
        o.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                 % (col, " ".join("%.1f,%.1f" % (sx(x), sy(y)) for x, y in pts)))
        for x, y in pts:
            o.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>' % (sx(x), sy(y), col))
            o.append('<text x="%.1f" y="%.1f" text-anchor="middle">%.3g</text>' % (sx(x), sy(y) - 8, y))
        o.append('<text x="%d" y="%.1f" fill="%s">%d task%s</text>'
                 % (W - R + 8, sy(pts[-1][1]) + 4, col, k, "" if k == 1 else "s"))
    o.append("</svg>")
    return "\n".join(o) + "\n"


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results.jsonl")
    with open(path) as f:
        runs = [json.loads(line) for line in f if line.strip()]
    for key, title, unit, target in FIGURES:
        # The latest run of each size that measured key (idle.py appends
        # rows with the idle figures only).
        rows = {}
        for r in runs:
            if r.get(key) is not None:
                rows[r["nodes"]] = r
        if not rows:
            continue
        with open(os.path.join(HERE, key + ".svg"), "w") as f:
            f.write(svg(list(rows.values()), key, title, unit, target))
    # run.py --steps failure: the latest run's rows (its "time" stamps).
    fpath = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "failure.jsonl")
    if os.path.exists(fpath):
        with open(fpath) as f:
            frows = [json.loads(line) for line in f if line.strip()]
        if frows:
            args = frows[-1]["args"]
            run = [r for r in frows if r["args"] == args and r["nodes"] == frows[-1]["nodes"]]
            with open(os.path.join(HERE, "node_failure_ms.svg"), "w") as f:
                f.write(svg_failure(run))


if __name__ == "__main__":
    main()
