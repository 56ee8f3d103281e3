"""
test_ha.py - sluiced --ha on a real etcd (docs/ha.md): three controllers on
distinct 127.0.0.1 ports (not network namespaces) and one etcd member.

The leader is elected; a follower answers writes with 307 to the leader and
an agent's first message with a redirect line; kill -9 of the leader: a
standby takes over with every acknowledged job; SIGSTOP of the leader past
its lease then SIGCONT: its etcd write fails, it answers and sends nothing,
and it comes back as a follower; a member whose state file is deleted
rebuilds it from etcd (snapshot and log), and a follower stopped while a
snapshot comes to cover the whole log installs that snapshot; a preemption
record reaches the followers' files and a new leader; GET /v1/controllers
and `sluice controllers`.
"""

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import hautil  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(hautil.ETCD, os.X_OK),
                                reason="etcd (Debian's etcd-server) is not installed")

SPEC = {"command": ["sleep", "30"], "gpus": 1}


@pytest.fixture
def group(tmp_path, build_dir):
    if not os.access(os.path.join(build_dir, "sluiced"), os.X_OK):
        pytest.skip("sluiced is not built")
    etcd = hautil.Etcd(tmp_path).start()
    ms = hautil.members(tmp_path, etcd, 3, extra=["--snapshot-every", "25"])
    try:
        for m in ms:
            m.start()
        yield etcd, ms
    finally:
        hautil.stop_all(ms, etcd)


def submit_many(lead, n, name):
    ids = []
    for i in range(n):
        st, body = lead.request("POST", "/v1/jobs", dict(SPEC, name="%s-%d" % (name, i)),
                                token=lead.token("alice"))
        assert st == 201, (st, body)
        ids.append(body["id"])
    return ids


def job_ids(m):
    st, body = m.request("GET", "/v1/jobs?limit=1000", token=m.token("admin"))
    assert st == 200, (st, body)
    return {j["id"] for j in body["jobs"]}


def file_jobs(m):
    db = sqlite3.connect("file:%s?mode=ro" % m.db_path, uri=True)
    try:
        return {r[0] for r in db.execute("SELECT id FROM jobs")}
    finally:
        db.close()


def test_ha_follower_redirects_and_controllers_view(group, build_dir):
    etcd, ms = group
    lead = hautil.wait_leader(ms)
    fol = [m for m in ms if m is not lead]
    # Writes to a follower: 307 to the leader's URL for the same path.
    st, body = fol[0].request("POST", "/v1/jobs", SPEC, token=fol[0].token("alice"))
    assert st == 307, (st, body)
    assert body["leader"] == lead.url and body["location"] == lead.url + "/v1/jobs"
    assert body["epoch"] > 0
    conn = harness.http.client.HTTPConnection("127.0.0.1", fol[1].port, timeout=5)
    conn.request("GET", "/v1/jobs/7?x=1")
    r = conn.getresponse()
    assert r.status == 307 and r.getheader("Location") == lead.url + "/v1/jobs/7?x=1"
    conn.close()
    # An agent's first message: the redirect line, then the connection ends.
    s = socket.create_connection(("127.0.0.1", fol[0].agent_port), timeout=5)
    s.sendall(b'{"type":"hello","node":"n1"}\n')
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    msg = json.loads(data)
    assert msg["type"] == "redirect" and msg["leader"] == lead.agent_addr
    assert msg["epoch"] == body["epoch"]
    # The group as every member sees it.
    for m in ms:
        st, v = m.request("GET", "/v1/controllers")
        assert st == 200, (st, v)
        assert v["mode"] == "ha" and v["leader"] == lead.name and v["epoch"] == body["epoch"]
        assert sorted(x["name"] for x in v["members"]) == ["m1", "m2", "m3"]
        assert [x["role"] for x in v["members"] if x["name"] == lead.name] == ["leader"]
    out = subprocess.run([os.path.join(build_dir, "sluice"), "--server", fol[1].url,
                          "controllers"], capture_output=True, text=True, timeout=10,
                         env=dict(os.environ, SLUICE_TOKEN=lead.token("admin")))
    assert out.returncode == 0, out.stderr
    assert lead.name in out.stdout and "leader" in out.stdout
    assert str(body["epoch"]) in out.stdout
    # A follower's /metrics: its HA series.
    st, text = fol[0].request("GET", "/metrics")
    assert st == 200 and "sluice_ha_leader 0" in text and "sluice_ha_replication_lag" in text
    st, text = lead.request("GET", "/metrics", token=lead.token("admin"))
    assert st == 200 and "sluice_ha_leader 1" in text
    assert "sluice_ha_commit_seconds_count" in text


