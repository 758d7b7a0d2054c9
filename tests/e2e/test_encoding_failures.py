"""Bodies whose Content-Encoding does not decode, through the real mitmdump: a compressed SSE answer
that fails part way, and a client POST that does not decode.

mcpx decodes a ``Content-Encoding``'d SSE stream as it streams and delivers it identity-encoded
(the header is removed before the first byte goes out, framing/encoding.py). When the stream stops
decoding, the client gets every complete event decoded before that point (the bytes of the failing
read that still decode included), and nothing after it: never compressed bytes under an identity
encoding. One ``passthrough`` record says from which compressed byte on nothing was delivered, why,
and how many decoded bytes of an unfinished event were held back. The HTTP response ends when the
server's does, and the connection stays usable.

A client POST whose Content-Encoding does not decode reaches the server byte for byte (its session
id translated as for any request), and one ``passthrough`` record says why.

The upstream is a scripted stdlib server (proxy_lib.ScriptedMcpHandler): it only decides how the
compressed bytes are corrupted and cut.
"""
from __future__ import annotations

import gzip
import threading
import time
import zlib

import brotli  # installed with mitmproxy
import orjson
import pytest

from proxy_lib import Client, LoopbackServer, Proxy, ScriptedMcpHandler

REV = "2025-03-26"  # both legs: nothing to rewrite, the delivered events are the decoded ones byte for byte
#: the client's calls carry token "t" (mcpx_check_references drops progress for a token no request carried)
PROGRESS = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}\n\n'
RESULT = b'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}]}}\n\n'
JUNK = b"\xff\xfe corrupted on the way \xff"  # 0xff: a deflate block of the reserved type 3; not brotli either


def zlib_parts(wbits: int, *plain: bytes) -> list[bytes]:
    """Each of ``plain`` compressed and flushed (Z_SYNC_FLUSH: decodable up to there), one stream."""
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return [c.compress(p) + c.flush(zlib.Z_SYNC_FLUSH) for p in plain]


def br_parts(*plain: bytes) -> list[bytes]:
    c = brotli.Compressor()
    return [c.process(p) + c.flush() for p in plain]


def zstd_parts(*plain: bytes) -> list[bytes]:
    from backports import zstd  # mitmproxy's own zstd module on Python < 3.14
    c = zstd.ZstdCompressor()
    return [c.compress(p) + c.flush(zstd.ZstdCompressor.FLUSH_BLOCK) for p in plain]


def case(name: str) -> tuple[str, list[bytes], int, int]:
    """(Content-Encoding, chunks the server writes, compressed byte from which nothing decodes,
    decoded bytes of an unfinished event held back)."""
    half = RESULT[:40]
    if name == "gzip-one-chunk":  # the first event, then corruption, in one read: what decodes is still delivered
        a, = zlib_parts(31, PROGRESS)
        return "gzip", [a + JUNK], len(a), 0
    if name == "gzip-small-chunks":  # cut every 7 compressed bytes, as a slow link delivers them
        a, = zlib_parts(31, PROGRESS)
        data = a + JUNK
        return "gzip", [data[i:i + 7] for i in range(0, len(data), 7)], len(a), 0
    if name == "gzip-unfinished-event":  # the corruption falls inside the second event
        a, b = zlib_parts(31, PROGRESS, half)
        return "gzip", [a + b + JUNK + b"more"], len(a + b), len(half)
    if name == "deflate":  # zlib-wrapped, as RFC 9110 8.4.1.2 defines it
        a, = zlib_parts(zlib.MAX_WBITS, PROGRESS)
        return "deflate", [a + JUNK], len(a), 0
    if name == "deflate-raw":  # raw deflate, as some servers send it
        a, = zlib_parts(-zlib.MAX_WBITS, PROGRESS)
        return "deflate", [a + JUNK], len(a), 0
    if name == "br":  # a brotli decoder gives nothing of a read that fails: the first event comes in a read of its own
        # (written once the client has it: GATED); JUNK is one small write, one read (a zstd decoder that gets it
        # in pieces names the byte of the piece where its 3-byte block header is complete: 106, not 104)
        a, = br_parts(PROGRESS)
        return "br", [a, JUNK, b"more"], len(a), 0
    if name == "zstd":  # the same for zstd
        a, = zstd_parts(PROGRESS)
        return "zstd", [a, JUNK], len(a), 0
    raise AssertionError(name)


