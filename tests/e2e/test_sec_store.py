"""
test_sec_store.py - issue 8, findings 4 and 5, against real daemons: the
state database is refused when damaged (a flipped byte in a page of job
rows), missing or empty (unless --init), copied online by `sluiced backup`
while jobs are submitted, and a full disk at COMMIT stops sluiced with
status 3 and loses no acknowledged job; GPU model and pool names that jobs
named come back when the jobs go, and jobs may hold only half of each name
table (32 models, 512 pools no node has), so pending jobs naming bogus
models and pools never lock a new real node out, across restarts; that half
is divided among the tenants, so one tenant's made-up names never lock
another tenant out of naming a model or pool no node has yet; a job
stored past that share is kept at start-up; a job row whose state sluiced
never writes stops the load (exit 2, naming the job and the state).
"""

import hashlib
import json
import os
import sqlite3
import subprocess
import threading
import time

import pytest

from harness import Agent, Controller, wait_for


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def quick_check(path):
    """PRAGMA quick_check through Python's sqlite3, on a read-only
    connection (which never writes the file): "ok" or what it found."""
    uri = "file:%s?mode=ro" % path
    try:
        con = sqlite3.connect(uri, uri=True)
        try:
            rows = con.execute("PRAGMA quick_check").fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError as e:
        return "error: %s" % e
    return "ok" if rows == [("ok",)] else "; ".join(r[0] for r in rows)


def run_sluiced(ctl, *extra, timeout=15):
    """Runs sluiced on ctl's config in the foreground (it is expected to
    exit at once); returns the CompletedProcess."""
    return subprocess.run([ctl.binary, "--config", ctl.config_path] + list(extra),
                          capture_output=True, text=True, timeout=timeout)


def submit_pending(ctl, n, tenant="alice", **spec):
    ids = []
    for i in range(n):
        body = {"command": ["sleep", "1"], "name": "keep-%d" % i, "gpus": 1}
        body.update(spec)
        ids.append(ctl.submit(body, tenant=tenant)["id"])
    return ids


def job_pages(path):
    """Page numbers (1-based) of the table b-tree leaf pages that hold job
    rows, found by reading the file: the jobs table's pages are those
    reached from its root page in sqlite_master."""
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        page_size = con.execute("PRAGMA page_size").fetchone()[0]
        root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'jobs'").fetchone()[0]
    finally:
        con.close()
    with open(path, "rb") as f:
        data = f.read()

    def page(no):
        return data[(no - 1) * page_size:no * page_size]

    leaves, stack = [], [root]
    while stack:
        no = stack.pop()
        p = page(no)
        hdr = 100 if no == 1 else 0
        kind = p[hdr]
        ncells = int.from_bytes(p[hdr + 3:hdr + 5], "big")
        if kind == 0x0D:  # table leaf
            leaves.append(no)
        elif kind == 0x05:  # table interior: cells name the children
            stack.append(int.from_bytes(p[hdr + 8:hdr + 12], "big"))  # right-most child
            for c in range(ncells):
                off = int.from_bytes(p[hdr + 12 + 2 * c:hdr + 14 + 2 * c], "big")
                stack.append(int.from_bytes(p[off:off + 4], "big"))
    return page_size, leaves


def flip_until_damaged(path, page_size, page_no):
    """Flips one byte of the page header or cell pointers of page page_no
    (XOR 0xFF) such that quick_check fails; returns the offset. Each try
    is undone before the next, so exactly one byte ends up flipped."""
    base = (page_no - 1) * page_size + (100 if page_no == 1 else 0)
    for off in [base + 8, base + 3, base + 4, base + 5, base + 9, base + 10, base + 1]:
        with open(path, "r+b") as f:
            f.seek(off)
            b = f.read(1)
            f.seek(off)
            f.write(bytes([b[0] ^ 0xFF]))
        if quick_check(path) != "ok":
            return off
        with open(path, "r+b") as f:
            f.seek(off)
            f.write(b)
    raise AssertionError("no single flipped byte of page %d made quick_check fail" % page_no)


# ---- finding 5: a damaged database is refused ----

