"""Framing a streamed request body of unknown length for an HTTP/1.1 server.

An HTTP/2 (or HTTP/3) request may come without Content-Length: its frames end the body. mitmproxy
(12.3.1, ``proxy/layers/http/_http1.py`` ``Http1Client.send``) turns it into an HTTP/1.1 request
for an HTTP/1.1 server as it is, with neither Content-Length nor Transfer-Encoding, and sends the body
bytes after it unframed: the server reads a body of 0 bytes and takes the rest for garbage
(mitmproxy answers the client 502 "server closed connection"). Bare mitmdump does this for any such
body; mcpx gives a body it reads whole its Content-Length (the ``request`` hook), but one above
``mcpx_max_body`` is streamed (mcpx sets ``stream_large_bodies`` from it) and its headers go out before
any hook sees the whole body. ``Transfer-Encoding: chunked`` frames it: mitmproxy then sends each
piece as a chunk and the last-chunk at the end.

The header must not go to an HTTP/2 server (RFC 9113 8.2.2; mitmproxy's HTTP/2 client sends the
headers as they are). Over plain http the server speaks HTTP/1.1 (mitmproxy has no h2c): decided in
``requestheaders``. Over https it depends on the ALPN the server picks, unknown in ``requestheaders``
when the connection is not open yet (``connection_strategy`` lazy, or a new connection: mitmproxy
opens one per stream for HTTP/2 -> HTTP/1.1). mitmproxy opens it in ``start_request_stream`` and sends
the headers of ``flow.request`` right after (no hook between), so the decision is made in the
``tls_established_server`` hook of that connection, which runs in between: the flows of that client
connection waiting for a server connection to the same address are framed if the server did not
pick h2.
"""

from __future__ import annotations

from mitmproxy import connection, http, tls


def _h2(conn: connection.Server) -> bool:
    return conn.alpn == b"h2"


class UpstreamFraming:
    """The addon; :meth:`unknown_length` is called by ``ClientRequests.requestheaders``."""

    name = "mcpx.framing"

    def __init__(self) -> None:
        #: client connection id -> flows whose https server connection is not known yet, oldest first
        self.waiting: dict[str, list[http.HTTPFlow]] = {}

    def unknown_length(self, flow: http.HTTPFlow) -> None:
        """``flow``: an HTTP/2 or HTTP/3 request without Content-Length, in ``requestheaders``. Frames it
        (``transfer-encoding: chunked``) now when the server is known to speak HTTP/1.1 (plain http, or
        an open TLS connection without h2), else once its TLS connection is established
        (:meth:`tls_established_server`). A body mitmproxy then reads whole gets its Content-Length in
        the ``request`` hook instead (the header added here is undone there with the others)."""
        req = flow.request
        if "transfer-encoding" in req.headers:
            return
        server = flow.server_conn
        if req.scheme == "http":
            req.headers["transfer-encoding"] = "chunked"
        elif server.tls_established and server.address == (req.host, req.port):
            # an open connection (connection_strategy eager): the first stream uses it; a later one on an
            # HTTP/1.1 server gets a new connection to the same server (HTTP/2 -> HTTP/1.1: one per stream)
            if not _h2(server):
                req.headers["transfer-encoding"] = "chunked"
        else:
            self.waiting.setdefault(flow.client_conn.id, []).append(flow)

    def tls_established_server(self, data: tls.TlsData) -> None:
        """A TLS connection to a server is up, its ALPN known: the streamed flows of the same client
        waiting for a connection to that address get ``transfer-encoding: chunked`` unless it is h2
        (their headers are sent next). A flow mitmproxy did not stream (read whole) is left alone."""
        flows = self.waiting.get(data.context.client.id)
        if not flows:
            return
        conn = data.conn
        assert isinstance(conn, connection.Server)
        for flow in list(flows):
            req = flow.request
            if not req.stream or conn.address != (req.host, req.port):
                continue
            flows.remove(flow)
            if not _h2(conn) and "transfer-encoding" not in req.headers:
                req.headers["transfer-encoding"] = "chunked"
        if not flows:
            del self.waiting[data.context.client.id]

    def _drop(self, flow: http.HTTPFlow) -> None:
        flows = self.waiting.get(flow.client_conn.id)
        if flows and flow in flows:
            flows.remove(flow)
            if not flows:
                del self.waiting[flow.client_conn.id]

    def request(self, flow: http.HTTPFlow) -> None:
        """Its body was read (whole: framed by Content-Length, the ``request`` hook; streamed: sent)."""
        self._drop(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._drop(flow)

    def client_disconnected(self, client: connection.Client) -> None:
        self.waiting.pop(client.id, None)
