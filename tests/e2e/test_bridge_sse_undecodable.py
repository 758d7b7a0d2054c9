"""A 2026-07-28 client in front of a legacy 2025-11-25 server whose compressed SSE answer to a call
stops decoding, through the real mitmdump.

``upstream.Sender`` decodes a ``Content-Encoding: gzip`` SSE answer as it streams. Before, when the
stream stopped decoding (corrupt bytes), the bridge (bridge/client2026.py) was told the stream had
ended, took it for the server closing the call's stream after an event id (SSE polling), recorded
"the server closed the call's SSE stream after event e1 without its answer: resumed ..." (untrue),
sent a GET with ``Last-Event-ID`` and left the POST streaming unread. Now the complete events that
decoded are used, the call ends with -32603 saying why, one ``passthrough`` record and one warning
line, the upstream request is ended, and nothing is resumed.
"""
from __future__ import annotations

import gzip
import threading
import time

import orjson
import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

NEW = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": NEW, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "undec-2026", "version": "1"}, "progressToken": "p"}
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1, "total": 2}}
MEMBER = gzip.compress(b"id: e1\nevent: message\ndata: " + orjson.dumps(PROGRESS) + b"\n\n", mtime=0)
CORRUPT = b"this is not gzip\n"


class Corrupt(ScriptedMcpHandler):
    """A 2025-11-25 server whose compression goes wrong mid-stream (it stands for a server, or a
    gateway in front of it, that corrupts a gzip SSE stream; no well-behaved server does this on
    purpose): ``tools/call`` gets ``200 text/event-stream`` with ``Content-Encoding: gzip``, one
    chunk holding a gzip member (one complete event, ``id: e1``, a progress notification), then
    corrupt bytes, and more of them every 50 ms (for 10 s at most) while the connection is open:
    ``cut`` is set once a write fails (mcpx ended the request). A GET is kept in ``gets`` (its
    ``Last-Event-ID``) and answered 405."""

    REVISION = "2025-11-25"
    SESSION = "undec-1"
    gets: list = []
    cut = threading.Event()

    def answer(self, body):
        if "id" not in body:
            self.send_accepted()
            return
        self.close_connection = True
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-encoding", "gzip")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.chunk(MEMBER)
        deadline = time.monotonic() + 10
        try:
            while time.monotonic() < deadline:
                self.chunk(CORRUPT)
                time.sleep(0.05)
        except OSError:
            self.cut.set()

    def do_GET(self):
        self.gets.append(self.headers.get("last-event-id"))
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()


@pytest.fixture
def server():
    Corrupt.cut = threading.Event()
    yield from serve(Corrupt, "gets")


def test_a_call_stream_that_stops_decoding_ends_the_call_and_is_not_resumed(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        c = Client(px.port, timeout=20)
        call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "undec", "arguments": {}, "_meta": META}}
        try:
            st, h, body = c.post(call, {"mcp-protocol-version": NEW, "mcp-method": "tools/call", "mcp-name": "undec"})
        finally:
            c.close()
        cut = Corrupt.cut.wait(5)
        recs = [(r["action"], r["rule"], r["detail"]) for r in px.changes() if r["direction"] == "s2c"]
        out = px.output()
    at = len(MEMBER) + 1  # (zlib reads the first corrupt byte before it rejects the next member's header)
    reason = "error: Error -3 while decompressing data: incorrect header check"
    why = (f"the server's SSE answer stopped decoding at compressed byte {at} ({reason}): mcpx ended the call's upstream "
           "request (not resumed: the server had not closed the stream)")
    error = {"jsonrpc": "2.0", "id": 9, "error": {"code": -32603, "message": f"mcpx: {why}"}}
    assert (st, h["content-type"], body) == (
        200, "text/event-stream",
        b"event: message\ndata: " + orjson.dumps(PROGRESS) + b"\n\nevent: message\ndata: " + orjson.dumps(error) + b"\n\n")
    assert Corrupt.gets == []
    detail = (f"content-encoding: SSE stream does not decode from compressed byte {at} on ({reason}); delivered: the "
              "complete events before it; not delivered: the rest of the stream (the client was told it is not encoded); "
              "the call ends with -32603, its upstream request ended, not resumed")
    assert recs == [("passthrough", "PASSTHROUGH-error", detail)]  # (no TR-sse-priming-polling "resumed" record)
    assert out.count(f"mcpx: client2026: tools/call: {detail}") == 1
    assert "resumed with GET" not in out and "handler failed" not in out and "Traceback" not in out
    assert cut, "mcpx did not end the upstream request"
