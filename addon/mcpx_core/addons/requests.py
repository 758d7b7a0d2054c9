"""The ``request`` hook: frame the client's request, get its disposition, carry it out."""

from __future__ import annotations

import logging

from mitmproxy import ctx, http

from .. import upstream
from ..seal import PREFIX as TOKEN_PREFIX
from ..session import SESSION_HEADER
from . import unreachable
from ..framing import json_body
from ..bridge import Answer, Pass, Streamed
from ..disposition import AnswerLocally, Bridge, Forward, Hold, MintSession, NeedEra, SplitBatch
from .actions import learn_era, mint_session, refuse_foreign_origin, split_batch
from .headers import decoded, header_fields, header_map, make_response, media_type
from .state import FlowUpstream, State

logger = logging.getLogger("mcpx")

class ClientRequests:
    """Client -> server: every request gets a disposition (:mod:`mcpx_core.disposition`)."""

    name = "mcpx.requests"

    def __init__(self, state: State) -> None:
        self.state = state
        unreachable.install()

    async def requestheaders(self, flow: http.HTTPFlow) -> None:
        """A request whose body mitmproxy streams has its headers sent before the ``request`` hook:
        its session is judged, and its session header translated, now (the body is not parsed anyway).

        mitmproxy streams a body larger than ``stream_large_bodies`` (which mcpx sets to
        ``mcpx_max_body``): from its Content-Length before this hook, or, for a body of unknown length
        (chunked, HTTP/2 without Content-Length), as soon as the part it has buffered grows past that
        size, whatever this hook set. So a POST of unknown length is judged here too: its header edits
        are made now and its records held back (:attr:`Exchange.deferred`); if it stays small, the
        ``request`` hook puts it back as the client sent it and decides from its body, as for any request.

        A request mcpx answers itself (an unknown session's 404) is routed to mcpx's own endpoint
        (:meth:`AnswerStreams.answer`), which reads its body and gives the answer: no byte of it
        reaches the server, however mitmproxy streams it."""
        st = self.state
        req = flow.request
        streams = bool(req.stream)
        if not streams and not _length_unknown(req):
            return  # read whole before the request hook: decided there, from the body
        if upstream.is_own(flow) or not st.sender.available(flow) or st.transport.takes(flow):
            return
        exch = st.exchange(flow)
        if not streams:
            exch.deferred = []
            saved = req.headers.copy()

            def undo() -> None:
                req.headers = saved
            exch.undo = undo
        _, names = header_map(req)
        exch.early = st.rewriter.request(exch, req.method, None, names, live=True)
        if not isinstance(exch.early, (Forward, AnswerLocally)):
            # a bridge (or any stage that reads the body) cannot take a body mitmproxy streams past it: mcpx
            # answers it itself, so that nothing of it, its session token least of all, reaches the server
            exch.early = st.rewriter.unbridgeable(exch)
        match exch.early:
            case Forward(set_headers=sets, remove_headers=removes):
                _edit_headers(req, sets, removes)
                _no_token_upstream(st, req, exch)
            case AnswerLocally(status=status, body=payload, headers=headers):
                await st.answers.ensure()
                exch.undo = st.answers.answer(flow, status, payload, headers)
        if not streams and (req.is_http2 or req.is_http3):
            # mitmproxy streams such a body to an HTTP/1.1 server as it comes, with no length and no
            # framing: the server cannot find its end. Chunked, it can; not an HTTP/2 server (framing.py)
            st.framing.unknown_length(flow)

    async def request(self, flow: http.HTTPFlow) -> None:
        st = self.state
        if upstream.is_own(flow) or st.transport.takes(flow):
            return  # sent by mcpx: already for the server's revision; or answered by a transport (addons/transport.py)
        if not flow.live and isinstance(flow.metadata.get("mcpx"), dict):
            # read from a file mcpx wrote (mitmweb -r): already rewritten; keep bodies and records as they are
            return
        early = st.exchanges.get(flow.id)
        if early is not None and early.early is not None:
            if early.deferred is not None and not flow.request.stream:
                # mitmproxy read the body whole (it stayed below stream_large_bodies): put the request
                # back as the client sent it, forget what the headers alone said, and decide from the body
                if early.undo is not None:
                    early.undo()
            else:
                st.rewriter.flush(early)
                if isinstance(early.early, AnswerLocally):
                    early.answered = True  # mcpx's endpoint answers it (AnswerStreams.answer): nothing forwarded
                else:
                    self._oversize(flow, early)
                st.annotate(flow, early)
                return
        exch = st.exchange(flow)
        req = flow.request
        hv, names = header_map(req)
        if (req.is_http2 or req.is_http3) and req.raw_content and "content-length" not in hv \
                and "transfer-encoding" not in hv:
            # HTTP/2 frames a body without Content-Length; mitmproxy forwards it to an HTTP/1.1
            # server without one, and the server cannot find the body's end (the MCP POST is lost)
            req.headers["content-length"] = str(len(req.raw_content))
        body = req.raw_content if req.method == "POST" else None
        too_big = (len(body) if body else 0) > st.max_body or (req.method == "POST" and req.stream is True)
        undecodable = None
        if too_big:
            body = None
        elif body is not None and hv.get("content-encoding"):
            body, undecodable = decoded(req, st.max_body)
        live = st.sender.available(flow)
        try:
            disposition = st.rewriter.request(exch, req.method, body, names, live=live, all_headers=req.headers)
            if isinstance(disposition, NeedEra) and live:
                await learn_era(st, flow, disposition.origin)
                exch = st.exchange(flow)  # start again: the records of the first pass were none
                disposition = st.rewriter.request(exch, req.method, body, names, live=live, all_headers=req.headers)
        except Exception as e:  # never lose a message
            st.rewriter.passthrough(exch, "c2s", f"internal error: {type(e).__name__}: {e}")
            disposition = Forward()
        if too_big:
            self._oversize(flow, exch)
        match disposition:
            case Forward(body=new, set_headers=sets, remove_headers=removes):
                if undecodable is not None and (exch.is_mcp or media_type(hv) == "application/json"):
                    exch.is_mcp = True
                    st.rewriter.passthrough(exch, "c2s", undecodable)
                _edit_headers(req, sets, removes)
                if new is not None:
                    st.keep_body(flow, "request", body if body is not None else req.get_content(strict=False) or b"")
                    req.content = new
                if st.resume.wants(flow, exch):  # SSE polling toward an older client (bridge/resume.py)
                    await st.resume.start(flow, exch, st.max_body)
            case AnswerLocally(status=status, body=payload, headers=headers):
                exch.answered = True
                flow.response = http.Response.make(status, payload, header_fields(headers))
            case SplitBatch(members=members, set_headers=sets, remove_headers=removes):
                _edit_headers(req, sets, removes)
                if st.sender.available(flow):
                    await self._act(flow, exch, "batch", split_batch(st, flow, exch, members))
                else:  # offline replay (mitmdump -nr, FlowReader): never contact the server; the
                    # split record says what would be sent, the recorded response is rewritten as usual
                    logger.info(f"mcpx: offline flow: batch of {len(members)} messages not split upstream")
            case MintSession():
                await self._act(flow, exch, "initialize", mint_session(st, flow, exch), ", session not sealed")
            case Hold(key=key):  # a bridge answers it later
                logger.debug(f"mcpx: request held by a bridge ({key})")
            case Bridge(name=name):
                await self._bridge(flow, exch, name, body, names)
            case NeedEra():  # offline replay: no probe is sent; the request goes as recorded
                pass
        if flow.response is None and not exch.answered and live:
            _no_token_upstream(st, req, exch)
        if exch.is_mcp and live and flow.response is None and not exch.answered:
            unreachable.expect(flow, lambda reason: self._unreachable(exch, reason))
        st.annotate(flow, exch)

    def _unreachable(self, exch, reason: str) -> http.Response:
        """The answer to a request whose server cannot be connected (addons/unreachable.py)."""
        exch.answered = True
        logger.warning(f"mcpx: the server could not be reached: {reason}")
        self.state.rewriter.passthrough(exch, "c2s", f"the server could not be reached ({reason}): answered HTTP 502 -32603")
        return http.Response.make(502, unreachable.error_body(exch.single_request_id, reason), {"content-type": "application/json"})


    async def _act(self, flow: http.HTTPFlow, exch, what: str, action, forwarded: str = "") -> None:
        """Carry out an action that sends the client's request to the server itself (addons/actions.py).

        An error it raises (an internal fault) must not leave the request to mitmproxy once mcpx has
        sent it (``exch.upstream_sent``): mitmproxy would forward it as well, and the server would get
        it twice. Then the client gets HTTP 502 with a JSON-RPC error -32603, as when the server
        cannot be reached; before that, the request is forwarded untouched (``forwarded`` says what
        else that means). A response the action made already stays. One passthrough record and one
        warning line say which."""
        try:
            await action
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
            if flow.response is not None:
                exch.answered = True
                why = f"{what}: internal error after mcpx made its answer ({error}): that answer delivered"
            elif exch.upstream_sent:
                exch.answered = True
                rid = exch.single_request_id
                body = json_body.dumps({"jsonrpc": "2.0", "id": None if json_body.inexact_number(rid) else rid, "error": {
                    "code": -32603, "message": f"mcpx failed after sending the {what} to the server: {type(e).__name__}"}})
                flow.response = http.Response.make(502, body, {"content-type": "application/json"})
                why = f"{what}: internal error after mcpx sent it to the server ({error}): answered HTTP 502 -32603, not sent again"
            else:
                why = f"{what}: internal error before mcpx sent it ({error}): forwarded untouched{forwarded}"
            logger.warning(f"mcpx: {why}")
            self.state.rewriter.passthrough(exch, "c2s", why)

    async def _bridge(self, flow: http.HTTPFlow, exch, name: str, body: bytes | None, names: dict[str, str]) -> None:
        """Hand the request to the cross-era bridge ``name`` and carry out what it says."""
        st = self.state
        st.on_bridge(flow, name)
        bridge = st.bridges.get(name)
        if bridge is None or not st.sender.available(flow):
            st.rewriter.passthrough(exch, "c2s", f"bridge {name!r} unavailable (offline replay or not loaded): forwarded untouched")
            return
        if refuse_foreign_origin(st, flow, exch):  # mcpx answers for the server: it checks what the server would
            return
        try:
            out = await bridge.request(exch, flow.request.method, body, names, FlowUpstream(st.sender, flow))
        except upstream.UpstreamError as e:  # the server closed, timed out, refused: one line, not a traceback
            logger.warning(f"mcpx: bridge {name}: the server did not answer: {e.reason}")
            st.rewriter.passthrough(exch, "c2s", f"bridge {name}: upstream request failed: {e.reason}")
            out = Answer(502, json_body.dumps({"jsonrpc": "2.0", "id": exch.single_request_id,
                                               "error": {"code": -32603, "message": f"mcpx could not reach the server: {e.reason}"}}))
        except Exception as e:  # never lose a message: the client gets a JSON-RPC error, with a record
            logger.exception("mcpx: bridge failed")
            st.rewriter.passthrough(exch, "c2s", f"bridge {name} failed: {type(e).__name__}: {e}")
            out = Answer(502, json_body.dumps({"jsonrpc": "2.0", "id": exch.single_request_id,
                                               "error": {"code": -32603, "message": f"mcpx bridge failed: {type(e).__name__}"}}))
        match out:
            case Answer(status=status, body=payload, headers=headers, sent=sent, note=note):
                exch.answered = True
                exch.answered_by = note
                if sent is not None:  # what went upstream instead (mcpx's own flow): shown on this flow
                    st.keep_body(flow, "request", flow.request.get_content(strict=False) or b"")
                    flow.request.content = sent
                flow.response = make_response(status, payload, headers)
            case Streamed(stream=stream, note=note):
                exch.answered = exch.streamed = True
                exch.answer_stream = stream
                exch.answered_by = note or "a stream the bridge writes"
                st.keep_body(flow, "request", flow.request.get_content(strict=False) or b"")  # the client's request
                st.answers.route(flow, stream)
                flow.comment = f"mcpx: answered by mcpx ({exch.answered_by})"
            case Pass(body=new, method=m, set=sets, remove=removes):
                _edit_headers(flow.request, sets, removes)
                if m is not None:
                    flow.request.method = m
                if new is not None:
                    st.keep_body(flow, "request", flow.request.get_content(strict=False) or b"")
                    flow.request.content = new

    def _oversize(self, flow: http.HTTPFlow, exch) -> None:
        """The passthrough record of a request body above ``mcpx_max_body`` (MCP traffic only)."""
        hv, _ = header_map(flow.request)
        if exch.is_mcp or media_type(hv) == "application/json":
            exch.is_mcp = True
            n = len(flow.request.raw_content) if flow.request.raw_content is not None else hv.get("content-length")
            size = f"of {n} bytes" if n is not None else "(streamed by mitmproxy)"
            if n is not None and str(n).isdigit() and int(n) <= self.state.max_body:
                # streamed because the user set a smaller stream_large_bodies: say so, not that it is too large
                limit = getattr(ctx.options, "stream_large_bodies", None)
                why = f"body {size} streamed by mitmproxy (stream_large_bodies={limit}), not read: passed through untouched"
            else:
                why = f"body {size} exceeds mcpx_max_body: passed through untouched"
            self.state.rewriter.passthrough(exch, "c2s", why)


