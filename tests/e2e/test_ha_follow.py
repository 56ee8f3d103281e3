"""
test_ha_follow.py - a sluiced --ha member that cannot reach etcd when it
starts (or when it restarts itself after stepping down, cut off from
etcd) stands by instead of exiting, and joins once etcd answers
(docs/ha.md, "Election and fencing"). One real etcd member and one real
sluiced --ha on 127.0.0.1.
"""

import base64
import json
import os
import shutil
import signal
import sqlite3
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import hautil  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(hautil.ETCD, os.X_OK),
                                reason="etcd (Debian's etcd-server) is not installed")


def test_member_started_before_etcd_stands_by_then_leads(tmp_path, build_dir):
    if not os.access(os.path.join(build_dir, "sluiced"), os.X_OK):
        pytest.skip("sluiced is not built")
    etcd = hautil.Etcd(tmp_path)  # its ports chosen, nothing listening yet
    m = hautil.Member(os.path.join(str(tmp_path), "m1"), etcd, "m1")
    try:
        # Before etcd runs: the member answers its /healthz as a follower
        # that knows no leader (it used to exit 2: "lease grant: ...").
        m.start(timeout=30)
        assert m.role() == "follower"
        assert m.alive()
        etcd.start()
        harness.wait_for(lambda: m.role() == "leader", timeout=30, what="m1 leads")
        st, body = m.request("POST", "/v1/jobs", {"command": ["true"], "gpus": 1},
                             token=m.token("alice"))
        assert st == 201, (st, body)
        assert "standing by until etcd answers" in m.log()
    finally:
        hautil.stop_all([m], etcd if etcd.proc is not None else None)


def test_takeover_gives_nodes_node_timeout_from_the_takeover(tmp_path, build_dir):
    """A standby that has stood by for longer than node_timeout takes over:
    the nodes it recovers get node_timeout from the takeover to come back
    (it used to count from the standby's own start, and marked every node
    down at its first sweep, requeueing work still running on them). The
    agent is held (SIGSTOP) across the takeover and a sweep, so that it
    cannot come back before the new leader's first sweep."""
    for b in ("sluiced", "sluice-agent"):
        if not os.access(os.path.join(build_dir, b), os.X_OK):
            pytest.skip("%s is not built" % b)
    etcd = hautil.Etcd(tmp_path).start()
    ms = hautil.members(tmp_path, etcd, 2)
    agent = None
    try:
        for m in ms:
            m.config["node_timeout"] = 10  # sweeps every 2.5 s
            m._write_config()
        ms[0].start()
        harness.wait_for(lambda: ms[0].role() == "leader", timeout=30, what="m1 leads")
        ms[1].start()
        t_standby = time.monotonic()
        agent = harness.Agent(ms[0], "n1", gpus=2, extra_args=["--heartbeat", "1"])
        i = agent.args.index("--controller")
        agent.args[i + 1] = "%s,%s" % (ms[0].agent_addr, ms[1].agent_addr)
        agent.start(timeout=30)
        jid = ms[0].submit({"command": ["sleep", "120"], "gpus": 1})["id"]
        before = ms[0].wait_job(jid, "running", timeout=30)
        assert before["requeues"] == 0, before
        # Preconditions, not timings of the result: the standby has stood
        # by for longer than node_timeout; the agent misses the takeover
        # and the new leader's first sweep (2.5 s), and is back well
        # within node_timeout of its last message.
        time.sleep(max(0.0, 11.0 - (time.monotonic() - t_standby)))
        agent.proc.send_signal(signal.SIGSTOP)
        try:
            ms[0].kill9()
            new = hautil.wait_leader(ms, exclude=(ms[0],), timeout=30)
            assert new is ms[1]
            time.sleep(3.0)
        finally:
            agent.proc.send_signal(signal.SIGCONT)

        def back():
            n = new.node("n1")
            return n is not None and n["state"] == "up" and n.get("connected", True)
        harness.wait_for(back, timeout=30, what="n1 back on the new leader")
        assert "node=n1 down" not in new.log(), new.log()[-3000:]
        j = new.job(jid)
        assert j["state"] == "running" and j["requeues"] == 0, (json.dumps(j), new.log()[-3000:])
    finally:
        if agent is not None:
            agent.proc.send_signal(signal.SIGCONT)
            agent.stop()
        hautil.stop_all(ms, etcd)


