"""The server's answer to ``initialize``, through the real mitmdump, when it ends inside an SSE event
or does not decode as its Content-Encoding says: the client gets what any other answer delivers,
with the same ``passthrough`` record.

mcpx sends a live client's ``initialize`` upstream itself (actions.mint_session: it must read the
answer to seal the session before the client's response headers leave), and read that answer its
own way:

- an unfinished event at the end of an SSE answer (no blank line after it) was dropped, with no
  record. Every other SSE answer forwards those bytes untouched (an SSE client discards them: WHATWG
  HTML 9.2.6) with the record "SSE stream ends inside an event (no blank line after it): its N bytes
  forwarded untouched" (tests/unit/test_no_message_records.py);
- an SSE answer that stopped decoding (gzip corrupted part way) crashed mitmproxy's replay of mcpx's
  own request ("mitmproxy has crashed!"), with no record of why; every other SSE answer delivers the
  complete events that decoded and one record naming the compressed byte (test_encoding_failures.py);
- a JSON answer left untouched reached the client decoded by mitmproxy's lenient decoder and without
  its Content-Encoding: for a body that does not decode (a corrupt gzip trailer), other bytes than
  the server's. Every other answer mcpx leaves as it is arrives byte for byte, header included.

Each case sends the same bytes once as the answer to ``initialize`` and once as the answer to
``tools/call`` (the ordinary path), and checks that the client gets the same thing both times, and
the same record.

An unfinished event after the event that answered the initialize is on a stream mcpx has already
answered (as the complete events after it: not delivered, with a record); the record now names it.

The upstream is a scripted stdlib server (proxy_lib.ScriptedMcpHandler): a real server does not end
a stream inside an event or corrupt its encoding on purpose, but one that crashes or is cut off
mid-write, or a broken compressing middlebox, does.
"""
from __future__ import annotations

import gzip
import json
import time
import zlib

import orjson
import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, initialize_msg, serve

REV = "2025-06-18"  # both legs: nothing to rewrite, the client must get the server's bytes
SESSION = "tail-1"
NOTE = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}\n\n'
SSE = "text/event-stream"
JUNK = b"\xff\xfe corrupted on the way \xff"  # 0xff: a deflate block of the reserved type 3


def init_result(rid) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {
        "protocolVersion": REV, "capabilities": {"tools": {}}, "serverInfo": {"name": "tail", "version": "1"}}})


def call_result(rid) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ok"}]}})


def gzipped_note() -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(NOTE) + c.flush(zlib.Z_SYNC_FLUSH)


def bad_gzip(m: bytes) -> bytes:
    """``m`` gzipped, its trailer (CRC, size) overwritten: mitmproxy's decoder reads it as ``m`` and garbage."""
    return gzip.compress(m, mtime=0)[:-8] + b"\xff" * 8


#: name -> (Content-Type, Content-Encoding, the chunks the server writes given the answer's message
#: bytes (each in a read of its own; a bytes value: one body with Content-Length), whether the
#: message is in a complete event)
CASES = {
    # the answer itself unfinished: one line end after its data, or none at all
    "answer-one-lf": (SSE, None, lambda m: [b"event: message\nid: 1\ndata: " + m + b"\n"], False),
    "answer-no-eol": (SSE, None, lambda m: [b"data: " + m], False),
    "answer-crlf-after-note": (SSE, None, lambda m: [NOTE, b"event: message\r\ndata: " + m + b"\r\n"], False),
    "answer-cut-in-two-reads": (SSE, None, lambda m: [b"data: " + m[:10], m[10:] + b"\r"], False),
    # the answer complete, then an unfinished event: in the same read, and in a read of its own
    "keepalive-after-answer": (SSE, None, lambda m: [b"data: " + m + b"\n\n: keep-alive"], True),
    "note-after-answer": (SSE, None, lambda m: [b"data: " + m + b"\n\n", NOTE[:-1]], True),
    # encodings
    "gzip-fails-before-answer": (SSE, "gzip", lambda m: [gzipped_note(), JUNK + b"data: " + m + b"\n\n"], False),
    "unknown-encoding": (SSE, "x-unknown", lambda m: [b"data: " + m + b"\n\n"], False),
    "json-gzip-bad-trailer": ("application/json", "gzip", bad_gzip, False),
}


class Handler(ScriptedMcpHandler):
    CASE = "answer-one-lf"

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if "id" not in body:
            self.send_accepted()
            return
        make = init_result if body["method"] == "initialize" else call_result
        ctype, enc, chunks, _ = CASES[self.CASE]
        out = chunks(make(body["id"]))
        self.send_response(200)
        self.send_header("content-type", ctype)
        self.send_header("mcp-session-id", SESSION)
        if enc:
            self.send_header("content-encoding", enc)
        if isinstance(out, bytes):
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for c in out:  # each HTTP chunk a read of its own (or several), never joined with the next: no pause needed
            self.chunk(c)
        self.chunk(b"")


@pytest.fixture
def server():
    yield from serve(Handler)


def records(px: Proxy) -> list[tuple]:
    return [(r["action"], r["direction"], r["detail"]) for r in px.changes()]


def tail_record(n: int) -> tuple:
    return ("passthrough", "s2c", f"SSE stream ends inside an event (no blank line after it): its {n} bytes forwarded untouched")


