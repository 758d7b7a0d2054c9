"""A 2025-11-25 server that closes a call's SSE stream between the rounds of an input_required round
trip (SSE polling, 2025-11-25 basic/transports.mdx:107-115): the 2026-07-28 client bridge resumes
the call with GET and ``Last-Event-ID`` after the server's ``retry``, and the client's retry gets the
result from the resumed stream.

Before: the resume was sent through the client's first flow, which had ended when mcpx answered it
``input_required``; the GET never went out ("no live proxy to send through"), and the client's retry
got a -32603. Now the GET is sent for that flow after it ended, as the DELETE of an idle upstream
session is.

Through the real mitmdump, against a scripted 127.0.0.1 server standing in for a polling 2025-11-25
server (a real one does not poll on request); exact messages on both legs, exact records."""
from __future__ import annotations

import json
import threading

import orjson
import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

NEW = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": NEW, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"}}
ASK = {"message": "name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}
RETRY_MS = 1000  # the client's first flow has ended well before the resume


class Polling(ScriptedMcpHandler):
    """tools/call: ``elicitation/create`` id ``ask-1`` in event ``ev-1`` with ``retry: 1000``, then the
    stream ends without the answer. GET with ``Last-Event-ID: ev-1``: waits (up to 10 s) for the
    answer to ``ask-1``, then the result in event ``ev-2``; any other GET: 405."""

    REVISION = "2025-11-25"
    seen: list = []
    answered = threading.Event()

    def answer(self, body):
        self.seen.append(("POST", body))
        if "method" not in body:  # the answer to ask-1
            self.answered.set()
            self.send_accepted()
            return
        if "id" not in body:
            self.send_accepted()
            return
        self.start_sse()
        self.chunk(b"id: ev-1\nretry: %d\nevent: message\ndata: " % RETRY_MS + orjson.dumps(
            {"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": ASK}) + b"\n\n")
        self.chunk(b"")
        self.close_connection = True

    def do_GET(self):
        last = self.headers.get("last-event-id")
        self.seen.append(("GET", self.headers.get("mcp-session-id"), last))
        if last != "ev-1":
            self.send_response(405)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.start_sse()
        self.answered.wait(10)
        self.chunk(b"id: ev-2\nevent: message\ndata: " + orjson.dumps(
            {"jsonrpc": "2.0", "id": self.calls[0], "result": {"content": [{"type": "text", "text": "hello Ada"}]}}) + b"\n\n")
        self.chunk(b"")
        self.close_connection = True

    @property
    def calls(self) -> list:
        return [m["id"] for kind, *rest in self.seen if kind == "POST" for m in rest if m.get("method") == "tools/call"]


@pytest.fixture
def server():
    Polling.answered.clear()
    yield from serve(Polling, "seen")


def test_a_call_closed_between_rounds_is_resumed_and_the_retry_gets_the_result(server, tmp_path):
    hdrs = {"mcp-protocol-version": NEW, "mcp-method": "tools/call", "mcp-name": "t"}
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        c = Client(px.port)
        st, _, body = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}, "_meta": META}}, hdrs)
        first = orjson.loads(body)
        assert st == 200 and first["result"]["resultType"] == "input_required", first
        assert first["result"]["inputRequests"] == {"mcpx:ask-1": {"method": "elicitation/create", "params": ASK}}
        st, _, body = c.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "t", "arguments": {}, "_meta": META, "requestState": first["result"]["requestState"],
            "inputResponses": {"mcpx:ask-1": {"action": "accept", "content": {"name": "Ada"}}}}}, hdrs)
        recs = [(r["action"], r["rule"], r["detail"]) for r in px.changes() if r["rule"] == "TR-sse-priming-polling"]
        out = px.output()
    assert (st, orjson.loads(body)) == (200, {"jsonrpc": "2.0", "id": 2, "result": {
        "content": [{"type": "text", "text": "hello Ada"}], "resultType": "complete"}})
    assert [x for x in Polling.seen if x[0] == "GET"] == [("GET", "scripted-1", "ev-1")]
    answers = [rest[0] for kind, *rest in Polling.seen if kind == "POST" and "method" not in rest[0]]
    assert answers == [{"jsonrpc": "2.0", "id": "ask-1", "result": {"action": "accept", "content": {"name": "Ada"}}}]
    assert recs == [("bridge", "TR-sse-priming-polling", "the server closed the call's SSE stream after event ev-1 without its "
                                                         f"answer: resumed with GET and Last-Event-ID (retry {RETRY_MS} ms)")]
    assert "SSE polling" not in out
