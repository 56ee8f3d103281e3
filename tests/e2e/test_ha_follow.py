"""
test_ha_follow.py - a sluiced --ha member that cannot reach etcd when it
starts (or when it restarts itself after stepping down, cut off from
etcd) stands by instead of exiting, and joins once etcd answers
(docs/ha.md, "Election and fencing"). One real etcd member and one real
sluiced --ha on 127.0.0.1.
"""

import os
import sys

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