def test_ha_kill9_leader_standby_takes_over_with_every_acknowledged_job(group):
    etcd, ms = group
    lead = hautil.wait_leader(ms)
    ids = submit_many(lead, 60, "k9")
    lead.kill9()
    new = hautil.wait_leader(ms, exclude=(lead,))
    assert new is not lead
    have = job_ids(new)
    assert set(ids) <= have, sorted(set(ids) - have)
    # The new leader accepts work under a higher epoch.
    st, v = new.request("GET", "/v1/controllers")
    assert v["leader"] == new.name
    more = submit_many(new, 5, "after")
    assert min(more) > max(ids)


def test_ha_stopped_leader_past_its_lease_writes_and_answers_nothing(group):
    etcd, ms = group
    lead = hautil.wait_leader(ms)
    ids = submit_many(lead, 10, "before")
    st, v = lead.request("GET", "/v1/controllers")
    old_epoch = v["epoch"]
    lead.sigstop()
    try:
        new = hautil.wait_leader(ms, exclude=(lead,), timeout=30)
    finally:
        pass
    # A submission queued in the stopped leader's socket while it is stopped.
    got = {}

    def late():
        try:
            got["r"] = lead.request("POST", "/v1/jobs", dict(SPEC, name="late-stale"),
                                    token=lead.token("alice"), timeout=15)
        except (OSError, ConnectionError, harness.http.client.HTTPException) as e:
            got["e"] = repr(e)
    t = threading.Thread(target=late)
    t.start()
    time.sleep(0.5)
    lead.sigcont()
    t.join(20)
    # It answered no 201: it stepped down before writing or replying.
    assert "r" not in got or got["r"][0] != 201, got
    harness.wait_for(lambda: "steps down" in lead.log(), timeout=10, what="step down")
    # Same process (it re-executes itself), now a follower of the new epoch.
    harness.wait_for(lambda: lead.role() == "follower", timeout=15, what="old leader follows")
    st, v = new.request("GET", "/v1/controllers")
    assert v["epoch"] > old_epoch and v["leader"] == new.name
    st, body = new.request("GET", "/v1/jobs?limit=1000", token=new.token("admin"))
    names = {j["name"] for j in body["jobs"]}
    assert "late-stale" not in names
    assert set(ids) <= {j["id"] for j in body["jobs"]}
    st, body = lead.request("POST", "/v1/jobs", SPEC, token=lead.token("alice"))
    assert st == 307 and body["leader"] == new.url


def test_ha_member_with_deleted_state_rebuilds_from_etcd(group):
    etcd, ms = group
    lead = hautil.wait_leader(ms)
    ids = submit_many(lead, 40, "snap")  # past --snapshot-every 25: a snapshot and a log tail
    fol = [m for m in ms if m is not lead][0]
    fol.stop()
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(fol.db_path + sfx):
            os.unlink(fol.db_path + sfx)
    fol.start()
    harness.wait_for(lambda: set(ids) <= file_jobs(fol), timeout=20,
                     what="the rebuilt file holding every job")
    # It follows the log from there.
    more = submit_many(lead, 3, "tail")
    harness.wait_for(lambda: set(more) <= file_jobs(fol), timeout=20, what="the log's tail")
    # A follower behind a snapshot that covers the whole log (every entry
    # after its own deleted, none later): it must notice and install the
    # snapshot, not wait for an entry that will never come. Made certain:
    # the follower is stopped while the leader passes --snapshot-every.
    fol.sigstop()
    try:
        behind = file_index(fol)
        late = submit_many(lead, 30, "late")

        def covered():
            st, v = lead.request("GET", "/v1/controllers")
            return (st == 200 and v["snapshot_index"] == v["applied"] and
                    v["snapshot_index"] > behind and v)
        # The snapshot after the last job covers the whole log; one came in
        # the middle of the batch: one job at a time until one does (at
        # most --snapshot-every more).
        for i in range(30):
            try:
                v = harness.wait_for(covered, timeout=0.6, what="a snapshot covering the log")
                break
            except AssertionError:
                late += submit_many(lead, 1, "late-%d" % i)
        else:
            raise AssertionError("no snapshot covered the whole log")
        r = etcd.call("/v3/kv/range", {"key": _b64("/sluice/log/"),
                                       "range_end": _b64("/sluice/log0"), "count_only": True})
        assert int(r.get("count", 0)) == 0, r
    finally:
        fol.sigcont()
    harness.wait_for(lambda: set(late) <= file_jobs(fol), timeout=20,
                     what="the jobs that only the newer snapshot holds")
    assert file_index(fol) >= v["snapshot_index"]
    assert "falling back to the snapshot" in fol.log()
    st, text = fol.request("GET", "/metrics")
    assert st == 200 and "sluice_ha_snapshot_fallbacks_total 0" not in text, text
    # And it follows the log again after it.
    last = submit_many(lead, 2, "after-snapshot")
    harness.wait_for(lambda: set(last) <= file_jobs(fol), timeout=20, what="the log after it")
    # etcd holds the snapshot and the log after it, not every entry.
    r = etcd.call("/v3/kv/range", {"key": _b64("/sluice/log/"), "range_end": _b64("/sluice/log0"),
                                   "count_only": True})
    assert int(r.get("count", 0)) < 40


