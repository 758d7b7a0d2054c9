"""Faults, through the real ``mitmdump -s addon/mcpx.py``: a misbehaving upstream (fault_server.py),
clients that hang up, error statuses, content encodings, HTTP/2, bodiless requests, initialize
on SSE, a session id reused after DELETE.

For every case: what the client gets is exact (rewritten where a rule applies, else the server's
bytes), mcpx stays up, its per-flow state is released (``probe_addon.py``), and mitmdump's output
holds no traceback or addon error.
"""
from __future__ import annotations

import gzip
import http.client
import re
import socket
import ssl
import time
import zlib

import brotli
import h2.config
import h2.connection
import h2.events
import orjson
import pytest

import peers_lib as pl
from fault_server import LINK, fs  # noqa: F401 (fixture)
from rel_lib import Client, count, figures, messages_of, probe, probed_proxy, sse_events  # noqa: F401

try:
    from compression import zstd
except ImportError:
    from backports import zstd

#: what a 2024-11-05 client gets for the fault server's resource_link block (CT-resource_link)
LINK_2024 = {"type": "resource", "resource": {"uri": "file:///report.txt", "mimeType": "text/plain",
                                              "text": "Resource link (content not embedded): file:///report.txt\nname: report\nmimeType: text/plain"}}
PROGRESS_2024 = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1, "total": 2}}


@pytest.fixture(scope="module")
def px(fs, tmp_path_factory):
    proxy = probed_proxy(fs.url, tmp_path_factory.mktemp("faults"))
    yield proxy
    proxy.stop()
    assert_no_crash(proxy.output())
    # flows that ended in an error (cut upstream, client gone) went through mcpx's error hook:
    # saved with -w, they carry mcpx's annotations like any other MCP flow
    failed = [f for f in proxy.flows() if f.error is not None]
    assert len(failed) >= 3, [f.request.path for f in failed]
    for f in failed:
        assert f.metadata["mcpx"]["messages"][0]["method"] == "tools/call", f.metadata


def assert_no_crash(out: str) -> None:
    """mitmdump's output shows no crashed connection, no addon error, no traceback through mcpx.
    (Tracebacks of asyncio's CancelledError at shutdown, with client connections still open,
    are mitmproxy's own and are not counted.)"""
    assert "mitmproxy has crashed" not in out, out[-6000:]
    assert "Addon error" not in out, out[-6000:]
    assert not re.search(r'File "[^"]*/addon/', out), out[-6000:]


@pytest.fixture
def released(px):
    """After the test: mcpx holds no per-flow state any more (exchanges, streams, flows, own requests)."""
    yield
    deadline = time.monotonic() + 10
    while True:
        st = probe(px)
        if st["exchanges"] == st["streams"] == st["flows"] == st["own"] == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert (st["exchanges"], st["streams"], st["flows"], st["own"]) == (0, 0, 0, 0), st
    count("fault cases survived")


def client(px, revision="2024-11-05", path="/mcp") -> Client:
    c = Client(px.port, path=path)
    c.initialize(revision)
    return c


def call(name: str, rid: int = 5, **args) -> dict:
    """A call whose progress token is 1, the one fault_server's progress notifications name."""
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args, "_meta": {"progressToken": 1}}}


def records_for(px, session: str) -> list[tuple]:
    return [(r["pointer"], r["action"], r["rule"]) for r in px.session_changes(session)]


