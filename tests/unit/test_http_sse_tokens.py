"""The HTTP+SSE endpoint's sealed token (addon/mcpx_core/transport/http_sse/serve.py): a POST to the
endpoint is the transport's only with a token that opens, names this transport and a stream this
process serves; the endpoint's token never opens a session as ``Mcp-Session-Id`` (session.py), and a
session's token never opens an endpoint. Each refusal is the 404 an SDK server gives an unknown session."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from mitmproxy.test import tflow

from mcpx_core import seal
from mcpx_core.bridge import Answer
from mcpx_core.session import SessionTracker, Unknown, endpoint_digest
from mcpx_core.transport.http_sse import wire
from mcpx_core.transport.http_sse.serve import HttpSseTransport, TransportSession

URL = "http://127.0.0.1:3001/mcp"
SEALER = seal.Sealer([seal.new_key()])


def transport() -> HttpSseTransport:
    state = SimpleNamespace(tracker=SessionTracker(sealer=SEALER), sender=SimpleNamespace(available=lambda _f: True))
    return HttpSseTransport(state)


def post(t: HttpSseTransport, token: str, body: bytes = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'):
    f = tflow.tflow()
    f.request.method, f.request.path, f.request.content = "POST", wire.endpoint_url("/sse", token), body
    out = asyncio.run(t.request(f))
    return out, f


def endpoint_token(sid: str = "a1b2") -> str:
    return SEALER.seal(seal.Facts(sid=sid, bridge=seal.ENDPOINT_ONLY, endpoint=endpoint_digest(URL)))


def test_a_token_whose_stream_this_process_does_not_serve_gets_404():
    out, f = post(transport(), endpoint_token())
    assert (out.status, out.body) == (404, b"Could not find session")
    assert f.metadata["mcpx_transport"] == seal.ENDPOINT_ONLY  # answered here: no other stage sees it


def test_a_session_token_or_a_tampered_one_opens_no_endpoint():
    t = transport()
    t.sessions["a1b2"] = TransportSession("a1b2", URL, endpoint_digest(URL), stream=None, client_conn=None, headers={})
    session_token = SEALER.seal(seal.Facts(sid="a1b2", endpoint=endpoint_digest(URL)))  # a session's, same sid
    for token in (session_token, endpoint_token()[:-4] + "AAAA", seal.Sealer([seal.new_key()]).seal(
            seal.Facts(sid="a1b2", bridge=seal.ENDPOINT_ONLY, endpoint=endpoint_digest(URL)))):
        out, _ = post(t, token)
        assert isinstance(out, Answer) and (out.status, out.body) == (404, b"Could not find session"), token


def test_an_open_stream_takes_only_json():
    t = transport()
    t.sessions["a1b2"] = TransportSession("a1b2", URL, endpoint_digest(URL), stream=None, client_conn=None, headers={})
    out, _ = post(t, endpoint_token(), b"not json")
    assert (out.status, out.body) == (400, b"Could not parse message")


def test_the_endpoint_token_is_no_session_id():
    tracker = SessionTracker(sealer=SEALER)
    found = tracker.lookup(endpoint_token(), None, None, endpoint=URL)
    assert isinstance(found, Unknown) and found.reason == "an HTTP+SSE endpoint's token, not a session id"


def test_requests_that_are_not_the_transports_go_on():
    t = transport()
    f = tflow.tflow()  # GET without Accept: text/event-stream
    assert asyncio.run(t.request(f)) is None and "mcpx_transport" not in f.metadata
    f.request.method, f.request.path = "POST", "/messages?session_id=abc"  # an SDK server's own endpoint
    assert asyncio.run(t.request(f)) is None
    t.configure(("off",))
    out, f = post(t, endpoint_token())
    assert out is None and "mcpx_transport" not in f.metadata


def test_a_streamable_http_clients_sessionless_get_stream_is_never_served():
    """A client of a stateless Streamable HTTP server opens its GET stream without a session id, as an
    HTTP+SSE client opens its stream: mcpx tells them apart by the revision header such a client sends
    from 2025-06-18 on, and by the session its connection or host holds at that endpoint (its
    ``initialize`` came first); neither is probed nor served, and the server answers its GET as always."""
    from mcpx_core import upstream

    probes: list[str] = []

    async def send(flow, method, body, headers, purpose, **kw):
        probes.append(flow.request.path)
        raise upstream.UpstreamError("the test's server is not there")
    tracker = SessionTracker(sealer=SEALER)
    sender = SimpleNamespace(available=lambda _f: True, send=send, headers_for=lambda *_a, **_k: {})
    t = HttpSseTransport(SimpleNamespace(tracker=tracker, sender=sender))

    def get(peer, **headers):
        f = tflow.tflow()
        f.request.url = URL
        f.request.headers["accept"] = "text/event-stream"
        f.request.headers.update(headers)
        f.client_conn.peername = peer
        return asyncio.run(t.request(f))
    assert get(("127.0.0.1", 5000), **{"mcp-protocol-version": "2025-06-18"}) is None and probes == []
    tracker.start({"protocolVersion": "2025-03-26"}, "k1", ("conn:127.0.0.1:5000", "host:127.0.0.1"), endpoint=URL)
    assert get(("127.0.0.1", 5000)) is None and get(("127.0.0.1", 5001)) is None and probes == []  # its connection, its host
    assert get(("10.0.0.2", 5000)) is None and probes == ["/mcp"]  # another host: an HTTP+SSE client, asked about


def test_a_cancelled_request_is_owed_no_answer():
    """The client's ``notifications/cancelled`` takes its request out of the legs in flight: when such a
    leg ends without that answer (the server owes none, schema/2024-11-05 CancelledNotification), mcpx
    makes up no error for it, while another request of the leg still gets one."""
    from mcpx_core.transport.http_sse.legs import Leg, Legs

    t = transport()
    ts = TransportSession("a1b2", URL, endpoint_digest(URL), stream=None, client_conn=None, headers={})
    t.sessions["a1b2"] = ts
    events: list[bytes] = []
    leg = Leg("message", [5, 6], tflow.tflow(), events.append, lambda _leg: None)
    ts.inflight.add(leg)
    t._spawn = lambda coro: coro.close()  # (the notification's own leg is not sent here)
    out, _ = post(t, endpoint_token(), b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}')
    assert out.status == 202 and leg.ids == [6]
    Legs._owed(leg, "mcpx: why")
    assert events == [b'event: message\ndata: {"jsonrpc":"2.0","id":6,"error":{"code":-32603,"message":"mcpx: why"}}\n\n']
    Legs._owed(leg, "mcpx: why")  # once only
    assert len(events) == 1
