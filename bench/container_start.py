#!/usr/bin/python3
"""
container_start.py - what a container costs an image task: its start
(submit to the first instruction of the task's own program) and GPU
turnover (consecutive one-GPU jobs through one GPU), plain and in a
container (agent --runtime /usr/sbin/runc, docs/containers.md), side by
side in one run, interleaved so that both see the same machine.

    sudo bench/container_start.py [--n 20] [--turnover 10] [--volumes K] [--build DIR]

Real sluiced and sluice-agent on 127.0.0.1 (tests/e2e/harness.py), the
agent root with --cgroup v1 (a cgroup root of its own) as in production,
tasks as `nobody`. The image is busybox-static imported into a store of
this run's own (never pulled). Each task runs `stamp`, a static program
built here (cc -static) that prints CLOCK_REALTIME in microseconds; the
plain task runs it from the host, the container from a mount. Start =
stamp - the time just before the submit's POST. Turnover: --turnover jobs
of gpus: 1 submitted at once to a one-GPU agent; (last stamp - first
stamp) / (jobs - 1). Prints the medians and the difference. --volumes K
adds two kinds to the starts, plain and container with K volumes each (a
read-only host_path, a claim, a disk empty_dir with a sub_path, a Memory
empty_dir, in turn; docs/jobspec.md "Volumes"): a plain task's mount
namespace and binds, a container's staged binds.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "fixtures"))

STAMP_C = r"""
#include <stdio.h>
#include <time.h>
int main(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    printf("stamp %lld\n", (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000);
    return 0;
}
"""


def build_image(base, store):
    root = os.path.join(base, "rootfs")
    os.makedirs(os.path.join(root, "bin"))
    shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
    os.symlink("busybox", os.path.join(root, "bin", "sh"))
    tar = os.path.join(base, "bb.tar")
    subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
    subprocess.run(["podman", "--root", store, "--runroot", store + "/run", "--events-backend=none",
                    "import", tar, "localhost/bench/busybox"], check=True, capture_output=True)


def stamp_of(ctl, u, jid):
    for line in u.job_log(ctl, jid).splitlines():
        if line.startswith("stamp "):
            return int(line.split()[1]) / 1e6
    raise RuntimeError("job %d printed no stamp: %r" % (jid, u.job_log(ctl, jid)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20, help="starts of each kind (default 20)")
    ap.add_argument("--turnover", type=int, default=10, help="jobs per turnover run (default 10)")
    ap.add_argument("--volumes", type=int, default=0,
                    help="also start plain and container tasks with this many volumes")
    ap.add_argument("--build", help="build directory (default: SLUICE_BUILD or build/)")
    a = ap.parse_args()
    if a.build:
        os.environ["SLUICE_BUILD"] = a.build
    import harness
    import e2e_util as u

    base = tempfile.mkdtemp(prefix="sluice-cstart-bench-", dir="/tmp")
    os.chmod(base, 0o711)
    store = os.path.join(base, "store")
    tools = os.path.join(base, "tools")
    os.makedirs(tools)
    os.chmod(tools, 0o755)
    with open(os.path.join(base, "stamp.c"), "w") as f:
        f.write(STAMP_C)
    subprocess.run(["cc", "-static", "-O2", "-o", os.path.join(tools, "stamp"),
                    os.path.join(base, "stamp.c")], check=True)
    build_image(base, store)
    ctl = harness.Controller(os.path.join(base, "ctl"), tasks_as_root=False,
                             tenants=[{"name": "alice"}],
                             config_overrides={"container_mounts": [tools], "volumes": {
                                 "host_path_prefixes": [tools], "claims": {"c": tools}}})
    os.chmod(ctl.dir, 0o711)
    cg_root = harness.unique_cgroup_root("bench")
    dirs = u.v1_cg_dirs(u.v1_mounts(), cg_root)
    for d in dirs.values():
        os.makedirs(d)
    agent = None
    stamp = os.path.join(tools, "stamp")
    plain = {"command": [stamp], "cpus": "0.5", "memory": "64Mi"}
    boxed = {"image": "localhost/bench/busybox", "command": ["/tools/stamp"], "cpus": "0.5",
             "memory": "64Mi", "mounts": ["%s:/tools:ro" % tools]}
    kinds = [("plain", plain), ("container", boxed)]
    if a.volumes:
        vols = []
        for i in range(a.volumes):
            vols.append([{"host_path": tools, "read_only": True}, {"pvc": "c"},
                         {"empty_dir": {}, "sub_path": "s"},
                         {"empty_dir": {"medium": "Memory", "size_limit": "64Mi"}}][i % 4])
            # A path the node has, so that the plain task binds it too.
            vols[-1]["path"] = os.path.join(base, "mnt", "v%d" % i)
            os.makedirs(vols[-1]["path"])
        kinds += [("plain+volumes", dict(plain, volumes=vols)),
                  ("container+volumes", dict(boxed, volumes=vols))]
    try:
        ctl.start()
        agent = harness.Agent(ctl, "n1", gpus=1, cpus="8", memory="16Gi", cgroup="v1",
                              cgroup_root=cg_root,
                              extra_args=["--runtime", "/usr/sbin/runc", "--image-store", store,
                                          "--image-pull", "never"]).start()
        # The first container of an image unpacks it: not a start's cost.
        ctl.wait_job(ctl.submit(dict(boxed))["id"], "succeeded", timeout=120)
        starts = {k: [] for k, _ in kinds}
        for _ in range(a.n):
            for kind, spec in kinds:
                t0 = time.time()
                jid = ctl.submit(dict(spec))["id"]
                ctl.wait_job(jid, "succeeded", timeout=60)
                starts[kind].append(stamp_of(ctl, u, jid) - t0)
        turn = {"plain": [], "container": []}
        for _ in range(3):
            for kind, spec in (("plain", plain), ("container", boxed)):
                ids = [ctl.submit(dict(spec, gpus=1))["id"] for _ in range(a.turnover)]
                for jid in ids:
                    ctl.wait_job(jid, "succeeded", timeout=120)
                ts = sorted(stamp_of(ctl, u, j) for j in ids)
                turn[kind].append((ts[-1] - ts[0]) / (len(ts) - 1))
    finally:
        if agent:
            agent.stop()
        ctl.stop()
        for d in dirs.values():
            u.remove_cgroup_tree(d)
        subprocess.run(["podman", "--root", store, "--runroot", store + "/run",
                        "--events-backend=none", "system", "reset", "--force"],
                       capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
    ms = {k: statistics.median(v) * 1000 for k, v in starts.items()}
    tms = {k: statistics.median(v) * 1000 for k, v in turn.items()}
    print("start (submit to the task's first instruction), median of %d, ms: plain %.1f  "
          "container %.1f  difference %.1f" % (a.n, ms["plain"], ms["container"],
                                              ms["container"] - ms["plain"]))
    for k in starts:
        if k.endswith("+volumes"):
            print("start with %d volumes, median of %d, ms: %s %.1f  (difference %.1f)" % (
                a.volumes, a.n, k, ms[k], ms[k] - ms[k.split("+")[0]]))
    print("start p90 ms: plain %.1f  container %.1f" % (
        sorted(starts["plain"])[int(a.n * 0.9) - 1] * 1000,
        sorted(starts["container"])[int(a.n * 0.9) - 1] * 1000))
    print("GPU turnover (one GPU, %d jobs of gpus: 1 at once), median of 3 runs, ms per job: "
          "plain %.1f  container %.1f  difference %.1f" % (a.turnover, tms["plain"],
                                                         tms["container"],
                                                         tms["container"] - tms["plain"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
