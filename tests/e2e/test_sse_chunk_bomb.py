"""A compressed SSE answer one chunk of which inflates far past ``mcpx_max_body``, through the real
mitmdump (framing/encoding.py ``stream_decoder`` with a limit).

mcpx decodes an SSE answer chunk by chunk and delivers it identity-encoded. Before, each chunk was
inflated whole: here about 2 KiB of zstd (122 bytes of brotli) that decode to 64 MiB in one read,
which mitmdump inflated, and passed on to the client (the 64 MiB event streams through the SSE
parser's per-event bound, then the event after it). Now decoding that chunk stops once its output
passes ``mcpx_max_body``: the client gets the complete events of its first ``mcpx_max_body``
decoded bytes and nothing after (it was told the stream is not encoded, so compressed bytes cannot
follow), as for a stream that stops decoding (test_encoding_failures.py), and one ``passthrough``
record says why. The HTTP response ends when the server's does; the connection stays usable.

The upstream is a scripted stdlib server that writes the compressed body in one HTTP chunk (one
read for mitmproxy). tests/unit/test_stream_decode_bound.py shows the decoder's memory bound.
"""
from __future__ import annotations

import brotli  # installed with mitmproxy
import pytest

from proxy_lib import Client, LoopbackServer, Proxy, ScriptedMcpHandler
from test_decompression_bomb import wait_changes
from test_encoding_failures import PROGRESS, RESULT, REV

LIMIT = 64 << 10  # mcpx_max_body (its minimum)
BOMB_SIZE = 64 << 20  # the decoded size of the event in the middle


def compressed(enc: str) -> bytes:
    """PROGRESS, an event of BOMB_SIZE bytes of data, RESULT: one stream, compressed as it is written."""
    block = b"A" * (1 << 20)
    if enc == "br":
        c = brotli.Compressor()
        put, end = c.process, c.finish
    else:
        from backports import zstd  # mitmproxy's own zstd module on Python < 3.14
        z = zstd.ZstdCompressor()
        put, end = z.compress, z.flush
    out = [put(PROGRESS), put(b"data: ")]
    out += [put(block) for _ in range(BOMB_SIZE >> 20)]
    out += [put(b"\n\n"), put(RESULT), end()]
    return b"".join(out)


class Handler(ScriptedMcpHandler):
    SERVER_INFO = {"name": "bomb", "version": "1"}
    SESSION = "bomb-1"
    ENCODING = "zstd"
    BODY = b""

    def answer(self, body):
        if "id" not in body:
            self.send_accepted()
            return
        if body["method"] == "ping":
            self.send_json(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % body["id"])
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-encoding", self.ENCODING)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.chunk(self.BODY)
        self.chunk(b"")


def peak_rss(pid: int) -> int:
    """The process's peak resident set (VmHWM), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) << 10
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize("enc", ["zstd", "br"])
def test_a_chunk_that_inflates_past_max_body_delivers_the_events_before_and_stops(tmp_path, enc):
    body = compressed(enc)
    assert len(body) < 4 << 10
    srv = LoopbackServer(type("H", (Handler,), {"ENCODING": enc, "BODY": body}))
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False, options={"mcpx_max_body": "64KiB"}) as px:
            c = Client(px.port)
            c.initialize(REV)
            before = peak_rss(px.proc.pid)
            status, headers, got = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}, "_meta": {"progressToken": "t"}}})
            assert (status, headers["content-type"], "content-encoding" in headers, got) == (200, "text/event-stream", False, PROGRESS)
            # the connection is intact: the next answer arrives whole
            assert c.rpc({"jsonrpc": "2.0", "id": 2, "method": "ping"})[2] == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
            assert [(r["action"], r["rule"], r["direction"], r["session"], r["detail"]) for r in wait_changes(px, 1)] == [
                ("passthrough", "PASSTHROUGH-error", "s2c", px.handle(c.session),
                 f"content-encoding: SSE stream does not decode from compressed byte 0 on (ChunkTooLarge: a chunk of "
                 f"{len(body)} compressed bytes decodes to more than {LIMIT} bytes (mcpx_max_body); decoding stopped there); "
                 f"delivered: the complete events before it; not delivered: {LIMIT - len(PROGRESS)} decoded bytes of an "
                 "unfinished event and the rest of the stream (the client was told it is not encoded)")]
            # the 64 MiB were never held: mitmdump's peak memory grew by far less (before: by more than 64 MiB)
            assert peak_rss(px.proc.pid) - before < 16 << 20
            c.close()
            assert "Traceback" not in px.output()
    finally:
        srv.stop()
