"""
test_ha_pipeline.py - the leader's pipelined commit (docs/ha.md
"Throughput"): the loop does not wait for etcd, what a commit explains does.

A submission's 201 waits for its log entry to be in etcd (etcd stopped:
no answer; resumed: the answer); many submissions at once with several
transactions in flight leave a log in etcd without a gap, whose entries
(compressed) chain by their digests, and which the followers hold to the same digest; a
member whose file holds an entry the record does not (as a leader that
died with entries on their way) finds it at its start and rebuilds the
file from the snapshot and the log; --commit-pipeline out of range is
refused.
"""

import base64
import hashlib
import os
import sqlite3
import subprocess
import sys
import threading
import time
import zlib

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import hautil  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(hautil.ETCD, os.X_OK),
                                reason="etcd (Debian's etcd-server) is not installed")

SPEC = {"command": ["sleep", "30"], "gpus": 1}


def _group(tmp_path, build_dir, snapshot_every):
    yield from hautil.running_group(tmp_path, build_dir, 3, ["--snapshot-every",
                                                             str(snapshot_every),
                                                             "--commit-pipeline", "8"])


@pytest.fixture
def group(tmp_path, build_dir):
    """Snapshots every 40 entries: a file rebuilt from one and a log tail."""
    yield from _group(tmp_path, build_dir, 40)


@pytest.fixture
def whole_log(tmp_path, build_dir):
    """No snapshot but the first leader's: etcd keeps every entry."""
    yield from _group(tmp_path, build_dir, 1000000)


def b64(s):
    return base64.b64encode(s.encode()).decode()


def meta(m):
    db = sqlite3.connect("file:%s?mode=ro" % m.db_path, uri=True)
    try:
        return {k: v for k, v in db.execute("SELECT k, v FROM ha_meta")}
    finally:
        db.close()


def file_jobs(m):
    db = sqlite3.connect("file:%s?mode=ro" % m.db_path, uri=True)
    try:
        return {r[0] for r in db.execute("SELECT id FROM jobs")}
    except sqlite3.OperationalError:
        return set()  # between a snapshot's install and its open
    finally:
        db.close()


def log_entries(etcd):
    r = etcd.call("/v3/kv/range", {"key": b64("/sluice/log/"), "range_end": b64("/sluice/log0")})
    out = []
    for kv in r.get("kvs", []):
        idx = int(base64.b64decode(kv["key"]).decode().rsplit("/", 1)[1])
        out.append((idx, base64.b64decode(kv["value"])))
    return out


def chain(prev, changes):
    return int.from_bytes(hashlib.sha256(prev.to_bytes(8, "big") + changes).digest()[:8], "big")


def signed(d):
    """ha_meta stores the 64-bit digest in SQLite's signed INTEGER."""
    return d - (1 << 64) if d >= 1 << 63 else d


def test_ha_reply_waits_for_its_log_entry_in_etcd(group):
    etcd, ms = group
    lead = hautil.wait_leader(ms)
    st, _ = lead.request("POST", "/v1/jobs", dict(SPEC, name="warm"), token=lead.token("alice"))
    assert st == 201
    got = {}

    def submit():
        got["t0"] = time.monotonic()
        got["reply"] = lead.request("POST", "/v1/jobs", dict(SPEC, name="held"),
                                    token=lead.token("alice"), timeout=10)
        got["t1"] = time.monotonic()

    etcd.proc.send_signal(19)  # SIGSTOP: the log write cannot complete
    try:
        t = threading.Thread(target=submit)
        t.start()
        time.sleep(0.8)  # well within the leader's lease (3 s, fence at 2.4 s)
        assert "reply" not in got, got
        resumed = time.monotonic()
    finally:
        etcd.proc.send_signal(18)  # SIGCONT
    t.join(15)
    st, body = got["reply"]
    assert st == 201, (st, body)
    assert got["t1"] >= resumed, got
    # The job it acknowledged is in the record: a follower holds it.
    fol = [m for m in ms if m is not lead][0]
    harness.wait_for(lambda: body["id"] in file_jobs(fol), timeout=20, what="the job on a follower")


