"""mcpx's pytest plugin (entry point ``pytest11``: installed with mcpx, loaded by every pytest run of
the environment): recorded MCP sessions as tests in your own project.

    def test_my_server_still_serves_old_clients(mcpx_replay, mcpx_golden):
        for revision in ("recorded", "2025-03-26", "2024-11-05"):
            run = mcpx_replay("session.mitm", revision)   # path relative to this test file
            assert run.not_delivered == [] and run.invalid == []
            mcpx_golden(run, f"session.{revision}.golden.json")

- ``mcpx_replay(path, revision="recorded", **options)``: the flow file replayed offline through mcpx
  (no server is contacted) as the recorded client revision or an older one (every client of the file
  pinned to it by name); returns a :class:`mcpx_core.testing.run.Replay`: ``calls`` (per call the
  messages delivered to each side, the messages not delivered, the change records, the problems of
  each delivered message under its receiver's revision's schema, strict), ``not_delivered``, ``invalid``.
  ``options``: mitmproxy options for mcpx (``mcpx_policy="lenient"``, say).
- ``mcpx_golden(run, path)``: fails with a unified diff when the stored JSON differs from the replay;
  ``pytest --mcpx-update-goldens`` writes the files instead.

This module imports mcpx only when a fixture is used: pytest loads it before your test paths are set up.
"""

from __future__ import annotations

import pathlib

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcpx", "mcpx: recorded MCP sessions as tests")
    group.addoption("--mcpx-update-goldens", action="store_true", default=False,
                    help="write the golden files mcpx_golden compares with, instead of comparing")


def pytest_configure(config: pytest.Config) -> None:
    # mitmproxy imports ldap3, whose pyasn1 names warn on import: noise in every test run that replays
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:ldap3.utils.asn1")


def _base(request: pytest.FixtureRequest) -> pathlib.Path:
    return pathlib.Path(request.node.path).parent


@pytest.fixture
def mcpx_replay(request: pytest.FixtureRequest):
    """``mcpx_replay(path, revision="recorded", **options) -> Replay`` (see the module docstring)."""
    from mcpx_core.testing.run import replay_as

    def run(path, revision: str = "recorded", **options):
        return replay_as(_base(request) / path, revision, options)

    return run


@pytest.fixture
def mcpx_golden(request: pytest.FixtureRequest):
    """``mcpx_golden(run, path)``: compare a replay with its golden file (``--mcpx-update-goldens``: write it)."""
    from mcpx_core.testing.goldens import compare

    update = request.config.getoption("--mcpx-update-goldens")

    def check(run, path) -> None:
        problem = compare(run, _base(request) / path, update)
        if problem:
            pytest.fail(problem, pytrace=False)

    return check
