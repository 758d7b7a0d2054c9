"""A split batch's member whose SSE answer a 2025-11-25 server closes early (SSE polling,
``TR-sse-priming-polling``): mcpx resumes that member's own request in place with GET and
Last-Event-ID (the relay's resume, ``bridge/resume.py``), under ``mcpx_sse_resume``.

Through the real mitmdump, against a scripted 2025-11-25 server (it polls on cue, keeps an event
store for the GET): a 2025-03-26 client (raw http.client) sends a batch, which 2025-11-25 has no
longer, so mcpx POSTs each member alone. Exact bytes of the batch answer, exact requests the server
got, exact records.
"""
from __future__ import annotations

import json

import orjson
import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

OLD = "2025-03-26"
NEW = "2025-11-25"
RULE = "TR-sse-priming-polling"
RESULT1 = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"one"}]}}'
RESULT2 = b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"two"}]}}'


class Polling(ScriptedMcpHandler):
    """Member id 1 (``tools/call`` ``poll``): ``e1`` priming (``retry: 0``), then the stream closes
    (cleanly); the GET with ``Last-Event-ID: e1`` gets ``e2``, the result. Member id 2: JSON."""

    REVISION = NEW
    SESSION = "poll-batch-1"
    seen: list = []
    #: the GET is answered 405 (a server that polls but cannot resume)
    refuse_get = False

    def answer(self, body):
        self.seen.append(("POST", body.get("id"), None))
        if "id" not in body:
            self.send_accepted()
            return
        if body["id"] == 2:
            self.send_json(RESULT2)
            return
        self.start_sse()
        self.chunk(b"id: e1\nretry: 0\ndata: \n\n")
        self.chunk(b"")
        self.close_connection = True

    def do_GET(self):
        last = self.headers.get("last-event-id")
        self.seen.append(("GET", self.headers.get("mcp-session-id"), last))
        if last != "e1" or self.refuse_get:
            self.send_response(405)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.start_sse()
        self.chunk(b"id: e2\nevent: message\ndata: " + RESULT1 + b"\n\n")
        self.chunk(b"")
        self.close_connection = True


@pytest.fixture
def server():
    Polling.refuse_get = False
    yield from serve(Polling, "seen")
    Polling.refuse_get = False


def calls() -> list:
    return [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "poll", "arguments": {}}} for i in (1, 2)]


def run(server, tmp_path, mode: str):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_sse_resume": mode}, tag=mode) as px:
        c = Client(px.port)
        assert c.initialize(OLD)["protocolVersion"] == OLD
        status, _, body = c.post(calls())
        c.close()
        out = px.output()
    records = [(r["jsonrpc_id"], r["action"], r["rule"], r["detail"]) for r in px.session_changes(c.session)
               if r["direction"] == "s2c" and r["method"] != "initialize"]
    batch = [f for f in px.flows() if (f.metadata.get("mcpx") or {}).get("origin") != "mcpx"
             and f.request.content.startswith(b"[")]
    assert len(batch) == 1
    run.relay = batch[0].metadata["mcpx"].get("relay")
    return status, body, records, out


PRIMING_DROP = (None, "drop-message", RULE, "empty-data (priming) event: only 2025-11-25 clients get it")


@pytest.mark.parametrize("mode", ["always", "auto"])
def test_a_member_whose_stream_closes_early_is_resumed(server, tmp_path, mode):
    """Before the fix: the member got -32603 ("no JSON-RPC response to it on the SSE stream") and no
    GET was sent. Now one GET with Last-Event-ID e1 and the server's session id, and the batch
    answer holds the member's result as the server sent it. ``auto``: the member's own answer shows
    the server polls (an event id, then the close before its answer)."""
    status, body, records, out = run(server, tmp_path, mode)
    assert status == 200
    assert body == b"[" + RESULT1 + b"," + RESULT2 + b"]"
    assert Polling.seen == [("POST", None, None), ("POST", 1, None), ("GET", "poll-batch-1", "e1"), ("POST", 2, None)]
    resumed = (1, "rewrite", RULE, "the server closed the SSE stream after event e1 before the answer: resumed by mcpx with GET "
               "and Last-Event-ID after 0 ms (retry); the split batch's answer waits for it")
    assert sorted(records, key=repr) == sorted([resumed, PRIMING_DROP], key=repr)
    # the batch's flow lists the member resumed, for mitmweb and flow files
    assert run.relay == {"server": f"http://127.0.0.1:{server}/mcp", "members": [{"id": 1, "resumed_after": ["e1"]}]}


def test_a_member_whose_resume_is_refused_is_answered_32603_and_its_record_says_so(server, tmp_path):
    """The GET is answered 405: the member gets -32603 in the batch's answer, and the failure record
    says so (before: "the client's stream ends without the answer", which is not what a split batch does)."""
    Polling.refuse_get = True
    status, body, records, out = run(server, tmp_path, "always")
    why = ("the server closed the SSE stream after event e1 before the answer and mcpx could not resume it: "
           "the GET with Last-Event-ID e1 was answered HTTP 405 (no content-type), not an SSE stream; "
           "the member is answered -32603 in the batch's answer")
    assert status == 200
    assert json.loads(body) == [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "mcpx: the server answered this batch member with HTTP 200 "
                                              f"(text/event-stream), which mcpx could not read as its answer: {why}"}},
        json.loads(RESULT2)]
    assert Polling.seen == [("POST", None, None), ("POST", 1, None), ("GET", "poll-batch-1", "e1"), ("POST", 2, None)]
    tried = (1, "rewrite", RULE, "the server closed the SSE stream after event e1 before the answer: resumed by mcpx with GET "
             "and Last-Event-ID after 0 ms (retry); the split batch's answer waits for it")
    assert sorted(records, key=repr) == sorted([PRIMING_DROP, tried, (1, "passthrough", RULE, why), (
        1, "answer-locally", "RPC-batch-request",
        f"batch member id=1: HTTP 200 (text/event-stream), {why}: answered -32603 in the batch response")], key=repr)
    assert f"mcpx: SSE polling: {why}" in out
    assert run.relay == {"server": f"http://127.0.0.1:{server}/mcp", "members": [{"id": 1, "resumed_after": ["e1"]}]}


def test_with_resume_off_the_member_error_says_why(server, tmp_path):
    """``mcpx_sse_resume=off``: no GET; the member's -32603 and its record name the early close and the option."""
    status, body, records, _ = run(server, tmp_path, "off")
    why = "the server closed its SSE stream after event e1 before the answer; not resumed (mcpx_sse_resume=off)"
    assert status == 200
    assert json.loads(body) == [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "mcpx: the server answered this batch member with HTTP 200 "
                                              f"(text/event-stream), which mcpx could not read as its answer: {why}"}},
        json.loads(RESULT2)]
    assert body.endswith(b"," + RESULT2 + b"]")
    assert Polling.seen == [("POST", None, None), ("POST", 1, None), ("POST", 2, None)]
    assert sorted(records, key=repr) == sorted([PRIMING_DROP, (1, "answer-locally", "RPC-batch-request",
                                                f"batch member id=1: HTTP 200 (text/event-stream), {why}: answered -32603 in the batch response")], key=repr)
    assert run.relay is None
