"""Bridging, part 1 (issue 12): a server that answers ``initialize`` with its own newest revision.

The real servers (npm everything, PyPI mcp 2.3.0) behind ``tests/peers/newest_gate.py`` (a gate that
only rewrites the ``protocolVersion`` an initialize asks for to 2025-11-25, so the real server answers
that, whatever the client asked): directly, the released clients that asked for an older revision
abort at initialize (PEERS.md). Through mcpx, each is told the revision it asked for, every message
is translated between the two legs, and each completes its full scenario; every message delivered to
it validates against its own revision's schema with unknown properties forbidden, and mcpx's record
of the initialize names both revisions.
"""
from __future__ import annotations

import os

import pytest

import peers_lib as pl
from peers_run import run
from proxy_lib import ROOT, Proxy
from schema_check import message_errors

pytestmark = pytest.mark.peers
GATE = ROOT / "tests" / "peers" / "newest_gate.py"
CLIENTS = ["sdk-1.10.2", "sdk-1.12.3", "sdk-1.13.0", "mcp-1.8.1", "mcp-1.9.4", "mcp-1.12.4"]


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    missing = pl.peers_missing()
    if missing:
        if os.environ.get("CI") or os.environ.get("MCPX_REQUIRE_PEERS"):
            pytest.fail(f"test peers missing: {missing}")
        pytest.skip(f"test peers missing: {missing}")
    wd = tmp_path_factory.mktemp("gates")
    with pl.start_everything_server() as ev, pl.start_py_server() as py:
        with Proxy(f"http://127.0.0.1:{ev.port}", wd, script=False, scripts=(str(GATE),), tag="-ev") as g_ev, \
                Proxy(f"http://127.0.0.1:{py.port}", wd, script=False, scripts=(str(GATE),), tag="-py") as g_py:
            yield {"everything": g_ev, "py": g_py}


class _Gate:
    """The gate seen as a server by peers_run.run (url, port)."""

    def __init__(self, px: Proxy):
        self.url, self.port = px.url, px.port


@pytest.mark.parametrize("server", ["everything", "py"])
@pytest.mark.parametrize("client", CLIENTS)
def test_server_answering_its_newest_revision(gated, server, client, tmp_path):
    asked = pl.load_scenarios()["clients"][client]["revision"]
    r = run(client, server, _Gate(gated[server]), tmp_path)
    # directly (through the gate only) the client gives up at initialize
    assert r.direct["returncode"] == 2 and not r.direct["results"], r.direct
    assert "protocol version" in r.direct["error"] and "2025-11-25" in r.direct["error"], r.direct
    # through mcpx: told the revision it asked for, every call of its scenario passes
    assert r.via.get("protocolVersion") == asked
    assert pl.verdicts(r.via) == pl.expected_verdicts(server, client, direct=False), r.via
    init = [(c["pointer"], c["action"], c["rule"], c["before"], c["after"]) for c in r.changes if c["method"] == "initialize"]
    assert init[0] == ("/result/protocolVersion", "rewrite", "MCPX-version-bridge", '"2025-11-25"', f'"{asked}"')
    assert {(c["from_rev"], c["to_rev"]) for c in r.changes if c["direction"] == "s2c"} == {("2025-11-25", asked)}
    assert not [c for c in r.changes if c["action"] == "passthrough"], r.output[-3000:]
    invalid = [(d, m.get("method") or meth, errs[:2]) for rev, m, meth, d in r.delivered if d == "s2c"
               and (errs := message_errors(rev, m, meth))]
    assert invalid == []
    # the server got its own revision on every request after initialize (MCP-Protocol-Version, upgrade direction)
    headers = {(c["pointer"], c["action"], c["after"]) for c in r.changes if c["pointer"].startswith("header:")}
    assert headers <= {("header:MCP-Protocol-Version", "synthesize", "2025-11-25"),
                       ("header:MCP-Protocol-Version", "rewrite", "2025-11-25")} and headers
