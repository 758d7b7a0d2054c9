"""The 2026-07-28 bridge's SSE-polling resume (bridge/client2026.py ``_call``) against servers that
misbehave on the resume path, through the real mitmdump.

A 2025-11-25 server may close a call's SSE stream after an event id and before its answer; mcpx
resumes it for a 2026-07-28 client with GET and ``Last-Event-ID`` after the ``retry`` given, again
after each close that follows a newer id (2025-11-25 basic/transports.mdx:107-115). These tests give
it what a faulty or hostile server sends: a ``retry`` field too long for Python's int(), event ids
that come back (a loop), and a resume that comes due after mcpx forgot the held round trip.
"""
from __future__ import annotations

import threading
import time

import orjson
import pytest

from polling_lib import META, NEW, PROGRESS, Misbehaving, call_tool as _call_tool, polled
from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

RULE = "TR-sse-priming-polling"


@pytest.fixture
def server():
    yield from serve(Misbehaving, "gets", "calls")


def call_tool(px, rid, name, timeout: float = 20) -> tuple[int, dict, bytes]:
    return _call_tool(px, rid, name, timeout)


def polling_records(px) -> list:
    return [(r["action"], r["rule"], r["detail"]) for r in px.changes() if r["rule"] == RULE]


def sse_answer(*messages: bytes) -> bytes:
    return b"".join(b"event: message\ndata: " + m + b"\n\n" for m in messages)


def complete(rid) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "polled"}],
                                                                 "resultType": "complete"}})


def resumed(last, retry="0 ms") -> tuple:
    return ("bridge", RULE, f"the server closed the call's SSE stream after event {last} without its answer: resumed with GET "
                            f"and Last-Event-ID (retry {retry})")


