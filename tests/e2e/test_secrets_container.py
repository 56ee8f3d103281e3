"""
test_secrets_container.py - a secret given to an image task (docs/secrets.md,
docs/containers.md): its files bound read-only at the reference's `path`
inside the container, its variables in the container's environment.

The real runc, image store, users and agent of test_containers.py (its
module fixtures, reused here: root, runc, podman, busybox-static and the
cgroup v1 controllers, else skipped with the reason).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import e2e_util as u  # noqa: E402
from test_containers import base, data, gpu_files, log, node, spec, store, users  # noqa: E402,F401

VALUE = "ctr-secret-Qw55-never-shown"


def test_container_sees_the_files_read_only_at_path_and_the_variable(node):
    ctl, agent, _ = node
    st, body = ctl.request("POST", "/v1/secrets", {"name": "db", "data": {"password": VALUE}},
                           token=ctl.token("alice"))
    assert st == 201, body
    # The task says whether the file holds the value (never printing it),
    # its mode, and whether it can write there.
    script = ('[ "$(cat /etc/db/password)" = "$DB_PASS" ] && echo same; '
              'ls -ln /etc/db/password | cut -c1-10; '
              'touch /etc/db/x 2>/dev/null && echo writable || echo read-only; '
              '[ -n "$DB_PASS" ] && echo var-set')
    j = ctl.submit(spec(u.sh(script), secrets=[
        {"secret": "db", "key": "password", "env": "DB_PASS"},
        {"secret": "db", "path": "/etc/db"}]), tenant="alice")
    done = ctl.wait_job(j["id"], ["succeeded", "failed"], timeout=60)
    out = log(ctl, j["id"])
    assert done["state"] == "succeeded", (done, out)
    lines = out.split()
    assert "same" in lines and "-r--------" in lines and "read-only" in lines and \
        "var-set" in lines, out
    assert VALUE not in out
    with open(ctl.log_path) as f:
        assert VALUE not in f.read()
    with open(agent.log_path) as f:
        assert VALUE not in f.read()
