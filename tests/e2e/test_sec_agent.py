"""
test_sec_agent.py - a hostile tenant against its node's agent, with real
sluiced and sluice-agent processes on 127.0.0.1 (docs/security.md, "The
node's agent"; docs/protocol.md, "Fencing"; docs/metrics-agent.md).

    - a task that leaves a FIFO (or a hard link) where the agent writes its
      preempt file neither hangs the agent nor has it write through the
      link: the preemption's signal comes, the agent keeps answering, and
      the file is the agent's own regular file;
    - an agent stopped (SIGSTOP) past its fence deadline cannot stop its
      task, so the task's monitor does: the task's own time stamps show
      its last one before the first of the copy the controller starts
      elsewhere;
    - one local client holding more sockets than the exporter admits, and
      reopening each one closed, blinds no scraper: 50 scrapes from another
      address all succeed, and so do scrapes from the client's own address
      once the exporter evicts its idle sockets;
    - a second agent on a work directory or a cgroup root that an agent
      holds refuses to start (exit status 2) and names the holder's pid,
      and the first agent's spare cgroups survive it.

No assertion depends on elapsed time: every wait polls with a deadline,
every load loop is bounded in count and time, and the fencing order is
read from the task's own stamps.
"""

import os
import selectors
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
from harness import Agent, wait_for  # noqa: E402


def _need_agent(build_dir):
    if not os.access(os.path.join(build_dir, "sluice-agent"), os.X_OK):
        pytest.skip("sluice-agent is not built")


def _log_value(ctl, jid, key):
    """The value of the first line `key=VALUE` in job jid's log."""
    def find():
        for line in u.job_log(ctl, jid).splitlines():
            if line.startswith(key + "="):
                return line[len(key) + 1:]
        return None
    return wait_for(find, what="%s in the log of job %d" % (key, jid))


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


# ---- the preempt file ----

# Tasks run as nobody (the config's default user), in their own job
# directory; what they plant is relative to it. The trap reads the preempt
# file when the signal comes (it is a regular file by then, or cat would
# block and the note would never appear).
HOSTILE_PREEMPT = r"""
echo "dir=$PWD"
echo "file=$SLUICE_PREEMPT_FILE"
f=$(basename "$SLUICE_PREEMPT_FILE")
case "$1" in
fifo) mkfifo "$f.tmp" "$f" ;;
link) echo precious > mine; ln mine "$f.tmp"; ln mine "$f" ;;
esac
trap 'echo "term $(cat "$f")" > note; exit 0' TERM
echo planted > planted
while :; do sleep 0.1; done
"""


@pytest.mark.parametrize("plant", ["fifo", "link"])
def test_a_planted_preempt_file_neither_hangs_the_agent_nor_is_written_through(
        controller_factory, build_dir, plant):
    """The task makes the preempt file's temporary name and the name itself
    FIFOs (an open for writing blocks until someone reads them: the agent's
    loop would hang, it would stop heartbeating, and the controller would
    start its other jobs elsewhere while they run on) or hard links to a
    file of its own (root's write would go through to the linked file,
    anywhere when fs.protected_hardlinks is 0). A drain with its deadline
    now preempts the task: it must get its SIGTERM with the deadline in a
    regular file, its own file must be unchanged, and the agent must go on
    answering the controller."""
    _need_agent(build_dir)
    ctl = controller_factory({"default_user": "nobody", "allow_root": False,
                              "node_timeout": 3, "heartbeat": 1})
    n1 = Agent(ctl, "n1", gpus=1, extra_args=["--heartbeat", "1"])
    try:
        n1.start()
        job = ctl.submit({"gpus": 1, "on_node_failure": "requeue",
                          "command": ["sh", "-c", HOSTILE_PREEMPT, "sh", plant]})
        jid = job["id"]
        jobdir = _log_value(ctl, jid, "dir")
        pfile = _log_value(ctl, jid, "file")
        wait_for(lambda: os.path.exists(os.path.join(jobdir, "planted")), what="the trap planted")
        st, body = ctl.request("POST", "/v1/nodes/drain",
                               {"node": "n1", "deadline": time.time(), "reason": "probe"},
                               token=ctl.admin_token)
        assert st == 200, (st, body)
        note = wait_for(lambda: _read(os.path.join(jobdir, "note")), timeout=20,
                        what="the preempted task's SIGTERM")
        assert note.startswith("term SLUICE_PREEMPT_DEADLINE="), note
        s = os.lstat(pfile)
        assert stat.S_ISREG(s.st_mode) and s.st_nlink == 1 and s.st_uid == 0, s
        if plant == "link":
            assert _read(os.path.join(jobdir, "mine")) == "precious\n"
            assert os.stat(os.path.join(jobdir, "mine")).st_nlink == 2  # its own .tmp link
        # The agent still answers: the node stays connected and heard from.
        seen = ctl.node("n1")["last_seen"]
        wait_for(lambda: (lambda n: n["connected"] and n["last_seen"] > seen
                          and n["state"] != "down")(ctl.node("n1")),
                 timeout=20, what="a heartbeat from n1 after the preemption")
        assert "preempt file" not in n1.log(), n1.log()
    finally:
        n1.stop()