def test_member_whose_state_directory_was_deleted_rebuilds_it(tmp_path, build_dir):
    """The state file's whole directory deleted under a follower, which is
    then restarted: it makes the directory again and installs the snapshot
    and the log (it used to fail writing the snapshot beside the file)."""
    if not os.access(os.path.join(build_dir, "sluiced"), os.X_OK):
        pytest.skip("sluiced is not built")
    etcd = hautil.Etcd(tmp_path).start()
    ms = hautil.members(tmp_path, etcd, 2)
    try:
        for m in ms:
            os.makedirs(os.path.join(m.dir, "state"), exist_ok=True)
            m.db_path = os.path.join(m.dir, "state", "sluiced.db")
            m.config["state"] = m.db_path
            m._write_config()
        ms[0].start()
        harness.wait_for(lambda: ms[0].role() == "leader", timeout=30, what="m1 leads")
        ms[1].start()
        ids = [ms[0].submit({"command": ["true"], "gpus": 1})["id"] for _ in range(5)]
        ms[1].kill9()
        shutil.rmtree(os.path.dirname(ms[1].db_path))
        ms[1].start(timeout=30)

        def rebuilt():
            if not os.path.exists(ms[1].db_path):
                return False
            try:
                db = sqlite3.connect("file:%s?mode=ro" % ms[1].db_path, uri=True)
                try:
                    have = {r[0] for r in db.execute("SELECT id FROM jobs")}
                finally:
                    db.close()
            except sqlite3.Error:
                return False
            return set(ids) <= have
        harness.wait_for(rebuilt, timeout=30, what="m2's state rebuilt from etcd")
        assert ms[1].role() == "follower"
    finally:
        hautil.stop_all(ms, etcd)


def test_leader_that_steps_down_revokes_its_old_lease(tmp_path, build_dir):
    """A leader whose etcd write is refused (its leader key deleted behind
    its back here) steps down and re-executes itself; the new image revokes
    the lease the old one held, so that a leader key still attached to it
    would go at once rather than after the TTL (a leader that stepped down
    on a transient etcd error used to block the election for up to a TTL)."""
    if not os.access(os.path.join(build_dir, "sluiced"), os.X_OK):
        pytest.skip("sluiced is not built")
    etcd = hautil.Etcd(tmp_path).start()
    m = hautil.Member(os.path.join(str(tmp_path), "m1"), etcd, "m1", ttl=10)
    try:
        m.start()
        harness.wait_for(lambda: m.role() == "leader", timeout=30, what="m1 leads")
        key = base64.b64encode(b"/sluice/leader").decode()
        kv = etcd.call("/v3/kv/range", {"key": key})["kvs"][0]
        lease = kv["lease"]
        assert int(etcd.call("/v3/lease/timetolive", {"ID": lease})["TTL"]) > 0
        etcd.call("/v3/kv/deleterange", {"key": key})
        # The next group commit is refused (the key is not its own): it
        # steps down, with no answer to this request.
        try:
            m.request("POST", "/v1/jobs", {"command": ["true"], "gpus": 1},
                      token=m.token("alice"), timeout=5)
        except (OSError, ConnectionError):
            pass
        harness.wait_for(lambda: "revoked lease %s" % lease in m.log() or
                         "not revoked" in m.log(), timeout=20, what="the old lease handled")
        assert "steps down" in m.log()
        assert "revoked lease %s, held before stepping down" % lease in m.log(), m.log()[-3000:]
        # Gone on etcd, well before its 10 s TTL.
        assert int(etcd.call("/v3/lease/timetolive", {"ID": lease})["TTL"]) == -1
        harness.wait_for(lambda: m.role() == "leader", timeout=30, what="m1 leads again")
    finally:
        hautil.stop_all([m], etcd)
