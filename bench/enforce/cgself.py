"""cgself.py - what a task can learn about its own cgroup v1 placement,
shared by busy.py and memhog.py (bench/enforce/).

/proc/self/cgroup names, per v1 hierarchy, the path of the cgroup the
process is in; the hierarchy is mounted at /sys/fs/cgroup/<controllers>
on these machines (cpu and cpuacct are separate mounts here, so each gets
its own line). A file that cannot be read is reported as None rather than
guessed, so that a task outside any limit says so.
"""
import os

CGROOT = "/sys/fs/cgroup"


def paths():
    """{controller: path inside its hierarchy} for this process (v1 lines
    only; the v2 line "0::/..." is returned under the key "unified")."""
    out = {}
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            hid, ctrls, path = line.rstrip("\n").split(":", 2)
            if hid == "0":
                out["unified"] = path
                continue
            for c in ctrls.split(","):
                out[c] = path
    return out


def cgdir(ctrl, p=None):
    """The directory of this process's cgroup of controller ctrl."""
    p = p or paths()
    path = p.get(ctrl)
    if path is None:
        return None
    for mnt in (os.path.join(CGROOT, ctrl), os.path.join(CGROOT, "cpu,cpuacct")):
        if os.path.isdir(mnt):
            return mnt + path
    return None


def read(d, name):
    """The text of d/name stripped, or None."""
    if d is None:
        return None
    try:
        with open(os.path.join(d, name)) as fh:
            return fh.read().strip()
    except OSError:
        return None


def read_int(d, name):
    v = read(d, name)
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def read_kv(d, name):
    """A "key value" per line file (cpu.stat, memory.stat) as a dict."""
    v = read(d, name)
    out = {}
    for line in (v or "").splitlines():
        k, _, n = line.partition(" ")
        try:
            out[k] = int(n)
        except ValueError:
            pass
    return out


def effective_limit(ctrl, name):
    """The smallest value of file `name` from this process's cgroup up to
    the hierarchy's root (v1 limits are hierarchical: a parent's limit
    binds its children), and the directory that sets it."""
    d = cgdir(ctrl)
    mnt = os.path.join(CGROOT, ctrl)
    best = (None, None)
    while d and d.startswith(mnt):
        v = read_int(d, name)
        if v is not None and (best[0] is None or v < best[0]):
            best = (v, d)
        if d == mnt:
            break
        d = os.path.dirname(d)
    return best
