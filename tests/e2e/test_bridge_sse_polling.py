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

from polling_lib import META, NEW, call_tool as _call_tool
from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve



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


RULE = "TR-sse-priming-polling"
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1, "total": 2}}
PROGRESS_EVENT = b"event: message\ndata: " + orjson.dumps(PROGRESS) + b"\n\n"


def polled(rid) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "polled"}]}})


class Faulty(ScriptedMcpHandler):
    """A 2025-11-25 server that polls (it stands in for one: the faults need a server that fails on
    cue). Every ``tools/call`` gets a priming event (``ev-1``, ``retry: 0``; ``wait-long``: ``retry:
    3600000``, an hour) and a progress notification (``ev-2``); then, by tool name:

    - ``get-405``, ``get-gone``, ``no-newer``, ``twice``, ``bom``, ``get-broken``: the stream ends
      (cleanly); ``post-broken``: the connection closes without the stream's last chunk (broken off).

    A GET with ``Last-Event-ID``, by the call's tool name:

    - ``get-405``: 405, no body; ``get-gone``: the connection closed, no answer;
    - ``no-newer``: an SSE stream with a comment only, ended (no newer event id);
    - ``twice``: after ``ev-2``: ``ev-3`` another progress notification, then the stream ends; after
      ``ev-3``: ``ev-4`` the result;
    - ``bom``: a stream that opens with a UTF-8 BOM, then ``ev-3`` the result;
    - ``get-broken``: after ``ev-2``: ``ev-3`` a progress notification, then the connection closes
      without the last chunk; after ``ev-3``: ``ev-4`` the result;
    - ``post-broken``: ``ev-3`` the result.

    Every request is kept in ``seen`` as (method, headers, body)."""

    REVISION = "2025-11-25"
    SESSION = "faulty-1"
    seen: list = []
    calls: list = []

    def answer(self, body):
        self.seen.append(("POST", {k.lower(): v for k, v in self.headers.items()}, body))
        if "id" not in body:
            self.send_accepted()
            return
        name = body["params"]["name"]
        self.calls.append((name, body["id"]))
        self.start_sse()
        self.chunk(b"id: ev-1\nretry: %s\ndata: \n\n" % (b"3600000" if name == "wait-long" else b"0"))
        self.chunk(b"id: ev-2\n" + PROGRESS_EVENT)
        if name != "post-broken":
            self.chunk(b"")
        self.close_connection = True

    def do_GET(self):
        self.seen.append(("GET", {k.lower(): v for k, v in self.headers.items()}, None))
        last = self.headers.get("last-event-id")
        name, rid = self.calls[-1]
        self.close_connection = True
        if name == "get-gone":
            return
        if name == "get-405":
            self.send_response(405)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.start_sse()
        if name == "no-newer":
            self.chunk(b": nothing new\n\n")
        elif name in ("twice", "get-broken") and last == "ev-2":
            self.chunk(b"id: ev-3\n" + PROGRESS_EVENT)
            if name == "get-broken":
                return  # no last chunk: broken off
        elif name in ("twice", "get-broken"):
            self.chunk(b"id: ev-4\nevent: message\ndata: " + polled(rid) + b"\n\n")
        else:
            self.chunk((b"\xef\xbb\xbf" if name == "bom" else b"") + b"id: ev-3\nevent: message\ndata: " + polled(rid) + b"\n\n")
        self.chunk(b"")


@pytest.fixture
def faulty():
    yield from serve(Faulty, "seen", "calls")


def call_tool(px, rid, name, timeout: float = 15) -> tuple[int, dict, bytes]:
    """``name`` called by a raw 2026-07-28 client with credentials (polling_lib.call_tool)."""
    return _call_tool(px, rid, name, timeout, {"authorization": "Bearer t"})


def resumed(last) -> tuple:
    return ("bridge", RULE, f"the server closed the call's SSE stream after event {last} without its answer: resumed with GET "
                            "and Last-Event-ID (retry 0 ms)")


def polling_records(px) -> list:
    return [(r["action"], r["rule"], r["detail"]) for r in px.changes() if r["rule"] in (RULE, "PASSTHROUGH-error")]


def gets(seen) -> list:
    """The resuming GETs the server got: their headers (but Host)."""
    return [{k: v for k, v in h.items() if k != "host"} for m, h, _ in seen if m == "GET"]


def get_headers(last) -> dict:
    """A resuming GET's headers: the server's own session id, its revision, the client's credentials (same origin)."""
    return {"accept": "text/event-stream", "last-event-id": last, "mcp-session-id": "faulty-1",
            "mcp-protocol-version": "2025-11-25", "authorization": "Bearer t"}