def test_flipped_byte_in_a_job_page_is_refused_and_the_file_left_alone(controller):
    ids = submit_pending(controller, 300, name="pending-job")
    controller.stop()
    db = controller.db_path
    assert not os.path.exists(db + "-wal") or os.path.getsize(db + "-wal") == 0
    page_size, leaves = job_pages(db)
    assert len(leaves) >= 2, "the jobs table should span several pages"
    with open(db, "rb") as f:
        data = f.read()
    victim = leaves[len(leaves) // 2]
    assert b"pending-job" in data[(victim - 1) * page_size:victim * page_size]
    assert quick_check(db) == "ok"
    flip_until_damaged(db, page_size, victim)
    assert quick_check(db) != "ok"  # the damage is real, so the test means something
    before = sha256(db)

    for extra in ([], ["--init"]):  # --init does not paper over damage
        r = run_sluiced(controller, *extra)
        assert r.returncode == 2, (r.returncode, r.stderr)
        assert "damaged" in r.stderr and "quick_check" in r.stderr, r.stderr
        assert "sluiced backup" in r.stderr and db in r.stderr, r.stderr
        assert sha256(db) == before
    assert len(ids) == 300


def test_damage_inside_a_value_stops_the_load(controller):
    """A byte flipped inside a job's stored state passes quick_check (the
    b-tree is intact) but is not a row sluiced wrote: the load stops with
    exit 2 instead of dropping the job, and ids are not reissued."""
    ids = submit_pending(controller, 20)
    controller.stop()
    db = controller.db_path
    with open(db, "rb") as f:
        data = f.read()
    # In a row the state follows the spec, whose last field is
    # on_node_failure (the schema's own text also says 'pending').
    at = data.find(b'"requeue"}pending')
    assert at > 0
    at += len(b'"requeue"}')
    with open(db, "r+b") as f:
        f.seek(at + 6)
        f.write(bytes([data[at + 6] ^ 0x01]))  # "pending" -> "pendinf"
    assert quick_check(db) == "ok"
    before = sha256(db)
    r = run_sluiced(controller)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "cannot load state" in r.stderr and "pendinf" in r.stderr, r.stderr
    assert "sluiced backup" in r.stderr, r.stderr
    assert sha256(db) == before
    assert len(ids) == 20


def test_an_unknown_job_state_stops_the_load(controller):
    """A row whose state sluiced never writes (set through SQLite itself,
    so every index agrees with the row) is refused at start-up with exit 2
    and a message naming the job and the state, instead of being left out
    of the load (the job would then answer 404 and its id be reissued).
    Pending, running and finished rows around it change nothing."""
    ids = submit_pending(controller, 3)
    st, body = controller.request("DELETE", "/v1/jobs/%d" % ids[2],
                                  token=controller.token("alice"))
    assert st == 200, (st, body)
    controller.stop()
    db = controller.db_path
    con = sqlite3.connect(db)
    try:
        with con:
            con.execute("UPDATE jobs SET state = 'paused' WHERE id = ?", (ids[1],))
    finally:
        con.close()
    assert quick_check(db) == "ok"
    before = sha256(db)
    r = run_sluiced(controller)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "cannot load state" in r.stderr, r.stderr
    assert 'job %d: its stored state "paused" is not one sluiced writes' % ids[1] in r.stderr, \
        r.stderr
    assert sha256(db) == before
    # Put back, the same file loads and every job is there.
    con = sqlite3.connect(db)
    try:
        with con:
            con.execute("UPDATE jobs SET state = 'pending' WHERE id = ?", (ids[1],))
    finally:
        con.close()
    controller.start()
    assert [controller.job(j)["state"] for j in ids] == ["pending", "pending", "cancelled"]


def test_a_load_stopped_half_way_writes_nothing(controller):
    """Job 1's tenant is no longer configured, so the load fails it; then
    a finished job's stored spec turns out unreadable and the load stops.
    The failure of job 1 must not reach the disk: the start was refused."""
    j1 = controller.submit({"command": ["x"], "name": "orphan"}, tenant="bob")["id"]
    j2 = controller.submit({"command": ["x"], "name": "victim"}, tenant="alice")["id"]
    st, body = controller.request("DELETE", "/v1/jobs/%d" % j2, token=controller.token("alice"))
    assert st == 200, (st, body)
    controller.stop()
    db = controller.db_path
    with open(db, "rb") as f:
        data = f.read()
    at = data.find(b'{"name":"victim"')
    assert at > 0
    with open(db, "r+b") as f:
        f.seek(at)
        f.write(b"[")  # the spec is no longer a JSON object
    assert quick_check(db) == "ok"
    controller.config["tenants"] = [t for t in controller.config["tenants"]
                                    if t["name"] != "bob"]
    controller._write_config()
    r = run_sluiced(controller)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "job %d" % j2 in r.stderr and "spec" in r.stderr, r.stderr
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        state = con.execute("SELECT state FROM jobs WHERE id = ?", (j1,)).fetchone()[0]
    finally:
        con.close()
    assert state == "pending"


def test_missing_or_empty_database_needs_init(tmp_path):
    ctl = Controller(tmp_path / "ctl", init=False)
    db = ctl.db_path
    r = run_sluiced(ctl)
    assert r.returncode == 2, r.stderr
    assert "no such file" in r.stderr and "--init" in r.stderr and db in r.stderr, r.stderr
    assert not os.path.exists(db)

    open(db, "wb").close()
    r = run_sluiced(ctl)
    assert r.returncode == 2, r.stderr
    assert "empty (0 bytes)" in r.stderr and "--init" in r.stderr and db in r.stderr, r.stderr
    assert os.path.getsize(db) == 0

    with open(db, "wb") as f:  # not an SQLite file at all: damaged, --init or not
        f.write(os.urandom(8192))
    for extra in ([], ["--init"]):
        r = run_sluiced(ctl, *extra)
        assert r.returncode == 2, r.stderr
        assert "damaged" in r.stderr and "not a database" in r.stderr, r.stderr
    open(db, "wb").close()

    ctl.init = True  # the empty file is initialised
    ctl.start()
    jid = ctl.submit({"command": ["true"]})["id"]
    ctl.stop()
    os.remove(db)
    ctl.start()  # and a missing one created
    ctl.stop()
    os.remove(db)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    ctl.config["init"] = True  # the config key does what the flag does
    ctl._write_config()
    ctl.init = False
    ctl.start()
    ctl.stop()
    del ctl.config["init"]
    ctl._write_config()
    ctl.start()  # an existing database needs no --init
    assert ctl.submit({"command": ["true"]})["id"] == 1
    ctl.stop()
    assert jid == 1


def test_backup_while_submitting_restores_acknowledged_jobs(tmp_path):
    ctl = Controller(tmp_path / "ctl").start()
    try:
        # About 5 MiB of rows, so that the copy takes more than one step
        # (1,024 pages of 4 KiB each) while submissions keep committing.
        acked = submit_pending(ctl, 600, env={"PAD": "x" * 8000})
        stop = threading.Event()
        during, errors = [], []

        def keep_submitting():
            deadline = time.time() + 60
            while not stop.is_set() and len(during) < 5000 and time.time() < deadline:
                try:
                    st, body = ctl.request("POST", "/v1/jobs", {"command": ["x"], "gpus": 1},
                                           token=ctl.token("bob"))
                except OSError as e:
                    errors.append(repr(e))
                    return
                if st != 201:
                    errors.append((st, body))
                    return
                during.append(body["id"])

        t = threading.Thread(target=keep_submitting, daemon=True)
        t.start()
        wait_for(lambda: len(during) >= 20, timeout=20, what="submissions in flight")
        copy = str(tmp_path / "copy.db")
        r = subprocess.run([ctl.binary, "backup", copy, "--config", ctl.config_path],
                           capture_output=True, text=True, timeout=60)
        n_before_end = len(during)
        stop.set()
        t.join(timeout=70)
        assert not errors, errors
        assert r.returncode == 0, r.stderr
        assert "wrote %s" % copy in r.stdout and "quick_check ok" in r.stdout, r.stdout
        steps = int(r.stdout.split(" steps")[0].rsplit(" ", 1)[1])
        assert steps >= 2, r.stdout
        assert not os.path.exists(copy + "-wal")
        assert quick_check(copy) == "ok"
        con = sqlite3.connect(copy)
        got = [row[0] for row in con.execute("SELECT id FROM jobs ORDER BY id")]
        con.close()
        # A consistent snapshot: every job committed before the copy began,
        # and the ids committed then form a prefix (no holes).
        assert set(acked) <= set(got)
        assert got == list(range(1, len(got) + 1))
        assert len(got) <= len(acked) + n_before_end + 1
        # A second backup to the same name is refused, the copy untouched.
        digest = sha256(copy)
        r2 = subprocess.run([ctl.binary, "backup", copy, "--config", ctl.config_path],
                            capture_output=True, text=True, timeout=60)
        assert r2.returncode != 0 and "already exists" in r2.stderr
        assert sha256(copy) == digest
    finally:
        ctl.stop()

    # Restore: a controller started on the copy lists the acknowledged jobs.
    restored = Controller(tmp_path / "restored", init=False,
                          config_overrides={"state": copy})
    restored.admin_token = ctl.admin_token
    restored.config["admin_token"] = ctl.admin_token
    restored._write_config()
    restored.start()
    try:
        for jid in acked:
            assert restored.job(jid)["state"] == "pending"
        assert restored.submit({"command": ["x"]})["id"] == len(got) + 1
    finally:
        restored.stop()


# ---- finding 3 of the store: a full disk at COMMIT is fail-stop ----

@pytest.fixture
def small_tmpfs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: %s" % r.stderr.strip())
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_full_disk_at_commit_exits_3_and_loses_no_acknowledged_job(tmp_path, small_tmpfs):
    db = str(small_tmpfs / "sluiced.db")
    ctl = Controller(tmp_path / "ctl", config_overrides={"state": db}).start()
    acked = submit_pending(ctl, 30)
    # Fill the file system: the next WAL frames have nowhere to go.
    filler = str(small_tmpfs / "filler")
    with open(filler, "wb", buffering=0) as f:  # unbuffered: nothing left to flush at close
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    answers = []
    for i in range(3000):
        if ctl.proc.poll() is not None:
            break
        try:
            st, body = ctl.request("POST", "/v1/jobs",
                                   {"command": ["x"], "name": "late-%d" % i, "gpus": 1},
                                   token=ctl.token("alice"), timeout=10)
        except OSError:
            break  # the controller went away mid-request
        answers.append(st)
        if st == 201:
            acked.append(body["id"])
        else:
            assert st == 500, (st, body)
    wait_for(lambda: ctl.proc.poll() is not None, timeout=20, what="sluiced to stop")
    assert ctl.proc.returncode == 3, (ctl.proc.returncode, ctl.log()[-2000:])
    log = ctl.log()
    assert "exiting (state on disk is consistent)" in log, log[-2000:]
    assert "full" in log.lower(), log[-2000:]
    assert "double free" not in log and "AddressSanitizer" not in log

    os.remove(filler)
    ctl.start()
    try:
        for jid in acked:
            assert ctl.job(jid)["state"] == "pending"
    finally:
        ctl.stop()


# ---- finding 4: names come back when the jobs that named them go, and jobs
# may hold only half of each name table, so that a new node always fits ----

# Jobs here name pools no node is in, which sluiced refuses unless the
# config says scheduler.unknown_pools: accept (docs/config.md).
ACCEPT_POOLS = {"scheduler": {"unknown_pools": "accept"}}
MODEL_SHARE = 32   # SL_MAX_JOB_MODELS: half of the 64 GPU model names
POOL_SHARE = 512   # SL_MAX_JOB_POOLS: half of the 1,024 pool names
# Each of the two tenants (alice, bob) may name half of the share.
MODEL_PART, POOL_PART = MODEL_SHARE // 2, POOL_SHARE // 2


def fill_job_part(ctl, tenant="alice"):
    """Pending jobs naming the most models and pools no node has that one
    of two tenants may: 256 jobs, each with a pool of its own, the first 16
    also a GPU model of their own. Returns their ids."""
    ids = []
    for i in range(POOL_PART):
        spec = {"command": ["x"], "gpus": 1, "pool": "bogus-%s-pool-%d" % (tenant, i)}
        if i < MODEL_PART:
            spec["gpu_models"] = ["bogus-%s-model-%d" % (tenant, i)]
        ids.append(ctl.submit(spec, tenant=tenant)["id"])
    return ids


def assert_part_full(ctl, tenant="alice"):
    """One more new model, or one more new pool, of that tenant is refused
    with 400 and says why in the user's words."""
    st, body = ctl.request("POST", "/v1/jobs",
                           {"command": ["x"], "gpus": 1, "gpu_models": ["x42"]},
                           token=ctl.token(tenant))
    assert st == 400 and body["error"]["field"] == "gpu_models", (st, body)
    assert body["error"]["message"] == (
        'gpu_models: "x42": no node has this model and the jobs of tenant "%s" already name '
        '%d models no node has (each of the 2 tenants may name at most %d); name a model a '
        'node has' % (tenant, MODEL_PART, MODEL_PART)), body
    st, body = ctl.request("POST", "/v1/jobs", {"command": ["x"], "pool": "ghost"},
                           token=ctl.token(tenant))
    assert st == 400 and body["error"]["field"] == "pool", (st, body)
    assert body["error"]["message"] == (
        'pool: "ghost": no node is in this pool and the jobs of tenant "%s" already name %d '
        'pools no node is in (each of the 2 tenants may name at most %d); name a pool a node '
        'is in' % (tenant, POOL_PART, POOL_PART)), body


def test_bogus_models_and_pools_are_released_when_their_jobs_go(tmp_path):
    ctl = Controller(tmp_path / "ctl", config_overrides=ACCEPT_POOLS).start()
    try:
        ids = fill_job_part(ctl)
        assert_part_full(ctl)
        ctl.restart()  # pending jobs hold their names across a restart
        assert_part_full(ctl)
        for jid in ids:
            st, body = ctl.request("DELETE", "/v1/jobs/%d" % jid, token=ctl.token("alice"))
            assert st == 200, (st, body)
        ctl.restart()  # cancelled jobs take no name back at start-up
        # The whole part is free again: 16 new models in one job, a new pool.
        again = ctl.submit({"command": ["x"], "gpus": 1, "pool": "again",
                            "gpu_models": ["again-%d" % i for i in range(MODEL_PART)]})
        assert again["state"] == "pending", again
        agent = Agent(ctl, "real-a100", gpus=2, gpu_model="A100", pool="train").start()
        try:
            assert ctl.node("real-a100")["state"] == "up"
            jid = ctl.submit({"command": ["true"], "gpus": 1, "gpu_models": ["A100"],
                              "pool": "train"})["id"]
            assert ctl.wait_job(jid, ["succeeded", "failed"], timeout=30)["state"] == "succeeded"
        finally:
            agent.stop()
    finally:
        ctl.stop()


def test_one_tenants_made_up_names_leave_the_other_tenant_its_part(tmp_path):
    """Tenant alice's pending jobs name 32 made-up GPU models and 257
    made-up pools, one each: only her part (16 models, 256 pools) is
    accepted, and bob still names models and pools no node has yet, all of
    his own part, while her jobs wait."""
    ctl = Controller(tmp_path / "ctl", config_overrides=ACCEPT_POOLS).start()
    try:
        taken = {"gpu_models": 0, "pool": 0}
        for field, n in (("gpu_models", MODEL_SHARE), ("pool", POOL_PART + 1)):
            for i in range(n):
                spec = {"command": ["x"], "gpus": 1}
                spec[field] = ["alice-%d" % i] if field == "gpu_models" else "alice-%d" % i
                st, body = ctl.request("POST", "/v1/jobs", spec, token=ctl.token("alice"))
                if st == 201:
                    taken[field] += 1
                    continue
                assert st == 400 and body["error"]["field"] == field, (st, body)
                assert 'the jobs of tenant "alice" already name' in body["error"]["message"]
        st, bob = ctl.request("POST", "/v1/jobs",
                              {"command": ["x"], "gpus": 1, "pool": "bob-pool",
                               "gpu_models": ["bob-%d" % i for i in range(MODEL_PART)]},
                              token=ctl.token("bob"))
        assert st == 201 and bob["state"] == "pending", (st, bob)
        assert taken == {"gpu_models": MODEL_PART, "pool": POOL_PART}, taken
        assert_part_full(ctl, "alice")
        st, body = ctl.request("POST", "/v1/jobs",
                               {"command": ["x"], "gpus": 1, "gpu_models": ["bob-x"]},
                               token=ctl.token("bob"))
        assert st == 400 and 'tenant "bob" already name 16 models' in body["error"]["message"], \
            body
        # A model that bob's jobs name, once alice names it too, counts in her
        # part as well: she has no room for it.
        st, body = ctl.request("POST", "/v1/jobs",
                               {"command": ["x"], "gpus": 1, "gpu_models": ["bob-0"]},
                               token=ctl.token("alice"))
        assert st == 400 and body["error"]["field"] == "gpu_models", (st, body)
    finally:
        ctl.stop()


def test_jobs_naming_the_most_names_leave_room_for_a_new_node(tmp_path):
    """Both tenants' pending jobs name as many made-up models and pools as
    jobs may (each its part, together the whole share); a real node with a
    new model and a new pool still registers, while they wait, and runs a
    job."""
    ctl = Controller(tmp_path / "ctl", config_overrides=ACCEPT_POOLS).start()
    try:
        ids = fill_job_part(ctl, "alice") + fill_job_part(ctl, "bob")
        assert_part_full(ctl, "alice")
        assert_part_full(ctl, "bob")
        agent = Agent(ctl, "real-b200", gpus=2, gpu_model="B200", pool="train").start()
        try:
            node = ctl.node("real-b200")
            assert (node["state"], node["gpu_model"], node["pool"]) == ("up", "B200", "train")
            jid = ctl.submit({"command": ["true"], "gpus": 1, "gpu_models": ["B200"],
                              "pool": "train"}, tenant="bob")["id"]
            assert ctl.wait_job(jid, ["succeeded", "failed"], timeout=30)["state"] == "succeeded"
            # A name that a node registers no longer counts against the jobs'
            # share: one of alice's made-up models, once a node has it, frees
            # one place in her part (and none in bob's).
            st, _ = ctl.request("POST", "/v1/jobs", {"command": ["x"], "gpus": 1,
                                                     "gpu_models": ["fresh"]},
                                token=ctl.token("alice"))
            assert st == 400
            other = Agent(ctl, "bogus-host", gpus=1, gpu_model="bogus-alice-model-0").start()
            try:
                fresh = ctl.submit({"command": ["x"], "gpus": 1, "gpu_models": ["fresh"],
                                    "pool": "train"}, tenant="alice")
                assert fresh["state"] in ("pending", "running"), fresh
                st, _ = ctl.request("POST", "/v1/jobs", {"command": ["x"], "gpus": 1,
                                                         "gpu_models": ["fresh-bob"]},
                                    token=ctl.token("bob"))
                assert st == 400
            finally:
                other.stop()
        finally:
            agent.stop()
        assert all(ctl.job(jid)["state"] == "pending" for jid in ids)
    finally:
        ctl.stop()


def test_recovery_keeps_a_job_stored_past_the_job_share(tmp_path):
    """A job stored before the share existed may name more models than jobs
    may now: start-up keeps it (an acknowledged job is never dropped) and
    says so in the log; new submissions keep to the share, and a new node
    still has room."""
    ctl = Controller(tmp_path / "ctl", config_overrides=ACCEPT_POOLS).start()
    try:
        old = ctl.submit({"command": ["x"], "gpus": 1, "gpu_models": ["old-0"]})["id"]
        ctl.stop()
        many = ["old-%d" % i for i in range(MODEL_SHARE + 8)]
        con = sqlite3.connect(ctl.db_path)
        try:
            (text,) = con.execute("SELECT spec FROM jobs WHERE id = ?", (old,)).fetchone()
            spec = json.loads(text)
            spec["gpu_models"] = many
            con.execute("UPDATE jobs SET spec = ? WHERE id = ?", (json.dumps(spec), old))
            con.commit()
        finally:
            con.close()
        ctl.start()
        job = ctl.job(old)
        assert job["state"] == "pending", job
        assert "job=%d kept past the job share" % old in ctl.log(), ctl.log()[-2000:]
        st, body = ctl.request("POST", "/v1/jobs",
                               {"command": ["x"], "gpus": 1, "gpu_models": ["x42"]},
                               token=ctl.token("bob"))
        assert st == 400 and body["error"]["message"] == (
            'gpu_models: "x42": no node has this model and jobs already name %d models no '
            'node has (the most is %d); name a model a node has'
            % (len(many), MODEL_SHARE)), body
        agent = Agent(ctl, "real-a100", gpus=2, gpu_model="A100", pool="train").start()
        try:
            jid = ctl.submit({"command": ["true"], "gpus": 1, "gpu_models": ["A100"],
                              "pool": "train"}, tenant="bob")["id"]
            assert ctl.wait_job(jid, ["succeeded", "failed"], timeout=30)["state"] == "succeeded"
        finally:
            agent.stop()
        st, body = ctl.request("DELETE", "/v1/jobs/%d" % old, token=ctl.token("alice"))
        assert st == 200, (st, body)
        ok = ctl.submit({"command": ["x"], "gpus": 1, "gpu_models": ["x42"]}, tenant="bob")
        assert ok["state"] == "pending", ok
    finally:
        ctl.stop()
