"""SSE is rewritten event by event while it streams, through the real mitmdump + addon.

The upstream here is a tiny stdlib HTTP server (not an MCP peer stand-in: it only controls timing)
that answers initialize, then answers a tools/call POST with an SSE stream: one event carrying a
notification and a result mcpx must rewrite for a 2024-11-05 client, a 2 s pause, then a second event.
"""
from __future__ import annotations

import http.client
import json
import time

import orjson
import pytest

from proxy_lib import LoopbackServer, Proxy, ScriptedMcpHandler

PAUSE = 2.0


class Handler(ScriptedMcpHandler):
    SERVER_INFO = {"name": "timing", "version": "1", "title": "Timing server"}
    SESSION = "timing-1"
    sent_second_at: list[float] = []

    def answer(self, body):
        self.start_sse()
        note = {"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": 1, "progress": 1, "total": 2, "message": "half way"}}
        self.chunk(b"id: 1\ndata: " + json.dumps(note).encode() + b"\n\n")
        time.sleep(PAUSE)
        Handler.sent_second_at.append(time.monotonic())
        res = {"jsonrpc": "2.0", "id": body["id"], "result": {"content": [
            {"type": "resource_link", "uri": "file:///x", "name": "x"}]}}
        self.chunk(b"id: 2\ndata: " + json.dumps(res).encode() + b"\n\n")
        self.chunk(b"")


@pytest.fixture
def timing_server():
    srv = LoopbackServer(Handler)
    yield srv.port
    srv.stop()


def test_first_event_arrives_before_second_is_sent(timing_server, tmp_path):
    with Proxy(f"http://127.0.0.1:{timing_server}", tmp_path, save=False) as px:
        conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        conn.request("POST", "/mcp", json.dumps(init), {"content-type": "application/json", "accept": "application/json, text/event-stream"})
        r = conn.getresponse()
        assert orjson.loads(r.read())["result"]["serverInfo"] == {"name": "timing", "version": "1"}
        sid = r.getheader("mcp-session-id")  # mcpx's sealed token for the server's "timing-1"
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}, "_meta": {"progressToken": 1}}}
        conn.request("POST", "/mcp", json.dumps(call), {"content-type": "application/json", "accept": "application/json, text/event-stream",
                                                         "mcp-session-id": sid})
        r = conn.getresponse()
        assert r.getheader("content-type") == "text/event-stream"
        buf = b""
        while b"\n\n" not in buf:
            buf += r.read1(65536)
        first_at = time.monotonic()
        rest = r.read()
        conn.close()
    assert Handler.sent_second_at and first_at < Handler.sent_second_at[-1]
    first = buf.split(b"\n\n")[0]
    assert first == b'id: 1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"total":2}}'
    second = orjson.loads((buf + rest).split(b"\n\n")[1].split(b"data: ", 1)[1])
    assert second["result"]["content"][0]["type"] == "resource"
    rules = [(c["pointer"], c["action"], c["rule"]) for c in px.changes()]
    assert rules == [("/result/serverInfo/title", "drop", "IMPL-title"),
                     ("/params/message", "drop", "PROG-message"),
                     ("/result/content/0", "rewrite", "CT-resource_link")]
