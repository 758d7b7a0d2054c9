"""An HTTP/2 request body of unknown length (no Content-Length, as browsers send it) through the real
mitmdump to an https upstream: framed (chunked) for a server that speaks HTTP/1.1 (ALPN gives no h2),
as over plain http (test_unknown_session_bodies.py), and without Transfer-Encoding for one that speaks
HTTP/2 (RFC 9113 8.2.2 forbids it; mitmproxy's HTTP/2 client sends headers as they are).

mitmproxy (12.3.1) turns such a request into an HTTP/1.1 request with neither Content-Length nor
Transfer-Encoding and sends the body unframed after it: bare mitmdump fails so for any size (the
server reads a 0-byte body; the client gets 502 "server closed connection"). mcpx gives a body it
reads whole its Content-Length (``request`` hook); one above ``mcpx_max_body`` is streamed (mcpx sets
``stream_large_bodies`` from it) with its headers sent before the body is read. Before the fix, over
https that one reached an HTTP/1.1 server unframed (``requestheaders`` framed plain http only: the
server's ALPN is unknown there). Now the ``tls_established_server`` hook of the new connection
decides (addons/framing.py). (``connection_strategy`` eager is not run here: mitmproxy then connects
to the server before the client's TLS hello and mirrors the server's ALPN, none, to the client, so an
HTTP/2 client cannot reach an HTTP/1.1 server that way; tests/unit/test_upstream_framing.py covers
the open-connection branch.)

The upstream is :class:`tls_lib.TLSFront` before the scripted stdlib server: its HTTP/1.1 relay
records the bytes the server got, its HTTP/2 side (``h2=True``) the headers and body as they came.
"""
from __future__ import annotations

import orjson
import pytest

from proxy_lib import Client, Proxy, serve
from test_unknown_session_bodies import LIMIT, RESULTS, Handler, big_call, h2_post
from tls_lib import ThrowawayCA, TLSFront


@pytest.fixture
def server():
    yield from serve(Handler, "seen", "framing")


def _through(tmp_path, server, size: int, h2: bool):
    """Initialize over HTTP/1.1, then POST a tools/call of about ``size`` bytes over HTTP/2 without
    Content-Length: (the body, the client's status and answer, the front)."""
    ca = ThrowawayCA(tmp_path / "ca")
    with TLSFront(ca, server, h2=h2) as front, Proxy(f"https://127.0.0.1:{front.port}", tmp_path, options={
            "mcpx_max_body": "64KiB", "ssl_verify_upstream_trusted_ca": ca.ca_pem}) as px:
        c = Client(px.port)
        c.initialize("2025-03-26")
        body = big_call(9, size)
        status, _, answer = h2_post(px.port, body, c.session)
        c.close()
        assert "Traceback" not in px.output()
    return body, status, answer, front


