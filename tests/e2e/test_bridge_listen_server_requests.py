"""A 2026-07-28 client's ``subscriptions/listen`` in front of a legacy server whose GET stream
carries a server->client request (a ``ping``, a ``roots/list``): a 2026-07-28 client takes none,
and the legacy server waits for the answer. mcpx answers on the client's behalf (``ping`` with
``{}``, anything else -32601), as it does for a request sent during a call. Before, the request
was dropped with a ``SUB-list-changed-delivery`` record ("not asked for by the listen request")
and never answered: the server's ping and roots/list went unanswered.

Through the real mitmdump, against a scripted legacy server; exact bytes on both legs, exact records."""
from __future__ import annotations

import http.client
import json
import threading

import orjson
import pytest

from proxy_lib import Proxy, ScriptedMcpHandler, serve

NEW = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": NEW, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"}}


class Legacy(ScriptedMcpHandler):
    """A 2025-11-25 server announcing tools.listChanged; its GET stream sends a ping and a
    roots/list, waits (up to 5 s) for both answers, then a tools list_changed notification.
    mcpx POSTs the two answers independently, so they may arrive in either order."""

    seen: list = []
    answered = threading.Event()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.seen.append(body)
        if body.get("method") == "initialize":
            out = orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "legacy", "version": "1"}}})
            self.send_json(out, {"mcp-session-id": "legacy-1"})
            return
        if {"srv-ping-1", "srv-roots-2"} <= {b.get("id") for b in self.seen if "method" not in b}:
            self.answered.set()
        self.send_accepted()

    def do_GET(self):
        self.start_sse()
        self.chunk(b'event: message\ndata: {"jsonrpc":"2.0","id":"srv-ping-1","method":"ping"}\n\n')
        self.chunk(b'event: message\ndata: {"jsonrpc":"2.0","id":"srv-roots-2","method":"roots/list"}\n\n')
        self.answered.wait(5)
        self.chunk(b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n')
        self.answered.wait(10)


@pytest.fixture
def server():
    Legacy.answered.clear()
    yield from serve(Legacy, "seen")


def test_server_requests_on_the_get_stream_are_answered(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
        listen = {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": {"_meta": META, "notifications": {"toolsListChanged": True}}}
        conn.request("POST", "/mcp", orjson.dumps(listen), {"content-type": "application/json", "accept": "application/json, text/event-stream",
                                                            "mcp-protocol-version": NEW, "mcp-method": "subscriptions/listen"})
        r = conn.getresponse()
        buf = b""
        while buf.count(b"\n\n") < 2:
            buf += r.read1(65536)
        conn.close()
        recs = [(c["direction"], c["pointer"], c["action"], c["rule"], c["before"], c["detail"]) for c in px.changes()]
    assert r.status == 200 and buf == (
        b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":'
        b'{"io.modelcontextprotocol/subscriptionId":"L"},"notifications":{"toolsListChanged":true}}}\n\n'
        b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":'
        b'{"io.modelcontextprotocol/subscriptionId":"L"}}}\n\n')
    # the server leg: the handshake, then mcpx's answers to the server's two requests (two
    # independent POSTs: their order on the server leg is not defined, so they are compared by id)
    assert Legacy.seen[1] == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert sorted(Legacy.seen[2:], key=lambda b: b["id"]) == [
        {"jsonrpc": "2.0", "id": "srv-ping-1", "result": {}},
        {"jsonrpc": "2.0", "id": "srv-roots-2", "error": {
            "code": -32601, "message": "Method not found: roots/list (no 2026-07-28 equivalent; answered by mcpx)"}},
    ]
    assert [x for x in recs if x[3] in ("LC-ping", "MRTR-server-requests-removed", "SUB-list-changed-delivery")] == [
        ("s2c", "", "answer-locally", "LC-ping", "ping id='srv-ping-1' on the upstream GET stream", "answered {} on the client's behalf"),
        ("s2c", "", "answer-locally", "MRTR-server-requests-removed", "roots/list id='srv-roots-2' on the upstream GET stream",
         "no 2026-07-28 equivalent: -32601 on the client's behalf"),
    ]
