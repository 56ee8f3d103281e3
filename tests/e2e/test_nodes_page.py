"""
test_nodes_page.py - GET /v1/nodes a page at a time (?limit=&after=, by node
name; docs/api.md) and `sluice nodes`, which walks the pages, against a
real controller with emulated nodes (`sluice-agent --emulate`, docs/scale.md).

Two emulators register 200 nodes, the second's names sorting before the
first's, so that name order is not the order the nodes registered in. The
pages cover every node exactly once in name order, whatever their size; a
page after the last name is empty; bad values are 400 naming the
parameter; without either parameter the answer is every node, as before
paging. `sluice nodes --limit N` prints the first N names, `sluice nodes`
all of them, also across the CLI's own pages of 1,000.
"""

import os
import sys
import urllib.parse

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import e2e_util as u  # noqa: E402
from harness import wait_for  # noqa: E402
from test_emulate import Emulator  # noqa: E402


@pytest.fixture
def cluster(controller_factory, build_dir):
    """make(sizes) -> (controller, sorted node names): one emulator per
    (prefix, count), started in that order, all nodes up."""
    if not os.access(os.path.join(build_dir, "sluice-agent"), os.X_OK):
        pytest.skip("sluice-agent is not built")
    made = []

    def make(sizes):
        total = sum(n for _, n in sizes)
        conns = 4 * total + 64
        ctl = controller_factory(config_overrides={
            "limits": {"max_connections_per_peer": conns, "max_connections": conns}})
        names = []
        for prefix, n in sizes:
            made.append(Emulator(ctl, n, name=prefix).start())
            names += ["%s%05d" % (prefix, i) for i in range(n)]
            wait_for(lambda: len([x for x in ctl.nodes() if x["state"] == "up"]) == len(names) or None,
                     timeout=120, what="%d emulated nodes up" % len(names))
        return ctl, sorted(names)

    yield make
    for em in made:
        em.stop()


def get(ctl, query):
    return ctl.request("GET", "/v1/nodes" + query, token=ctl.admin_token)


def walk(ctl, limit):
    """Every page of `limit` nodes: the list of pages' names."""
    pages, after = [], None
    for _ in range(1000):
        q = "?limit=%d" % limit + ("&after=" + urllib.parse.quote(after) if after else "")
        st, body = get(ctl, q)
        assert st == 200, (st, body)
        names = [n["name"] for n in body["nodes"]]
        assert len(names) <= limit
        pages.append(names)
        after = body["next_after"]
        if after is None:
            return pages
        assert after == names[-1], (after, names)
    raise AssertionError("the pages did not end")


def test_pages_cover_every_node_once_in_name_order(cluster):
    ctl, names = cluster([("e", 190), ("d", 10)])
    assert len(names) == 200 and names[0] == "d00000" and names[-1] == "e00189"

    # Without limit and after: every node as before paging (registration
    # order, no next_after).
    st, body = get(ctl, "")
    assert st == 200 and list(body) == ["nodes"]
    assert sorted(n["name"] for n in body["nodes"]) == names

    for limit in (1, 7, 100, 199, 200, 10000):
        pages = walk(ctl, limit)
        flat = [x for p in pages for x in p]
        assert flat == names, limit  # every node once, in name order
        assert all(len(p) == limit for p in pages[:-1]), limit
        assert len(pages) == -(-200 // limit), limit

    # One page holds the same node objects as the unpaged list.
    st, body = get(ctl, "?limit=3&after=d00008")
    assert st == 200 and [n["name"] for n in body["nodes"]] == ["d00009", "e00000", "e00001"]
    assert body["next_after"] == "e00001"
    full = {n["name"]: n for n in get(ctl, "")[1]["nodes"]}
    assert body["nodes"][0]["gpus"] == full["d00009"]["gpus"] == 8
    assert set(body["nodes"][0]) == set(full["d00009"])

    # after need not be a node's name: the page starts at the next name.
    st, body = get(ctl, "?limit=2&after=e00100x")
    assert [n["name"] for n in body["nodes"]] == ["e00101", "e00102"]
    # after alone: every node after it, in one page.
    st, body = get(ctl, "?after=e00180")
    assert st == 200 and [n["name"] for n in body["nodes"]] == names[-9:]
    assert body["next_after"] is None

    # Past the end: an empty page, and no next one.
    for after in ("e00189", "zzz", "\u00ff"):
        st, body = get(ctl, "?limit=5&after=" + urllib.parse.quote(after))
        assert (st, body) == (200, {"nodes": [], "next_after": None}), after


@pytest.mark.parametrize("query,field", [
    ("?limit=0", "limit"),
    ("?limit=-1", "limit"),
    ("?limit=abc", "limit"),
    ("?limit=1.5", "limit"),
    ("?limit=10001", "limit"),
    ("?limit=", "limit"),
    ("?limit=%205", "limit"),
    ("?after=", "after"),
    ("?limit=5&after=" + "x" * 64, "after"),
])
def test_bad_limit_or_after_is_400_naming_it(controller, query, field):
    st, body = get(controller, query)
    assert st == 400, (query, st, body)
    err = body["error"]
    assert err["code"] == "invalid_field" and err["field"] == field, (query, body)
    assert err["message"].startswith(field + ": "), (query, body)


def sluice(ctl, *args):
    env = u.cli_env(ctl, token=ctl.admin_token, tmpdir=ctl.dir)
    return u.sluice(list(args), env)


def rows(out):
    """The NAME column of `sluice nodes`' table (the header line first)."""
    lines = out.splitlines()
    assert lines[0].startswith("NAME ")
    return [ln.split()[0] for ln in lines[1:] if ln.strip()]


def test_sluice_nodes_pages_and_limit(cluster):
    ctl, names = cluster([("e", 190), ("d", 10)])
    r = sluice(ctl, "nodes")
    assert r.returncode == 0, r.stderr
    assert rows(r.stdout) == names  # all 200, each once, by name
    r = sluice(ctl, "nodes", "--limit", "15")
    assert r.returncode == 0, r.stderr
    assert rows(r.stdout) == names[:15]
    out = u.sluice_json(["nodes", "--limit", "15"], u.cli_env(ctl, token=ctl.admin_token, tmpdir=ctl.dir))
    assert list(out) == ["nodes"] and [n["name"] for n in out["nodes"]] == names[:15]
    out = u.sluice_json(["nodes"], u.cli_env(ctl, token=ctl.admin_token, tmpdir=ctl.dir))
    assert [n["name"] for n in out["nodes"]] == names
    for bad in ("0", "x", "-3"):
        r = sluice(ctl, "nodes", "--limit", bad)
        assert r.returncode == 2 and "--limit" in r.stderr, (bad, r.returncode, r.stderr)


def requests_total(ctl):
    st, text = ctl.request("GET", "/metrics", token=ctl.admin_token)
    assert st == 200
    return int(float([ln for ln in text.splitlines()
                      if ln.startswith("sluice_http_requests_total ")][0].split()[1]))


def test_sluice_nodes_walks_its_pages_of_1000(cluster):
    ctl, names = cluster([("e", 1100)])
    before = requests_total(ctl)
    r = sluice(ctl, "nodes")
    assert r.returncode == 0, r.stderr
    assert rows(r.stdout) == names
    # Two pages (1,000 and 100) and the scrape's own request.
    assert requests_total(ctl) - before == 3
    r = sluice(ctl, "nodes", "--limit", "1002")
    assert r.returncode == 0, r.stderr
    assert rows(r.stdout) == names[:1002]
    r = sluice(ctl, "nodes", "--limit", "1")
    assert r.returncode == 0 and rows(r.stdout) == names[:1], r.stderr
