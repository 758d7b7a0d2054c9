"""SSE polling relay (addon/mcpx_core/bridge/resume.py) at its edges: answers larger than
``mcpx_max_body``, a client that goes away while mcpx waits to resume.

Through the real mitmdump, against a scripted 2025-11-25 server: the faults need a server that
polls and sends large or chunked answers on cue, which a real server does not do on demand.
Raw client pinned at 2025-03-26 (http.client). Exact bytes, exact requests the server got, exact records.
"""
from __future__ import annotations

import http.client
import json
import threading
import time

import orjson
import pytest

from proxy_lib import ACCEPT, ROOT, Client, Proxy, ScriptedMcpHandler, free_port, serve

PROBE = ROOT / "tests" / "reliability" / "probe_addon.py"

OLD = "2025-03-26"
NEW = "2025-11-25"
RULE = "TR-sse-priming-polling"
LIMIT = 64 << 10  # mcpx_max_body (its minimum)
PRIMING = b"id: e1\nretry: 50\ndata: \n\n"
NOT_DELIVERED = b": mcpx: message not delivered to this client revision\n\n"
BIG = "x" * (LIMIT + 1000)
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}}
PROGRESS_EVENT = b"id: e2\nevent: message\ndata: " + orjson.dumps(PROGRESS) + b"\n\n"


def small_result(rid) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "small"}]}})


def big_result(rid) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": BIG}]}})


class Edgy(ScriptedMcpHandler):
    """A 2025-11-25 server that polls. ``tools/call``:

    - ``big-event``: ``e1`` priming, ``e2`` the result (larger than mcpx_max_body), end. A GET after
      ``e1`` replays ``e2`` (an event store, as the SDKs' servers keep).
    - ``big-json``: the result (larger than mcpx_max_body) as JSON, chunked (no Content-Length);
      ``small-json``: a small one, chunked too.

    - ``cut-json``: a JSON answer of Content-Length 78 cut after 20 bytes (the connection closed).
    - ``wait-long``: ``e1`` priming with ``retry: 60000``, ``e2`` progress, close (mcpx waits 60 s).
    - ``hold-get``: ``e1`` priming (``retry: 0``), ``e2`` progress, close; the GET after ``e2`` opens
      its stream with a comment and holds it until mcpx closes it (``GET_CLOSED`` set then).

    Every request is kept in ``seen`` as (method, headers, body)."""

    GET_CLOSED = threading.Event()
    REVISION = NEW
    SESSION = "poll-1"
    seen: list = []
    calls: list = []

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["content-length"]))
        body = json.loads(raw)
        self.seen.append(("POST", {k.lower(): v for k, v in self.headers.items()}, body))
        if body.get("method") == "initialize":
            out = orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": NEW, "capabilities": {"tools": {}}, "serverInfo": {"name": "edgy", "version": "1"}}})
            self.send_json(out, {"mcp-session-id": self.SESSION})
            return
        if "id" not in body:
            self.send_accepted()
            return
        name = body["params"]["name"]
        self.calls.append((name, body["id"]))
        if name == "cut-json":
            out = small_result(body["id"])
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out[:20])
            self.wfile.flush()
            self.close_connection = True
            return
        if name in ("big-json", "small-json"):
            out = big_result(body["id"]) if name == "big-json" else small_result(body["id"])
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for i in range(0, len(out), 8192):
                self.chunk(out[i:i + 8192])
            self.chunk(b"")
            return
        self.start_sse()
        if name in ("wait-long", "hold-get"):
            self.chunk(b"id: e1\nretry: %s\ndata: \n\n" % (b"60000" if name == "wait-long" else b"0"))
            self.chunk(PROGRESS_EVENT)
            self.chunk(b"")
            self.close_connection = True
            return
        self.chunk(PRIMING)
        if name == "big-event":
            self.chunk(b"id: e2\nevent: message\ndata: " + big_result(body["id"]) + b"\n\n")
        self.chunk(b"")
        self.close_connection = True

    def do_GET(self):
        self.seen.append(("GET", {k.lower(): v for k, v in self.headers.items()}, None))
        last = self.headers.get("last-event-id")
        name, rid = self.calls[-1] if self.calls else (None, None)
        if name == "hold-get" and last == "e2":
            self.start_sse()
            self.chunk(b": held\n\n")
            self.close_connection = True
            self.rfile.read(1)  # b"" once mcpx closes the connection (the upstream request aborted)
            type(self).GET_CLOSED.set()
            return
        if last != "e1" or name != "big-event":
            self.send_response(405)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.start_sse()
        self.chunk(b"id: e2\nevent: message\ndata: " + big_result(rid) + b"\n\n")
        self.chunk(b"")
        self.close_connection = True


