"""Case B11 against a real server: a 2025-03-26 client's JSON-RPC batch through mitmdump + mcpx.

The client asks for 2025-06-18, so the everything server (npm, SDK 1.32) speaks 2025-06-18, which has no
batches; mcpx pins the client leg to 2025-03-26 (option mcpx_pin), so the client may send a batch. mcpx POSTs
each member alone and answers the client's POST with one JSON array holding both responses.
"""
from __future__ import annotations

import http.client
import json

import orjson
import pytest

import peers_lib
from proxy_lib import Proxy

pytestmark = pytest.mark.peers


def post(port: int, body, headers: dict) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/mcp", json.dumps(body), {"content-type": "application/json",
                                                     "accept": "application/json, text/event-stream", **headers})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def sse_json(data: bytes) -> list:
    out = []
    for block in data.replace(b"\r\n", b"\n").split(b"\n\n"):
        for line in block.split(b"\n"):
            if line.startswith(b"data:"):
                out.append(orjson.loads(line[5:]))
    return out


def test_batch_from_2025_03_26_client_is_split_and_reassembled(tmp_path):
    if peers_lib.peers_missing():
        pytest.skip("peers missing")
    with peers_lib.start_everything_server() as srv, Proxy(f"http://127.0.0.1:{srv.port}", tmp_path,
                                                                    options={"mcpx_pin": "batcher=2025-03-26"}) as px:
        status, headers, data = post(px.port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "batcher", "version": "1"}}}, {})
        assert status == 200
        init = sse_json(data)[0] if headers["content-type"] == "text/event-stream" else orjson.loads(data)
        assert init["result"]["protocolVersion"] == "2025-03-26"  # pinned
        sid = headers["mcp-session-id"]
        post(px.port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"mcp-session-id": sid})
        batch = [{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "get-sum", "arguments": {"a": 2, "b": 3}}},
                 {"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "get-sum", "arguments": {"a": 4, "b": 5}}},
                 {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}]
        status, headers, data = post(px.port, batch, {"mcp-session-id": sid})
    assert status == 200 and headers["content-type"] == "application/json"
    answers = sorted(orjson.loads(data), key=lambda m: m["id"])
    assert answers == [
        {"jsonrpc": "2.0", "id": 11, "result": {"content": [{"type": "text", "text": "The sum of 2 and 3 is 5."}]}},
        {"jsonrpc": "2.0", "id": 12, "result": {"content": [{"type": "text", "text": "The sum of 4 and 5 is 9."}]}},
    ]
    split = [(c["pointer"], c["action"], c["rule"]) for c in px.changes() if c["rule"] == "RPC-batch-request"]
    assert split == [("", "split", "RPC-batch-request")]
