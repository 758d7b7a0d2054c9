"""SSE lines that end in CR alone (a line end the SSE format allows: WHATWG HTML 9.2.5, ``end-of-line``),
through the real mitmdump: an event reaches the client as soon as its blank line's CR does.

mcpx waited for the byte after a CR that ended a chunk, to see whether it was the CR of a CRLF.
When that CR was an event's blank line and the server then sent nothing more, the event stayed in
mcpx: a server request (here ``elicitation/create``) that the server waits on the client to answer
never reached the client, and the call hung until the server gave up (directly, an SSE client
dispatches the event at that CR). Now the event goes out at once: as it came when mcpx changes
nothing in it; when mcpx rewrites it, with CRLF line ends (an LF may still follow, and is then not
written twice); an LF that follows a CR that ended an event arrives as it came.

The upstream is a scripted stdlib server (proxy_lib.ScriptedMcpHandler): no released MCP server
writes CR-only line ends, but the format allows them, and the test needs to hold the stream open
until the client answers.
"""
from __future__ import annotations

import http.client
import json
import threading
import time

import orjson
import pytest

from proxy_lib import ACCEPT, Proxy, ScriptedMcpHandler, serve

REV = "2025-06-18"
WAIT = 4.0  # how long the server waits for the client's answer before it gives up


def elicit(properties) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": 5, "method": "elicitation/create", "params": {
        "message": "Proceed?", "requestedSchema": {"type": "object", "properties": properties}}})


class Handler(ScriptedMcpHandler):
    SESSION = "cr-1"
    #: name -> (the event carrying the request, the blank line's line end cut before its LF or not)
    FIRST = b""
    SPLIT = False
    answered = threading.Event()

    def answer(self, body):
        if "method" not in body:  # the client's answer to the elicitation
            Handler.answered.set()
            self.send_accepted()
            return
        if "id" not in body:
            self.send_accepted()
            return
        self.start_sse()
        if self.SPLIT:  # CRLF line ends, the write cut between the blank line's CR and its LF
            self.chunk(self.FIRST[:-1])
            time.sleep(0.5)
            self.chunk(self.FIRST[-1:])
        else:
            self.chunk(self.FIRST)
        ok = Handler.answered.wait(WAIT)
        text = b"answered" if ok else b"no answer"
        self.chunk(b"id: 2\rdata: " + orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
            "content": [{"type": "text", "text": text.decode()}]}}) + b"\r\r")
        self.chunk(b"")


@pytest.fixture
def server():
    Handler.answered = threading.Event()
    yield from serve(Handler)


def post(port: int, msg: dict, sid: str | None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"content-type": "application/json", "accept": ACCEPT, "mcp-protocol-version": REV}
    if sid:
        headers["mcp-session-id"] = sid
    conn.request("POST", "/mcp", json.dumps(msg), headers)
    return conn.getresponse()


CR_ONLY = b"id: 1\revent: message\rdata: " + elicit({}) + b"\r\r"
REPAIRED = b"id: 1\r\nevent: message\r\ndata: " + elicit({}) + b"\r\n\r\n"  # "properties": [] -> {} (REPAIR-empty-array-object)
CRLF = b"id: 1\r\nevent: message\r\ndata: " + elicit({}) + b"\r\n\r\n"


@pytest.mark.parametrize("first,split,delivered", [
    (CR_ONLY, False, CR_ONLY),  # nothing to change: the server's bytes
    (CR_ONLY.replace(elicit({}), elicit([])), False, REPAIRED),  # rewritten: CRLF line ends
    (CRLF, True, CRLF),  # CRLF cut before the blank line's LF: the LF follows as it came
    (CRLF.replace(elicit({}), elicit([])), True, REPAIRED),  # ... and, rewritten, is not written twice
], ids=["cr-untouched", "cr-rewritten", "crlf-cut-untouched", "crlf-cut-rewritten"])
def test_an_event_ended_by_a_cr_reaches_the_client_at_once(server, tmp_path, first, split, delivered):
    Handler.FIRST, Handler.SPLIT = first, split
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False) as px:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": REV, "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "1"}}}
        r = post(px.port, init, None)
        r.read()
        sid = r.getheader("mcp-session-id")
        post(px.port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid).read()
        r = post(px.port, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}}}, sid)
        assert r.getheader("content-type") == "text/event-stream"
        started = time.monotonic()
        got = b""
        while not got.endswith(delivered[:-1]) and len(got) < len(delivered):
            got += r.read1(65536)
        assert time.monotonic() - started < WAIT / 2  # not held until the server's next bytes
        answer = post(px.port, {"jsonrpc": "2.0", "id": 5, "result": {"action": "decline"}}, sid)
        assert answer.status == 202
        got += r.read()
    result = b"id: 2\rdata: " + b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"answered"}]}}' + b"\r\r"
    assert got == delivered + result
    repaired = first != delivered and b"[]" in first
    assert [(c["action"], c["rule"], c["pointer"], c["direction"]) for c in px.changes()] == (
        [("repair", "REPAIR-empty-array-object", "/params/requestedSchema/properties", "s2c")] if repaired else [])
