"""The Slurm side of bench/live: the same workloads, measured the same way.

Runs against the single-node Slurm 22.05 cluster that
../shared/peers/slurm/setup.sh starts on 127.0.0.1 (runtime under
/tmp/slurm-peer, SLURM_CONF=/tmp/slurm-peer/etc/slurm.conf).  The method is
the peer's (../shared/peers/slurm/README.md, "What is measured and how"):
t = 0 when the first `sbatch` starts; a job's start is the stamp its own
process writes first (bench/live/stamp.sh, bash $EPOCHREALTIME); the
harness only lists the stamp directory (no squeue polling) while it waits.

  startup    100 separate `sbatch` calls, no GRES (the node has 128 declared
             CPUs and only 8 GPUs, so 100 one-GPU jobs cannot all run at
             once on Slurm's one node); all 100 started = latest stamp.
  turnover   J `--gres=gpu:1` jobs of `sleep S` on the 8 GPUs; per GPU, the
             next job's start stamp minus the previous job's end stamp.
  submit     `sbatch --hold` from P parallel submitters up to N held jobs.
  queue      `squeue` (default format, whole output read) with N pending.

Every loop is bounded by a count or a deadline.  Jobs are cancelled with
`scancel --user=root` (all jobs of this single-purpose cluster) between
tests.
"""
import os
import subprocess
import threading
import time

import gaps  # bench/live/gaps.py: stamps and gap arithmetic

RUN = "/tmp/slurm-peer"
CONF = RUN + "/etc/slurm.conf"
JOBDIR = RUN + "/jobs"
ENV = dict(os.environ, SLURM_CONF=CONF)
ENV.pop("SLUICE_JOB_ID", None)


def sh(args, timeout=120, check=True):
    p = subprocess.run(args, env=ENV, capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError("%s -> rc %d: %s" % (" ".join(args), p.returncode,
                                                p.stderr.strip()))
    return p.stdout


def available():
    """True if the peer's Slurm cluster answers with the expected node."""
    if not os.path.exists(CONF):
        return False
    try:
        if "is UP" not in sh(["scontrol", "ping"], timeout=10, check=False):
            return False
        node = sh(["scontrol", "show", "node", "localhost"], timeout=10)
    except (OSError, subprocess.SubprocessError, RuntimeError):
        return False
    return "Gres=gpu:8" in node and "CPUTot=128" in node


def version():
    return sh(["sinfo", "-V"], timeout=10).strip()


def queue_len():
    return len(sh(["squeue", "-h", "-r", "-o", "%i"], timeout=120).split())


def cancel_all_and_wait(timeout=300):
    sh(["scancel", "--user=root"], timeout=180, check=False)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if queue_len() == 0:
            time.sleep(1.0)  # as the peer: let slurmd finish, node go idle
            return
        time.sleep(0.2)
    raise TimeoutError("slurm queue not empty after %d s" % timeout)


def _base_args():
    return ["--parsable", "-p", "main", "-t", "10", "-N", "1", "-n", "1",
            "--cpus-per-task=1", "-o", "/dev/null", "-e", "/dev/null",
            "--chdir", JOBDIR]




def _fresh_dir(d):
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))


def startup(stamp_sh, workdir, n=100, sleep_s=30, reps=3, log=print):
    """n separate sbatch calls (no GRES); returns a list of per-rep dicts."""
    os.makedirs(JOBDIR, exist_ok=True)
    cancel_all_and_wait()
    runs = []
    for r in range(reps):
        d = os.path.join(workdir, "slurm-startup-%d" % r)
        _fresh_dir(d)
        args = ["sbatch"] + _base_args() + [stamp_sh, d, str(sleep_s)]
        la = os.getloadavg()[0]
        t0 = time.time()
        err = []
        done = {}

        def submit():
            try:
                for _ in range(n):
                    sh(args, timeout=60)
                done["t"] = time.time()
            except Exception as e:  # reported below
                err.append(e)
        th = threading.Thread(target=submit, daemon=True)
        th.start()
        st = gaps.wait_stamps(d, ".s", n, 180)
        th.join(timeout=120)
        if err:
            raise err[0]
        starts = sorted(v[0] for v in st.values())
        res = {"all_started_s": starts[-1] - t0, "first_started_s": starts[0] - t0,
               "submit_s": done.get("t", float("nan")) - t0,
               "loadavg1_before": la}
        log("slurm startup rep %d: all %d started %.3f s (first %.3f s, "
            "sbatch calls took %.3f s)" % (r + 1, n, res["all_started_s"],
                                          res["first_started_s"],
                                          res["submit_s"]))
        runs.append(res)
        cancel_all_and_wait()
    return runs


