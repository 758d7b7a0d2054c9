"""An empty JSON array, and an array that holds no JSON-RPC message, through the real mitmdump: not a
JSON-RPC batch (JSON-RPC 2.0, "Batch": an empty array is an invalid request, answered with a single
error), so nothing to split: forwarded byte for byte, with one ``passthrough`` record, as any body
or SSE event that holds no JSON-RPC 2.0 message (tests/unit/test_no_message_records.py).

Before, an SSE event ``data: []`` toward a client whose revision has no batches got a ``split``
record "batch of 0 messages" -> "0 events", and the event was replaced by mcpx's not-delivered
comment; ``data: [5]`` or ``data: [{}]`` was split into events of their elements. A JSON answer and a
client POST of ``[]`` already got the passthrough record; a client POST of ``[]`` under a session id
mcpx cannot open also got it, next to the 404 mcpx answered instead of forwarding it.

The upstream is a scripted stdlib server (proxy_lib.ScriptedMcpHandler): no real server answers a
request with an empty array, but a broken one can, and the test controls each byte.
"""
from __future__ import annotations

import json

import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

REV = "2025-06-18"  # no batches at this revision (RPC-batch-response: a batch event is split for it)
RESULT = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"ok"}]}}'


class Handler(ScriptedMcpHandler):
    SESSION = "empty-1"
    received: list[bytes] = []
    #: the data of the event before the result, or (for "json") the JSON answer
    DATA = b"[]"

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["content-length"]))
        body = json.loads(raw)
        if isinstance(body, dict) and body.get("method") == "initialize":
            self.rfile = __import__("io").BytesIO(raw)
            self.headers.replace_header("content-length", str(len(raw)))
            super().do_POST()
            return
        Handler.received.append(raw)
        if not isinstance(body, dict):  # the client's array: a server answers it with one error
            self.send_json(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}', status=400)
            return
        if "id" not in body:
            self.send_accepted()
            return
        if body["params"]["name"] == "json":
            self.send_json(self.DATA)
            return
        self.start_sse()
        self.chunk(b"id: 7\ndata: " + self.DATA + b"\n\n")
        self.chunk(b"id: 8\ndata: " + RESULT % body["id"] + b"\n\n")
        self.chunk(b"")


@pytest.fixture
def server():
    yield from serve(Handler, "received")


def call(rid: int, name: str) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": {}}}


@pytest.mark.parametrize("data", [b"[]", b"[ ]", b"[5]", b"[{}]", b'[{"jsonrpc":"1.0","id":1,"result":{}}]'])
def test_an_event_or_answer_of_an_array_without_a_jsonrpc_message_is_forwarded_with_a_record(server, tmp_path, data):
    Handler.DATA = data
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False) as px:
        c = Client(px.port)
        c.initialize(REV)
        status, headers, body = c.post(call(1, "sse"))
        assert (status, body) == (200, b"id: 7\ndata: " + data + b"\n\nid: 8\ndata: " + RESULT % 1 + b"\n\n")
        status, headers, body = c.post(call(2, "json"))
        assert (status, body) == (200, data)
        c.close()
    assert [(r["action"], r["rule"], r["direction"], r["session"], r["jsonrpc_id"], r["detail"]) for r in px.changes()] == [
        ("passthrough", "PASSTHROUGH-error", "s2c", px.handle(c.session), None, "SSE event data holds no JSON-RPC 2.0 message"),
        ("passthrough", "PASSTHROUGH-error", "s2c", px.handle(c.session), None, "body holds no JSON-RPC 2.0 message"),
    ]


@pytest.mark.parametrize("rev", ["2025-03-26", REV])
def test_a_client_post_of_an_empty_array_reaches_the_server_byte_for_byte_with_a_record(server, tmp_path, rev):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False) as px:
        c = Client(px.port)
        c.initialize(rev)
        Handler.received.clear()
        status, _, body = c.post(None, raw=b" [ ] ")
        assert (status, body) == (400, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}')
        assert Handler.received == [b" [ ] "]
        c.close()
    assert [(r["action"], r["direction"], r["session"], r["from_rev"], r["to_rev"], r["detail"]) for r in px.changes()] == [
        ("passthrough", "c2s", px.handle(c.session), rev, rev, "body holds no JSON-RPC 2.0 message"),
        # (the server's error has "id": null, which these revisions do not allow: said, and delivered as it came)
        ("keep", "s2c", px.handle(c.session), rev, rev,
         f"fails {rev} JSONRPCError: expected string/number, got null; nothing repaired, delivered as it was"),
    ]


def test_an_empty_array_under_a_session_id_mcpx_cannot_open_gets_the_404_record_only(server, tmp_path):
    """Nothing is forwarded: the record says so (answer-locally), and no passthrough record says otherwise."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False) as px:
        c = Client(px.port)
        c.session = "mcpx1.not-a-token"
        Handler.received.clear()
        status, _, body = c.post(None, raw=b"[]")
        assert (status, body) == (404, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}')
        assert Handler.received == []
        c.close()
    assert [(r["action"], r["rule"], r["direction"]) for r in px.changes()] == [("answer-locally", "TR-session-id", "c2s")]
