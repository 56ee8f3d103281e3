#!/usr/bin/python3
"""
spawncost.py - what one task's launch costs inside sluice-agent: the time
from a decoded launch to a running process (the agent logs it as
`spawn_us=` per task), for N one-task jobs of `true` on one agent.

    bench/live/spawncost.py [--n 300] [--user NAME] [--build DIR [--old-config]]

--user maps the tenant to that Unix user (the agent then switches to it:
needs root and the user on this machine); without it the tenant keeps the
agent's identity through the harness's default (root with allow_root, or
the agent's own user when not root). Prints the median, 90th percentile and
mean in microseconds. Real daemons on 127.0.0.1 through tests/e2e/harness.py.
"""

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=300, help="jobs of one task (default 300)")
    ap.add_argument("--user", help="Unix user the tenant maps to (the agent must be root)")
    ap.add_argument("--build", help="build directory (default: SLUICE_BUILD or build/)")
    ap.add_argument("--old-config", action="store_true",
                    help="no user keys in the config (for a build from before issue 8)")
    a = ap.parse_args()
    if a.build:
        os.environ["SLUICE_BUILD"] = a.build
    import harness

    tmp = tempfile.mkdtemp(prefix="sluice-spawncost-")
    os.chmod(tmp, 0o711)
    tenants = [{"name": "alice", "weight": 1}]
    if a.user:
        tenants[0]["user"] = a.user
    ctl = harness.Controller(tmp, tenants=tenants, tasks_as_root=not a.old_config)
    agent = None
    try:
        ctl.start()
        agent = harness.Agent(ctl, "n1", gpus=0, cpus="64", memory="64Gi").start()
        ids = [ctl.submit({"command": ["true"], "cpus": "0.1", "memory": "16Mi"})["id"]
               for _ in range(a.n)]
        for jid in ids:
            ctl.wait_job(jid, ["succeeded", "failed"], timeout=120)
        agent.stop()  # its log is complete once it has exited
        us = [int(m) for m in re.findall(r"started spawn_us=(\d+)", open(agent.log_path).read())]
        if len(us) != a.n:
            print("expected %d launches, the agent logged %d" % (a.n, len(us)), file=sys.stderr)
            return 1
        us.sort()
        print("launches=%d user=%s median_us=%d p90_us=%d mean_us=%.0f"
              % (len(us), a.user or "(agent's)", statistics.median(us), us[int(len(us) * 0.9)],
                 statistics.mean(us)))
        return 0
    finally:
        if agent:
            agent.stop()
        ctl.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