# -- upstream faults --------------------------------------------------------------------------------
def test_upstream_closes_mid_event(px, fs, released):
    """The server cuts the SSE stream half way through the second event: the first event reaches the
    client rewritten, the stream then ends in an error (as it would without mcpx), mcpx stays up."""
    c = client(px)
    sock = socket.create_connection(("127.0.0.1", px.port), timeout=10)
    body = orjson.dumps(call("close-mid-event"))
    sock.sendall(b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n"
                 b"mcp-session-id: " + c.session.encode() + b"\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    got = b""
    while True:
        try:
            data = sock.recv(65536)
        except OSError:
            break
        if not data:
            break
        got += data
    sock.close()
    head, _, chunked = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert not chunked.endswith(b"0\r\n\r\n")  # no clean end: the cut is passed on
    first = b"id: p1\ndata: " + orjson.dumps(PROGRESS_2024) + b"\n\n"
    assert first in chunked
    assert b"resource_link" not in chunked and b'"id":5' not in chunked  # the half event is not delivered
    # mcpx still serves the session
    status, _, msgs = c.rpc(call("links", 6))
    assert status == 200 and msgs[0]["result"]["content"][1] == LINK_2024


def test_upstream_closes_mid_json_body(px, fs, released):
    """A JSON body shorter than its Content-Length: mitmproxy answers 502 as without mcpx."""
    c = client(px)
    status, _, body = c.post(call("close-mid-json"))
    assert status == 502, body
    status, _, msgs = c.rpc(call("links", 6))
    assert status == 200 and msgs[0]["result"]["content"][1] == LINK_2024


def test_client_disconnects_mid_stream(px, fs, released):
    """The client reads the first SSE event and hangs up: mitmproxy calls the error hook, mcpx
    releases the flow's state; the flow is still annotated (flow.metadata["mcpx"])."""
    c = client(px)
    sock = socket.create_connection(("127.0.0.1", px.port), timeout=10)
    body = orjson.dumps(call("slow-stream", 7, seconds=2))
    sock.sendall(b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\naccept: text/event-stream\r\n"
                 b"mcp-session-id: " + c.session.encode() + b"\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    got = b""
    while b"\n\n" not in got.partition(b"\r\n\r\n")[2]:
        got += sock.recv(65536)
    assert b"half way" not in got  # the first event was rewritten for 2024-11-05
    sock.close()
    deadline = time.monotonic() + 10
    while not any(w == "slow-stream" for w, *_ in fs.sent) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert probe(px)["streams"] == 0
    events = next(h for w, _, h, _ in fs.sent if w == "slow-stream")["events"]
    assert events < 10  # the server saw the hang-up before the end


# -- error statuses -----------------------------------------------------------------------------------
ERR_404 = '{"jsonrpc":"2.0","id":$ID,"error":{"code":-32602,"message":"Unknown tool"}}'
STATUS_CASES = [
    (400, "application/json", ERR_404),
    (404, "application/json", ERR_404),
    (500, "application/json", '{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}'),
    (500, "text/html", "<html><body>500 Internal Server Error</body></html>"),
    (502, "text/plain", "upstream exploded"),
    (503, "", ""),
    (429, "application/json", '{"error":"rate limited","retry_after":3}'),
    (401, "application/json", '{"jsonrpc":"2.0","id":$ID,"error":{"code":-32001,"message":"Unauthorized","data":{"scheme":"Bearer"}}}'),
]


@pytest.mark.parametrize("status,ctype,body", STATUS_CASES)
def test_error_status_passes_through(px, fs, released, status, ctype, body):
    """4xx/5xx with or without a JSON-RPC body: status, content type and body reach the client
    exactly (these bodies need no rewrite for 2024-11-05)."""
    c = client(px)
    st, headers, got = c.post(call("status", 9, status=status, ctype=ctype, body=body))
    assert st == status
    assert got == body.replace("$ID", "9").encode()
    assert headers.get("content-type", "") == ctype


# -- content encodings ---------------------------------------------------------------------------------
def _decode(enc: str, data: bytes) -> bytes:
    return {"gzip": gzip.decompress, "deflate": zlib.decompress, "br": brotli.decompress, "zstd": zstd.decompress}[enc](data)


@pytest.mark.parametrize("enc", ["gzip", "deflate", "br", "zstd"])
def test_encoded_json_whole(px, fs, released, enc):
    """A compressed JSON body is decoded, rewritten and re-encoded with the same encoding."""
    c = client(px)
    st, headers, got = c.post(call("encoded", 11, encoding=enc))
    assert st == 200 and headers["content-encoding"] == enc
    msg = orjson.loads(_decode(enc, got))
    assert msg["result"]["content"] == [{"type": "text", "text": "one link"}, LINK_2024]


@pytest.mark.parametrize("enc", ["gzip", "deflate", "br", "zstd"])
def test_encoded_json_untouched_for_newer_client(px, fs, released, enc):
    """Nothing to rewrite (2025-06-18 has resource_link): the compressed bytes arrive as sent."""
    c = client(px, "2025-06-18")
    st, headers, got = c.post(call("encoded", 12, encoding=enc))
    assert st == 200 and headers["content-encoding"] == enc
    assert got == next(b for w, _, _, b in reversed(fs.sent) if w == f"encoded-{enc}")


@pytest.mark.parametrize("enc", ["gzip", "deflate", "br", "zstd"])
def test_encoded_sse_streamed(px, fs, released, enc):
    """A compressed SSE stream (cut every 7 compressed bytes) is decoded as it streams and
    forwarded identity-encoded, each event rewritten."""
    c = client(px)
    st, headers, got = c.post(call("encoded", 13, encoding=enc, sse=True))
    assert st == 200 and "content-encoding" not in headers
    evs = sse_events(got)
    assert [e["id"] for e in evs] == ["p1", "r1"]
    assert orjson.loads(evs[0]["data"]) == PROGRESS_2024
    assert orjson.loads(evs[1]["data"])["result"]["content"][1] == LINK_2024


def test_corrupt_encoded_sse(px, fs, released):
    """An SSE body that does not decode as its Content-Encoding says: the connection is not crashed
    (before: "mitmproxy has crashed!", the client hung, the flow's state leaked). Its Content-Encoding
    was already removed (the stream is delivered decoded): the client gets no compressed byte (before:
    the server's bytes, read as identity-encoded garbage), the response ends when the server's does,
    and a passthrough record says why (tests/e2e/test_encoding_failures.py: a fault after events)."""
    c = client(px)
    st, headers, got = c.post(call("encoded", 14, encoding="gzip", sse=True, corrupt=True))
    assert (st, got, "content-encoding" in headers) == (200, b"", False)
    recs = [r["detail"] for r in px.session_changes(c.session) if r["action"] == "passthrough"]
    assert recs == ["content-encoding: SSE stream does not decode from compressed byte 3 on "
                    "(error: Error -3 while decompressing data: unknown header flags set); delivered: the complete "
                    "events before it; not delivered: the rest of the stream (the client was told it is not encoded)"], recs


# -- requests without a body, GET stream, initialize on SSE, DELETE and reuse ---------------------------
def test_request_without_body(px, fs, released):
    """A POST with no body, a GET listening stream and a DELETE carry no JSON: forwarded as they are;
    the GET stream's server notification is rewritten for the client's revision."""
    c = client(px)
    st, _, got = c.post(None, raw=b"")
    assert st == 400 and orjson.loads(got)["error"]["code"] == -32700
    conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=10)
    conn.request("GET", "/mcp", headers={"accept": "text/event-stream", "mcp-session-id": c.session})
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200
    evs = sse_events(body)
    assert orjson.loads(evs[-1]["data"]) == {**PROGRESS_2024, "params": {**PROGRESS_2024["params"], "progressToken": "g"}}
    assert body.startswith(b": listening\n\n")


def test_initialize_result_on_sse_with_stream_held_open(px, fs, released):
    """The server answers initialize on SSE and keeps that stream open; the client goes on at once
    (the SDKs do): its next request already gets its revision's rewrite."""
    c = Client(px.port, path="/mcp-sse-init")
    t0 = time.monotonic()
    c.conn.request("POST", c.path, orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "sse-init", "version": "1"}}}),
        c.headers())
    r = c.conn.getresponse()
    sid = r.getheader("mcp-session-id")
    buf = b""
    while b"\n\n" not in buf:
        buf += r.read1(65536)
    result = orjson.loads(sse_events(buf)[0]["data"])["result"]
    assert result["serverInfo"] == {"name": "fault-server", "version": "1"}  # title dropped for 2024-11-05
    other = Client(px.port, path="/mcp-sse-init")
    other.session, other.revision = sid, "2024-11-05"
    st, _, msgs = other.rpc(call("links", 3))
    assert time.monotonic() - t0 < 2.5  # still while the initialize stream is open
    assert msgs[0]["result"]["content"][1] == LINK_2024
    r.read()
    c.close()
    other.close()


