"""Bodies whose Content-Encoding inflates past ``mcpx_max_body``, through the real mitmdump.

``mcpx_max_body`` bounds what mcpx parses; before, it was checked on a body's compressed length
only: a client POST (or a whole JSON answer, or the initialize answer mcpx reads itself) of a few KiB
of gzip, deflate, br or zstd that inflates to many MiB was decoded whole into memory, and parsed. Now
decoding stops once the decoded size passes the limit (framing/encoding.py ``decode_whole``): the body
goes on byte for byte, still encoded, and one ``passthrough`` record says
``content-encoding: body decodes to more than mcpx_max_body (N bytes); forwarded untouched``.

The bodies here are valid JSON-RPC once decoded (a ping, a result with an audio block a 2024-11-05
client needs rewritten) padded to 4 MiB, so mcpx would have read and rewritten them: what the
client and server get, and the records, show that it did not. tests/unit/test_decode_bound.py
shows the memory bound itself.
"""
from __future__ import annotations

import gzip
import time
import zlib

import brotli  # installed with mitmproxy
import orjson
import pytest

from proxy_lib import Client, LoopbackServer, Proxy, ScriptedMcpHandler

LIMIT = 64 << 10  # mcpx_max_body (its minimum)
PAD = 4 << 20  # decoded padding: far beyond LIMIT, a few KiB compressed
RECORD = f"content-encoding: body decodes to more than mcpx_max_body ({LIMIT} bytes); forwarded untouched"


def compress(enc: str, data: bytes) -> bytes:
    if enc == "gzip":
        return gzip.compress(data, mtime=0)
    if enc == "deflate":
        return zlib.compress(data)
    if enc == "br":
        return brotli.compress(data)
    from backports import zstd  # mitmproxy's own zstd module on Python < 3.14
    return zstd.compress(data)


#: a ping whose params carry PAD bytes of padding (a client request mcpx would parse, and leave as it is)
BIG_PING = orjson.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": {"pad": "x" * PAD}}})
#: a result a 2024-11-05 client needs rewritten (audio -> text), padded: decoded, mcpx would rewrite it
BIG_AUDIO = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [
    {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}, {"type": "text", "text": "x" * PAD}]}})


def wait_changes(px: Proxy, n: int, timeout: float = 10) -> list[dict]:
    """The proxy's records once there are at least ``n`` (what it wrote by ``timeout`` otherwise)."""
    deadline = time.monotonic() + timeout
    while len(px.changes()) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return px.changes()


class Handler(ScriptedMcpHandler):
    SERVER_INFO = {"name": "bomb", "version": "1"}
    SESSION = "bomb-1"
    #: (Mcp-Session-Id, Content-Encoding, body as received) of each POST with a Content-Encoding
    received: list[tuple] = []
    #: the tools/call answer: (Content-Encoding, body)
    ANSWER: tuple[str, bytes] = ("", b"")

    def do_POST(self):
        if self.headers.get("content-encoding"):
            raw = self.rfile.read(int(self.headers["content-length"]))
            Handler.received.append((self.headers.get("mcp-session-id"), self.headers["content-encoding"], raw))
            self.send_json(b'{"jsonrpc":"2.0","id":3,"result":{}}')
            return
        super().do_POST()

    def answer(self, body):
        if "id" not in body:
            self.send_accepted()
            return
        enc, data = self.ANSWER
        self.send_json(data, {"content-encoding": enc})


@pytest.mark.parametrize("enc", ["gzip", "deflate", "br", "zstd"])
def test_a_client_post_that_inflates_past_the_limit_is_forwarded_untouched(tmp_path, enc):
    """Before: decoded whole (4 MiB) and parsed, forwarded with no record."""
    Handler.received = []
    body = compress(enc, BIG_PING)
    assert len(body) < LIMIT
    srv = LoopbackServer(Handler)
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False, options={"mcpx_max_body": "64KiB"}) as px:
            c = Client(px.port)
            c.initialize("2025-03-26")
            status, _, answer = c.post(None, {"content-encoding": enc}, raw=body)
            assert (status, answer) == (200, b'{"jsonrpc":"2.0","id":3,"result":{}}')
            assert Handler.received == [("bomb-1", enc, body)]  # the server's own session id, the bytes as sent
            assert [(r["action"], r["rule"], r["direction"], r["session"], r["detail"]) for r in wait_changes(px, 1)] == [
                ("passthrough", "PASSTHROUGH-error", "c2s", px.handle(c.session), RECORD)]
            c.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("enc", ["gzip", "zstd"])