def test_a_retry_too_long_for_int_is_a_long_retry(server, tmp_path):
    """``retry:`` of 5000 digits (valid: ASCII digits only) before a second event in the same chunk.
    Before, int() refused it (ValueError: more than 4300 digits): the rest of the chunk was lost (the
    progress notification, the newer id and its ``retry: 0``), mitmdump logged "own request stream
    handler failed", and mcpx resumed after ``ev-1``. Now it is a retry like any long one."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        st, h, body = call_tool(px, 4, "huge-retry")
        recs = polling_records(px)
        out = px.output()
    assert (st, h["content-type"], body) == (200, "text/event-stream", sse_answer(orjson.dumps(PROGRESS), complete(4)))
    assert Misbehaving.gets == ["ev-2"]
    assert recs == [resumed("ev-2")]
    assert "handler failed" not in out and "Traceback" not in out


def test_a_retry_too_long_for_int_is_capped_and_the_record_says_so(server, tmp_path):
    """The last retry of 5000 digits: mcpx waits its cap (no GET within the client's 3 s), and the
    record says the server's retry was longer than mcpx writes out, and capped."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        with pytest.raises(TimeoutError):
            call_tool(px, 4, "huge-wait", timeout=3)
        recs = polling_records(px)
        out = px.output()
    assert Misbehaving.gets == []
    assert recs == [resumed("ev-2", "over 999999999999999 ms, capped at 60000 ms")]
    assert "handler failed" not in out and "Traceback" not in out


def test_an_event_id_that_comes_back_ends_the_resumes(server, tmp_path):
    """Resumed after ``ev-2``, the server's stream ends after ``ev-3``; resumed after ``ev-3``, it ends
    after ``ev-2`` again. Before, mcpx compared a resumed stream's last id with the one id it had just
    resumed from, so it resumed after ev-2, ev-3, ev-2, ... for ever (with ``retry: 0``, as fast as the
    server answered), and the client never got an answer. Now an id mcpx already resumed from is no
    newer event: the call ends with -32603 saying so, one record and one warning line."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        st, h, body = call_tool(px, 5, "cycle")
        recs = polling_records(px)
        out = px.output()
    why = ("the server closed the call's SSE stream after event ev-3 without its answer and mcpx could not resume it: "
           "the resumed stream ended after event ev-2, which mcpx had resumed from before (no newer event)")
    error = {"jsonrpc": "2.0", "id": 5, "error": {"code": -32603, "message": f"mcpx: {why}"}}
    assert (st, h["content-type"], body) == (200, "text/event-stream",
                                             sse_answer(*[orjson.dumps(PROGRESS)] * 3, orjson.dumps(error)))
    assert Misbehaving.gets == ["ev-2", "ev-3"]
    assert recs == [resumed("ev-2"), resumed("ev-3"), ("passthrough", RULE, f"{why}; the call ends with -32603")]
    assert out.count(f"mcpx: SSE polling: {why}; the call ends with -32603") == 1



ASK = {"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create",
       "params": {"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}}


class AskThenClose(ScriptedMcpHandler):
    """A 2025-11-25 server that polls (it stands for one whose timing the test controls): ``tools/call``
    gets one event, ``ev-1`` holding an ``elicitation/create`` request (``retry: 3000``; tool
    ``ask-poll``: ``retry: 300``), then its stream ends: the answer comes on a resumed stream. A GET
    is kept in ``gets`` (its ``Last-Event-ID``); for ``ask-poll`` it waits (10 s at most) for the
    client's answer to the elicitation (a POST, kept in ``answers``), then sends the call's result
    (``ev-2``) and ends; for ``ask`` it sends an SSE head and is held open until mcpx closes it."""

    REVISION = "2025-11-25"
    SESSION = "ask-1"
    gets: list = []
    answers: list = []
    calls: list = []
    answered = threading.Event()

    def answer(self, body):
        if "id" not in body or body.get("method") is None:  # a notification, or the client's answer
            if "result" in body or "error" in body:
                self.answers.append(body)
                self.answered.set()
            self.send_accepted()
            return
        name = body["params"]["name"]
        self.calls.append((name, body["id"]))
        self.start_sse()
        retry = b"300" if name == "ask-poll" else b"3000"
        self.chunk(b"id: ev-1\nretry: " + retry + b"\nevent: message\ndata: " + orjson.dumps(ASK) + b"\n\n")
        self.chunk(b"")
        self.close_connection = True

    def do_GET(self):
        if not self.headers.get("last-event-id"):  # the session's own GET stream (mcpx opens it for a client with sampling
            self.send_response(405)                # or elicitation): this server offers none
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.gets.append(self.headers.get("last-event-id"))
        name, rid = self.calls[-1]
        self.close_connection = True
        self.start_sse()
        if name == "ask-poll":
            self.answered.wait(10)
            self.chunk(b"id: ev-2\nevent: message\ndata: " + polled(rid) + b"\n\n")
            self.chunk(b"")
            return
        self.connection.settimeout(30)
        try:
            self.connection.recv(1)  # b"": mcpx closed it
        except OSError:
            pass

    def do_DELETE(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()


@pytest.fixture
def asking():
    AskThenClose.answered.clear()
    yield from serve(AskThenClose, "gets", "answers", "calls")


def ask(rid, name, **params) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": {}, **params, "_meta": {
        **META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}}


def post_ask(px, msg) -> tuple[int, bytes]:
    c = Client(px.port, timeout=20)
    try:
        st, _, body = c.post(msg, {"mcp-protocol-version": NEW, "mcp-method": "tools/call", "mcp-name": msg["params"]["name"]})
    finally:
        c.close()
    return st, body


def test_a_held_round_trip_whose_stream_the_server_closed_is_resumed_for_the_retry(asking, tmp_path):
    """The call asks for input (input_required: the client's request has ended, the round trip is
    held) and the server closes its stream after that request (``ev-1``, ``retry: 300``); the answer
    comes on the stream resumed after ev-1, once the client's answer reached the server. Before, the
    resuming GET was sent for the client's first flow, which had ended: "no live proxy to send through
    (offline replay)", and the client's retry got -32603 saying so (and a warning line blamed an
    offline replay). Now it is sent as any request mcpx makes for an ended flow (detached)."""
    with Proxy(f"http://127.0.0.1:{asking}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        st, body = post_ask(px, ask(1, "ask-poll"))
        first = orjson.loads(body)
        assert (st, first["result"]["resultType"], list(first["result"]["inputRequests"])) == (200, "input_required", ["mcpx:ask-1"])
        retry = ask(2, "ask-poll", requestState=first["result"]["requestState"],
                    inputResponses={"mcpx:ask-1": {"action": "accept", "content": {}}})
        st, body = post_ask(px, retry)
        recs = polling_records(px)
        out = px.output()
    assert (st, body) == (200, complete(2))
    assert AskThenClose.answers == [{"jsonrpc": "2.0", "id": "ask-1", "result": {"action": "accept", "content": {}}}]
    assert AskThenClose.gets == ["ev-1"]
    assert recs == [resumed("ev-1", "300 ms")]
    assert "SSE polling" not in out and "Traceback" not in out


def test_a_resume_due_after_its_round_trip_was_forgotten_is_not_made(asking, tmp_path):
    """The call asks for input (input_required, the round trip held) and its stream closes after
    ``ev-1`` with ``retry: 3000``; the client never retries, and mcpx forgets the round trip after
    HELD_TTL (here 1 s: a script sets it). The resume that comes due 2 s later is not made (a GET then
    would be held open for as long as the server keeps it, up to 600 s, for a call nobody reads, on a
    session mcpx has meanwhile ended): one info line says so, and no warning line blames the GET."""
    script = tmp_path / "held_ttl.py"
    script.write_text("import mcpx_core.bridge.client2026 as c\nc.HELD_TTL = 1.0\n")
    options = {"mcpx_server_era": "legacy", "mcpx_session_ttl": "1s"}
    with Proxy(f"http://127.0.0.1:{asking}", tmp_path, save=False, options=options, scripts=(str(script),)) as px:
        st, body = post_ask(px, ask(1, "ask"))
        assert st == 200 and orjson.loads(body)["result"]["resultType"] == "input_required"
        line = "mcpx: client2026: the input_required round trip of tools/call was forgotten: its resume after event ev-1 not made"
        deadline = time.monotonic() + 20
        while line not in px.output() and time.monotonic() < deadline:
            time.sleep(0.05)
        out = px.output()
        recs = polling_records(px)
    assert out.count(line) == 1
    assert "SSE polling" not in out
    assert AskThenClose.gets == []
    assert recs == [resumed("ev-1", "3000 ms")]
