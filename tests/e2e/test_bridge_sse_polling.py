"""A 2026-07-28 client in front of a legacy 2025-11-25 server that uses SSE polling: the server
closes a call's SSE stream after its priming event (docs/specification/2025-11-25/basic/
transports.mdx:107-110: it MAY close the connection at any time after sending an event id; the
client then resumes with GET and ``Last-Event-ID``) and sends the result on the resumed stream.

The 2026-07-28 client cannot resume (no GET, no event ids: TR-sse-resumability), so mcpx does it
for it (revision-delta.json TR-sse-priming-polling: the proxy reconnects upstream with GET +
Last-Event-ID after the advertised ``retry`` and keeps the client's answer open). Before, mcpx
took the close for the end of the call: the result was lost and the client got -32603 "the server
ended the call without an answer".

Through the real mitmdump, against a scripted legacy server; exact bytes on both legs, exact records."""
from __future__ import annotations

import json

import orjson
import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

NEW = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": NEW, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"}}


class Polling(ScriptedMcpHandler):
    """A 2025-11-25 server: tools/call ``poll`` gets a priming event (id ev-1, retry 50 ms), a
    progress notification (id ev-2), then the stream is closed; a GET with ``Last-Event-ID: ev-2``
    gets the result (id ev-3). Every request it gets is kept in ``seen``."""

    REVISION = "2025-11-25"
    seen: list = []
    call_id: list = []

    def answer(self, body):
        self.seen.append(("POST", self.headers.get("last-event-id"), body))
        if "id" not in body:
            self.send_accepted()
            return
        self.call_id.append(body["id"])
        self.start_sse()
        self.chunk(b"id: ev-1\nretry: 50\ndata: \n\n")
        note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1, "total": 2}}
        self.chunk(b"id: ev-2\nevent: message\ndata: " + orjson.dumps(note) + b"\n\n")
        self.chunk(b"")
        self.close_connection = True

    def do_GET(self):
        self.seen.append(("GET", self.headers.get("last-event-id"), None))
        if self.headers.get("last-event-id") != "ev-2":
            self.send_response(405)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.start_sse()
        result = {"jsonrpc": "2.0", "id": self.call_id[-1], "result": {"content": [{"type": "text", "text": "polled"}]}}
        self.chunk(b"id: ev-3\nevent: message\ndata: " + orjson.dumps(result) + b"\n\n")
        self.chunk(b"")
        self.close_connection = True


@pytest.fixture
def server():
    yield from serve(Polling, "seen", "call_id")


def test_a_closed_call_stream_is_resumed_for_a_2026_client(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        c = Client(px.port)
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "poll", "arguments": {},
                                                                             "_meta": {**META, "progressToken": "p"}}}
        st, h, body = c.post(call, {"mcp-protocol-version": NEW, "mcp-method": "tools/call", "mcp-name": "poll"})
        recs = [(r["direction"], r["pointer"], r["action"], r["rule"], r["detail"]) for r in px.changes()]
    assert (st, h["content-type"]) == (200, "text/event-stream")
    assert body == (
        b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":2}}\n\n'
        b'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"polled"}],"resultType":"complete"}}\n\n')
    minted = Polling.call_id[0]
    assert [(m, last, b and b.get("method")) for m, last, b in Polling.seen] == [
        ("POST", None, "notifications/initialized"), ("POST", None, "tools/call"), ("GET", "ev-2", None)]
    assert Polling.seen[1][2] == {"jsonrpc": "2.0", "id": minted, "method": "tools/call",
                                  "params": {"name": "poll", "arguments": {}, "_meta": {"progressToken": "p"}}}
    assert [r for r in recs if r[3] in ("TR-sse-priming-polling", "PASSTHROUGH-error", "RES-resultType")] == [
        ("s2c", "", "bridge", "TR-sse-priming-polling",
         "the server closed the call's SSE stream after event ev-2 without its answer: resumed with GET and Last-Event-ID (retry 50 ms)"),
        ("s2c", "/result/resultType", "synthesize", "RES-resultType", "required by 2026-07-28; a legacy result means this"),
    ]


LIMIT = 64 << 10  # mcpx_max_body (its minimum)
BIG = "x" * (LIMIT + 1000)


class BigAnswer(ScriptedMcpHandler):
    """A 2025-11-25 server: tools/call gets a priming event (id ev-1, retry 0), then its result, one
    event (id ev-2) larger than mcpx_max_body, then the stream closes (cleanly). A GET with
    ``Last-Event-ID: ev-1`` would replay ev-2 (an event store): a bridge that resumed would get the answer twice."""

    REVISION = "2025-11-25"
    seen: list = []
    call_id: list = []

    def result(self) -> bytes:
        return orjson.dumps({"jsonrpc": "2.0", "id": self.call_id[-1], "result": {"content": [{"type": "text", "text": BIG}]}})

    def answer(self, body):
        self.seen.append(("POST", self.headers.get("last-event-id"), body.get("method")))
        if "id" not in body:
            self.send_accepted()
            return
        self.call_id.append(body["id"])
        self.start_sse()
        self.chunk(b"id: ev-1\nretry: 0\ndata: \n\n")
        self.chunk(b"id: ev-2\nevent: message\ndata: " + self.result() + b"\n\n")
        self.chunk(b"")
        self.close_connection = True

    def do_GET(self):
        self.seen.append(("GET", self.headers.get("last-event-id"), None))
        self.start_sse()
        if self.headers.get("last-event-id") == "ev-1":
            self.chunk(b"id: ev-2\nevent: message\ndata: " + self.result() + b"\n\n")
        self.chunk(b"")
        self.close_connection = True


@pytest.fixture
def big_server():
    yield from serve(BigAnswer, "seen", "call_id")


def test_an_answer_event_larger_than_max_body_then_a_close_is_delivered_once(big_server, tmp_path):
    """The relay's fault (an answer event larger than mcpx_max_body, then the close, taken for an
    early close and resumed: the answer twice), checked on the 2026-07-28 bridge: its call stream
    reads each event whole (no mcpx_max_body bound on the upstream SSE it consumes), sees the answer,
    and does not resume: no GET, the answer once, no resume record."""
    with Proxy(f"http://127.0.0.1:{big_server}", tmp_path, options={"mcpx_server_era": "legacy", "mcpx_max_body": LIMIT}) as px:
        c = Client(px.port)
        call = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "big", "arguments": {}, "_meta": META}}
        st, h, body = c.post(call, {"mcp-protocol-version": NEW, "mcp-method": "tools/call", "mcp-name": "big"})
        recs = [(r["action"], r["rule"]) for r in px.changes() if r["rule"] == "TR-sse-priming-polling"]
    assert [(m, last, meth) for m, last, meth in BigAnswer.seen] == [
        ("POST", None, "notifications/initialized"), ("POST", None, "tools/call")]
    expected = {"jsonrpc": "2.0", "id": 8, "result": {"content": [{"type": "text", "text": BIG}], "resultType": "complete"}}
    assert (st, h["content-type"]) == (200, "application/json")
    assert body == orjson.dumps(expected)
    assert recs == []