def sse_answer(*messages: bytes) -> bytes:
    return b"".join(b"event: message\ndata: " + m + b"\n\n" for m in messages)


def complete(rid) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "polled"}],
                                                                 "resultType": "complete"}})


@pytest.mark.parametrize("name", ["twice", "bom", "get-broken", "post-broken"])
def test_a_call_resumed_until_its_answer(faulty, tmp_path, name):
    """Resumed again after each close that follows a newer event id (a clean end, or the connection
    broken off after the stream's head: 2025-11-25 basic/transports.mdx, "Sending Messages to the
    Server" 6: a disconnection is not a cancellation); a resumed stream's BOM is no part of an event.
    Before, a stream broken off was never resumed: nothing ended the call, and the client waited
    (600 s, then -32603)."""
    with Proxy(f"http://127.0.0.1:{faulty}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        st, h, body = call_tool(px, 9, name)
        recs = polling_records(px)
    lasts = ["ev-2", "ev-3"] if name in ("twice", "get-broken") else ["ev-2"]
    assert (st, h["content-type"], body) == (200, "text/event-stream",
                                             sse_answer(*[orjson.dumps(PROGRESS)] * len(lasts), complete(9)))
    assert [h["last-event-id"] for h in gets(Faulty.seen)] == lasts
    assert recs == [resumed(last) for last in lasts]


def test_the_resuming_get_carries_the_servers_session_and_revision(faulty, tmp_path):
    """The GET that resumes the call (2025-11-25 basic/transports.mdx:187: ``Last-Event-ID``; its
    "Session Management" 2 and "Protocol Version Header") carries the server's own ``Mcp-Session-Id``,
    ``MCP-Protocol-Version: 2025-11-25``, ``Accept: text/event-stream`` and the client's credentials
    (the call's own server), and no ``Content-Type``: it has no body (before: ``application/json``)."""
    with Proxy(f"http://127.0.0.1:{faulty}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        st, _, body = call_tool(px, 9, "twice")
    assert (st, body) == (200, sse_answer(orjson.dumps(PROGRESS), orjson.dumps(PROGRESS), complete(9)))
    assert gets(Faulty.seen) == [get_headers("ev-2"), get_headers("ev-3")]


def failed(why) -> str:
    return f"the server closed the call's SSE stream after event ev-2 without its answer and mcpx could not resume it: {why}"


@pytest.mark.parametrize("name, why", [
    ("get-405", "the GET with Last-Event-ID ev-2 was answered HTTP 405 (no content-type), not an SSE stream"),
    ("get-gone", "the GET with Last-Event-ID ev-2 failed: server closed connection"),
    ("no-newer", "the resumed stream ended with no newer event"),
])
def test_a_resume_that_fails_ends_the_call_with_why(faulty, tmp_path, name, why):
    """The resuming GET refused (405), its connection closed with no answer, or a resumed stream that
    ends with no newer event id (not resumed again: that would loop): the client gets the events that
    came and a -32603 saying why, at once; one passthrough record (the rule's), one warning line. Before:
    a -32603 "the server ended the call without an answer" and a record that did not say why, no line."""
    with Proxy(f"http://127.0.0.1:{faulty}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        st, h, body = call_tool(px, 9, name)
        recs = polling_records(px)
        out = px.output()
    error = {"jsonrpc": "2.0", "id": 9, "error": {"code": -32603, "message": f"mcpx: {failed(why)}"}}
    assert (st, h["content-type"], body) == (200, "text/event-stream", sse_answer(orjson.dumps(PROGRESS), orjson.dumps(error)))
    assert [h["last-event-id"] for h in gets(Faulty.seen)] == ["ev-2"]
    assert recs == [resumed("ev-2"), ("passthrough", RULE, f"{failed(why)}; the call ends with -32603")]
    assert out.count(f"mcpx: SSE polling: {failed(why)}; the call ends with -32603") == 1


def test_a_retry_longer_than_the_cap_is_waited_60_s_and_the_record_says_so(faulty, tmp_path):
    """``retry: 3600000`` (an hour): mcpx waits 60 s at most before the resuming GET (RETRY_CAP_MS, as
    resume.py), and its record says that it does (before: "(retry 3600000 ms)", as if it waited an
    hour). The client gives up after 3 s: no GET was sent by then."""
    with Proxy(f"http://127.0.0.1:{faulty}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        with pytest.raises(TimeoutError):
            call_tool(px, 9, "wait-long", timeout=3)
        recs = polling_records(px)
    assert gets(Faulty.seen) == []
    assert recs == [("bridge", RULE, "the server closed the call's SSE stream after event ev-2 without its answer: resumed with "
                                     "GET and Last-Event-ID (retry 3600000 ms, capped at 60000 ms)")]