def test_session_id_reused_after_delete(px, fs, released):
    """DELETE ends the session in mcpx too; the server's same id minted again for a client of another
    revision (inside a new sealed token) gets that revision's rewrite, not the old session's."""
    old = client(px, "2024-11-05", path="/mcp-fixed-sid")
    assert old.session.startswith("mcpx1.")  # the client holds mcpx's token, never the server's "fixed-1"
    _, _, msgs = old.rpc(call("links", 1))
    assert msgs[0]["result"]["content"][1] == LINK_2024
    conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=10)
    conn.request("DELETE", "/mcp-fixed-sid", headers={"mcp-session-id": old.session})
    assert conn.getresponse().status == 200
    assert fs.deleted[-1] == "fixed-1"  # the server got its own id back
    assert "fixed-1" not in probe(px)["upstream_ids"].values()  # under no key (token, handle, client connection, host)
    # the deleted session's token, used again without initialize: the server's 404 passes through untouched
    st, _, got = old.post(call("links", 2))
    assert st == 404 and orjson.loads(got)["error"]["message"] == "Session not found"
    new = client(px, "2025-06-18", path="/mcp-fixed-sid")
    assert new.session.startswith("mcpx1.") and new.session != old.session
    _, _, msgs = new.rpc(call("links", 3))
    assert msgs[0]["result"]["content"][1] == LINK  # 2025-06-18 defines resource_link: untouched