def file_index(m):
    db = sqlite3.connect("file:%s?mode=ro" % m.db_path, uri=True)
    try:
        row = db.execute("SELECT v FROM ha_meta WHERE k = 'index'").fetchone()
        return row[0] if row else 0
    finally:
        db.close()


def _b64(s):
    import base64
    return base64.b64encode(s.encode()).decode()


def file_rows(m, sql):
    db = sqlite3.connect("file:%s?mode=ro" % m.db_path, uri=True)
    try:
        return db.execute(sql).fetchall()
    except sqlite3.OperationalError:
        return []  # the follower is between a snapshot's install and its open
    finally:
        db.close()


def test_ha_preemption_records_reach_the_followers(group):
    """A preemption (a drain past its deadline) is a row of preemptions: it
    has a primary key, so the leader's session ships it and a follower's
    file holds it, and a new leader shows the job's history."""
    etcd, ms = group
    lead = hautil.wait_leader(ms)
    agent = harness.Agent(lead, "n1", gpus=1)
    agent.start()
    try:
        st, j = lead.request("POST", "/v1/jobs", SPEC, token=lead.token("alice"))
        assert st == 201, (st, j)
        lead.wait_job(j["id"], "running")
        st, body = lead.request("POST", "/v1/nodes/drain",
                                {"node": "n1", "deadline": 0, "reason": "kernel update"},
                                token=lead.token("admin"))
        assert st == 200, (st, body)
        lead.wait_job(j["id"], "pending")
        fol = [m for m in ms if m is not lead]
        q = "SELECT job, kind, reason FROM preemptions"
        for f in fol:
            rows = harness.wait_for(lambda: file_rows(f, q), timeout=20,
                                    what="the preemption in %s's file" % f.name)
            assert rows[0][0] == j["id"] and rows[0][1] == "drain", rows
            assert "kernel update" in rows[0][2], rows
    finally:
        agent.stop()
    lead.kill9()
    new = hautil.wait_leader(ms, exclude=(lead,))
    pre = new.job(j["id"])["preemptions"]
    assert len(pre) == 1 and pre[0]["kind"] == "drain", pre


def test_ha_secrets_open_on_a_new_leader_and_a_member_without_the_key_is_refused(group, tmp_path):
    """The group shares one sealing key (secrets.key_file, a copy on each
    member): a secret created under one leader opens at a launch by the
    next. A member whose key file is missing refuses to start, naming the
    file, rather than making a key of its own that the others lack."""
    etcd, ms = group
    lead = hautil.wait_leader(ms)
    st, body = lead.request("POST", "/v1/secrets", {"name": "db", "data": {"password": "s3cret-v"}},
                            token=lead.token("alice"))
    assert st == 201, (st, body)
    lead.kill9()
    new = hautil.wait_leader(ms, exclude=(lead,))
    agent = harness.Agent(new, "n1", gpus=0)
    agent.start()
    try:
        st, j = new.request("POST", "/v1/jobs", {
            "command": ["sh", "-c", 'test "$DB_PASS" = s3cret-v'], "cpus": "0.1",
            "secrets": [{"secret": "db", "key": "password", "env": "DB_PASS"}]},
            token=new.token("alice"))
        assert st == 201, (st, j)
        done = new.wait_job(j["id"], ["succeeded", "failed"])
        assert done["state"] == "succeeded", done
    finally:
        agent.stop()
    os.unlink(lead.config["secrets"]["key_file"])
    r = subprocess.run([lead.binary, "--config", lead.config_path, "--ha", "--etcd", etcd.url,
                        "--name", lead.name, "--lease-ttl", "3"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "secrets.key_file" in r.stderr and lead.config["secrets"]["key_file"] in r.stderr, r.stderr
    assert "share one sealing key" in r.stderr, r.stderr
