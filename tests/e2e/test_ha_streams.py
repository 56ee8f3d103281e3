"""
test_ha_streams.py - the HA commit path under concurrent streams of
submissions (docs/ha.md, "Throughput"): eight connections submit at once,
so that group commits gather several submissions per etcd transaction.

kill -9 of the leader mid-stream: every acknowledged job is on the new
leader and on the remaining follower. SIGSTOP of the etcd member
mid-stream: no submission sent after the stop is acknowledged (nothing is
acknowledged before etcd holds it), the leader fences itself, and once
etcd runs again every acknowledged job is there.
"""

import os
import signal
import sqlite3
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
STREAMS = 8
PER_STREAM = 100  # at most 800 jobs: one GET /v1/jobs?limit=1000 sees all


@pytest.fixture
def group(tmp_path, build_dir):
    if not os.access(os.path.join(build_dir, "sluiced"), os.X_OK):
        pytest.skip("sluiced is not built")
    etcd = hautil.Etcd(tmp_path).start()
    ms = hautil.members(tmp_path, etcd, 3, extra=["--snapshot-every", "1000000"])
    try:
        for m in ms:
            m.start()
        yield etcd, ms
    finally:
        try:
            etcd.proc.send_signal(signal.SIGCONT)
        except ProcessLookupError:
            pass
        hautil.stop_all(ms, etcd)


class Streams:
    """STREAMS threads, each submitting up to PER_STREAM jobs one after the
    other to one controller, stopping at the first error. Records for each
    answer (monotonic send time, status, job id)."""

    def __init__(self, lead):
        self.lead = lead
        self.answers = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,)) for i in range(STREAMS)]

    def run(self, s):
        for i in range(PER_STREAM):
            t = time.monotonic()
            try:
                st, body = self.lead.request("POST", "/v1/jobs",
                                             dict(SPEC, name="s%d-%d" % (s, i)),
                                             token=self.lead.token("alice"), timeout=15)
            except (OSError, ConnectionError, harness.http.client.HTTPException):
                return
            with self.lock:
                self.answers.append((t, st, body.get("id") if isinstance(body, dict) else None))
            if st != 201:
                return

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def acked(self):
        with self.lock:
            return [a for a in self.answers if a[1] == 201]

    def running(self):
        return sum(t.is_alive() for t in self.threads)

    def join(self):
        for t in self.threads:
            t.join(60)
        assert not any(t.is_alive() for t in self.threads)


def job_ids(m):
    st, body = m.request("GET", "/v1/jobs?limit=1000", token=m.token("admin"))
    assert st == 200, (st, body)
    return {j["id"] for j in body["jobs"]}


def file_jobs(m):
    """The job ids in a member's state file (a follower redirects reads of
    /v1/jobs, so its copy is read from the file)."""
    db = sqlite3.connect("file:%s?mode=ro" % m.db_path, uri=True)
    try:
        return {r[0] for r in db.execute("SELECT id FROM jobs")}
    finally:
        db.close()


def test_ha_streams_kill9_leader_loses_no_acknowledged_job(group):
    etcd, ms = group
    lead = hautil.wait_leader(ms)
    s = Streams(lead).start()
    harness.wait_for(lambda: len(s.acked()) >= 100, timeout=60, what="100 acknowledged jobs")
    assert s.running() == STREAMS  # killed mid-stream, not after it
    lead.kill9()
    s.join()
    ids = {a[2] for a in s.acked()}
    assert len(ids) >= 100
    new = hautil.wait_leader(ms, exclude=(lead,))
    have = job_ids(new)
    assert ids <= have, sorted(ids - have)
    # The remaining follower applies the same log to its own file.
    other = [m for m in ms if m is not lead and m is not new][0]
    harness.wait_for(lambda: ids <= file_jobs(other), timeout=20, what="the follower's copy")


def test_ha_streams_stopped_etcd_acknowledges_nothing_it_lacks(group):
    etcd, ms = group
    lead = hautil.wait_leader(ms)
    s = Streams(lead).start()
    harness.wait_for(lambda: len(s.acked()) >= 50, timeout=60, what="50 acknowledged jobs")
    assert s.running() == STREAMS  # stopped mid-stream, not after it
    etcd.proc.send_signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    try:
        # The leader cannot renew its lease nor write: it fences itself and
        # every open connection is closed; the streams end.
        harness.wait_for(lambda: "steps down" in lead.log(), timeout=30, what="step down")
        s.join()
    finally:
        etcd.proc.send_signal(signal.SIGCONT)
    late = [a for a in s.acked() if a[0] > stopped_at]
    assert late == [], "acknowledged after etcd stopped: %r" % late[:5]
    new = hautil.wait_leader(ms, timeout=30)
    ids = {a[2] for a in s.acked()}
    have = job_ids(new)
    assert ids <= have, sorted(ids - have)
