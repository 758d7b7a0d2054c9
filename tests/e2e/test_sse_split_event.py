"""An SSE event that reaches mitmdump in several reads is delivered whole (HTTP/1.1 chunked).

While an event is incomplete the stream rewriter has nothing to send. mitmproxy writes every chunk
the stream callable returns, and an empty one is the chunked-encoding terminator ``0\\r\\n\\r\\n``:
the client would see the response end before the event. The upstream here is a stdlib HTTP server
(it only controls how the bytes are cut): it sends one ~300 KB event in three pieces with pauses.
"""
from __future__ import annotations

import http.client
import json
import time

import orjson
import pytest

from proxy_lib import LoopbackServer, Proxy, ScriptedMcpHandler

TEXT = "x" * 300_000


class Handler(ScriptedMcpHandler):
    SERVER_INFO = {"name": "split", "version": "1"}
    SESSION = "split-1"
    REVISION = "2025-03-26"

    def answer(self, body):
        self.start_sse()
        res = {"jsonrpc": "2.0", "id": body["id"], "result": {"content": [{"type": "text", "text": TEXT}]}}
        event = b"event: message\r\ndata: " + orjson.dumps(res) + b"\r\n\r\n"
        cuts = [0, 1000, len(event) // 2, len(event)]
        for a, b in zip(cuts, cuts[1:]):
            self.chunk(event[a:b])
            time.sleep(0.2)
        self.chunk(b"")


@pytest.fixture
def split_server():
    srv = LoopbackServer(Handler)
    yield srv.port
    srv.stop()


def test_event_cut_across_reads_arrives_whole(split_server, tmp_path):
    with Proxy(f"http://127.0.0.1:{split_server}", tmp_path, save=False) as px:
        conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        conn.request("POST", "/mcp", json.dumps(init), headers)
        r = conn.getresponse()
        assert orjson.loads(r.read())["result"]["serverInfo"]["name"] == "split"
        sid = r.getheader("mcp-session-id")  # mcpx's sealed token for the server's "split-1"
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}}}
        for _ in range(2):  # the connection stays usable: the second response is read intact too
            conn.request("POST", "/mcp", json.dumps(call), headers | {"mcp-session-id": sid})
            r = conn.getresponse()
            body = r.read()
            assert r.getheader("content-type") == "text/event-stream"
            assert body.startswith(b"event: message\r\ndata: ") and body.endswith(b"\r\n\r\n")
            msg = orjson.loads(body.split(b"data: ", 1)[1])
            assert msg == {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": TEXT}]}}
        conn.close()
    assert px.changes() == []