def test_a_json_answer_that_inflates_past_the_limit_is_delivered_untouched(tmp_path, enc):
    """Before: decoded whole (4 MiB), then left as it is with the record of a body above the limit
    ('body of 4194... bytes exceeds mcpx_max_body'): the size was known only after inflating it."""
    body = compress(enc, BIG_AUDIO)
    srv = LoopbackServer(type("H", (Handler,), {"ANSWER": (enc, body)}))
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False, options={"mcpx_max_body": "64KiB"}) as px:
            c = Client(px.port)
            c.initialize("2024-11-05")
            status, headers, answer = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}}},
                                             {"accept-encoding": enc})
            assert (status, headers["content-encoding"], answer) == (200, enc, body)
            assert [(r["action"], r["rule"], r["direction"], r["session"], r["detail"]) for r in wait_changes(px, 1)] == [
                ("passthrough", "PASSTHROUGH-error", "s2c", px.handle(c.session), RECORD)]
            c.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("enc,body,record", [
    # Python codecs mitmproxy would decode (encoding.decode falls back to codecs.decode): unbounded
    ("bz2", __import__("bz2").compress(BIG_AUDIO), "content-encoding: body does not decode (unsupported content-encoding 'bz2'); forwarded untouched"),
    ("zlib", zlib.compress(BIG_AUDIO), "content-encoding: body does not decode (unsupported content-encoding 'zlib'); forwarded untouched"),
    # mitmproxy's name for raw deflate: decoded as deflate, so bounded
    ("deflateraw", zlib.compress(BIG_AUDIO)[2:-4], RECORD),
], ids=["bz2", "zlib", "deflateraw"])
def test_an_answer_in_an_encoding_outside_http_is_not_inflated(tmp_path, enc, body, record):
    """Before: mitmproxy's decoder inflated it whole (81 bytes of bz2 to 50 MiB: Python's bz2 and zlib
    codecs have no bound), and the record came after: 'body of 4194... bytes exceeds mcpx_max_body'.
    Now only gzip, deflate (deflateraw), br, zstd are decoded, each bounded; any other value goes on
    untouched with a record that names it."""
    srv = LoopbackServer(type("H", (Handler,), {"ANSWER": (enc, body)}))
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False, options={"mcpx_max_body": "64KiB"}) as px:
            c = Client(px.port)
            c.initialize("2024-11-05")
            status, headers, answer = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}}})
            assert (status, headers["content-encoding"], answer) == (200, enc, body)
            assert [(r["action"], r["rule"], r["direction"], r["session"], r["detail"]) for r in wait_changes(px, 1)] == [
                ("passthrough", "PASSTHROUGH-error", "s2c", px.handle(c.session), record)]
            c.close()
    finally:
        srv.stop()


class BigInitialize(ScriptedMcpHandler):
    """Answers initialize with gzip JSON whose instructions are PAD bytes long."""
    SESSION = "bomb-init"
    BODY = b""

    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        self.send_json(self.BODY, {"content-encoding": "gzip", "mcp-session-id": self.SESSION})


def test_an_initialize_answer_that_inflates_past_the_limit_is_delivered_untouched(tmp_path):
    """The initialize answer mcpx reads itself (it seals the session from it): before, it was decoded
    whole twice (mitmproxy's decoder for mcpx's own flow, then the strict one), read and the session
    sealed. Now it is not read: the client gets the server's bytes and the server's own session id,
    and the records say why (the session cannot be sealed from an answer mcpx did not read)."""
    body = gzip.compress(orjson.dumps({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "serverInfo": {"name": "bomb", "version": "1"},
        "instructions": "x" * PAD}}), mtime=0)
    srv = LoopbackServer(type("H", (BigInitialize,), {"BODY": body}))
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False, options={"mcpx_max_body": "64KiB"}) as px:
            c = Client(px.port)
            status, headers, answer = c.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}},
                {"accept-encoding": "gzip"})
            assert (status, headers["content-encoding"], headers["mcp-session-id"], answer) == (200, "gzip", "bomb-init", body)
            assert [(r["action"], r["direction"], r["detail"]) for r in wait_changes(px, 2)] == [
                ("passthrough", "s2c", RECORD),
                ("passthrough", "s2c", "initialize result not understood: session not sealed, "
                                       "the server's Mcp-Session-Id passed to the client unchanged")]
            c.close()
    finally:
        srv.stop()
