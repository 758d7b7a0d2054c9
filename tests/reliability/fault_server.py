"""A misbehaving Streamable HTTP server for the fault tests (stdlib only, 127.0.0.1).

It is a fault injector, not a stand-in for a real peer: it speaks just enough MCP (initialize,
sessions, tools/call, GET stream, DELETE) to reach the code paths a fault hits, and then
misbehaves as the called tool's name says. Every answer it sends is recorded in ``sent`` so tests
can compare what the client got with what the server sent.

Endpoints (the path selects the server's manner):

- ``/mcp``: initialize answered as JSON; session ids ``fs-N``.
- ``/mcp-sse-init``: initialize answered on SSE, the stream then held open ``HOLD_INIT`` seconds.
- ``/mcp-fixed-sid``: every initialize mints the same id ``fixed-1`` (reuse after DELETE).

Tools (``tools/call`` params.name; arguments in params.arguments):

- ``links`` (JSON) / ``links-sse`` (SSE): a result with a ``resource_link`` block.
- ``close-mid-event``: SSE, one complete event, half of a second one, then the socket is closed.
- ``close-mid-json``: Content-Length promises more than is sent, then the socket is closed.
- ``slow-stream``: SSE, one event every 0.2 s for ``seconds`` (the client hangs up meanwhile).
- ``status``: HTTP ``status`` with ``body`` (str) and ``ctype``.
- ``encoded``: the ``links`` result, ``sse`` or not, with Content-Encoding ``encoding``
  (gzip, deflate, br, zstd); ``corrupt`` sends bytes that do not decode.
"""
from __future__ import annotations

import gzip
import http.server
import itertools
import json
import threading
import time
import zlib
from typing import Any

import brotli

import pytest

try:
    from compression import zstd
except ImportError:
    from backports import zstd

HOLD_INIT = 3.0

LINK = {"type": "resource_link", "uri": "file:///report.txt", "name": "report", "mimeType": "text/plain"}


def links_result(rid: Any) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "one link"}, dict(LINK)]}}


