"""Two released clients on one host through ONE mitmdump + mcpx, against a stateless server.

The py server runs stateless with JSON answers (no Mcp-Session-Id), so mcpx must tell the two
clients apart by something else than a session id. fastmcp 2.10.6 (mcp 1.12.2, 2025-06-18) and
fastmcp 2.3.4 (mcp 1.8.1, 2024-11-05) run on 127.0.0.1, interleaved:

1. A (2.10.6) connects, lists tools (it caches the outputSchema of ``weather``) and calls weather;
2. B (2.3.4) connects, lists tools, calls weather and audio_clip (audio is not 2024-11-05);
3. A goes on: weather on its pooled connection, then after its keep-alive connection closed
   (httpx drops an idle connection after 5 s) weather again on a new connection, tools/list, weather.

Correct behaviour: each client gets exactly its own revision and every call passes. Both
clients send clientInfo {"name": "mcp", "version": "0.1.0"} (mcp's default), so clientInfo cannot
tell them apart either; A sends ``MCP-Protocol-Version: 2025-06-18`` on every request after
initialize, B sends none.

Before issue 11, mcpx keyed a stateless session by the client's connection and, for a new
connection, by the client's host, which the last initialize on that host owned: A's later requests
were handled as B's (2024-11-05), structuredContent was dropped, and mcp 1.12.2 raised "Tool weather
has an output schema but did not return structured content". Now each client holds its own sealed
session id (mcpx mints one even where the server keeps none).
"""
from __future__ import annotations

import concurrent.futures
import json

import orjson
import pytest

import peers_lib as pl
from proxy_lib import Client, Proxy

A, B = "fastmcp-2.10.6", "fastmcp-2.3.4"
REVISION = {A: "2025-06-18", B: "2024-11-05"}
WEATHER = {"op": "callTool", "name": "weather", "arguments": {"city": "Oslo"}}
STRUCTURED = {"city": "Oslo", "temperature": 21.5, "conditions": "sunny"}

pytestmark = pytest.mark.peers


def _sender(flow) -> str | None:
    """Which client sent this request: A names 2025-06-18 (initialize body, then the header)."""
    header = flow.request.headers.get("mcp-protocol-version")
    if header:
        return A if header == REVISION[A] else None  # B sends no header (2024-11-05 has none)
    try:
        body = json.loads(flow.request.get_content(strict=False) or b"null")
    except ValueError:
        return None
    if isinstance(body, dict) and body.get("method") == "initialize":
        return {REVISION[A]: A, REVISION[B]: B}.get((body.get("params") or {}).get("protocolVersion"))
    return B


@pytest.fixture
def peers():
    pl.require(pl.peers_missing() + pl.tp_missing())


def test_two_clients_one_host_stateless_json(peers, tmp_path):
    a_ready, b_done = tmp_path / "a-ready", tmp_path / "b-done"
    ops_a = [
        {"id": "a-listTools", "op": "listTools"},
        {**WEATHER, "id": "a-weather-1"},
        {"op": "signal", "path": str(a_ready)},
        {"op": "waitFor", "path": str(b_done), "timeoutMs": 60000},
        {**WEATHER, "id": "a-weather-2"},  # on a connection A opened before B connected
        {"op": "sleep", "seconds": 6},  # > httpx keepalive_expiry (5 s): A's connections close
        {**WEATHER, "id": "a-weather-3"},  # on a new connection
        {"id": "a-listTools-2", "op": "listTools"},
        {**WEATHER, "id": "a-weather-4"},
    ]
    ops_b = [
        {"op": "waitFor", "path": str(a_ready), "timeoutMs": 60000},  # before B connects
        {"id": "b-listTools", "op": "listTools"},
        {**WEATHER, "id": "b-weather"},
        {"id": "b-audio", "op": "callTool", "name": "audio_clip", "arguments": {}},
        {"op": "signal", "path": str(b_done)},
    ]
    with pl.start_py_server(stateless=True, json_response=True) as srv:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path) as px:
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                fa = pool.submit(pl.run_tp_client, A, px.url, ops_a, 120)
                fb = pool.submit(pl.run_tp_client, B, px.url, ops_b, 120)
                reports = {A: fa.result(), B: fb.result()}
            # a stranger on the same host, no session id: both clients echo their tokens, so the guess
            # serves neither session (docs/security.md): the server's answer reaches it untouched
            stranger = Client(px.port)
            call = {"jsonrpc": "2.0", "id": "stranger-1", "method": "tools/call", "params": {"name": "audio_clip", "arguments": {}}}
            s_status, _, s_body = stranger.post(call)
            stranger.close()
    assert s_status == 200
    direct = [f for f in px.flows() if f.request.get_content(strict=False) == orjson.dumps(call)]
    assert len(direct) == 1 and (direct[0].metadata.get("mcpx") or {}).get("session") is None
    assert direct[0].response.get_content() == s_body  # as the server sent it: no record, no rewrite
    assert not (direct[0].metadata.get("mcpx") or {}).get("changes")
    for client, rep in reports.items():
        assert rep["returncode"] == 0, (client, rep.get("error"), rep["stderr"][-2000:])
        assert rep["clientInfo"] == {"name": "mcp", "version": "0.1.0"}
        assert rep["protocolVersion"] == REVISION[client]

    # every call passes, for each client
    failed = {c: {e["id"]: e.get("error") for e in rep["results"] if pl.verdict(e) != "ok"} for c, rep in reports.items()}
    assert failed == {A: {}, B: {}}
    # what each client received is its own revision's shape: A (2025-06-18) gets structuredContent on
    # every weather call and outputSchema in tools/list; B (2024-11-05) gets neither (nor titles)
    res = {e["id"]: e["result"] for rep in reports.values() for e in rep["results"]}
    for op_id in ("a-weather-1", "a-weather-2", "a-weather-3", "a-weather-4"):
        assert res[op_id]["structured_content"] == STRUCTURED, op_id
    for op_id in ("a-listTools", "a-listTools-2"):
        assert next(t for t in res[op_id] if t["name"] == "weather").get("outputSchema"), op_id
    assert [t["name"] for t in res["b-listTools"] if {"outputSchema", "title", "annotations"} & t.keys()] == []
    # each request was handled at its sender's revision (the sender is told by what it sent: A's
    # initialize names 2025-06-18 and A sends MCP-Protocol-Version on every later request, B none)
    wrong = []
    for f in px.flows():
        if f.request.method != "POST" or (f.metadata.get("mcpx") or {}).get("origin") == "mcpx" or f.id == direct[0].id:
            continue  # (mcpx's own flows: the initialize it sends to seal each session; the stranger's)
        sender = _sender(f)
        got = (f.metadata.get("mcpx") or {}).get("client_revision")
        if sender is None or got != REVISION[sender]:
            body = (f.request.get_content(strict=False) or b"")[:80]
            wrong.append((sender, got, f.client_conn.peername[1], body))
    assert wrong == []