def turnover(stamp_sh, workdir, jobs=40, sleep_s=0.2, reps=2, log=print):
    """jobs x --gres=gpu:1 `sleep sleep_s` on 8 GPUs; per-GPU gaps."""
    os.makedirs(JOBDIR, exist_ok=True)
    cancel_all_and_wait()
    runs = []
    for r in range(reps):
        d = os.path.join(workdir, "slurm-turnover-%d" % r)
        _fresh_dir(d)
        args = (["sbatch"] + _base_args() + ["--gres=gpu:1", stamp_sh, d,
                                             str(sleep_s), "end"])
        t0 = time.time()
        for _ in range(jobs):
            sh(args, timeout=60)
        t_sub = time.time() - t0
        ends = gaps.wait_stamps(d, ".e", jobs, 60 + jobs * 10)
        starts = gaps.read_stamps(d, ".s")
        recs = [{"gpu": "localhost/" + starts[j][1], "start": starts[j][0],
                 "end": ends[j][0]} for j in ends if j in starts]
        res = gaps.gpu_gaps(recs, sleep_s, gpus=8)
        res["submit_s"] = t_sub
        res["all_done_s"] = max(v[0] for v in ends.values()) - t0
        log("slurm turnover rep %d: %d jobs on 8 GPUs done in %.2f s; exit->next "
            "start per GPU median %.3f s (p90 %.3f, max %.3f); per-wave formula "
            "%.3f s" % (r + 1, jobs, res["all_done_s"], res["gap_median_s"],
                        res["gap_p90_s"], res["gap_max_s"],
                        res["per_wave_formula_s"]))
        runs.append(res)
        cancel_all_and_wait()
    return runs


HELD = ["--hold", "--gres=gpu:1", "--wrap", "/bin/true"]


def submit_and_queue(n=10000, par=4, squeue_reps=10, log=print):
    """Fills the queue to n held jobs with par parallel sbatch loops
    (rate = calls/s), then times squeue with n pending."""
    cancel_all_and_wait()
    per = [n // par + (1 if i < n % par else 0) for i in range(par)]
    lat = [[] for _ in range(par)]
    errs = []
    args = ["sbatch"] + _base_args() + HELD

    def w(i):
        try:
            for _ in range(per[i]):
                t = time.perf_counter()
                sh(args, timeout=60)
                lat[i].append(time.perf_counter() - t)
        except Exception as e:
            errs.append(e)
    ths = [threading.Thread(target=w, args=(i,), daemon=True) for i in range(par)]
    t0 = time.perf_counter()
    for t in ths:
        t.start()
    for t in ths:
        t.join(timeout=3600)
    el = time.perf_counter() - t0
    if errs:
        raise errs[0]
    lats = sorted(x for l in lat for x in l)
    res = {"n": n, "par": par, "elapsed_s": el, "rate_per_s": n / el,
           "lat_p50_s": lats[len(lats) // 2],
           "lat_p99_s": lats[min(len(lats) - 1, int(len(lats) * 0.99))]}
    log("slurm submit: %d sbatch --hold from %d parallel submitters: %.1f/s "
        "(p50 %.1f ms, p99 %.1f ms)" % (n, par, res["rate_per_s"],
                                        1e3 * res["lat_p50_s"],
                                        1e3 * res["lat_p99_s"]))
    pending = queue_len()
    ts = []
    lines = 0
    for _ in range(squeue_reps):
        t = time.perf_counter()
        lines = len(sh(["squeue"], timeout=120).splitlines())
        ts.append(time.perf_counter() - t)
    res["squeue_s"] = ts
    res["squeue_pending"] = pending
    res["squeue_lines"] = lines
    ts2 = []
    for _ in range(squeue_reps):
        t = time.perf_counter()
        sh(["squeue", "-h", "-t", "PD", "-o", "%i"], timeout=120)
        ts2.append(time.perf_counter() - t)
    res["squeue_ids_s"] = ts2
    log("slurm queue: squeue with %d pending: median %.1f ms (ids only %.1f ms)"
        % (pending, 1e3 * sorted(ts)[len(ts) // 2],
           1e3 * sorted(ts2)[len(ts2) // 2]))
    t = time.perf_counter()
    cancel_all_and_wait(timeout=600)
    res["cancel_all_s"] = time.perf_counter() - t
    return res