def progress(token: Any = 1) -> dict:
    return {"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1, "total": 2, "message": "half way"}}


def encode(enc: str, body: bytes) -> bytes:
    if enc == "gzip":
        return gzip.compress(body)
    if enc == "deflate":
        return zlib.compress(body)
    if enc == "br":
        return brotli.compress(body)
    if enc == "zstd":
        return zstd.compress(body)
    raise ValueError(enc)


class FaultServer:
    """``with FaultServer() as fs: fs.url`` (base URL, no path)."""

    def __init__(self) -> None:
        self.sessions: dict[str, str] = {}  # session id -> protocol revision
        self.sent: list[tuple[str, int, dict, bytes]] = []  # (what, status, headers, body)
        self.deleted: list[str] = []
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                outer._post(self)

            def do_GET(self):
                outer._get(self)

            def do_DELETE(self):
                outer._delete(self)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # sockets cut on purpose, clients that hang up: not errors here

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def __enter__(self) -> "FaultServer":
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- plumbing -----------------------------------------------------------------------------
    def _send(self, h, what: str, status: int, body: bytes, headers: dict | None = None, length: int | None = None) -> None:
        hdrs = dict(headers or {})
        h.send_response(status)
        for k, v in hdrs.items():
            h.send_header(k, v)
        h.send_header("content-length", str(len(body) if length is None else length))
        h.end_headers()
        h.wfile.write(body)
        h.wfile.flush()
        with self.lock:
            self.sent.append((what, status, hdrs, body))

    def _start_chunked(self, h, headers: dict) -> None:
        h.send_response(200)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("transfer-encoding", "chunked")
        h.end_headers()

    @staticmethod
    def _chunk(h, data: bytes) -> None:
        h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        h.wfile.flush()

    def _sse(self, h, what: str, events: list[bytes], headers: dict | None = None) -> None:
        self._start_chunked(h, {"content-type": "text/event-stream", **(headers or {})})
        for ev in events:
            self._chunk(h, ev)
        self._chunk(h, b"")
        with self.lock:
            self.sent.append((what, 200, headers or {}, b"".join(events)))

    @staticmethod
    def _event(msg: dict, eid: Any = None) -> bytes:
        return (f"id: {eid}\n".encode() if eid is not None else b"") + b"data: " + json.dumps(msg).encode() + b"\n\n"

    # -- methods -------------------------------------------------------------------------------
    def _post(self, h) -> None:
        n = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(n) if n else b""
        h.raw_body = raw
        sid = h.headers.get("mcp-session-id")
        if not raw:
            self._send(h, "no-body", 400, json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32700, "message": "Parse error: empty body"}}).encode(), {"content-type": "application/json"})
            return
        msg = json.loads(raw)
        if msg.get("method") == "initialize":
            return self._initialize(h, msg)
        if sid not in self.sessions:
            self._send(h, "unknown-session", 404, json.dumps({"jsonrpc": "2.0", "id": msg.get("id"), "error": {
                "code": -32001, "message": "Session not found"}}).encode(), {"content-type": "application/json"})
            return
        if "id" not in msg:
            self._send(h, "accepted", 202, b"")
            return
        if msg.get("method") != "tools/call":
            self._send(h, "empty-result", 200, json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {}}).encode(),
                       {"content-type": "application/json"})
            return
        name = msg["params"]["name"]
        args = msg["params"].get("arguments") or {}
        getattr(self, "tool_" + name.replace("-", "_"))(h, msg["id"], args)

    def _initialize(self, h, msg: dict) -> None:
        rev = msg["params"]["protocolVersion"]
        path = h.path
        sid = "fixed-1" if path.startswith("/mcp-fixed-sid") else f"fs-{next(self.ids)}"
        with self.lock:
            self.sessions[sid] = rev
        result = {"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": rev, "capabilities": {"tools": {}},
            "serverInfo": {"name": "fault-server", "version": "1", "title": "Fault server"}}}
        if path.startswith("/mcp-sse-init"):
            self._start_chunked(h, {"content-type": "text/event-stream", "mcp-session-id": sid})
            self._chunk(h, self._event(result, "init-1"))
            time.sleep(HOLD_INIT)  # the stream stays open; the client goes on meanwhile
            self._chunk(h, b": closing\n\n")
            self._chunk(h, b"")
            with self.lock:
                self.sent.append(("initialize-sse", 200, {}, b""))
            return
        self._send(h, "initialize", 200, json.dumps(result).encode(), {"content-type": "application/json", "mcp-session-id": sid})

    def _get(self, h) -> None:
        sid = h.headers.get("mcp-session-id")
        if sid not in self.sessions:
            self._send(h, "get-unknown", 405, b"", {})
            return
        self._sse(h, "get-stream", [b": listening\n\n", self._event(progress("g"), "g1")])

    def _delete(self, h) -> None:
        sid = h.headers.get("mcp-session-id")
        with self.lock:
            known = self.sessions.pop(sid, None) is not None
            if known:
                self.deleted.append(sid)
        self._send(h, "delete", 200 if known else 404, b"")

    # -- tools ------------------------------------------------------------------------------------
    def tool_links(self, h, rid, args) -> None:
        self._send(h, "links", 200, json.dumps(links_result(rid)).encode(), {"content-type": "application/json"})

    def tool_links_sse(self, h, rid, args) -> None:
        self._sse(h, "links-sse", [self._event(progress(), "p1"), self._event(links_result(rid), "r1")])

    def tool_close_mid_event(self, h, rid, args) -> None:
        self._start_chunked(h, {"content-type": "text/event-stream"})
        self._chunk(h, self._event(progress(), "p1"))
        half = self._event(links_result(rid), "r1")
        self._chunk(h, half[: len(half) // 2])
        time.sleep(0.2)
        h.close_connection = True
        h.connection.shutdown(2)  # no terminating chunk: the stream is cut mid-event

    def tool_close_mid_json(self, h, rid, args) -> None:
        body = json.dumps(links_result(rid)).encode()
        h.send_response(200)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(body) + 100))
        h.end_headers()
        h.wfile.write(body[: len(body) // 2])
        h.wfile.flush()
        time.sleep(0.2)
        h.close_connection = True
        h.connection.shutdown(2)

    def tool_slow_stream(self, h, rid, args) -> None:
        self._start_chunked(h, {"content-type": "text/event-stream"})
        deadline = time.monotonic() + float(args.get("seconds", 3))
        i = 0
        try:
            while time.monotonic() < deadline:
                self._chunk(h, self._event(progress(i), f"s{i}"))
                i += 1
                time.sleep(0.2)
            self._chunk(h, self._event(links_result(rid), "end"))
            self._chunk(h, b"")
        except OSError:
            pass  # the other side hung up
        with self.lock:
            self.sent.append(("slow-stream", 200, {"events": i}, b""))

    def tool_status(self, h, rid, args) -> None:
        body = args.get("body", "").replace("$ID", json.dumps(rid)).encode()
        hdrs = {"content-type": args["ctype"]} if args.get("ctype") else {}
        self._send(h, f"status-{args['status']}", int(args["status"]), body, hdrs)

    def tool_big(self, h, rid, args) -> None:
        """A result whose text block is ``size`` bytes, after a resource_link (so it would need a
        rewrite for 2024-11-05), as JSON (chunked, or with Content-Length if ``length``) or as one SSE
        event; streamed in 1 MiB pieces, never built whole. ``sent`` gets its sha256 and size."""
        import hashlib
        size, sse = int(args["size"]), bool(args.get("sse"))
        head = json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [dict(LINK), {"type": "text", "text": ""}]}}).encode()
        head, tail = head[:head.rindex(b'""') + 1], head[head.rindex(b'""') + 1:]
        pre, post = (b"id: big\ndata: " + head, tail + b"\n\n") if sse else (head, tail)
        total = len(pre) + size + len(post)
        digest = hashlib.sha256()
        headers = {"content-type": "text/event-stream" if sse else "application/json"}
        if args.get("length"):
            h.send_response(200)
            for k, v in headers.items():
                h.send_header(k, v)
            h.send_header("content-length", str(total))
            h.end_headers()
            send = h.wfile.write
        else:
            self._start_chunked(h, headers)
            send = lambda data: self._chunk(h, data)  # noqa: E731
        piece = b"A" * (1 << 20)
        send(pre)
        digest.update(pre)
        left = size
        while left:
            part = piece[:min(left, len(piece))]
            send(part)
            digest.update(part)
            left -= len(part)
        send(post)
        digest.update(post)
        if not args.get("length"):
            self._chunk(h, b"")
        h.wfile.flush()
        with self.lock:
            self.sent.append(("big", 200, {"size": total, "sha256": digest.hexdigest()}, b""))

    def tool_deep(self, h, rid, args) -> None:
        """structuredContent nested ``depth`` arrays deep, as JSON or one SSE event."""
        n = int(args["depth"])
        body = (b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"result":{"content":[' + json.dumps(LINK).encode()
                + b'],"structuredContent":{"v":' + b"[" * n + b"]" * n + b"}}}")
        if args.get("sse"):
            self._sse(h, "deep", [b"data: " + body + b"\n\n"])
        else:
            self._send(h, "deep", 200, body, {"content-type": "application/json"})

    def tool_digest(self, h, rid, args) -> None:
        """The sha256 and size of the request body as the server got it."""
        import hashlib
        raw = getattr(h, "raw_body", b"")
        text = f"{hashlib.sha256(raw).hexdigest()} {len(raw)}"
        self._send(h, "digest", 200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": text}]}}).encode(), {"content-type": "application/json"})

    def tool_media(self, h, rid, args) -> None:
        """Blocks carrying the base64 ``payload`` (audio, image, an icon data: URI), each rewritten or
        dropped for a 2024-11-05 client; answered with a Set-Cookie header (a credential)."""
        b64 = args["payload"]
        result = {"content": [
            {"type": "audio", "data": b64, "mimeType": "audio/wav"},
            {"type": "image", "data": b64, "mimeType": "image/png", "annotations": {"lastModified": "2025-01-01T00:00:00Z"}},
            {**LINK, "icons": [{"src": "data:image/png;base64," + b64}]},
        ], "structuredContent": {"blob": b64, b64: "a payload as an object key"}}
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
        hdrs = {"content-type": "application/json", "set-cookie": f"sid={args['cookie']}; HttpOnly"}
        if args.get("sse"):
            self._sse(h, "media", [b"data: " + body + b"\n\n"], {"set-cookie": hdrs["set-cookie"]})
        else:
            self._send(h, "media", 200, body, hdrs)

    def tool_encoded(self, h, rid, args) -> None:
        enc = args["encoding"]
        if args.get("sse"):
            plain = self._event(progress(), "p1") + self._event(links_result(rid), "r1")
            ctype = "text/event-stream"
        else:
            plain = json.dumps(links_result(rid)).encode()
            ctype = "application/json"
        data = b"\x1f\x8b\x08garbage, not the encoding it claims" * 3 if args.get("corrupt") else encode(enc, plain)
        if args.get("sse"):
            self._start_chunked(h, {"content-type": ctype, "content-encoding": enc})
            for i in range(0, len(data), 7):  # cut the compressed bytes in small chunks
                self._chunk(h, data[i:i + 7])
            self._chunk(h, b"")
            with self.lock:
                self.sent.append((f"encoded-{enc}-sse", 200, {}, plain))
            return
        self._send(h, f"encoded-{enc}", 200, data, {"content-type": ctype, "content-encoding": enc})


@pytest.fixture(scope="module")
def fs():
    """A fault-injecting loopback server, one per test module (import it into the module)."""
    with FaultServer() as srv:
        yield srv