# -- HTTP/2 --------------------------------------------------------------------------------------------
class H2Client:
    """A minimal HTTP/2 client (the ``h2`` library mitmproxy itself uses) over TLS with ALPN h2;
    mitmproxy speaks HTTP/2 to clients only over TLS (no h2c). Certificates are not checked
    (mitmproxy's own CA)."""

    def __init__(self, port: int):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2"])
        self.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=15), server_hostname="127.0.0.1")
        assert self.sock.selected_alpn_protocol() == "h2"
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.port = port

    def request(self, method: str, path: str, headers: dict, body: bytes = b"") -> tuple[int, dict, bytes]:
        sid = self.conn.get_next_available_stream_id()
        hdrs = [(":method", method), (":path", path), (":scheme", "https"), (":authority", f"127.0.0.1:{self.port}"),
                *headers.items()]
        self.conn.send_headers(sid, hdrs, end_stream=not body)
        if body:
            self.conn.send_data(sid, body, end_stream=True)
        self.sock.sendall(self.conn.data_to_send())
        status, rh, data = 0, {}, b""
        while True:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            for ev in self.conn.receive_data(chunk):
                if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id == sid:
                    rh = {k.decode(): v.decode() for k, v in ev.headers}
                    status = int(rh[":status"])
                elif isinstance(ev, h2.events.DataReceived) and ev.stream_id == sid:
                    data += ev.data
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, sid)
                elif isinstance(ev, h2.events.StreamReset) and ev.stream_id == sid:
                    raise ConnectionError(f"stream reset: {ev.error_code}")
                elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == sid:
                    self.sock.sendall(self.conn.data_to_send())
                    return status, rh, data
            self.sock.sendall(self.conn.data_to_send())

    def close(self) -> None:
        self.conn.close_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.sock.close()


@pytest.mark.peers
def test_http2_client(tmp_path):
    """An HTTP/2 client (TLS, ALPN h2) through mcpx to the real everything server (HTTP/1.1): the
    SSE answers are rewritten exactly as for HTTP/1.1 clients, and a JSON-RPC session works. Its
    POSTs carry no Content-Length (HTTP/2 frames bodies; browsers omit it): before, mitmproxy sent
    them to the HTTP/1.1 server without a length and the server answered 400."""
    with pl.start_everything_server() as srv, probed_proxy(srv.url.rsplit("/mcp", 1)[0], tmp_path) as px:
        c = H2Client(px.port)
        base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "h2", "version": "1"}}}
        st, h, body = c.request("POST", "/mcp", base, orjson.dumps(init))
        assert st == 200 and h["content-type"] == "text/event-stream"
        assert "transfer-encoding" not in h  # a connection header HTTP/2 forbids
        sid = h["mcp-session-id"]
        result = messages_of(h["content-type"], body)[0]["result"]
        assert result["protocolVersion"] == "2024-11-05" and "title" not in result["serverInfo"]
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})  # this one with a Content-Length
        st, _, _ = c.request("POST", "/mcp", {**base, "mcp-session-id": sid, "content-length": str(len(note))}, note)
        assert st == 202
        st, h, body = c.request("POST", "/mcp", {**base, "mcp-session-id": sid},
                                orjson.dumps(call("get-resource-links", 1, count=2)))
        msg = messages_of(h["content-type"], body)[0]
        assert msg["id"] == 1
        assert [b["type"] for b in msg["result"]["content"]] == ["text", "resource", "resource"]
        c.close()
        st = probe(px)
        assert (st["exchanges"], st["streams"]) == (0, 0)
        assert_no_crash(px.output())
    count("fault cases survived")