def _no_token_upstream(st, req: http.Request, exch) -> None:
    """The last guard before a request goes to the server: a session header that still holds an mcpx
    token (under any spelling of its name, ``Mcp_Session_Id`` included: some servers read ``_`` as ``-``)
    is removed, with a warning and a record. Every path above replaces the token already; this is
    where a path that does not would be caught."""
    for name in [k for k in req.headers if k.lower().replace("_", "-") == SESSION_HEADER]:
        if any(v.strip().startswith(TOKEN_PREFIX) for v in req.headers.get_all(name)):
            del req.headers[name]
            logger.warning(f"mcpx: a session token was about to reach the server in {name}: removed")
            st.rewriter.passthrough(exch, "c2s", f"header {name} held an mcpx session token: removed before the server")


def _length_unknown(req: http.Request) -> bool:
    """Whether a POST's body has a length mitmproxy does not know before reading it (chunked,
    or HTTP/2 and HTTP/3 without Content-Length): mitmproxy streams it once it grows past
    ``stream_large_bodies``."""
    if req.method != "POST" or "content-length" in req.headers:
        return False
    return req.is_http2 or req.is_http3 or "transfer-encoding" in req.headers


def _edit_headers(req: http.Request, sets: dict[str, str], removes: tuple[str, ...]) -> None:
    for name in removes:
        req.headers.pop(name, None)
    for name, value in sets.items():
        req.headers[name] = value
