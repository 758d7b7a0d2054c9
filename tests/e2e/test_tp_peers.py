"""Released third-party MCP clients (tests/peers/tp_client.py: fastmcp 2.3.4 and 2.10.6,
langchain-mcp-adapters 0.1.7, pydantic-ai-slim 0.4.4, openai-agents 0.0.19), each through its own
high-level API, directly and through mitmdump + mcpx, against the npm everything server and the
mcp 2.3.0 server (stateful SSE, and stateless with JSON answers).

Directly, each gives the verdicts of scenarios.json "direct_failures" (BASELINE.md); through mcpx
the verdicts of "mcpx_failures" (the libraries' own limits at their own revision), every op that
passes directly passes, and every message mcpx delivers validates against the receiver's schema.
"""
from __future__ import annotations

import pytest

import peers_lib as pl
from peers_run import run
from schema_check import message_errors

pytestmark = pytest.mark.peers


@pytest.fixture(scope="module")
def servers():
    pl.require(pl.peers_missing() + pl.tp_missing())
    with pl.three_servers() as servers:
        yield servers


@pytest.mark.parametrize("server", ["everything", "py", "py-stateless"])
@pytest.mark.parametrize("client", pl.TP_CLIENTS)
def test_tp_client_direct_and_through_mcpx(servers, server, client, tmp_path):
    scenario = pl.SCENARIO_OF.get(server, server)
    # langchain's host profile applies only when set: its one match (Accept-Encoding zstd) is sent by mcp-use
    # too, whose prompts the profile would flatten (docs/host-profiles.md); a langchain host sets it so
    options = {"mcpx_profile": "langchain-mcp-adapters-0.1"} if client.startswith("langchain-mcp-adapters") else None
    r = run(client, scenario, servers[server], tmp_path, ops=pl.scenario_ops(server, client), options=options)
    revision = pl.load_scenarios()["clients"][client]["revision"]
    for side in (r.direct, r.via):
        assert side["returncode"] == 0, side.get("error")
        assert side["protocolVersion"] == revision
        assert side["clientInfo"] == {"name": "mcp", "version": "0.1.0"}  # mcp's default: none sets its own
    assert pl.verdicts(r.direct) == pl.expected_verdicts(server, client)
    assert pl.verdicts(r.via) == pl.expected_verdicts(server, client, direct=False)
    assert not [c for c in r.changes if c["action"] == "passthrough"], r.output[-3000:]
    invalid = []
    for rev, msg, method, direction in r.delivered:
        errs = message_errors(rev, msg, method)
        if errs:
            invalid.append((direction, msg.get("method") or method, errs[:3]))
    assert invalid == []