#: the cases whose first chunk must reach mcpx in reads of its own (a read that also holds the fault decodes to
#: nothing: no event delivered, "from compressed byte 0"): the server writes the next chunk once the client has
#: the first event, not after a fixed pause
GATED = {"br", "zstd"}
CASES = ["gzip-one-chunk", "gzip-small-chunks", "gzip-unfinished-event", "deflate", "deflate-raw", "br", "zstd"]
ERRORS = {"gzip": "error: Error -3 while decompressing data: invalid block type",
          "deflate": "error: Error -3 while decompressing data: invalid block type",
          "br": "error: brotli: decoder failed",
          "zstd": "ZstdError: Unable to decompress Zstandard data: Data corruption detected"}


UNREADABLE = b"cannot read this body"


class Handler(ScriptedMcpHandler):
    SERVER_INFO = {"name": "encoded", "version": "1"}
    SESSION = "encoded-1"
    ENCODING = "gzip"
    CHUNKS: list[bytes] = []
    #: set by the test once the client has what the first chunk decodes to (None: no wait)
    GATE: threading.Event | None = None
    #: (Mcp-Session-Id, Content-Encoding, body) of each POST with a Content-Encoding
    received: list[tuple] = []

    def do_POST(self):
        if self.headers.get("content-encoding"):
            raw = self.rfile.read(int(self.headers["content-length"]))
            Handler.received.append((self.headers.get("mcp-session-id"), self.headers["content-encoding"], raw))
            self.answer({"jsonrpc": "2.0", "id": None, "method": "echo"})
            return
        super().do_POST()

    def answer(self, body):
        if "id" not in body:
            self.send_accepted()
            return
        if body["method"] == "ping":
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {}}))
            return
        if body["method"] == "echo":  # a compressed body it could not read
            self.send_response(415)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(UNREADABLE)))
            self.end_headers()
            self.wfile.write(UNREADABLE)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-encoding", self.ENCODING)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        # each HTTP chunk reaches mcpx as a read of its own or in pieces, never joined with the next (mitmproxy's
        # HTTP/1 layer hands the stream one h11 chunk at a time): no pause needed for that, only the GATE
        for i, c in enumerate(self.CHUNKS):
            self.chunk(c)
            if i == 0 and self.GATE is not None:
                assert self.GATE.wait(20), "the client never got the first event"
        self.chunk(b"")


@pytest.mark.parametrize("name", CASES)
def test_a_stream_that_stops_decoding_delivers_what_decoded_and_nothing_compressed(tmp_path, name):
    enc, chunks, at, held = case(name)
    gate = threading.Event() if name in GATED else None
    srv = LoopbackServer(type("H", (Handler,), {"ENCODING": enc, "CHUNKS": chunks, "GATE": gate}))
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False) as px:
            c = Client(px.port)
            c.initialize(REV)
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}, "_meta": {"progressToken": "t"}}}
            if gate is None:
                status, headers, body = c.post(call)
            else:  # read as it streams: the server sends the fault once the first event is here (not after a fixed sleep)
                status, headers, body = post_gated(c, call, gate, PROGRESS)
            assert (status, headers["content-type"], "content-encoding" in headers) == (200, "text/event-stream", False)
            assert body == PROGRESS
            # the connection is intact: the next answer arrives whole
            assert c.rpc({"jsonrpc": "2.0", "id": 2, "method": "ping"})[2] == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
            time.sleep(0.3)
            unfinished = f"{held} decoded bytes of an unfinished event and " if held else ""
            assert [(r["action"], r["rule"], r["direction"], r["session"], r["detail"]) for r in px.changes()] == [
                ("passthrough", "PASSTHROUGH-error", "s2c", px.handle(c.session),
                 f"content-encoding: SSE stream does not decode from compressed byte {at} on ({ERRORS[enc]}); "
                 f"delivered: the complete events before it; not delivered: {unfinished}the rest of the stream "
                 "(the client was told it is not encoded)")]
            c.close()
    finally:
        srv.stop()