def expected(name: str, make) -> tuple[dict, bytes, list[tuple]]:
    """(the headers that matter, the body and the records) the client gets for an answer of ``make``."""
    ctype, enc, chunks, _ = CASES[name]
    out = chunks(make(0 if make is init_result else 1))
    sent = out if isinstance(out, bytes) else b"".join(out)
    if name == "gzip-fails-before-answer":
        return {"content-encoding": None}, NOTE, [(
            "passthrough", "s2c", f"content-encoding: SSE stream does not decode from compressed byte {len(gzipped_note())} on "
                                  "(error: Error -3 while decompressing data: invalid block type); delivered: the complete "
                                  "events before it; not delivered: the rest of the stream (the client was told it is not encoded)")]
    if name == "unknown-encoding":
        return {"content-encoding": enc}, sent, [
            ("passthrough", "s2c", "unsupported content-encoding 'x-unknown': SSE stream forwarded untouched")]
    if name == "json-gzip-bad-trailer":
        return {"content-encoding": enc}, sent, [("passthrough", "s2c", "content-encoding: body does not decode (error: Error -3 "
                                                                    "while decompressing data: incorrect data check); forwarded untouched")]
    return {"content-encoding": None}, sent, [tail_record(len(sent) - len(NOTE) if sent.startswith(NOTE) else len(sent))]


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if not case[3]])
def test_an_initialize_answer_mcpx_cannot_read_arrives_as_any_answer(server, tmp_path, name):
    Handler.CASE = name
    ctype = CASES[name][0]
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False) as px:
        c = Client(px.port)
        status, headers, body = c.post(initialize_msg(REV))
        want_headers, want_body, want_records = expected(name, init_result)
        assert (status, headers["content-type"], body) == (200, ctype, want_body)
        assert {k: headers.get(k) for k in want_headers} == want_headers
        # no initialize result reached mcpx: it seals nothing, the client holds the server's id
        assert headers["mcp-session-id"] == SESSION
        time.sleep(0.3)
        assert records(px) == [*want_records,
                               ("passthrough", "s2c", "initialize result not understood: session not sealed, "
                                                      "the server's Mcp-Session-Id passed to the client unchanged")]
        # the ordinary path, for comparison: the same bytes answering a tools/call
        c.session = SESSION
        status, headers, body = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}}})
        want_headers, want_body, want_records = expected(name, call_result)
        assert (status, headers["content-type"], body) == (200, ctype, want_body)
        assert {k: headers.get(k) for k in want_headers} == want_headers
        time.sleep(0.3)
        assert records(px)[len(want_records) + 1:] == want_records
        c.close()
    assert "has crashed" not in px.output()


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case[3]])
def test_an_unfinished_event_after_the_initialize_answer_is_named_in_the_record(server, tmp_path, name):
    """The answering event ends the client's answer (a server may hold the stream open); what the
    server sends after it is not delivered, and the record now names an unfinished event too."""
    Handler.CASE = name
    tail = b"".join(CASES[name][2](init_result(0))).split(b"\n\n", 1)[1]
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False) as px:
        c = Client(px.port)
        status, headers, body = c.post(initialize_msg(REV))
        assert (status, headers["content-type"], body) == (200, SSE, b"data: " + init_result(0) + b"\n\n")
        assert headers["mcp-session-id"].startswith("mcpx1.")  # sealed as usual
        deadline = time.time() + 20  # the record is written when the server ends the stream, after the client got its answer
        while time.time() < deadline and not px.changes():
            time.sleep(0.1)
        assert [(r["action"], r["direction"], r["session"], r["detail"]) for r in px.changes()] == [
            ("passthrough", "s2c", px.handle(headers["mcp-session-id"]),
             f"SSE stream ends inside an event (no blank line after it), after the initialize result, on a stream "
             f"mcpx had answered: its {len(tail)} bytes not delivered")]
        c.close()


def test_a_json_initialize_answer_left_as_it_is_arrives_with_its_encoding(server, tmp_path):
    """A gzip JSON answer mcpx has nothing to change in: the server's bytes and Content-Encoding, the
    session sealed as usual (before: decoded, without the header)."""
    Handler.CASE = "json-gzip"
    CASES["json-gzip"] = ("application/json", "gzip", lambda m: gzip.compress(m, mtime=0), False)
    try:
        with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False) as px:
            c = Client(px.port)
            status, headers, body = c.post(initialize_msg(REV), {"accept-encoding": "gzip"})
            assert (status, headers["content-encoding"], body) == (200, "gzip", gzip.compress(init_result(0), mtime=0))
            assert headers["mcp-session-id"].startswith("mcpx1.")
            c.close()
        assert px.changes() == []
    finally:
        del CASES["json-gzip"]


BIG = b"data: " + b"x" * 200_000 + b"\n\n"  # one event of more than mcpx_max_body (64 KiB here)


def test_a_large_event_after_the_initialize_answer_is_counted_once(server, tmp_path):
    """The record names how many events came after the answer: a large event is one, however many reads
    brought it (here four HTTP chunks of 50 KB; mitmproxy hands the stream each on its own). Before, each
    part the SSE parser gave of it (one per read) was counted: "5 SSE events"."""
    Handler.CASE = "big-event-after-answer"
    CASES[Handler.CASE] = (SSE, None, lambda m: [b"data: " + m + b"\n\n", *(BIG[i:i + 50_000] for i in range(0, len(BIG), 50_000)),
                                                 b"data: tail"], True)
    try:
        with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False, options={"mcpx_max_body": "64KiB"}) as px:
            c = Client(px.port)
            status, headers, body = c.post(initialize_msg(REV))
            assert (status, body) == (200, b"data: " + init_result(0) + b"\n\n")
            deadline = time.time() + 20  # written when the server ends the stream
            while time.time() < deadline and not px.changes():
                time.sleep(0.1)
            assert [(r["action"], r["direction"], r["detail"]) for r in px.changes()] == [
                ("passthrough", "s2c", "1 SSE events the server sent after the initialize result, on a stream mcpx had answered, "
                                       "and the 10 bytes of an unfinished event at its end (no blank line after it): not delivered")]
            c.close()
    finally:
        del CASES[Handler.CASE]