@pytest.fixture
def server():
    yield from serve(Edgy, "seen", "calls")


def call(rid, name) -> dict:
    params: dict = {"name": name, "arguments": {}}
    if name in ("wait-long", "hold-get"):  # the server's progress names the client's token (mcpx_check_references)
        params["_meta"] = {"progressToken": "p"}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def start(px) -> Client:
    c = Client(px.port)
    assert c.initialize(OLD)["protocolVersion"] == OLD
    return c


def requests_of(seen) -> list:
    return [(m, (b or {}).get("method"), h.get("last-event-id")) for m, h, b in seen]


def s2c(px, session) -> list:
    """The session's server->client records (one call per session here), sorted: written by two
    tasks (the relay, the rewriting of the client's stream), their order is not asserted."""
    return sorted(((r["jsonrpc_id"], r["action"], r["rule"], r["detail"]) for r in px.session_changes(session)
                   if r["direction"] == "s2c" and r["method"] != "initialize"), key=repr)


PRIMING_DROP = ("drop-message", RULE, "empty-data (priming) event: only 2025-11-25 clients get it")
OVERSIZE = ("passthrough", "PASSTHROUGH-error", "SSE event larger than mcpx_max_body: forwarded untouched as it streams")


def test_an_answer_event_larger_than_max_body_is_delivered_once(server, tmp_path):
    """The answer is one event larger than mcpx_max_body: the relay cannot read it, so it must not
    take the end of the stream for an early close and resume after ``e1`` (the server sends the
    answer again: the client got it twice). Before the fix: a GET after e1, the answer twice."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_sse_resume": "always", "mcpx_max_body": LIMIT}) as px:
        c = start(px)
        st, h, body = c.post(call(4, "big-event"))
        c.close()
        out = px.output()
    assert (st, h["content-type"]) == (200, "text/event-stream")
    assert body == NOT_DELIVERED + b"id: e2\nevent: message\ndata: " + big_result(4) + b"\n\n"
    assert requests_of(Edgy.seen)[2:] == [("POST", "tools/call", None)]
    why = ("the server closed the SSE stream after an event larger than mcpx_max_body, which mcpx cannot read and which "
           "may hold the answer: not resumed (the server could send that event again); the client's stream ends as the server ended it")
    assert s2c(px, c.session) == sorted([(None, *PRIMING_DROP), (None, *OVERSIZE), (4, "passthrough", RULE, why)], key=repr)
    assert out.count(f"mcpx: SSE polling: {why}") == 1


@pytest.mark.parametrize("name", ["big-json", "small-json"])
def test_a_chunked_json_answer_through_the_relay_is_as_without_it(server, tmp_path, name):
    """A JSON answer without Content-Length (chunked): larger than mcpx_max_body, mitmproxy decides
    to stream it on mcpx's own flow once it has buffered that much, and before the fix the client got
    ``200`` with an empty body (the answer lost); small, it is rewritten as any other."""
    got = {}
    for mode in ("off", "always"):
        Edgy.seen.clear()
        with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_sse_resume": mode, "mcpx_max_body": LIMIT}, tag=mode) as px:
            c = start(px)
            st, h, body = c.post(call(5, name))
            c.close()
        got[mode] = (st, {k: v for k, v in h.items() if k not in ("date", "mcp-session-id", "server")}, body, s2c(px, c.session))
        assert requests_of(Edgy.seen)[2:] == [("POST", "tools/call", None)]
    assert got["always"] == got["off"]
    assert got["off"][:2] == (200, {"content-type": "application/json", "transfer-encoding": "chunked"})
    if name == "big-json":
        assert got["off"][2:] == (big_result(5), [(None, "passthrough", "PASSTHROUGH-error", "body larger than stream_large_bodies "
                                                   "(mcpx_max_body unless set): streamed through untouched")])
    else:
        assert got["off"][2:] == (small_result(5), [])


def probe(port: int) -> dict:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/")
    data = c.getresponse().read()
    c.close()
    return orjson.loads(data)


def settled(port: int, timeout: float = 20) -> dict:
    """The probe's state once no relay, answer stream, own request or exchange is left (or the last
    state seen after ``timeout`` s: the assertion then shows what leaked)."""
    deadline = time.monotonic() + timeout
    while True:
        state = probe(port)
        if not any(state[k] for k in ("relays", "answer_streams", "own", "exchanges", "streams")) or time.monotonic() > deadline:
            return state
        time.sleep(0.05)


def call_and_leave(px, c: Client, rid, name: str, until: bytes) -> bytes:
    """POST a call on a connection of its own, read its answer until ``until`` came, close the connection."""
    conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
    conn.request("POST", "/mcp", orjson.dumps(call(rid, name)), {"content-type": "application/json", "accept": ACCEPT,
                                                                  "mcp-session-id": c.session})
    r = conn.getresponse()
    got = b""
    while until not in got:
        part = r.read1(65536)
        assert part, got
        got += part
    conn.close()
    return got


@pytest.mark.parametrize("name", ["wait-long", "hold-get"])
def test_a_client_that_leaves_during_a_resume_ends_it_and_leaves_nothing(server, tmp_path, name):
    """The client goes away while mcpx waits the ``retry`` (60 s) before resuming, or while the
    resumed GET streams: the relay stops, the GET is never sent (wait-long) or its connection is
    closed (hold-get); no relay, stream or own request is left."""
    port = free_port()
    Edgy.GET_CLOSED.clear()
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, scripts=(str(PROBE),),
               options={"probe_port": port, "mcpx_sse_resume": "always"}) as px:
        c = start(px)
        until = b": held" if name == "hold-get" else b"notifications/progress"
        got = call_and_leave(px, c, 6, name, until)
        assert got.startswith(NOT_DELIVERED + PROGRESS_EVENT)
        if name == "hold-get":
            assert Edgy.GET_CLOSED.wait(20)
        state = settled(port)
        assert {k: state[k] for k in ("relays", "answer_streams", "own", "exchanges", "streams")} == {
            "relays": 0, "answer_streams": 0, "own": 0, "exchanges": 0, "streams": 0}
        # the session still works: a call on the client's own connection
        st, _, body = c.post(call(7, "small-json"))
        assert (st, body) == (200, small_result(7))
        c.close()
    expected = [("POST", "tools/call", None)] + ([("GET", None, "e2")] if name == "hold-get" else []) + [("POST", "tools/call", None)]
    assert requests_of(Edgy.seen)[2:] == expected



def test_a_json_answer_cut_short_is_an_error_not_an_empty_answer(server, tmp_path):
    """The server closes the connection 20 bytes into a JSON answer of Content-Length 78. Without the
    relay mitmproxy answers 502; before the fix the relay answered ``200`` with an empty body and a
    record saying the body was empty. Now: 502 with a JSON-RPC error under the call's id, a record, a line."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_sse_resume": "always"}) as px:
        c = start(px)
        st, h, body = c.post(call(8, "cut-json"))
        c.close()
        out = px.output()
    why = ("HTTP/1 protocol error: peer closed connection without sending complete message body (received 20 bytes, "
           "expected 78)")
    assert (st, h["content-type"]) == (502, "application/json")
    assert body == orjson.dumps({"jsonrpc": "2.0", "id": 8, "error": {"code": -32603, "message": f"mcpx: the server's answer broke off: {why}"}})
    assert s2c(px, c.session) == [(8, "passthrough", RULE, f"relayed request: the server's answer broke off: {why}")]
    assert out.count(f"mcpx: relayed request: the server's answer broke off: {why}") == 1
    assert requests_of(Edgy.seen)[2:] == [("POST", "tools/call", None)]
