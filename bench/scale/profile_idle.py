#!/usr/bin/python3
"""
bench/scale/profile_idle.py - `perf record -g` on an idle sluiced with N
emulated nodes heartbeating at the default interval (2 s) and the default
node_timeout (10 s): the profile behind RESULTS.md's idle-CPU figure
(issue 14):

    /usr/bin/python3 bench/scale/profile_idle.py 10000 15 [OUT [BUILD_DIR]]
    perf report -i /tmp/sluice-idle.perf --no-children --stdio | head -60

BUILD_DIR (default build/, or $SLUICE_BUILD) holds the sluiced and
sluice-agent to run. With SLUICE_PROFILE_STRACE=1 it counts sluiced's
system calls (`strace -c -f`) over the same window instead of sampling.
"""

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    secs = sys.argv[2] if len(sys.argv) > 2 else "15"
    out = sys.argv[3] if len(sys.argv) > 3 else "/tmp/sluice-idle.perf"
    if len(sys.argv) > 4:
        run.BUILD = os.path.abspath(sys.argv[4])
    d = tempfile.mkdtemp(prefix="scale-prof-")
    ctl = run.Ctl(d, n, 10)
    ctl.start(init=True)
    emu = run.Emu(ctl, n)
    try:
        run.wait(lambda: emu.registered() >= n, 300, 0.1)
        time.sleep(6)
        if os.environ.get("SLUICE_PROFILE_STRACE"):
            cmd = ["timeout", "-s", "INT", secs, "strace", "-c", "-f", "-o", out, "-p",
                   str(ctl.proc.pid)]
            subprocess.run(cmd)
        else:
            subprocess.run(["perf", "record", "-g", "-F", "999", "-o", out, "-p",
                            str(ctl.proc.pid), "--", "sleep", secs], check=True)
    finally:
        emu.stop()
        ctl.stop()


if __name__ == "__main__":
    main()