# ---- fencing by the task's monitor ----

# A stamp every 100 ms: the node's name and the time, from the task itself.
STAMPING = ("trap 'exit 0' TERM; "
            "while :; do echo \"$SLUICE_NODE $(date +%%s.%%N)\" >> %(f)s; sleep 0.1; done")


def _stamps(path):
    out = {}
    for line in _read(path).splitlines():
        parts = line.split()
        if len(parts) == 2:
            out.setdefault(parts[0], []).append(float(parts[1]))
    return out


def test_a_stopped_agent_has_its_task_stopped_by_the_monitor_before_the_copy(
        controller_factory, build_dir, tmp_path):
    """n1's agent is stopped (SIGSTOP) for longer than the whole fence
    window: it cannot stop its task, and before its monitor enforced the
    lease nothing did, so the original ran on beside the copy the
    controller started on n2. Now the monitor stops the task at the
    agent's fence deadline: while n1 is still stopped its task is gone, and
    its last stamp is older than the copy's first. Resumed, n1 reports the
    end as fenced and the job runs on n2, requeued once."""
    _need_agent(build_dir)
    ctl = controller_factory({"node_timeout": 2, "heartbeat": 1, "kill_grace": 2})
    stamps = str(tmp_path / "stamps")
    n1 = Agent(ctl, "n1", gpus=1, extra_args=["--heartbeat", "1"])
    n2 = Agent(ctl, "n2", gpus=1, extra_args=["--heartbeat", "1"])
    stopped = False
    try:
        n1.start()
        job = ctl.submit({"gpus": 1, "on_node_failure": "requeue",
                          "command": ["sh", "-c", STAMPING % {"f": stamps}]})
        (pid,) = u.wait_running_pids(ctl, job["id"])
        wait_for(lambda: len(_stamps(stamps).get("n1", [])) >= 3, what="n1's first stamps")
        n2.start()
        n1.proc.send_signal(signal.SIGSTOP)
        stopped = True
        # The copy runs on n2 for a while (ten stamps) with n1 still stopped.
        wait_for(lambda: len(_stamps(stamps).get("n2", [])) >= 10, timeout=40,
                 what="the copy's stamps on n2")
        assert not u.pid_alive(pid), "n1's task still runs beside its copy"
        s = _stamps(stamps)
        assert max(s["n1"]) < min(s["n2"]), (max(s["n1"]), min(s["n2"]))
        n1.proc.send_signal(signal.SIGCONT)
        stopped = False
        # Back, n1 registers again and reports the end; the copy runs on.
        wait_for(lambda: n1.log().count("registered with controller") >= 2, what="n1 back")
        ctl.wait_node("n1", "up")
        j = ctl.wait_job(job["id"], "running")
        assert j["requeues"] == 1 and j["placement"][0]["node"] == "n2", j
        s = _stamps(stamps)
        assert max(s["n1"]) < min(s["n2"]), (max(s["n1"]), min(s["n2"]))
    finally:
        if stopped:
            n1.proc.send_signal(signal.SIGCONT)
        n1.stop()
        n2.stop()


# ---- the exporter against a flood of sockets ----

class Flood:
    """A client on 127.0.0.1 holding `count` sockets to the exporter and,
    while `reopen` is set, opening a new one for each the exporter closes.
    Bounded: it stops after `max_opens` connections or `max_s` seconds, or
    at stop()."""

    def __init__(self, port, count=80, max_opens=200000, max_s=120.0):
        self.port, self.count, self.max_opens, self.max_s = port, count, max_opens, max_s
        self.opens = 0
        self.reopen = threading.Event()
        self.reopen.set()
        self.done = threading.Event()
        self.sel = selectors.DefaultSelector()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            return
        self.sel.register(s, selectors.EVENT_READ)
        self.opens += 1

    def _run(self):
        end = time.monotonic() + self.max_s
        for _ in range(self.count):
            self._open()
        while not self.done.is_set() and time.monotonic() < end and self.opens < self.max_opens:
            for key, _ in self.sel.select(timeout=0.1):
                s = key.fileobj
                try:
                    data = s.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if data:
                    continue
                self.sel.unregister(s)
                s.close()
                if self.reopen.is_set():
                    self._open()
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.done.set()
        self.thread.join(timeout=30)


def _scrape(port, source):
    """One GET /metrics from source address; True when it got a 200."""
    s = socket.socket()
    s.settimeout(10)
    try:
        s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        return data.startswith(b"HTTP/1.1 200") and b"sluice_agent_nvml_available" in data
    except OSError:
        return False
    finally:
        s.close()


