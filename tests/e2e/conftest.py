"""
conftest.py - pytest fixtures shared by every end-to-end test.

    build_dir   the directory with sluiced, sluice-agent, sluice (SLUICE_BUILD or ./build)
    controller  a started Controller: tenants alice and bob (weight 1),
                admin and cluster tokens; stopped at teardown
    cluster     factory: cluster(n_agents, **agent_kw) starts n real agents
                n1..nN on the `controller` fixture and returns them
    fake_agent  factory: fake_agent(name, **kw) connects a FakeAgent (Python,
                docs/protocol.md) to the `controller` fixture

Tests needing a binary that is not built are skipped, not failed, so that the
controller's tests can run before the agent exists and vice versa.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402


@pytest.fixture(scope="session")
def build_dir():
    return harness.build_dir()


def _need(path):
    if not os.access(path, os.X_OK):
        pytest.skip("%s is not built" % path)


@pytest.fixture
def controller_factory(tmp_path, build_dir):
    """controller_factory(config_overrides=None, tenants=None, sub="ctl")
    -> a started Controller; all are stopped at teardown."""
    _need(os.path.join(build_dir, "sluiced"))
    made = []

    def make(config_overrides=None, tenants=None, sub="ctl", start=True):
        c = harness.Controller(tmp_path / sub, config_overrides=config_overrides,
                               tenants=tenants)
        made.append(c)
        if start:
            c.start()
        return c

    yield make
    for c in made:
        c.stop()


@pytest.fixture
def controller(controller_factory):
    return controller_factory()


@pytest.fixture
def cluster(controller, build_dir):
    """cluster(n_agents, **agent_kw) -> [Agent]; names n1..nN (continuing
    across calls); every agent is stopped at teardown."""
    agents = []

    def make(n_agents, **kw):
        _need(os.path.join(build_dir, "sluice-agent"))
        out = []
        for _ in range(n_agents):
            a = harness.Agent(controller, "n%d" % (len(agents) + 1), **kw)
            agents.append(a)
            a.start()
            out.append(a)
        return out

    yield make
    for a in agents:
        a.stop()


@pytest.fixture
def fake_agent(controller):
    fakes = []

    def make(name, ctl=None, **kw):
        f = harness.FakeAgent(ctl or controller, name, **kw)
        f.start()
        fakes.append(f)
        return f

    yield make
    for f in fakes:
        f.close()
