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

PIN = {"versionNegotiation": "pin:2026-07-28", "roots": [{"uri": "file:///tmp/mcpx-root", "name": "root"}]}
MRTR_OPS = [
    {"id": "elicit", "op": "callTool", "name": "mrtr_elicit", "arguments": {}},
    {"id": "sample", "op": "callTool", "name": "mrtr_sample", "arguments": {"topic": "x"}},
    {"id": "roots", "op": "callTool", "name": "mrtr_roots", "arguments": {}},
    {"id": "all", "op": "callTool", "name": "mrtr_all", "arguments": {}},
    {"id": "two", "op": "callTool", "name": "mrtr_two_rounds", "arguments": {}},
    {"id": "prompt", "op": "getPrompt", "name": "mrtr_prompt", "arguments": {}},
    {"id": "resource", "op": "readResource", "uri": "resource://mrtr/7"},
    {"id": "listen", "op": "listen", "filter": {"toolsListChanged": True, "resourceSubscriptions": ["resource://greeting"]}},
    {"id": "add", "op": "callTool", "name": "add_dynamic_tool", "arguments": {"name": "dyn"}},
    {"id": "wait", "op": "waitNotification", "method": "notifications/tools/list_changed"},
    {"id": "touch", "op": "callTool", "name": "touch_resource", "arguments": {}},
    {"id": "wait2", "op": "waitNotification", "method": "notifications/resources/updated"},
    {"id": "unlisten", "op": "unlisten"},
]
EXPECTED_TEXT = {
    "elicit": "Hello, Test User!",
    "sample": "sampled (mcpx-test-model): mcpx test sampling reply",
    "roots": "roots: file:///tmp/mcpx-root",
    "all": "name: Test User; sampled: mcpx test sampling reply; roots: file:///tmp/mcpx-root",
    "two": "greeting: mcpx test sampling reply",
}


@pytest.fixture(scope="module")
def server_2026():
    with pl.start_py_server(only_2026=True) as srv:
        yield srv


def _text(entry: dict) -> str:
    result = entry["result"]
    if "content" in result:
        return result["content"][0]["text"]
    if "messages" in result:
        return result["messages"][0]["content"]["text"]
    return result["contents"][0]["text"]


def test_pinned_client_full_mrtr_and_listen(server_2026):
    rep = pl.run_js_client("client-2.4.0", server_2026.url, MRTR_OPS, options=PIN)
    assert rep["protocolVersion"] == "2026-07-28", rep.get("error")
    by_id = {e["id"]: e for e in rep["results"]}
    assert all(e["ok"] for e in rep["results"]), [(e["id"], e.get("error")) for e in rep["results"] if not e["ok"]]
    for key, text in EXPECTED_TEXT.items():
        assert _text(by_id[key]) == text
    assert _text(by_id["prompt"]) == "Tell me about test."
    assert _text(by_id["resource"]) == "item 7 under file:///tmp/mcpx-root"
    assert by_id["listen"]["result"]["honoredFilter"] == {"toolsListChanged": True,
                                                         "resourceSubscriptions": ["resource://greeting"]}
    sub = {"io.modelcontextprotocol/subscriptionId": "listen:0"}
    assert by_id["wait"]["result"]["notifications"] == [
        {"method": "notifications/tools/list_changed", "params": {"_meta": sub}}]
    assert by_id["wait2"]["result"]["notifications"] == [
        {"method": "notifications/resources/updated", "params": {"_meta": sub, "uri": "resource://greeting"}}]


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