def test_ha_pipelined_log_has_no_gap_and_chains(whole_log):
    etcd, ms = whole_log
    lead = hautil.wait_leader(ms)
    ids, errs = [], []
    lock = threading.Lock()

    def stream(k):
        for i in range(30):
            st, body = lead.request("POST", "/v1/jobs", dict(SPEC, name="s%d-%d" % (k, i)),
                                    token=lead.token("alice"))
            with lock:
                (ids.append(body["id"]) if st == 201 else errs.append((st, body)))
    ts = [threading.Thread(target=stream, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errs, errs[:3]
    assert len(ids) == 240
    lm = meta(lead)
    for fol in [m for m in ms if m is not lead]:
        harness.wait_for(lambda: meta(fol).get("index") == lm["index"], timeout=20,
                         what="the follower at the leader's index")
        # The same history: the same digest at the same index.
        assert meta(fol)["digest"] == lm["digest"], (meta(fol), lm)
        assert set(ids) <= file_jobs(fol)
    # The log in etcd has every entry, without a gap, and each entry's
    # digest chains the one before with its changes, from the empty log's 0.
    entries = log_entries(etcd)
    idxs = [i for i, _ in entries]
    assert idxs == list(range(1, lm["index"] + 1)), idxs
    # An entry: the digest (8 bytes), the changes' length (4), the changes
    # compressed (zlib).
    d = 0
    for _, cur in entries:
        changes = zlib.decompress(cur[12:])
        assert len(changes) == int.from_bytes(cur[8:12], "big")
        d = chain(d, changes)
        assert int.from_bytes(cur[:8], "big") == d
    assert signed(int.from_bytes(entries[-1][1][:8], "big")) == lm["digest"]


def _ahead(m, index, digest):
    """Makes m's file say it holds entry index with digest (as a leader's
    file that committed an entry which never reached etcd), with a job
    row of its own that the record does not have."""
    db = sqlite3.connect(m.db_path)
    try:
        row = db.execute("SELECT * FROM jobs LIMIT 1").fetchone()
        cols = [d[0] for d in db.execute("SELECT * FROM jobs LIMIT 1").description]
        fake = list(row)
        fake[cols.index("id")] = 999999
        db.execute("INSERT INTO jobs(%s) VALUES(%s)" % (",".join(cols), ",".join("?" * len(cols))),
                   fake)
        db.execute("UPDATE ha_meta SET v = ? WHERE k = 'index'", (index,))
        db.execute("INSERT OR REPLACE INTO ha_meta(k, v) VALUES('digest', ?)", (digest,))
        db.commit()
    finally:
        db.close()


@pytest.mark.parametrize("how", ["ahead", "same-index-other-history"])
def test_ha_file_with_entries_the_record_lacks_is_rebuilt(group, how):
    etcd, ms = group
    lead = hautil.wait_leader(ms)
    ids = []
    for i in range(5):
        st, body = lead.request("POST", "/v1/jobs", dict(SPEC, name="r%d" % i),
                                token=lead.token("alice"))
        assert st == 201
        ids.append(body["id"])
    fol = [m for m in ms if m is not lead][0]
    lm = meta(lead)
    harness.wait_for(lambda: meta(fol).get("index") == lm["index"], timeout=20,
                     what="the follower at the leader's index")
    fol.stop()
    if how == "ahead":
        _ahead(fol, lm["index"] + 1, 12345)
    else:
        _ahead(fol, lm["index"], signed(lm["digest"] ^ 1))
    assert 999999 in file_jobs(fol)
    fol.start()
    harness.wait_for(lambda: "replacing it with the snapshot and the log" in fol.log(),
                     timeout=20, what="the member noticing its file is not the record's")
    harness.wait_for(lambda: 999999 not in file_jobs(fol) and set(ids) <= file_jobs(fol),
                     timeout=20, what="the file rebuilt without the entry the record lacks")
    # It follows the log from there, to the leader's digest.
    st, body = lead.request("POST", "/v1/jobs", dict(SPEC, name="after"), token=lead.token("alice"))
    assert st == 201
    lm = meta(lead)
    harness.wait_for(lambda: meta(fol).get("index") == lm["index"], timeout=20,
                     what="the rebuilt follower at the leader's index")
    assert meta(fol)["digest"] == lm["digest"]
    assert body["id"] in file_jobs(fol)


def test_ha_file_past_a_gap_in_the_record_is_rebuilt(whole_log):
    """A leader that died with entry N-1 on its way and N landed leaves the
    record a gap; its own file holds N-1 and N, and the record's N (its
    write) carries the digest of that file's history. At its next start
    the member must not take its file for a state of the record: it counts
    the record's entries up to its index. Made here by deleting N-1 from
    the record while a member whose file holds N is stopped."""
    etcd, ms = whole_log
    lead = hautil.wait_leader(ms)
    for i in range(6):
        st, _ = lead.request("POST", "/v1/jobs", dict(SPEC, name="g%d" % i),
                             token=lead.token("alice"))
        assert st == 201
    fol = [m for m in ms if m is not lead][0]
    lm = meta(lead)
    n = lm["index"]
    harness.wait_for(lambda: meta(fol).get("index") == n, timeout=20,
                     what="the follower at the leader's index")
    fol.stop()
    r = etcd.call("/v3/kv/deleterange", {"key": b64("/sluice/log/%020d" % (n - 1))})
    assert int(r.get("deleted", 0)) == 1, r
    fol.start()
    harness.wait_for(lambda: "the record holds %d of the %d entries" % (n - 1, n) in fol.log(),
                     timeout=20, what="the member counting the record's entries")
    assert "replacing it with the snapshot and the log" in fol.log()
    # Rebuilt from the snapshot (index 0) and the log, up to the gap.
    harness.wait_for(lambda: meta(fol).get("index") == n - 2, timeout=20,
                     what="the rebuilt file stopping before the gap")


def test_ha_commit_pipeline_out_of_range_is_refused(build_dir):
    for bad in ("0", "9", "x"):
        r = subprocess.run([os.path.join(build_dir, "sluiced"), "--ha", "--commit-pipeline", bad],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 2, r
        assert "--commit-pipeline: must be 1 to 8" in r.stderr, r.stderr
