"""SSE polling relay (addon/mcpx_core/bridge/resume.py): an answer the server cuts short after its
head must reach the client broken, as without the relay, never as a complete (truncated) body.

Through the real mitmdump, against a scripted 2025-11-25 server: a real server does not cut its
answers on cue. Raw client pinned at 2025-03-26 (http.client): the exact bytes it got before the
break, and that the response broke (``IncompleteRead``); exact records and log lines.
"""
from __future__ import annotations

import http.client
import socket

import orjson
import pytest

from proxy_lib import ACCEPT, Client, Proxy, ScriptedMcpHandler, serve

OLD = "2025-03-26"
NEW = "2025-11-25"
RULE = "TR-sse-priming-polling"
LIMIT = 64 << 10  # mcpx_max_body (its minimum)
BIG = "x" * (2 * LIMIT)
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}}
PROGRESS_EVENT = b"event: message\ndata: " + orjson.dumps(PROGRESS) + b"\n\n"  # no id: nothing to resume after


def big_result(rid) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": BIG}]}})


def small_result(rid) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "small"}]}})


#: bytes of each cut answer the server sends before it closes the connection
SENT = 100_000


class Cutting(ScriptedMcpHandler):
    """A 2025-11-25 server; ``tools/call``:

    - ``cut-length``: the result (larger than mcpx_max_body) as JSON with its Content-Length, cut
      after :data:`SENT` bytes (the connection closed);
    - ``cut-chunked``: the same result chunked (8 KiB chunks), cut after :data:`SENT` bytes, before its last chunk;
    - ``cut-sse``: an SSE stream: a progress event without id, then the connection closed without
      the last chunk (a connection error, not a clean end);
    - ``clean-sse``: the same progress event, then the result event, then the last chunk (a clean end).
    """

    REVISION = NEW
    SESSION = "cut-1"
    seen: list = []

    def answer(self, body: dict) -> None:
        self.seen.append(body.get("method"))
        if "id" not in body:
            self.send_accepted()
            return
        name, rid = body["params"]["name"], body["id"]
        self.close_connection = True
        if name == "cut-length":
            out = big_result(rid)
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out[:SENT])
        elif name == "cut-chunked":
            out = big_result(rid)[:SENT]
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for i in range(0, len(out), 8192):
                self.chunk(out[i:i + 8192])
        else:
            self.start_sse()
            self.chunk(PROGRESS_EVENT)
            if name == "clean-sse":
                self.chunk(b"event: message\ndata: " + small_result(rid) + b"\n\n")
                self.chunk(b"")
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_WR)


@pytest.fixture
def server():
    yield from serve(Cutting, "seen")


def call(rid, name) -> dict:
    params: dict = {"name": name, "arguments": {}}
    if name in ("cut-sse", "clean-sse"):  # the server's progress names the client's token (mcpx_check_references)
        params["_meta"] = {"progressToken": "p"}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def read_all(px, session: str, rid, name: str) -> tuple[int, bytes, str | None]:
    """POST the call on a connection of its own: (status, the body bytes got, the exception that
    ended the read, by name, or None for a complete body)."""
    conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
    conn.request("POST", "/mcp", orjson.dumps(call(rid, name)), {"content-type": "application/json", "accept": ACCEPT,
                                                                  "mcp-session-id": session})
    r = conn.getresponse()
    try:
        got, broke = r.read(), None
    except http.client.IncompleteRead as e:
        got, broke = e.partial, "IncompleteRead"
    conn.close()
    return r.status, got, broke


def s2c(px, session) -> list:
    """The session's server->client records, sorted (written by concurrent tasks: order not asserted)."""
    return sorted(((r["jsonrpc_id"], r["action"], r["rule"], r["detail"]) for r in px.session_changes(session)
                   if r["direction"] == "s2c" and r["method"] != "initialize"), key=repr)


CUT = "HTTP/1 protocol error: peer closed connection without sending complete message body "
SENT_BYTES = {"cut-length": big_result(9)[:SENT], "cut-chunked": big_result(9)[:SENT], "cut-sse": PROGRESS_EVENT,
              "clean-sse": PROGRESS_EVENT + b"event: message\ndata: " + small_result(9) + b"\n\n"}
WHY = {"cut-length": CUT + f"(received {SENT} bytes, expected {len(big_result(9))})",
       "cut-chunked": CUT + "(incomplete chunked read)", "cut-sse": CUT + "(incomplete chunked read)"}


def run(server, tmp_path, name: str, mode: str) -> tuple[tuple[int, bytes, str | None], list, str]:
    """The call ``name`` through mitmdump with ``mcpx_sse_resume=mode``: what the client got, the
    session's s2c records, mitmdump's output."""
    Cutting.seen.clear()
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_sse_resume": mode, "mcpx_max_body": LIMIT}, tag=mode) as px:
        c = Client(px.port)
        assert c.initialize(OLD)["protocolVersion"] == OLD
        got = read_all(px, c.session, 9, name)
        c.close()
        out = px.output()
    assert Cutting.seen == ["notifications/initialized", "tools/call"]  # sent once, never again
    return got, s2c(px, c.session), out


@pytest.mark.parametrize("name", ["cut-length", "cut-chunked", "cut-sse"])
def test_an_answer_cut_after_its_head_reaches_the_client_broken_as_without_the_relay(server, tmp_path, name):
    """The server breaks off its answer after the head: a JSON body larger than mcpx_max_body with
    its Content-Length, a chunked one before its last chunk, an SSE stream without an event id (nothing
    to resume after) by a connection error. Without the relay the client gets the bytes sent, then a
    broken body; before the fix the relay ended its own chunked body cleanly: the client got the
    truncated body as complete (read() returned). Now it breaks off (IncompleteRead) at the same byte,
    with one passthrough record and one warning line."""
    off, _, _ = run(server, tmp_path, name, "off")
    got, records, out = run(server, tmp_path, name, "always")
    assert off == (200, SENT_BYTES[name], "IncompleteRead")
    assert got == off
    why = f"relayed request: the server's answer broke off after its head: {WHY[name]}; the client's answer is broken off there too"
    assert records == [(9, "passthrough", RULE, why)]
    assert out.count(f"mcpx: SSE polling: {why}") == 1


def test_a_clean_end_stays_clean(server, tmp_path):
    """The same SSE answer ended cleanly (its last chunk): the client's body is complete, as without the relay; no record."""
    off, off_records, _ = run(server, tmp_path, "clean-sse", "off")
    got, records, out = run(server, tmp_path, "clean-sse", "always")
    assert off == got == (200, SENT_BYTES["clean-sse"], None)
    assert records == off_records == []
    assert "broke off" not in out
