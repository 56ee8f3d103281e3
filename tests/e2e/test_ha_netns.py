"""
test_ha_netns.py - the short version of bench/ha_matrix.py (docs/ha.md,
"Verified"): real daemons, each in a network namespace of its own (three
etcd members in one cluster, three sluiced --ha, two agents given the
three controllers), under a stream of submissions (plain jobs, arrays,
dependencies). One round each of: the leader's namespace cut off from
etcd, agents and clients (iptables inside it) and healed; the leader's
state directory deleted and the leader restarted (it rebuilds from etcd);
the etcd member the leader lists first killed -9 and restarted. Then:
no acknowledged job lost, every acknowledged job succeeded, no (job,
task) ran twice by the tasks' own stamps, every new leader's epoch is
greater than the one it replaced, and no agent accepted a launch of an
epoch older than that of a leader already elected or seen
acknowledging (the deposed leader's), nor of one older than its own highest.
"""

import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import hanetns  # noqa: E402


def test_ha_partition_wipe_and_etcd_kill_in_namespaces(build_dir):
    why = hanetns.unavailable()
    if why:
        pytest.skip(why)
    for b in ("sluiced", "sluice-agent"):
        if not os.access(os.path.join(build_dir, b), os.X_OK):
            pytest.skip("%s is not built" % b)
    # A directory of its own: removed when the test passes, kept with the
    # daemons' logs when it fails.
    tmp = tempfile.mkdtemp(prefix="ha-netns-")
    g = hanetns.Group(tmp, octet=232)
    logs = []
    rounds = []
    try:
        g.start()
        stream = hanetns.Stream(g, rate=4.0)
        stream.start()
        for scen in ("cut", "wipe", "etcd"):
            rounds.append(hanetns.one_round(g, stream, scen, 1, g.ttl, logs.append))
        stream.stop_flag.set()
        stream.join(10)
        jobs, ids, open_ = hanetns.settle(g, stream, 90)
        s = hanetns.audit(g, rounds, jobs, ids)
    except BaseException:
        for c in g.ctls:
            print("==== %s\n%s" % (c.name, c.log()[-4000:]))
        raise
    finally:
        g.close()
    print("\n".join(logs))
    try:
        _check(g, rounds, jobs, ids, open_, s)
    except AssertionError:
        print("the daemons' logs are kept in %s" % tmp)
        raise
    shutil.rmtree(tmp, ignore_errors=True)


def _check(g, rounds, jobs, ids, open_, s):
    assert len(ids) >= 20, ids  # the stream went on through the faults
    for r in rounds:
        assert r["takeover_s"] is not None, r
        assert r["lost"] == [], r
        if r["scenario"] != "etcd":
            assert r["new"] != r["old"] or r["scenario"] == "wipe", r
            assert r["new_epoch"] > r["old_epoch"], r
        else:
            assert r["new_epoch"] >= r["old_epoch"], r
    assert open_ == [], [(j["id"], j["state"]) for j in open_]
    assert s["missing_at_end"] == [], s
    assert s["not_succeeded"] == [], [(i, jobs[i]["state"], jobs[i].get("reason"))
                                      for i in s["not_succeeded"]]
    assert s["doubles"] == [], s["doubles"]
    assert s["deposed"] == [] and s["own_check_violations"] == [], s
    assert s["launches"] >= len(ids)
    # The partitioned leader's messages after its epoch ended were refused
    # or never sent; either way it stepped down.
    cut = [c for c in g.ctls if c.name == rounds[0]["old"]][0]
    assert "steps down" in cut.log()
