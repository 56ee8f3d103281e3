#!/usr/bin/python3
"""memhog.py - the memory task of the allocation-precision benchmark.

    memhog.py STEP_MIB MAX_MIB STATUS_FILE [REPORT_KIB]

Maps STEP_MIB at a time (private anonymous mmap: nothing is charged until a page
is written) and touches every page of it (a non-zero byte per 4 KiB page,
so each page is really charged), REPORT_KIB
(default 64) at a time; after each REPORT_KIB it overwrites STATUS_FILE
(one pwrite at offset 0, padded to a fixed length) with a JSON line:
bytes touched so far, the memory cgroup's memory.usage_in_bytes and
memory.max_usage_in_bytes, the usage of the cgroup that sets the limit
(usage_at_limit: an ancestor's where the limit is set above the task's
own cgroup, as Slurm's step), and at the end this process's VmRSS. Stops at MAX_MIB
(exit 0, "done": true). When the kernel kills it for memory, the last
record is what it had reached: the kill happened while touching the next
REPORT_KIB, so the usage at the kill lies within REPORT_KIB above the last
reported usage.

The first record (written before any allocation) also holds the limits
the task sees: the effective memory.limit_in_bytes,
memory.memsw.limit_in_bytes and memory.soft_limit_in_bytes (each the
smallest from its cgroup up to the root, and where it is set), its cgroup path, and the baseline usage of
the interpreter itself.
"""
import json
import mmap
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgself  # noqa: E402

PAGE = 4096
RECLEN = 1024


def vmrss_kib():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def main():
    step = int(float(sys.argv[1]) * 1024 * 1024)
    cap = int(float(sys.argv[2]) * 1024 * 1024)
    status = sys.argv[3]
    rep = int(sys.argv[4]) * 1024 if len(sys.argv) > 4 else 64 * 1024
    fd = os.open(status, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    d = cgself.cgdir("memory")
    usage = os.path.join(d, "memory.usage_in_bytes") if d else None
    maxu = os.path.join(d, "memory.max_usage_in_bytes") if d else None

    def readn(p):
        if p is None:
            return None
        with open(p, "rb") as fh:
            return int(fh.read())

    def put(rec):
        b = json.dumps(rec).encode()
        os.pwrite(fd, b + b" " * (RECLEN - 1 - len(b)) + b"\n", 0)

    lim, lim_at = cgself.effective_limit("memory", "memory.limit_in_bytes")
    sw, sw_at = cgself.effective_limit("memory", "memory.memsw.limit_in_bytes")
    soft, soft_at = cgself.effective_limit("memory", "memory.soft_limit_in_bytes")
    # The usage the limit is held against: that of the cgroup that sets it
    # (Slurm sets it on the step, whose cgroup also holds slurmstepd).
    lusage = os.path.join(lim_at, "memory.usage_in_bytes") if lim_at else None
    head = {"pid": os.getpid(), "path": cgself.paths().get("memory"),
            "limit": lim, "limit_set_at": lim_at, "memsw_limit": sw,
            "memsw_set_at": sw_at,
            "soft_limit": soft, "soft_set_at": soft_at,
            "oom_control": cgself.read(d, "memory.oom_control"),
            "base_usage": readn(usage), "base_rss_kib": vmrss_kib(),
            "step": step, "report": rep}
    with open(status + ".head", "w") as fh:
        json.dump(head, fh)
    keep = []
    touched = 0
    nrec = 0
    while touched < cap:
        b = mmap.mmap(-1, step, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        keep.append(b)
        for off in range(0, step, rep):
            n = min(rep, step - off)
            b[off:off + n:PAGE] = b"\x01" * len(range(off, off + n, PAGE))
            touched += n
            nrec += 1
            put({"touched": touched, "usage": readn(usage), "max_usage": readn(maxu),
                 "usage_at_limit": readn(lusage), "n": nrec})
    put({"touched": touched, "usage": readn(usage), "max_usage": readn(maxu),
         "rss_kib": vmrss_kib(), "n": nrec, "done": True})
    os.close(fd)


if __name__ == "__main__":
    main()
