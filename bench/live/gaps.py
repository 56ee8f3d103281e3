"""GPU turnover arithmetic shared by the Sluice and the Slurm side.

A record is one job that ran on one GPU: {"gpu": "node/index", "start": T,
"end": T} with T in seconds (CLOCK_REALTIME).  Per GPU, jobs are ordered by
start; each consecutive pair gives one gap = next start - previous end: the
time the GPU sat idle between a task's exit and the next task's start on it.
The peer's aggregate formula, (last start - first start) / (waves - 1) -
sleep, is reported too so the figures line up with
../shared/peers/slurm/results.md.
"""
import math
import os
import statistics
import time


def read_stamps(d, suffix, key=str):
    """{key(name): (time, extra)} for the files NAME+suffix in d that a
    task's stamp.sh has finished writing ("TIME [EXTRA]")."""
    out = {}
    for f in os.listdir(d):
        if not f.endswith(suffix):
            continue
        try:
            with open(os.path.join(d, f)) as fh:
                parts = fh.read().split()
            out[key(f[:-len(suffix)])] = (float(parts[0]),
                                          parts[1] if len(parts) > 1 else "")
        except (ValueError, IndexError, OSError):
            pass  # still being written; the caller polls again
    return out


def wait_stamps(d, suffix, n, deadline_s, interval=0.005, key=str):
    """Polls d until n complete stamps with suffix exist; TimeoutError after
    deadline_s seconds."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if sum(1 for f in os.listdir(d) if f.endswith(suffix)) >= n:
            st = read_stamps(d, suffix, key)
            if len(st) >= n:
                return st
        time.sleep(interval)
    raise TimeoutError("only %d of %d %s stamps after %.0f s in %s"
                       % (len(read_stamps(d, suffix, key)), n, suffix, deadline_s, d))


def _pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, int(math.ceil(p * len(xs))) - 1)]


def gpu_gaps(recs, sleep_s, gpus, start_key="start", end_key="end"):
    by = {}
    for r in recs:
        by.setdefault(r["gpu"], []).append(r)
    gaps = []
    overlaps = 0
    for g, rs in by.items():
        rs.sort(key=lambda r: r[start_key])
        for a, b in zip(rs, rs[1:]):
            d = b[start_key] - a[end_key]
            if d < 0:
                overlaps += 1  # two tasks on one GPU at once: a bug
            gaps.append(d)
    starts = sorted(r[start_key] for r in recs)
    waves = int(math.ceil(len(recs) / float(gpus))) if gpus else 1
    formula = ((starts[-1] - starts[0]) / (waves - 1) - sleep_s
               if waves > 1 and starts else float("nan"))
    return {"jobs": len(recs), "gpus_used": len(by), "gaps": len(gaps),
            "gap_min_s": min(gaps) if gaps else float("nan"),
            "gap_median_s": statistics.median(gaps) if gaps else float("nan"),
            "gap_mean_s": statistics.mean(gaps) if gaps else float("nan"),
            "gap_p90_s": _pct(gaps, 0.90), "gap_max_s": max(gaps) if gaps
            else float("nan"), "overlaps": overlaps,
            "per_wave_formula_s": formula, "waves": waves}
