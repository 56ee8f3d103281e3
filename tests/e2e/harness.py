"""
harness.py - starts real Sluice daemons on 127.0.0.1 for end-to-end tests.

Shared by every e2e test file (the Redis `start_server` / h2o `spawn_h2o`
model): each daemon gets ephemeral ports (bind port 0, read the port, pass
it on), its own temporary directory, and is stopped by PID at teardown.
kill -9 is only ever sent to processes this module started.

    ctl = Controller(tmp_path); ctl.start()
    st, body = ctl.request("POST", "/v1/jobs", {"command": ["true"]},
                           token=ctl.tenant_tokens["alice"])
    a = Agent(ctl, "n1", gpus=8); a.start()

FakeAgent speaks the controller<->agent protocol (docs/protocol.md) from
Python, so that controller tests do not depend on the real agent.

Waiting is done by polling with a generous deadline (wait_for); tests never
assert on elapsed time.
"""

import copy
import hashlib
import hmac
import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import threading
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_dir():
    """The build directory holding sluiced, sluice-agent and sluice."""
    d = os.environ.get("SLUICE_BUILD") or os.path.join(REPO, "build")
    return os.path.abspath(d)


def free_port():
    """An ephemeral port on 127.0.0.1 that was free a moment ago."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def wait_for(pred, timeout=15.0, interval=0.02, what="condition"):
    """Polls pred() until it returns a truthy value, which is returned.
    Raises AssertionError naming `what` after timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = pred()
        except (ConnectionError, OSError, http.client.HTTPException):
            last = None
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))
        time.sleep(interval)


def _deep_merge(base, over):
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _deep_merge(base[k], v)
        else:
            base[k] = copy.deepcopy(v)
    return base


def _stop_process(proc, sig=signal.SIGTERM, timeout=10.0):
    """Stops a process this module started: sig, then SIGKILL if it lingers."""
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.send_signal(sig)
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)
    except ProcessLookupError:
        pass


