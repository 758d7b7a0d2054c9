"""The 2026-07-28 test peers work as BRIDGING.md says (direct, no proxy).

- py_server.py --only-2026 serves a client-2.4.0 pinned to 2026-07-28: every multi-round-trip
  kind and a subscriptions/listen stream;
- it refuses legacy clients at initialize (HTTP 400, -32022 naming 2026-07-28), GET/DELETE (405);
- client-2.4.0 pinned to 2026-07-28 cannot connect to the legacy-only everything server.
"""
from __future__ import annotations

import http.client
import json

import pytest

import peers_lib as pl

pytestmark = [
    pytest.mark.peers,
    pytest.mark.skipif(bool(pl.peers_missing()), reason="peers not installed: run scripts/setup_peers.sh"),
]

@pytest.fixture(scope="module")
def server_2026():
    with pl.start_py_server(only_2026=True) as srv:
        yield srv


def test_pinned_client_full_mrtr_and_listen(server_2026):
    rep = pl.run_client_2026(server_2026.url, pl.MRTR_OPS + pl.LISTEN_OPS)
    assert rep["protocolVersion"] == "2026-07-28", rep.get("error")
    by_id = {e["id"]: e for e in rep["results"]}
    assert all(e["ok"] for e in rep["results"]), [(e["id"], e.get("error")) for e in rep["results"] if not e["ok"]]
    assert {k: pl.result_text(by_id[k]) for k in pl.MRTR_EXPECTED} == pl.MRTR_EXPECTED
    assert by_id["listen"]["result"]["honoredFilter"] == {"toolsListChanged": True,
                                                         "resourceSubscriptions": ["resource://greeting"]}
    sub = {"io.modelcontextprotocol/subscriptionId": "listen:0"}
    assert by_id["wait-tools-changed"]["result"]["notifications"] == [
        {"method": "notifications/tools/list_changed", "params": {"_meta": sub}}]
    assert by_id["wait-resource-updated"]["result"]["notifications"] == [
        {"method": "notifications/resources/updated", "params": {"_meta": sub, "uri": "resource://greeting"}}]


def test_same_tools_work_for_a_legacy_client_on_the_dual_era_server():
    with pl.start_py_server(mrtr_tools=True) as srv:
        rep = pl.run_js_client("sdk-1.25.0", srv.url, pl.MRTR_OPS, options={"roots": pl.TEST_ROOTS})
    assert rep["protocolVersion"] == "2025-11-25"
    by_id = {e["id"]: e for e in rep["results"]}
    assert {k: pl.result_text(by_id[k]) for k in pl.MRTR_EXPECTED} == pl.MRTR_EXPECTED
    assert [r["method"] for r in rep["serverRequests"]][:3] == ["elicitation/create", "sampling/createMessage", "roots/list"]


@pytest.mark.parametrize("client", ["sdk-1.25.0", "mcp-1.12.4"])
def test_legacy_clients_are_refused(server_2026, client):
    rep = pl.run_client(client, server_2026.url, [{"op": "listTools"}])
    assert rep["returncode"] == 2 and rep["protocolVersion"] is None
    assert "400" in rep["error"] or rep.get("code") == 400


def _raw(url: str, method: str, body: dict | None, headers: dict[str, str]) -> tuple[int, dict | None]:
    host, port = url.split("//")[1].split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request(method, "/mcp", body=json.dumps(body).encode() if body is not None else None,
                 headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **headers})
    resp = conn.getresponse()
    text = resp.read()
    conn.close()
    return resp.status, json.loads(text) if text else None


def test_gate_answers(server_2026):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    status, body = _raw(server_2026.url, "POST", init, {})
    assert status == 400
    assert body["error"]["code"] == -32022
    assert body["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2025-06-18"}
    assert _raw(server_2026.url, "GET", None, {"Accept": "text/event-stream"})[0] == 405
    assert _raw(server_2026.url, "DELETE", None, {"Mcp-Session-Id": "x"})[0] == 405
    status, body = _raw(server_2026.url, "POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                        {"MCP-Protocol-Version": "2025-11-25"})
    assert (status, body["error"]["code"]) == (400, -32602)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    status, body = _raw(server_2026.url, "POST", {"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": meta}},
                        {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "ping"})
    assert (status, body["error"]["code"]) == (404, -32601)


def test_pinned_client_against_legacy_only_server():
    with pl.start_everything_server() as srv:
        rep = pl.run_js_client("client-2.4.0", srv.url, [{"op": "listTools"}], options={"versionNegotiation": "pin:2026-07-28"})
    assert rep["returncode"] == 2
    assert "did not offer pinned protocol version 2026-07-28 via server/discover" in rep["error"]