def post_gated(c: Client, message: dict, gate: threading.Event, first: bytes) -> tuple[int, dict, bytes]:
    """``c.post``, reading the answer as it streams: ``gate`` set once ``first`` arrived (or 10 s passed)."""
    c.conn.request("POST", c.path, orjson.dumps(message), c.headers())
    r = c.conn.getresponse()
    body, deadline = b"", time.monotonic() + 10
    while len(body) < len(first) and time.monotonic() < deadline:
        piece = r.read1(65536)
        if not piece:
            break
        body += piece
    gate.set()
    body += r.read()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


#: a gzip header, then deflate data of the reserved block type: what mitmproxy's decoder reads as zlib's error
NOT_GZIP = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff" + b'{"jsonrpc":"2.0","id":3,"method":"ping"}'


PING = b'{"jsonrpc":"2.0","id":3,"method":"ping"}'


GZ_PING = gzip.compress(PING)
TRUNCATED = "error: Error -5 while decompressing data: incomplete or truncated stream"


@pytest.mark.parametrize("enc,body,why", [
    ("gzip", NOT_GZIP, "error: Error -3 while decompressing data: invalid block type"),
    # mitmproxy's gzip decoder reads these without an error (zlib.decompressobj: a stream that ends
    # early, or bytes after its end, are not its concern): before, the cut body was parsed (a
    # "not valid JSON" record naming no session), or the whole JSON taken from a body cut in its trailer
    ("gzip", GZ_PING[:len(GZ_PING) // 2], TRUNCATED),
    ("gzip", GZ_PING[:-4], TRUNCATED),  # only the trailer's length field is missing: the JSON is whole
    ("gzip", GZ_PING + b"\x00junk", "TrailingData: 5 bytes after the end of the gzip data"),
    ("deflate", zlib.compress(PING) + b"\x00", "TrailingData: 1 byte after the end of the deflate data"),
    ("gzip", PING, "error: Error -3 while decompressing data: incorrect header check"),
    ("deflate", PING, "error: Error -3 while decompressing data: invalid distance too far back"),
    ("br", b"\xff\xff not brotli", "error: brotli: decoder failed"),
    ("zstd", b"\xff\xff not zstd", "ZstdError: Unable to decompress Zstandard data: Unknown frame descriptor"),
], ids=["gzip-invalid-block", "gzip-truncated", "gzip-truncated-trailer", "gzip-trailing-bytes", "deflate-trailing-bytes",
        "gzip-not-gzip", "deflate", "br", "zstd"])
def test_a_client_post_that_does_not_decode_is_forwarded_with_a_record(tmp_path, enc, body, why):
    """Before: forwarded as it came, with no record (the body was simply not read)."""
    Handler.received = []
    srv = LoopbackServer(Handler)
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False) as px:
            c = Client(px.port)
            c.initialize(REV)
            status, _, answer = c.post(None, {"content-encoding": enc}, raw=body)
            assert (status, answer) == (415, UNREADABLE)
            assert Handler.received == [("encoded-1", enc, body)]
            time.sleep(0.3)
            assert [(r["action"], r["rule"], r["direction"], r["session"], r["detail"]) for r in px.changes()] == [
                ("passthrough", "PASSTHROUGH-error", "c2s", px.handle(c.session),
                 f"content-encoding: body does not decode ({why}); forwarded untouched")]
            c.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("name", ["gzip-members", "gzip-members-one-read", "gzip-members-zero-padded",
                                  "zstd-frames", "zstd-frames-one-read"])
def test_a_stream_of_several_gzip_members_or_zstd_frames_delivers_every_event(tmp_path, name):
    """A gzip body is a series of members (RFC 1952 2.2), zstd data one or more frames (RFC 8878 3.1),
    e.g. from a server that compresses each event on its own; Node's gunzip (the TypeScript SDK's
    fetch) reads every member. mcpx's streamed decoders stopped at the end of the first: every event
    after it was dropped, with no record when it came in the same read (a zstd frame in a later read
    got the record of a stream that does not decode). Now each is decoded in turn, zero padding
    between gzip members skipped."""
    if name.startswith("gzip"):
        a, b = gzip.compress(PROGRESS, mtime=0), gzip.compress(RESULT, mtime=0)
    else:
        from backports import zstd  # mitmproxy's own zstd module on Python < 3.14
        a, b = zstd.compress(PROGRESS), zstd.compress(RESULT)  # a whole frame each
    chunks = {"gzip-members": [a, b], "gzip-members-one-read": [a + b], "gzip-members-zero-padded": [a + b"\0\0", b + b"\0"],
              "zstd-frames": [a, b], "zstd-frames-one-read": [a + b]}[name]
    srv = LoopbackServer(type("H", (Handler,), {"ENCODING": name.split("-")[0], "CHUNKS": chunks}))
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False) as px:
            c = Client(px.port)
            c.initialize(REV)
            status, headers, body = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}, "_meta": {"progressToken": "t"}}})
            assert (status, "content-encoding" in headers, body) == (200, False, PROGRESS + RESULT)
            c.close()
        assert px.changes() == []
    finally:
        srv.stop()