class _Daemon:
    """What Controller and Agent share: a child process (self.proc) whose
    output goes to self.log_path through the open file self._log."""

    def log(self):
        """The last 8,000 characters the daemon wrote."""
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")[-8000:]
        except OSError:
            return ""

    def stop(self):
        _stop_process(self.proc)
        if self._log:
            self._log.close()
            self._log = None

    def kill9(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        if self._log:
            self._log.close()
            self._log = None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


class Controller(_Daemon):
    """A sluiced process with its own config, state database and ports.

    Tenants alice and bob (weight 1 each) exist unless config_overrides
    replaces "tenants". Tokens are random per instance and survive restart().
    With tasks_as_root (the default) every tenant's tasks run as root
    (default_user: root, allow_root: true), as they did before tenants were
    Unix users; with False the config's own defaults apply (nobody).
    """

    def __init__(self, tmpdir, config_overrides=None, tenants=None, init=True,
                 tasks_as_root=True):
        # init: start with --init, so that a missing or empty state
        # database is created (sluiced refuses one otherwise).
        self.init = init
        self.dir = str(tmpdir)
        os.makedirs(self.dir, exist_ok=True)
        self.admin_token = "adm-" + secrets.token_hex(8)
        self.cluster_token = "clu-" + secrets.token_hex(8)
        if tenants is None:
            tenants = [{"name": "alice", "weight": 1}, {"name": "bob", "weight": 1}]
        self.tenant_tokens = {}
        ts = []
        for t in tenants:
            t = dict(t)
            t.setdefault("token", "tok-%s-%s" % (t["name"], secrets.token_hex(6)))
            self.tenant_tokens[t["name"]] = t["token"]
            ts.append(t)
        self.port = free_port()
        self.agent_port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.agent_addr = "127.0.0.1:%d" % self.agent_port
        self.db_path = os.path.join(self.dir, "sluiced.db")
        self.config_path = os.path.join(self.dir, "sluiced.yaml")
        self.log_path = os.path.join(self.dir, "sluiced.log")
        self.config = {
            "listen": "127.0.0.1:%d" % self.port,
            "agent_listen": self.agent_addr,
            "state": self.db_path,
            "admin_token": self.admin_token,
            "cluster_token": self.cluster_token,
            "node_timeout": 10,
            "scheduler": {"queue": "drf", "placement": "bestfit", "backfill": "easy"},
            "tenants": ts,
        }
        if tasks_as_root:
            # The tests written before tenants ran as Unix users expect their
            # tasks to write into pytest's directories (root's, 0700), as the
            # agent's user: say so explicitly. test_sec_users.py passes False.
            self.config.update({"default_user": "root", "allow_root": True})
        if config_overrides:
            _deep_merge(self.config, config_overrides)
            if "tenants" in config_overrides:
                self.tenant_tokens = {t["name"]: t.get("token") for t in self.config["tenants"]}
        self.proc = None
        self._log = None
        self._write_config()

    def _write_config(self):
        with open(self.config_path, "w") as f:
            yaml.safe_dump(self.config, f, sort_keys=False)

    @property
    def binary(self):
        return os.path.join(build_dir(), "sluiced")

    def start(self, timeout=15.0):
        """Starts sluiced and waits for /healthz. On the very first start a
        port taken meanwhile by another process (free_port races) is
        replaced and the start retried; restarts keep their ports."""
        for attempt in range(3):
            try:
                return self._start_once(timeout)
            except AssertionError as e:
                first = not getattr(self, "_started", False)
                port_taken = "cannot bind" in str(e) or "cannot listen" in str(e)
                if not (first and port_taken and attempt < 2):
                    raise
                self.port = free_port()
                self.agent_port = free_port()
                self.url = "http://127.0.0.1:%d" % self.port
                self.agent_addr = "127.0.0.1:%d" % self.agent_port
                self.config["listen"] = "127.0.0.1:%d" % self.port
                self.config["agent_listen"] = self.agent_addr
                self._write_config()

    def _start_once(self, timeout):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self._log = open(self.log_path, "ab")
        env = dict(os.environ)
        env.setdefault("SLUICE_LOG", "info")
        init_args = ["--init"] if self.init else []
        self.proc = subprocess.Popen([self.binary, "--config", self.config_path] + init_args,
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env)

        def healthy():
            if self.proc.poll() is not None:
                raise AssertionError("sluiced exited with %s; log:\n%s" % (self.proc.returncode, self.log()))
            st, body = self.request("GET", "/healthz", timeout=1.0)
            return st == 200 and body.get("status") == "ok"

        wait_for(healthy, timeout=timeout, what="sluiced /healthz")
        self._started = True
        return self


    def restart(self, timeout=15.0):
        self.stop()
        return self.start(timeout=timeout)


    def node_token(self, name):
        """The node token of node `name` (docs/config.md): what
        `sluiced node-token NAME` prints."""
        return hmac.new(self.cluster_token.encode(), b"sluice-node:" + name.encode(),
                        hashlib.sha256).hexdigest()

    def token(self, who):
        """"admin", "cluster", or a tenant name -> its token."""
        if who == "admin":
            return self.admin_token
        if who == "cluster":
            return self.cluster_token
        return self.tenant_tokens[who]

    def _connect(self, timeout):
        """The connection request() uses: plain HTTP here (TLSController
        in fixtures/tlsutil.py speaks HTTPS)."""
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, token=None, timeout=10.0, raw=None,
                headers=None):
        """Sends one HTTP request. body: a JSON-able object (or raw bytes via
        raw=). token: a token string (sent as Bearer). Returns (status, json
        or text when the body is not JSON)."""
        conn = self._connect(timeout)
        try:
            hdrs = dict(headers or {})
            data = None
            if raw is not None:
                data = raw
            elif body is not None:
                data = json.dumps(body).encode()
            if data is not None:
                hdrs["Content-Type"] = "application/json"
            if token is not None:
                hdrs["Authorization"] = "Bearer " + token
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            text = resp.read().decode(errors="replace")
            ctype = resp.getheader("Content-Type") or ""
            if "json" in ctype:
                try:
                    return resp.status, json.loads(text)
                except ValueError:
                    return resp.status, text
            return resp.status, text
        finally:
            conn.close()

    # Convenience wrappers used by many tests.
    def submit(self, spec, tenant="alice"):
        st, body = self.request("POST", "/v1/jobs", spec, token=self.token(tenant))
        assert st == 201, (st, body)
        return body

    def job(self, jid, who="admin"):
        st, body = self.request("GET", "/v1/jobs/%d" % jid, token=self.token(who))
        assert st == 200, (st, body)
        return body

    def jobs(self, who="admin", query=""):
        st, body = self.request("GET", "/v1/jobs" + query, token=self.token(who))
        assert st == 200, (st, body)
        return body["jobs"]

    def nodes(self):
        st, body = self.request("GET", "/v1/nodes", token=self.admin_token)
        assert st == 200, (st, body)
        return body["nodes"]

    def node(self, name):
        for n in self.nodes():
            if n["name"] == name:
                return n
        return None

    def wait_job(self, jid, states, timeout=20.0):
        """Waits until job jid is in one of states (a string or a list)."""
        if isinstance(states, str):
            states = [states]

        def check():
            j = self.job(jid)
            return j if j["state"] in states else None

        return wait_for(check, timeout=timeout, what="job %d in %s" % (jid, states))

    def wait_node(self, name, state="up", timeout=20.0):
        def check():
            n = self.node(name)
            return n if n is not None and n["state"] == state else None

        return wait_for(check, timeout=timeout, what="node %s %s" % (name, state))


