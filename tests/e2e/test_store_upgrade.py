"""
test_store_upgrade.py - a state file written before the preemption and size
records had ids (tables without a primary key, which an HA leader's session
cannot see): its first open copies them, in their order, into the tables
of today (id INTEGER PRIMARY KEY), and the job's object shows them as before.
"""

import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402

OLD_PREEMPTIONS = ("CREATE TABLE preemptions(job INTEGER NOT NULL, at_us INTEGER NOT NULL,"
                   " kind TEXT NOT NULL, cause TEXT, by_job INTEGER, by_tenant TEXT, reason TEXT,"
                   " tasks INTEGER, gpu_seconds REAL)")
OLD_SIZES = ("CREATE TABLE job_size(job INTEGER NOT NULL, at_us INTEGER NOT NULL,"
             " size INTEGER NOT NULL, why TEXT)")


def pk_columns(path, table):
    db = sqlite3.connect(path)
    try:
        return [r[1] for r in db.execute("SELECT * FROM pragma_table_info(?)", (table,)) if r[5]]
    finally:
        db.close()


def test_old_preemption_and_size_records_gain_ids_in_order(controller):
    j = controller.submit({"gpus": 1, "command": ["true"]})  # no agent: it waits
    controller.stop()
    db = sqlite3.connect(controller.db_path)
    with db:
        db.execute("DROP TABLE preemptions")
        db.execute("DROP TABLE job_size")
        db.execute(OLD_PREEMPTIONS)
        db.execute(OLD_SIZES)
        # Out of time order on purpose: the order is the rows', not the times'.
        for at, reason in ((3_000_000, "first"), (1_000_000, "second"), (2_000_000, "third")):
            db.execute("INSERT INTO preemptions(job, at_us, kind, cause, reason, tasks,"
                       " gpu_seconds) VALUES(?, ?, 'preempt', 'priority', ?, 1, 2.5)",
                       (j["id"], at, reason))
        db.execute("INSERT INTO job_size(job, at_us, size, why) VALUES(?, 5, 2, 'grow')", (j["id"],))
        # A job's records are read when it was requeued (as each preemption does).
        db.execute("UPDATE jobs SET requeues = 3 WHERE id = ?", (j["id"],))
    db.close()
    assert pk_columns(controller.db_path, "preemptions") == []

    controller.start()
    assert "the preemption and size records now have ids" in controller.log()
    assert pk_columns(controller.db_path, "preemptions") == ["id"]
    assert pk_columns(controller.db_path, "job_size") == ["id"]
    got = controller.job(j["id"])
    assert [p["reason"] for p in got["preemptions"]] == ["first", "second", "third"], got
    db = sqlite3.connect(controller.db_path)
    try:
        assert db.execute("SELECT id, size, why FROM job_size").fetchall() == [(1, 2, "grow")]
        # Indexes came back with the tables.
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"preemptions_job", "job_size_job"} <= names, names
    finally:
        db.close()
    # A second open changes nothing.
    controller.restart()
    assert controller.log().count("the preemption and size records now have ids") == 1
    assert [p["reason"] for p in controller.job(j["id"])["preemptions"]] == ["first", "second", "third"]
    harness.wait_for(lambda: controller.request("GET", "/healthz")[0] == 200, what="healthz")
