"""A client request whose session id mcpx cannot open, with a body mitmproxy streams, through the
real mitmdump (found by an adversarial review of addons/requests.py ``requestheaders``).

mcpx sets mitmproxy's ``stream_large_bodies`` to ``mcpx_max_body``: a request body above it (by its
Content-Length, or once the buffered body of a chunked request grows past it) is streamed to the
server as it arrives, and the ``request`` hook runs only after the last byte went up. Before, such
a request with an unknown session id was streamed to the server while its record said "answered
404, nothing forwarded" (mcpx cleared ``request.stream`` in ``requestheaders``, and mitmproxy set it
again once the buffered body passed the bound; a chunked one was not looked at before its body).
Now the session is judged from the headers, in ``requestheaders``: the request goes to mcpx's own
in-process endpoint instead of the server, which reads the body to its end and gives the 404 of an
unknown session; a body that stays small is answered from the ``request`` hook as before (with the
request's id). Nothing reaches the server, and the record says so truthfully.

The upstream is a scripted stdlib server: it only records every request it receives (a real
server cannot tell what it did not receive).
"""
from __future__ import annotations

import http.client
import time

import orjson
import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

LIMIT = 64 << 10  # mcpx_max_body (its minimum)
TOOLS_LIST = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
RESULTS = {"tools/list": {"tools": []}, "tools/call": {"content": [{"type": "text", "text": "ok"}]}}


class Handler(ScriptedMcpHandler):
    SERVER_INFO = {"name": "recorder", "version": "1"}
    SESSION = "recorder-1"
    #: (method, path, Mcp-Session-Id, body length) of every request the server received
    seen: list[tuple] = []
    #: how each request's body was framed: "chunked", "content-length" or "none"
    framing: list[str] = []

    def _body(self) -> bytes:
        Handler.framing.append("chunked" if "chunked" in self.headers.get("transfer-encoding", "").lower()
                               else "content-length" if "content-length" in self.headers else "none")
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                out += self.rfile.read(size)
                self.rfile.readline()
                if size == 0:
                    return out
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def do_POST(self):
        raw = self._body()
        Handler.seen.append(("POST", self.path, self.headers.get("mcp-session-id"), len(raw)))
        body = orjson.loads(raw)
        if body.get("method") == "initialize":
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": body["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": self.SERVER_INFO}}), {"mcp-session-id": self.SESSION})
        elif "id" not in body:
            self.send_accepted()
        else:
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": RESULTS[body["method"]]}))


@pytest.fixture
def server():
    yield from serve(Handler, "seen", "framing")


def big_call(rid: int, size: int) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                         "params": {"name": "x", "arguments": {"blob": "B" * size}}})