class Agent(_Daemon):
    """A real sluice-agent process declaring GPUs by flags."""

    def __init__(self, controller, name, gpus=8, gpu_model="H100", gpu_memory="80Gi",
                 cpus="64", memory="512Gi", pool=None, extra_args=(), token=None,
                 token_file=None, env=None, cgroup="none", cgroup_root=None):
        """token: sent with --token (default: the cluster token); token_file:
        --token-file instead; env: variables added to the agent's environment;
        cgroup: --cgroup (default none: no enforcement, so that agents of
        concurrent test runs share no cgroup; None passes no flag, i.e.
        auto); cgroup_root: --cgroup-root (a test that enforces gives each
        agent its own, e.g. with its pid in it: unique_cgroup_root())."""
        self.controller = controller
        self.name = name
        self.workdir = os.path.join(controller.dir, "agent-" + name)
        os.makedirs(self.workdir, exist_ok=True)
        cred = (["--token-file", str(token_file)] if token_file is not None else
                ["--token", token if token is not None else controller.cluster_token])
        self.env = dict(os.environ, **env) if env else None
        self.args = ["--controller", controller.agent_addr] + cred + [
                     "--name", name, "--workdir", self.workdir,
                     "--cpus", str(cpus), "--memory", str(memory)]
        if gpus:
            self.args += ["--gpus", str(gpus), "--gpu-model", gpu_model, "--gpu-memory", gpu_memory]
        if pool:
            self.args += ["--pool", pool]
        if cgroup is not None:
            self.args += ["--cgroup", cgroup]
        if cgroup_root is not None:
            self.args += ["--cgroup-root", cgroup_root]
        self.args += list(extra_args)
        self.log_path = os.path.join(self.workdir, "agent.log")
        self.proc = None
        self._log = None

    @property
    def binary(self):
        return os.path.join(build_dir(), "sluice-agent")

    def start(self, timeout=15.0, wait=True):
        """Starts the agent; with wait, returns once the controller lists the
        node up and connected with a hello newer than this start (so that a
        restarted agent is not mistaken for its predecessor)."""
        self._log = open(self.log_path, "ab")
        t_start = time.time() - 0.5  # margin for clock granularity
        self.proc = subprocess.Popen([self.binary] + self.args, stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=self.env)
        if wait:
            def up():
                if self.proc.poll() is not None:
                    raise AssertionError("sluice-agent %s exited with %s; log:\n%s"
                                         % (self.name, self.proc.returncode, self.log()))
                n = self.controller.node(self.name)
                return (n is not None and n["state"] == "up" and n.get("connected", True)
                        and (n.get("last_seen") or 0) >= t_start)

            wait_for(up, timeout=timeout, what="node %s up" % self.name)
        return self

    def stop(self):
        """SIGTERM: the agent stops its tasks (SIGTERM, SIGKILL after its
        --grace) and exits. A task that ignores SIGTERM would outlive an
        agent killed before that grace ends, so after 5 s a second SIGTERM
        asks the agent for SIGKILL at once (agent_tasks_stop_all), and only
        then is the agent itself killed."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _stop_process(self.proc)
        super().stop()
        self._reap_left_tasks()

    def _reap_left_tasks(self):
        reap_left_tasks(self.workdir)


def reap_left_tasks(workdir):
    """Whatever the agent's state.json in workdir still lists as running
    (an agent killed, or one that left a task behind) is this test's: its
    task's process group and its monitor are killed, by pid, so that no
    test leaves work running."""
    try:
        with open(os.path.join(workdir, "state.json")) as f:
            tasks = json.load(f).get("tasks", [])
    except (OSError, ValueError):
        return
    for t in tasks:
        pid, mon = t.get("pid"), t.get("monitor")
        if t.get("state") != "running" or not isinstance(pid, int) or not isinstance(mon, int):
            continue
        # Still the same processes: the monitor is sluice-monitor and the
        # task its child (a pid reused since is left alone).
        try:
            with open("/proc/%d/comm" % mon) as f:
                if f.read().strip() != "sluice-monitor":
                    continue
            with open("/proc/%d/status" % pid) as f:
                if "PPid:\t%d\n" % mon not in f.read():
                    continue
            os.killpg(pid, signal.SIGKILL)
            os.kill(mon, signal.SIGKILL)
        except OSError:
            pass


def unique_cgroup_root(tag):
    """A cgroup root name no other test run uses: /sluice-test-TAG-PID-N."""
    unique_cgroup_root.n = getattr(unique_cgroup_root, "n", 0) + 1
    return "/sluice-test-%s-%d-%d" % (tag, os.getpid(), unique_cgroup_root.n)


class FakeAgent:
    """An agent written in Python that speaks docs/protocol.md over TCP.

    It records every message the controller sends (self.received) and, unless
    auto=False, answers like a real agent: a launch gets a `started` reply
    (pid 10000+n) at once; a kill gets an `exited` with signal 15; a logs
    request gets the text in self.logs[(job, task)]. Tests drive exits with
    exit(job, task, code).
    """

    def __init__(self, controller, name, gpus=8, gpu_model="H100", gpu_memory="80Gi",
                 cpus="64", memory="512Gi", pool=None, labels=None, tasks=None, auto=True,
                 token=None):
        self.controller = controller
        self.name = name
        self.node = {"name": name, "cpus": str(cpus), "memory": str(memory), "gpus": gpus}
        if gpus:
            self.node["gpu_model"] = gpu_model
            self.node["gpu_memory"] = gpu_memory
        if pool:
            self.node["pool"] = pool
        if labels:
            self.node["labels"] = labels
        self.token = token if token is not None else controller.cluster_token
        self.auto = auto
        self.hello_tasks = list(tasks or [])
        self.received = []
        self.logs = {}
        self.running = {}  # (job, task) -> pid
        self.sock = None
        self.reader = None
        self.welcome = None
        self.closed = threading.Event()
        self.cv = threading.Condition()
        self.next_pid = 10000
        self.lock = threading.Lock()

    def connect(self, timeout=10.0, expect_welcome=True):
        host, port = self.controller.agent_addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.closed.clear()
        self.file = self.sock.makefile("rb")
        self.send({"type": "hello", "token": self.token, "version": "0.1.0",
                   "node": self.node, "tasks": self.hello_tasks})
        first = self.file.readline()
        if not first:
            self.closed.set()
            return None
        msg = json.loads(first)
        self.welcome = msg
        if msg.get("type") != "welcome":
            self.closed.set()
            return msg
        self.sock.settimeout(None)
        self.reader = threading.Thread(target=self._read_loop, daemon=True)
        self.reader.start()
        return msg

    def start(self, timeout=10.0):
        msg = self.connect(timeout=timeout)
        assert msg and msg.get("type") == "welcome", msg
        return self

    def send(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        with self.lock:
            self.sock.sendall(data)

    def heartbeat(self):
        self.send({"type": "heartbeat", "time": time.time()})

    def start_heartbeats(self, interval=0.2):
        """Sends a heartbeat every interval seconds until close()."""
        stop = self.closed

        def loop():
            while not stop.wait(interval):
                try:
                    self.heartbeat()
                except (OSError, AttributeError):
                    return

        threading.Thread(target=loop, daemon=True).start()

    def _read_loop(self):
        try:
            for line in self.file:
                msg = json.loads(line)
                with self.cv:
                    self.received.append(msg)
                    self.cv.notify_all()
                if self.auto:
                    self._auto_reply(msg)
        except (OSError, ValueError):
            pass
        finally:
            self.closed.set()
            with self.cv:
                self.cv.notify_all()

    def _auto_reply(self, msg):
        t = msg.get("type")
        try:
            if t == "launch":
                self.next_pid += 1
                self.running[(msg["job"], msg["task"])] = self.next_pid
                self.send({"type": "started", "job": msg["job"], "task": msg["task"],
                           "pid": self.next_pid, "time": time.time()})
            elif t == "kill":
                key = (msg["job"], msg["task"])
                if key in self.running:
                    del self.running[key]
                    self.send({"type": "exited", "job": msg["job"], "task": msg["task"],
                               "exit_code": 143, "signal": 15, "time": time.time()})
            elif t == "logs":
                key = (msg["job"], msg["task"])
                if key in self.logs:
                    data = self.logs[key]
                    off = msg.get("offset", 0)
                    lim = msg.get("limit", 65536)
                    chunk = data[off:off + lim]
                    self.send({"type": "logs", "req": msg["req"], "data": chunk, "offset": off,
                               "eof": off + len(chunk) >= len(data)})
                else:
                    self.send({"type": "logs", "req": msg["req"],
                               "error": "no log for job %s task %s" % key})
        except OSError:
            pass

    def exit(self, job, task, code=0, sig=0):
        self.running.pop((job, task), None)
        self.send({"type": "exited", "job": job, "task": task, "exit_code": code,
                   "signal": sig, "time": time.time()})

    def messages(self, mtype=None, job=None):
        with self.cv:
            return [m for m in self.received
                    if (mtype is None or m.get("type") == mtype)
                    and (job is None or m.get("job") == job)]

    def wait_message(self, mtype, job=None, task=None, count=1, timeout=15.0):
        """Waits until at least count messages of mtype (for job/task) arrived;
        returns them."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                got = [m for m in self.received if m.get("type") == mtype
                       and (job is None or m.get("job") == job)
                       and (task is None or m.get("task") == task)]
                if len(got) >= count:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("timed out waiting for %d %s message(s) on %s; got %r"
                                         % (count, mtype, self.name, self.received[-10:]))
                self.cv.wait(left)

    def close(self):
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.sock.close()
            self.sock = None
        self.closed.wait(5)
