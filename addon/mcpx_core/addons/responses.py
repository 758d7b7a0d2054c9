"""The ``responseheaders``, ``response`` and ``error`` hooks: server -> client.

SSE responses are rewritten event by event as they stream (``flow.response.stream``); JSON bodies
whole in ``response``, a large one in the worker thread (:mod:`.worker`). In a sealed session the server's own ``Mcp-Session-Id`` never reaches the
client: a response that repeats it carries the client's token instead (some clients adopt the id of
any response).
"""

from __future__ import annotations

from mitmproxy import ctx, http
from mitmproxy.proxy.mode_specs import ReverseMode

from .. import upstream
from ..rules.headers import LOCATION_HEADERS, response_locations
from ..framing.encoding import stream_decoder
from ..rewrite import Exchange, SSERewriter, declares_json
from ..session import SESSION_HEADER
from . import unreachable
from .headers import decoded, header_map, media_type
from .state import State


class ServerResponses:
    name = "mcpx.responses"

    def __init__(self, state: State) -> None:
        self.state = state

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        st = self.state
        if upstream.is_own(flow):
            st.sender.responseheaders(flow)
            return
        unreachable.forget(flow)
        exch = st.exchanges.get(flow.id)
        if flow.response is not None:
            self._locations(flow, exch)
        if exch is not None and exch.streamed and flow.response is not None:
            flow.response.stream = True  # a stream mcpx writes (bridge/stream.py): through as it comes
            return
        if exch is None or not exch.is_mcp or flow.response is None or exch.answered:
            if flow.response is not None and flow.live and (exch is None or not exch.answered) \
                    and media_type(header_map(flow.response)[0]) == "text/event-stream":
                # an SSE stream mcpx does not read (not MCP to it: e.g. the 2024-11-05 HTTP+SSE transport's
                # GET /sse) is of unbounded length: through as it comes, not held up to stream_large_bodies
                flow.response.stream = True
            return
        s = exch.session
        if exch.initialize is not None:
            # key the session by the server's id now: a server may keep the initialize SSE stream open
            # while the client already sends its next requests with that id (unsealed sessions)
            st.rewriter.session_learned(exch, flow.response.headers.get(SESSION_HEADER))
        elif s is not None and s.token is not None and SESSION_HEADER in flow.response.headers:
            flow.response.headers[SESSION_HEADER] = s.token
        if not flow.live:  # offline replay: nothing streams, the response hook rewrites the whole
            return  # (decoded) body and keeps its Content-Encoding
        hv, _ = header_map(flow.response)
        if media_type(hv) != "text/event-stream":
            size = hv.get("content-length")
            if size and size.isdigit() and int(size) > st.max_body:
                flow.response.stream = True
                if declares_json(hv.get("content-type")):  # not MCP otherwise (e.g. an HTML page): no record
                    st.rewriter.passthrough(exch, "s2c", f"body of {size} bytes exceeds mcpx_max_body: streamed through untouched")
            return
        decoder = None
        enc = hv.get("content-encoding", "").strip()
        if enc and enc.lower() != "identity":
            try:
                decoder = stream_decoder(enc, st.max_body)  # one chunk decodes to at most mcpx_max_body
            except ValueError as e:
                st.rewriter.passthrough(exch, "s2c", f"{e}: SSE stream forwarded untouched")
                flow.response.stream = True
                return
            del flow.response.headers["content-encoding"]
        if "content-length" in hv:
            del flow.response.headers["content-length"]
            if flow.response.http_version == "HTTP/1.1":
                flow.response.headers["transfer-encoding"] = "chunked"
        stream = SSERewriter(st.rewriter, exch, decoder, keep=st.keep_original, max_event=st.max_body)
        st.streams[flow.id] = stream
        flow.response.stream = stream.chunks

    def _locations(self, flow: http.HTTPFlow, exch: Exchange | None) -> None:
        """TR-location (rules/headers.py): in reverse mode, the server's own origin in ``Location`` or
        ``Content-Location`` becomes the one the client reached mcpx at: the scheme of the client's
        connection, the host it asked for by TLS SNI, else the address it connected to, and that port
        (mitmproxy replaces the client's ``Host`` with the server's; with ``keep_host_header`` the server
        sees the client's own and needs no rewrite). A record on MCP flows (non-MCP traffic gets none)."""
        resp = flow.response
        if not any(name in resp.headers for name in LOCATION_HEADERS):
            return
        spec = flow.client_conn.proxy_mode
        if not isinstance(spec, ReverseMode) or getattr(ctx.options, "keep_host_header", False):
            return
        sock = flow.client_conn.sockname
        if not sock:
            return
        host, port = spec.address
        up = ("https" if spec.scheme in ("https", "tls") else "http", host.lower(), port)
        tls = flow.client_conn.tls_established
        client = ("https" if tls else "http", (flow.client_conn.sni or sock[0]).lower(), sock[1])
        sets, changes = response_locations({k: v for k, v in resp.headers.items() if k.lower() in ("location", "content-location")},
                                           up, client)
        for name, value in sets.items():
            resp.headers[name] = value
        if changes and exch is not None and exch.is_mcp:
            st = self.state
            st.rewriter.record(exch, changes, "s2c", *exch.revisions)

    async def response(self, flow: http.HTTPFlow) -> None:
        st = self.state
        if upstream.is_own(flow):
            return
        # the flow stays live while its body is rewritten: a server request in a JSON answer is
        # answered on the client's behalf for it (State.on_reply)
        exch, stream = st.forget(flow, live=True)
        try:
            if exch is None or flow.response is None:
                return
            if exch.is_mcp:
                try:
                    await self._response(flow, exch, stream)
                except Exception as e:  # never lose a message
                    st.rewriter.passthrough(exch, "s2c", f"internal error: {type(e).__name__}: {e}")
                s = exch.session
                if exch.initialize is not None and not exch.answered and s is not None:
                    # an initialize forwarded as it is (a batch, an unsealed session): settled as one mcpx
                    # sends (actions.mint_session); refused, no session stays bound to the connection
                    st.tracker.settle(s, flow.response.status_code, flow.response.headers.get(SESSION_HEADER))
            st.annotate(flow, exch)
        finally:
            st.done(flow)

    async def _response(self, flow: http.HTTPFlow, exch: Exchange, stream: SSERewriter | None) -> None:
        st = self.state
        resp = flow.response
        if exch.answer_stream is not None:  # a stream mcpx wrote: what it delivered is the flow's body (views, -w)
            if resp.raw_content in (None, b""):
                resp.content = exch.answer_stream.delivered
            return
        if exch.answered:
            return  # mcpx wrote this response itself, already for the client's revision
        if exch.initialize is not None:
            st.rewriter.session_learned(exch, resp.headers.get(SESSION_HEADER))
        if resp.status_code == 404 and exch.session is not None and exch.session.bridge in st.bridges \
                and hasattr(st.bridges[exch.session.bridge], "forget_session"):
            st.bridges[exch.session.bridge].forget_session(exch.session)  # the server lost a bridge's upstream session
        if flow.request.method == "DELETE" and 200 <= resp.status_code < 300:
            if exch.session is not None and not exch.session.key.startswith("("):
                st.closed.append(exch.session)
                st.tracker.end(exch.session)
            return
        if stream is not None and stream.finished:
            st.resume.closed_early(exch, stream)  # a server that closed it before the answer (SSE polling)
            # streamed live: keep what was delivered (bounded) so views and -w see it
            if stream.original != stream.delivered:
                st.keep_body(flow, "response", bytes(stream.original))
            if resp.raw_content in (None, b""):
                resp.content = bytes(stream.delivered)
            return
        ctype = resp.headers.get("content-type", "")
        sse = media_type(header_map(resp)[0]) == "text/event-stream"
        # a body too large to parse is recorded only if it says it is MCP (JSON or SSE): an HTML page is not
        says_mcp = sse or declares_json(ctype)
        if resp.stream is True:
            if says_mcp and not any(c.action == "passthrough" and c.direction == "s2c" for c in exch.changes):
                st.rewriter.passthrough(exch, "s2c", "body larger than stream_large_bodies (mcpx_max_body unless set): "
                                                     "streamed through untouched")
            return
        if resp.raw_content is None:
            return
        if resp.headers.get("content-encoding", "").strip().lower() not in ("", "identity"):
            decoded_body, why = decoded(resp, st.max_body)
            if decoded_body is None:  # (mitmproxy's own decoder would take a truncated gzip body for whole)
                if says_mcp:
                    st.rewriter.passthrough(exch, "s2c", why)
                return
            body = decoded_body
        else:
            body = resp.raw_content
        if len(body) > st.max_body:
            if says_mcp:
                st.rewriter.passthrough(exch, "s2c", f"body of {len(body)} bytes exceeds mcpx_max_body: passed through untouched")
            return
        # a large body is rewritten in the worker thread, so the loop serves other flows meanwhile (worker.py)
        if sse:
            new = await st.worker.run(len(body), SSERewriter(st.rewriter, exch).whole, body)
            if new == body:
                return
        else:
            new = await st.worker.run(len(body), st.rewriter.response_json, exch, body, ctype)
            if new is None:
                return
        st.keep_body(flow, "response", body)
        resp.content = new

    def done(self) -> None:
        self.state.worker.close()

    def error(self, flow: http.HTTPFlow) -> None:
        st = self.state
        if upstream.is_own(flow):
            return
        unreachable.forget(flow)
        exch, _ = st.forget(flow)
        if exch is not None and exch.deferred is not None and flow.request.stream:
            st.rewriter.flush(exch)  # it went on as its headers said (addons/requests.py requestheaders)
        if exch is not None and exch.is_mcp:
            st.annotate(flow, exch)