def post(port: int, body: bytes, session: str, chunked: bool, conn: http.client.HTTPConnection | None = None
         ) -> tuple[int, dict, bytes]:
    """POST ``body`` with Content-Length or chunked (in 16 KiB pieces), on ``conn`` or a new connection."""
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-session-id": session}
    try:
        if chunked:
            conn.request("POST", "/mcp", (body[i:i + (16 << 10)] for i in range(0, len(body), 16 << 10)),
                         headers, encode_chunked=True)
        else:
            conn.request("POST", "/mcp", body, headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        if own:
            conn.close()


NOT_FOUND = {"code": -32001, "message": "Session not found"}
DOES_NOT_OPEN = "session id does not open with any session key (tampered, truncated or sealed with another key)"
NOT_ISSUED = "not a session id mcpx issued (or one mcpx no longer knows)"


def tampered(token: str) -> str:
    return token[:40] + ("A" if token[40] != "A" else "B") + token[41:]


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("size", [4 * LIMIT, LIMIT // 4], ids=["above-max-body", "below-max-body"])
@pytest.mark.parametrize("kind", ["tampered-token", "plain-id"])
def test_an_unknown_session_is_answered_404_and_nothing_reaches_the_server(server, tmp_path, framing, size, kind):
    """Whatever the body's size and framing: HTTP 404 -32001 from mcpx, the server receives nothing
    after the initialize exchange, one answer-locally record; the session mcpx knows goes on. A body
    mcpx reads (below mcpx_max_body) gets its request's id in the error; one it does not read, null."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_max_body": "64KiB"}) as px:
        c = Client(px.port)
        c.initialize("2025-03-26")
        assert c.session.startswith("mcpx1.")
        before = list(Handler.seen)
        n_records = len(px.changes())
        sid = tampered(c.session) if kind == "tampered-token" else "unknown-1"  # not the server's own id: mcpx knows that one
        conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
        read = size < LIMIT
        for rid in (9, 10):  # twice on one connection: it stays open, as after any 404
            status, headers, answer = post(px.port, big_call(rid, size), sid, framing == "chunked", conn)
            assert (status, headers["content-type"], headers.get("connection"), orjson.loads(answer)) == (
                404, "application/json", None, {"jsonrpc": "2.0", "id": rid if read else None, "error": NOT_FOUND})
        conn.close()
        time.sleep(0.3)
        assert Handler.seen == before  # nothing forwarded
        why = DOES_NOT_OPEN if kind == "tampered-token" else NOT_ISSUED
        assert [(r["pointer"], r["action"], r["rule"], r["direction"], r["session"], r["jsonrpc_id"], r["detail"])
                for r in px.changes()[n_records:]] == [
            ("header:Mcp-Session-Id", "answer-locally", "TR-session-id", "c2s", None, rid if read else None,
             f"unknown session ({why}): answered 404, nothing forwarded") for rid in (9, 10)]
        st, _, msgs = c.rpc(TOOLS_LIST)  # the session mcpx knows is untouched
        assert (st, msgs) == (200, [{"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}])
        assert Handler.seen[len(before):] == [("POST", "/mcp", "recorder-1", len(orjson.dumps(TOOLS_LIST)))]
        c.close()
        assert "Traceback" not in px.output()


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("size", [4 * LIMIT, LIMIT // 4], ids=["above-max-body", "below-max-body"])
def test_a_body_of_a_known_session_reaches_the_server_with_its_session_id(server, tmp_path, framing, size):
    """The other side: in a session mcpx knows, a body above mcpx_max_body is streamed to the server
    byte for byte with the server's own session id, one passthrough record; a chunked one too (before,
    mcpx's token went to the server: the chunked body was streamed before mcpx saw the request). One
    below it is read and goes as any request: no record."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_max_body": "64KiB"}) as px:
        c = Client(px.port)
        c.initialize("2025-06-18")
        n_records = len(px.changes())
        body = big_call(9, size)
        status, _, answer = post(px.port, body, c.session, framing == "chunked")
        assert (status, orjson.loads(answer)) == (200, {"jsonrpc": "2.0", "id": 9, "result": RESULTS["tools/call"]})
        assert Handler.seen[-1] == ("POST", "/mcp", "recorder-1", len(body))
        time.sleep(0.3)
        expected = []
        if size > LIMIT:
            n = f"of {len(body)} bytes" if framing == "content-length" else "(streamed by mitmproxy)"
            expected = [("passthrough", "c2s", px.handle(c.session), f"body {n} exceeds mcpx_max_body: passed through untouched")]
        assert [(r["action"], r["direction"], r["session"], r["detail"]) for r in px.changes()[n_records:]] == expected
        c.close()
        assert "Traceback" not in px.output()


def h2_post(port: int, body: bytes, session: str) -> tuple[int, dict, bytes]:
    """POST ``body`` over HTTP/2 (TLS, ALPN h2: mitmproxy has no h2c), without Content-Length as
    browsers send it, within the flow-control windows (the ``h2`` library mitmproxy itself uses)."""
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
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(":method", "POST"), (":path", "/mcp"), (":scheme", "https"), (":authority", f"127.0.0.1:{port}"),
                            ("content-type", "application/json"), ("accept", "application/json, text/event-stream"),
                            ("mcp-session-id", session)])
    status, headers, data, sent, ended = 0, {}, b"", 0, False

    def pump() -> None:
        nonlocal status, headers, data, ended
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        for ev in conn.receive_data(chunk):
            if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id == sid:
                headers = {k.decode(): v.decode() for k, v in ev.headers}
                status = int(headers[":status"])
            elif isinstance(ev, h2.events.DataReceived) and ev.stream_id == sid:
                data += ev.data
                conn.acknowledge_received_data(ev.flow_controlled_length, sid)
            elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == sid:
                ended = True
            elif isinstance(ev, h2.events.StreamReset) and ev.stream_id == sid:
                raise ConnectionError(f"stream reset: {ev.error_code}")
        sock.sendall(conn.data_to_send())

    try:
        sock.sendall(conn.data_to_send())
        while sent < len(body):
            room = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size, len(body) - sent)
            if room <= 0:
                pump()
                continue
            conn.send_data(sid, body[sent:sent + room], end_stream=sent + room == len(body))
            sent += room
            sock.sendall(conn.data_to_send())
        while not ended:
            pump()
        return status, headers, data
    finally:
        sock.close()