def test_a_2026_client_and_a_legacy_client_on_one_host(peers, tmp_path):
    """client-2.4.0 pinned to 2026-07-28 (no session: every request names its revision in _meta and in
    MCP-Protocol-Version) and fastmcp 2.3.4 (2024-11-05, a sealed session) on one host, interleaved,
    through one mcpx, against the stateless JSON server (dual-era): each gets exactly its own revision.
    Every message each receives validates against its own revision's schema with unknown properties
    forbidden; the 2026 client's traffic is untouched (both of its legs speak 2026-07-28)."""
    from mcpx_core.framing.sse import SSEParser
    from schema_check import message_errors
    ready, done = tmp_path / "legacy-ready", tmp_path / "new-done"
    ops_new = [{"op": "waitFor", "path": str(ready), "timeoutMs": 60000},
               {"id": "n-listTools", "op": "listTools"}, {**WEATHER, "id": "n-weather"},
               {"id": "n-audio", "op": "callTool", "name": "audio_clip", "arguments": {}},
               {"id": "n-link", "op": "callTool", "name": "resource_link", "arguments": {}},
               {"op": "signal", "path": str(done)}]
    ops_old = [{"id": "o-listTools", "op": "listTools"}, {"op": "signal", "path": str(ready)},
               {"op": "waitFor", "path": str(done), "timeoutMs": 60000},
               {**WEATHER, "id": "o-weather"}, {"id": "o-audio", "op": "callTool", "name": "audio_clip", "arguments": {}},
               {"id": "o-link", "op": "callTool", "name": "resource_link", "arguments": {}}]
    with pl.start_py_server(stateless=True, json_response=True) as srv:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path) as px:
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                fo = pool.submit(pl.run_tp_client, B, px.url, ops_old, 120)
                fn = pool.submit(pl.run_client_2026, px.url, ops_new, None, timeout=120)
                old, new = fo.result(), fn.result()
    assert new["protocolVersion"] == "2026-07-28" and old["protocolVersion"] == REVISION[B]
    assert {e["id"]: pl.verdict(e) for e in new["results"] if e.get("id")} == {
        "n-listTools": "ok", "n-weather": "ok", "n-audio": "ok", "n-link": "ok"}
    assert {e["id"]: pl.verdict(e) for e in old["results"] if e.get("id")} == {
        "o-listTools": "ok", "o-weather": "ok", "o-audio": "ok", "o-link": "ok"}
    checked = {"2026-07-28": 0, REVISION[B]: 0}
    invalid = []
    for f in px.flows():
        meta = f.metadata.get("mcpx") or {}
        if f.request.method != "POST" or meta.get("origin") == "mcpx" or f.response is None:
            continue
        req = json.loads(f.request.get_content() or b"null")
        rev = meta.get("client_revision")
        assert rev == ("2026-07-28" if (req.get("params") or {}).get("_meta", {}).get("io.modelcontextprotocol/protocolVersion")
                       else REVISION[B]), (rev, req)
        body = f.response.get_content() or b""
        if f.response.headers.get("content-type", "").startswith("text/event-stream"):
            p = SSEParser()
            msgs = [json.loads(e.data) for e in p.feed(body) + p.close()[0] if e.data and e.data.strip()]
        else:
            msgs = [json.loads(body)] if body else []
        for m in msgs:
            errs = message_errors(rev, m, req.get("method"))
            checked[rev] += 1
            if errs:
                invalid.append((rev, req.get("method"), errs[:2]))
        if rev == "2026-07-28":
            assert not meta.get("changes"), meta.get("changes")  # both legs 2026: mcpx invisible
    assert invalid == []
    assert checked["2026-07-28"] >= 5 and checked[REVISION[B]] >= 5, checked