def test_a_socket_flood_from_one_address_blinds_no_scraper(controller, build_dir):
    """A client on 127.0.0.1 (any task reaches it) holds 80 sockets to the
    exporter, more than it admits in all (64), and reopens each one
    closed. Before the per-peer limit it held all 64 and every scrape was
    closed at accept; now it holds at most 8, so 50 scrapes from 127.0.0.2
    all succeed while it churns. Then it stops reopening, and 20 scrapes
    from 127.0.0.1 itself all succeed, each evicting an idle socket."""
    _need_agent(build_dir)
    port = harness.free_port()
    n1 = Agent(controller, "n1", gpus=0,
               extra_args=["--metrics-listen", "127.0.0.1:%d" % port, "--heartbeat", "1"])
    flood = None
    try:
        n1.start()
        assert _scrape(port, "127.0.0.1")
        flood = Flood(port).start()
        # The flood has made its sockets and the exporter has closed some
        # (refused or evicted), which it reopened.
        wait_for(lambda: flood.opens > flood.count + 20, timeout=30, what="the flood churning")
        ok = sum(_scrape(port, "127.0.0.2") for _ in range(50))
        assert ok == 50, "%d of 50 scrapes from 127.0.0.2 succeeded" % ok
        flood.reopen.clear()
        ok = sum(_scrape(port, "127.0.0.1") for _ in range(20))
        assert ok == 20, "%d of 20 scrapes from 127.0.0.1 succeeded" % ok
        assert n1.alive()
    finally:
        if flood:
            flood.stop()
        n1.stop()


# ---- one agent per work directory and per cgroup root ----

def _second_agent(args, timeout=20):
    """Runs a second sluice-agent with args; its (exit status, stderr), or
    (None, stderr) when it was still running after timeout (then killed)."""
    p = subprocess.Popen([os.path.join(harness.build_dir(), "sluice-agent")] + args,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, err = p.communicate(timeout=timeout)
        return p.returncode, err
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate(timeout=10)
        return None, err


def test_a_second_agent_on_a_held_work_directory_refuses_naming_the_holder(controller,
                                                                          build_dir):
    """Two agents on one work directory would clobber each other's
    state.json and adopt (and clean up after) each other's tasks: the
    second exits 2 and says which process holds the directory."""
    _need_agent(build_dir)
    n1 = Agent(controller, "n1", gpus=0)
    try:
        n1.start()
        args = list(n1.args)
        args[args.index("--name") + 1] = "n1b"
        rc, err = _second_agent(args)
        assert rc == 2, (rc, err)
        assert "process %d (sluice-agent)" % n1.proc.pid in err and n1.workdir in err, err
        assert n1.alive() and controller.node("n1")["state"] == "up"
    finally:
        n1.stop()


MOUNTS = u.v1_mounts()


@pytest.mark.skipif(os.geteuid() != 0 or any(c not in MOUNTS or not os.access(MOUNTS[c], os.W_OK)
                                             for c in u.CGROUP_V1),
                    reason="needs root and the cgroup v1 controllers mounted writable")
def test_a_second_agent_on_a_held_cgroup_root_refuses_and_spares_survive(controller, build_dir,
                                                                         tmp_path):
    """n1 enforces with cgroup v1 under a root and keeps two spare task
    cgroups there. A second agent on the same root (as one with the same
    node name on the same host gets by default) used to remove them at
    start-up as a dead agent's leftovers, so n1's launches failed; now it
    exits 2 naming n1's pid before touching anything, n1's spares are all
    there, and a job still runs on n1."""
    _need_agent(build_dir)
    root = harness.unique_cgroup_root("lock")
    dirs = u.v1_cg_dirs(MOUNTS, root)
    for d in dirs.values():
        os.makedirs(d)
    n1 = Agent(controller, "n1", gpus=0, cgroup="v1", cgroup_root=root)
    try:
        n1.start()

        def spares():
            s = {c: sorted(e for e in os.listdir(d) if e.startswith("pool."))
                 for c, d in dirs.items()}
            return s if all(len(v) == 2 for v in s.values()) else None

        before = wait_for(spares, what="n1's two spare cgroups")
        other = tmp_path / "other-workdir"
        other.mkdir()
        args = list(n1.args)
        args[args.index("--workdir") + 1] = str(other)
        rc, err = _second_agent(args)
        assert rc == 2, (rc, err)
        assert "process %d (sluice-agent)" % n1.proc.pid in err and root in err, err
        assert spares() == before
        job = controller.submit({"command": ["true"]})
        j = controller.wait_job(job["id"], ["succeeded", "failed"])
        assert j["state"] == "succeeded", j
    finally:
        n1.stop()
        for d in dirs.values():
            u.remove_cgroup_tree(d)