@pytest.mark.parametrize("size", [4 * LIMIT, LIMIT // 4], ids=["above-max-body", "below-max-body"])
def test_an_unknown_session_over_http2_is_answered_404(server, tmp_path, size):
    """The same over HTTP/2, whose body has no Content-Length: mitmproxy streams it once it grows
    past mcpx_max_body, chunked (mcpx's endpoint reads it to its end)."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_max_body": "64KiB"}) as px:
        c = Client(px.port)
        c.initialize("2025-03-26")
        before = list(Handler.seen)
        n_records = len(px.changes())
        status, headers, answer = h2_post(px.port, big_call(9, size), tampered(c.session))
        read = size < LIMIT
        assert (status, headers["content-type"], orjson.loads(answer)) == (
            404, "application/json", {"jsonrpc": "2.0", "id": 9 if read else None, "error": NOT_FOUND})
        time.sleep(0.3)
        assert Handler.seen == before
        assert [(r["action"], r["rule"], r["session"], r["jsonrpc_id"], r["detail"]) for r in px.changes()[n_records:]] == [
            ("answer-locally", "TR-session-id", None, 9 if read else None,
             f"unknown session ({DOES_NOT_OPEN}): answered 404, nothing forwarded")]
        c.close()
        assert "Traceback" not in px.output()


@pytest.mark.parametrize("size", [4 * LIMIT, LIMIT // 4], ids=["above-max-body", "below-max-body"])
def test_a_body_of_a_known_session_over_http2_reaches_the_server(server, tmp_path, size):
    """An HTTP/2 body without Content-Length that mitmproxy streams to the HTTP/1.1 server: it goes
    chunked (before: with no length and no framing, so the server could not find its end), with the
    server's own session id; one read whole gets its Content-Length, as before."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_max_body": "64KiB"}) as px:
        c = Client(px.port)
        c.initialize("2025-03-26")
        n_records = len(px.changes())
        body = big_call(9, size)
        status, _, answer = h2_post(px.port, body, c.session)
        assert (status, orjson.loads(answer)) == (200, {"jsonrpc": "2.0", "id": 9, "result": RESULTS["tools/call"]})
        assert Handler.seen[-1] == ("POST", "/mcp", "recorder-1", len(body))
        assert Handler.framing[-1] == ("chunked" if size > LIMIT else "content-length")
        time.sleep(0.3)
        expected = [("passthrough", "c2s", px.handle(c.session),
                     "body (streamed by mitmproxy) exceeds mcpx_max_body: passed through untouched")] if size > LIMIT else []
        assert [(r["action"], r["direction"], r["session"], r["detail"]) for r in px.changes()[n_records:]] == expected
        c.close()
        assert "Traceback" not in px.output()