@pytest.mark.parametrize("size", [4 * LIMIT, LIMIT // 4], ids=["above-max-body", "below-max-body"])
def test_a_streamed_http2_body_reaches_an_https_http11_server_framed(server, tmp_path, size):
    """The server gets the body whole, chunked when streamed (above mcpx_max_body), with its
    Content-Length when read whole; the client gets the server's answer."""
    body, status, answer, front = _through(tmp_path, server, size, h2=False)
    assert (status, orjson.loads(answer)) == (200, {"jsonrpc": "2.0", "id": 9, "result": RESULTS["tools/call"]})
    assert Handler.seen[-1] == ("POST", "/mcp", "recorder-1", len(body))
    assert Handler.framing[-1] == ("chunked" if size > LIMIT else "content-length")
    method, path, headers, got = front.requests()[-1]
    framing = {k: v for k, v in headers.items() if k in ("content-length", "transfer-encoding")}
    assert (method, path, framing, got) == ("POST", "/mcp", {"transfer-encoding": "chunked"} if size > LIMIT
                                            else {"content-length": str(len(body))}, body)


@pytest.mark.parametrize("size", [4 * LIMIT, LIMIT // 4], ids=["above-max-body", "below-max-body"])
def test_a_streamed_http2_body_reaches_an_https_http2_server_without_transfer_encoding(server, tmp_path, size):
    """The server picks h2: the request reaches it over HTTP/2 without Transfer-Encoding (a streamed
    body with no length, as the client sent it; one read whole with its Content-Length)."""
    body, status, answer, front = _through(tmp_path, server, size, h2=True)
    assert (status, orjson.loads(answer)) == (200, {"jsonrpc": "2.0", "id": 9, "result": RESULTS["tools/call"]})
    (method, path, headers, got), = front.h2_requests()  # the initialize went over HTTP/1.1 (a client without ALPN)
    framing = {k: v for k, v in headers.items() if k in ("content-length", "transfer-encoding")}
    assert (method, path, headers["mcp-session-id"], framing, got) == (
        "POST", "/mcp", "recorder-1", {} if size > LIMIT else {"content-length": str(len(body))}, body)
    assert Handler.seen[-1] == ("POST", "/mcp", "recorder-1", len(body))


def h2_posts(port: int, bodies: list[bytes], session: str) -> list[tuple[int, bytes]]:
    """POST each of ``bodies`` on its own stream of one HTTP/2 connection, all at once (their DATA
    frames interleaved), without Content-Length: [(status, answer)] in order."""
    import socket
    import ssl

    import h2.config
    import h2.connection
    import h2.events
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # mitmproxy's own CA
    ctx.set_alpn_protocols(["h2"])
    sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30), server_hostname="127.0.0.1")
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sids = []
    for _ in bodies:
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(":method", "POST"), (":path", "/mcp"), (":scheme", "https"), (":authority", f"127.0.0.1:{port}"),
                                ("content-type", "application/json"), ("accept", "application/json, text/event-stream"),
                                ("mcp-session-id", session)])
        sids.append(sid)
    status, data, sent, ended = {s: 0 for s in sids}, {s: b"" for s in sids}, {s: 0 for s in sids}, set()

    def pump() -> None:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        for ev in conn.receive_data(chunk):
            if isinstance(ev, h2.events.ResponseReceived):
                status[ev.stream_id] = int(dict(ev.headers)[b":status"])
            elif isinstance(ev, h2.events.DataReceived):
                data[ev.stream_id] += ev.data
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                ended.add(ev.stream_id)
            elif isinstance(ev, h2.events.StreamReset):
                raise ConnectionError(f"stream reset: {ev.error_code}")
        sock.sendall(conn.data_to_send())

    try:
        sock.sendall(conn.data_to_send())
        while any(sent[s] < len(b) for s, b in zip(sids, bodies)):
            moved = False
            for s, b in zip(sids, bodies):  # a frame of each in turn
                room = min(conn.local_flow_control_window(s), conn.max_outbound_frame_size, len(b) - sent[s])
                if room > 0:
                    conn.send_data(s, b[sent[s]:sent[s] + room], end_stream=sent[s] + room == len(b))
                    sent[s] += room
                    moved = True
            sock.sendall(conn.data_to_send())
            if not moved:
                pump()
        while len(ended) < len(sids):
            pump()
        return [(status[s], data[s]) for s in sids]
    finally:
        sock.close()


def test_streamed_bodies_of_two_concurrent_http2_streams_both_reach_an_http11_server_framed(server, tmp_path):
    """Two streams of one HTTP/2 connection at once (mitmproxy opens a server connection for each,
    HTTP/2 -> HTTP/1.1): each waiting flow is framed by a connection's handshake, both arrive whole."""
    ca = ThrowawayCA(tmp_path / "ca")
    with TLSFront(ca, server) as front, Proxy(f"https://127.0.0.1:{front.port}", tmp_path, options={
            "mcpx_max_body": "64KiB", "ssl_verify_upstream_trusted_ca": ca.ca_pem}) as px:
        c = Client(px.port)
        c.initialize("2025-03-26")
        bodies = [big_call(9, 4 * LIMIT), big_call(10, 5 * LIMIT)]
        answers = h2_posts(px.port, bodies, c.session)
        c.close()
        assert "Traceback" not in px.output()
    assert [(st, orjson.loads(a)) for st, a in answers] == [
        (200, {"jsonrpc": "2.0", "id": rid, "result": RESULTS["tools/call"]}) for rid in (9, 10)]
    calls = [(h.get("transfer-encoding"), h.get("content-length"), b) for m, p, h, b in front.requests()
             if b"tools/call" in b]  # (after the initialize exchange), in the order they arrived
    assert sorted(calls, key=lambda r: len(r[2])) == [("chunked", None, b) for b in bodies]