def test_a_client_post_of_two_gzip_members_is_read_whole(tmp_path):
    """A gzip body of two members (RFC 1952 2.2: a gzip file is a series of members) is one body:
    mcpx reads all of it (mitmproxy's decoder stops after the first member: before, the first half
    of the JSON was taken for the body, with a "not valid JSON" record naming no session). It needs
    no change: the server gets it byte for byte, and nothing is recorded."""
    Handler.received = []
    body = gzip.compress(PING[:10]) + gzip.compress(PING[10:])
    srv = LoopbackServer(Handler)
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False) as px:
            c = Client(px.port)
            c.initialize(REV)
            status, _, answer = c.post(None, {"content-encoding": "gzip"}, raw=body)
            assert (status, answer) == (415, UNREADABLE)
            assert Handler.received == [("encoded-1", "gzip", body)]
            time.sleep(0.3)
            assert px.changes() == []
            c.close()
    finally:
        srv.stop()


class JsonAnswers(ScriptedMcpHandler):
    """Answers tools/call with a gzip JSON body as ``BODY`` says (``GZIP`` made of the result's JSON)."""
    SERVER_INFO = {"name": "encoded", "version": "1"}
    SESSION = "encoded-1"
    BODY: bytes = b""

    def answer(self, body):
        if "id" not in body:
            self.send_accepted()
            return
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-encoding", "gzip")
        self.send_header("content-length", str(len(self.BODY)))
        self.end_headers()
        self.wfile.write(self.BODY)


#: a result a 2024-11-05 client needs rewritten (an audio block becomes text): decoded, mcpx would change it
AUDIO = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]}}'


@pytest.mark.parametrize("body,why", [
    (gzip.compress(AUDIO)[:-4], TRUNCATED),
    (gzip.compress(AUDIO) + b"\x00\x00", "TrailingData: 2 bytes after the end of the gzip data"),
], ids=["truncated-trailer", "trailing-bytes"])
def test_a_json_answer_that_does_not_decode_is_delivered_untouched(tmp_path, body, why):
    """The server's side of the same fault: a gzip JSON answer cut in its trailer (or with bytes after
    its end) is not taken for whole. Before, mcpx decoded it, rewrote the result and sent the client
    a new, complete gzip body; now the client gets the server's bytes, with one passthrough record."""
    srv = LoopbackServer(type("H", (JsonAnswers,), {"BODY": body}))
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False) as px:
            c = Client(px.port)
            c.initialize("2024-11-05")
            status, headers, answer = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}}},
                                             {"accept-encoding": "gzip"})
            assert (status, headers["content-encoding"], answer) == (200, "gzip", body)
            time.sleep(0.3)
            assert [(r["action"], r["rule"], r["direction"], r["session"], r["detail"]) for r in px.changes()] == [
                ("passthrough", "PASSTHROUGH-error", "s2c", px.handle(c.session),
                 f"content-encoding: body does not decode ({why}); forwarded untouched")]
            c.close()
    finally:
        srv.stop()
