"""addons/framing.py ``UpstreamFraming``: which streamed HTTP/2 request of unknown length gets
``transfer-encoding: chunked``, and when (mitmproxy's flow and connection objects, no proxy; the
end-to-end cases are tests/e2e/test_h2_body_to_https_upstream.py)."""
from __future__ import annotations

from mitmproxy import connection, tls
from mitmproxy.proxy import context
from mitmproxy.test import tflow

from mcpx_core.addons.framing import UpstreamFraming


def h2_flow(scheme: str = "https", connected: bool = False, alpn: bytes | None = None):
    """An HTTP/2 POST to 127.0.0.1:8443 without Content-Length; its server connection open (TLS
    established, ``alpn``) or the placeholder of a lazy one."""
    f = tflow.tflow()
    f.request.http_version, f.request.scheme, f.request.host, f.request.port = "HTTP/2.0", scheme, "127.0.0.1", 8443
    f.request.method = "POST"
    del f.request.headers["content-length"]
    f.server_conn = connection.Server(address=("127.0.0.1", 8443))
    if connected:
        f.server_conn.timestamp_tls_setup, f.server_conn.alpn = 1.0, alpn
    return f


def established(flow, alpn: bytes | None, address=("127.0.0.1", 8443)) -> tls.TlsData:
    """The ``tls_established_server`` data of a new connection for ``flow``'s client."""
    server = connection.Server(address=address)
    server.alpn = alpn
    return tls.TlsData(server, context.Context(flow.client_conn, None))  # type: ignore[arg-type]


def te(flow) -> str | None:
    return flow.request.headers.get("transfer-encoding")


def test_plain_http_is_framed_at_once():
    fr, f = UpstreamFraming(), h2_flow("http")
    fr.unknown_length(f)
    assert (te(f), fr.waiting) == ("chunked", {})


def test_an_open_connection_decides_at_once():
    fr = UpstreamFraming()
    h1, h2 = h2_flow(connected=True, alpn=b"http/1.1"), h2_flow(connected=True, alpn=b"h2")
    none = h2_flow(connected=True, alpn=None)  # no ALPN: HTTP/1.1
    for f in (h1, h2, none):
        fr.unknown_length(f)
    assert (te(h1), te(h2), te(none), fr.waiting) == ("chunked", None, "chunked", {})


def test_a_new_connection_decides_when_its_tls_is_up():
    fr = UpstreamFraming()
    f = h2_flow()
    fr.unknown_length(f)
    assert (te(f), fr.waiting) == (None, {f.client_conn.id: [f]})
    f.request.stream = True  # mitmproxy streams it: the connection is opened for it now
    fr.tls_established_server(established(f, None))
    assert (te(f), fr.waiting) == ("chunked", {})


def test_an_h2_server_gets_no_transfer_encoding():
    fr = UpstreamFraming()
    f = h2_flow()
    fr.unknown_length(f)
    f.request.stream = True
    fr.tls_established_server(established(f, b"h2"))
    assert (te(f), fr.waiting) == (None, {})


def test_a_body_read_whole_or_another_address_is_left_alone():
    fr = UpstreamFraming()
    whole, other = h2_flow(), h2_flow()
    other.client_conn = whole.client_conn
    for f in (whole, other):
        fr.unknown_length(f)
    other.request.stream = True
    fr.tls_established_server(established(whole, b"http/1.1", address=("127.0.0.1", 9999)))  # whole: not streamed; other: elsewhere
    assert (te(whole), te(other), fr.waiting) == (None, None, {whole.client_conn.id: [whole, other]})
    fr.request(whole)  # read whole: the request hook frames it with its Content-Length
    fr.error(other)
    assert fr.waiting == {}


def test_a_client_that_goes_forgets_its_flows():
    fr = UpstreamFraming()
    f = h2_flow()
    fr.unknown_length(f)
    fr.client_disconnected(f.client_conn)
    assert fr.waiting == {}


def test_a_header_the_client_sent_stays():
    fr = UpstreamFraming()
    f = h2_flow("http")
    f.request.headers["transfer-encoding"] = "gzip, chunked"
    fr.unknown_length(f)
    assert (te(f), fr.waiting) == ("gzip, chunked", {})
