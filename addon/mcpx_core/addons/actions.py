"""Dispositions that make mcpx send requests itself: a sealed session's initialize, a split batch.

Both go out through :class:`~mcpx_core.upstream.Sender` (mitmproxy's own client-replay core), as
flows of their own, and their answers are rewritten with the same code path as any response.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from mitmproxy import http

from .. import revisions, upstream
from ..bridge import origin_check
from ..changes import Change
from ..framing import json_body
from ..framing.encoding import stream_decoder
from ..framing.sse import SSEParser
from ..rewrite import Exchange, SSERewriter, undecodable_detail
from ..session import AFFINITY_HEADER, SESSION_HEADER, VERSION_HEADER
from .headers import decoded, header_fields, make_response
from .state import State

logger = logging.getLogger("mcpx")

#: response headers not copied from the server's answer onto the one mcpx gives the client
_RESPONSE_HOP = frozenset({"content-length", "connection", "transfer-encoding", "keep-alive", "content-encoding",
                           "trailer", "upgrade", SESSION_HEADER})


def _error(rid, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


@dataclass
class _Minted:
    """How far :func:`mint_session` got: the server's reply, its body as the server sent it (the SSE
    events up to the answer), and the body for the client (rewritten)."""

    reply: upstream.Reply | None = None
    original: bytes | None = None
    body: bytes | None = None


async def mint_session(st: State, flow: http.HTTPFlow, exch: Exchange) -> None:
    """MintSession: send the client's ``initialize`` to the server as mcpx's own flow, wait for
    its answer (the whole JSON body, or the SSE events up to the one that answers it: a server may
    hold the stream open), rewrite it as any answer, seal the session and answer the client with
    the token as ``Mcp-Session-Id``. SSE events the server sends on that stream after the answer
    cannot reach the client (its answer has ended): each is logged as not delivered. An answer that
    does not accept the initialize (HTTP status not 2xx, a JSON-RPC error, no result mcpx could read)
    reaches the client as any answer does, and its session is abandoned
    (:meth:`~mcpx_core.session.SessionTracker.abandon`): nothing sealed, the connection bound to nothing.

    An error raised on the way (an internal fault, e.g. a server session id that cannot be sealed)
    never sends the initialize twice: once the server has answered, the client gets that answer (as
    rewritten so far, else as sent) with the server's own ``Mcp-Session-Id``, the session stays
    unsealed in memory, and one passthrough record and one warning line say why (:func:`_unsealed`).
    An error before the answer goes to the caller (``ClientRequests._act``), which knows from
    ``exch.upstream_sent`` whether the initialize went up."""
    got = _Minted()
    try:
        await _mint(st, flow, exch, got)
    except Exception as e:
        if got.reply is None:
            raise
        _unsealed(st, flow, exch, got, e)


def _unsealed(st: State, flow: http.HTTPFlow, exch: Exchange, got: _Minted, error: Exception) -> None:
    """The client gets the server's answer to its initialize after ``error``: as rewritten when the
    rewrite was done, else as the server sent it, with the server's own session id; the session is
    kept in memory under that id (unsealed), as for an id too long to seal."""
    reply = got.reply
    assert reply is not None
    original = got.original if got.original is not None else reply.body
    body = got.body if got.body is not None else original
    server_ids = [(k, v) for k, v in reply.flow.response.headers.items(multi=True) if k.lower() == SESSION_HEADER]
    kept = "it lives in this process's memory only"
    s = exch.session
    if s is not None and server_ids:
        try:
            st.tracker.learn(s, reply.headers.get(SESSION_HEADER), seal=False)
        except Exception as e:  # never lose the answer
            kept = (f"mcpx could not keep it either ({type(e).__name__}: {e}): its requests get 404 and the client "
                    "starts a new one")
    why = (f"internal error after the server answered the initialize ({type(error).__name__}: {error}): its answer "
           f"delivered {'untouched' if body == original else 'as rewritten'}"
           + (", the server's Mcp-Session-Id passed to the client unchanged" if server_ids else "")
           + f"; session not sealed ({kept}); the initialize was not sent again")
    logger.warning(f"mcpx: {why}")
    st.rewriter.passthrough(exch, "s2c", why)
    headers = [(k, v) for k, v in reply.flow.response.headers.items(multi=True) if k.lower() not in _RESPONSE_HOP]
    exch.answered = True
    flow.response = http.Response.make(reply.status, body, header_fields(headers + server_ids))
    if body != original:
        st.keep_body(flow, "response", original)


async def _mint(st: State, flow: http.HTTPFlow, exch: Exchange, got: _Minted) -> None:
    rid = exch.single_request_id
    from ..bridge import era
    from ..bridge.legacy_client import NAME as LEGACY_CLIENT
    bridge = st.bridges.get(LEGACY_CLIENT) if st.rewriter.bridging and _legacy_initialize(flow, exch) else None
    if bridge is not None and st.rewriter.era.get(exch.origin).speaks_legacy is False:
        # the server is known to speak only 2026-07-28 (learnt, or mcpx_server_era=2026): no initialize goes up
        if await _bridge_initialize(st, flow, exch, bridge, None):
            return
    loop = asyncio.get_running_loop()
    answered: asyncio.Future = loop.create_future()
    # the SSE answer is read as any SSE answer is (SSERewriter, below: the same events, the same bound, the
    # same records), only up to the event that answers the initialize: the client's answer ends there
    parser = SSEParser(st.max_body)
    events: list[bytes] = []
    late: list[int] = []
    undecodable: list[str] = []  # the record of a stream that stopped decoding before the answer

    def take(evs: list) -> None:
        for ev in evs:
            if answered.done():
                # (the LF of the answering event's last CRLF is no event; an event larger than mcpx_max_body
                # comes in parts, one per read: counted once, at its first part)
                if not ev.crlf_rest and ev.oversize != 2:
                    late.append(1)
                continue
            events.append(ev.raw)
            if ev.payload is not None and not ev.blank() and not ev.oversize and _answers(ev.payload, rid):
                answered.set_result(True)

    def on_chunk(chunk: bytes) -> None:
        evs, tail = (parser.feed(chunk), b"") if chunk else parser.close()
        take(evs)
        if chunk == b"":
            if not answered.done():
                # the bytes of an event the stream ended inside: the client gets them as from any SSE
                # answer, untouched and with the same record (SSERewriter, below)
                events.append(tail)
                answered.set_result(False)
            elif late or tail:  # what came after the answer, on a stream the client's answer no longer carries
                st.rewriter.passthrough(exch, "s2c", _late_record(len(late), len(tail)))

    def on_undecodable(failed, at: int) -> None:
        # as SSERewriter._undecodable: the complete events that decoded, an unfinished one held back, nothing after
        evs, tail = parser.close()
        take(evs)
        if not answered.done():
            undecodable.append(undecodable_detail(at, failed, len(tail)))
            answered.set_result(False)
            return
        if late or tail:
            st.rewriter.passthrough(exch, "s2c", _late_record(len(late), len(tail)))
        st.rewriter.passthrough(exch, "s2c", f"content-encoding: SSE stream does not decode from compressed byte {at} on "
                                             f"({type(failed.error).__name__}: {failed.error}), after the initialize "
                                             "result, on a stream mcpx had answered: nothing after it read")

    headers = st.sender.copy_headers(flow)
    exch.upstream_sent = True  # from here on the initialize may have reached the server: never forwarded too
    try:
        reply = got.reply = await st.sender.send(flow, "POST", flow.request.raw_content, headers,
                                                 "initialize, to seal the session", timeout=120, on_chunk=on_chunk, stop=answered,
                                                 on_undecodable=on_undecodable)
    except upstream.UpstreamError as e:
        st.rewriter.passthrough(exch, "c2s", f"initialize not sent: {e.reason}")
        flow.response = http.Response.make(502, json_body.dumps(_error(rid, -32603, f"mcpx could not reach the server: {e.reason}")),
                                           {"content-type": "application/json"})
        return
    sse = reply.headers.get("content-type", "").split(";")[0].strip().lower() == "text/event-stream"
    resp = reply.flow.response
    raw = resp.raw_content if resp.raw_content is not None else reply.body
    if sse and not resp.stream:  # not streamed to on_chunk (a Content-Encoding mcpx cannot decode): as it came
        events[:] = [reply.body]
    got.original = b"".join(events) if sse else reply.body
    if bridge is not None and era.refuses_legacy(reply.status, reply.headers.get("content-type", ""),
                                                 b"".join(events) if sse else reply.body):
        # LC-initialize: the refusal of a 2026-07-28-only server (tests/peers/BRIDGING.md 1)
        st.rewriter.era.learn(exch.origin, speaks_legacy=False)
        first = era.first_response(reply.headers.get("content-type", ""), b"".join(events) if sse else reply.body) or {}
        code = (first.get("error") or {}).get("code") if isinstance(first.get("error"), dict) else None
        logger.info(f"mcpx: {exch.origin} refused a legacy initialize (HTTP {reply.status}, {code})")
        if await _bridge_initialize(st, flow, exch, bridge, f"HTTP {reply.status}, {code}"):
            return
    elif 200 <= reply.status < 300:
        st.rewriter.era.learn(exch.origin, speaks_legacy=True)
    exch.answered = True
    # the client gets what any answer delivers: an answer mcpx leaves as it is arrives as the server sent it
    # (its Content-Encoding included), a rewritten or streamed (decoded) one without Content-Encoding
    hop = _RESPONSE_HOP
    if sse and not resp.stream:
        hop = hop - {"content-encoding"}
        original = body = raw
        try:
            stream_decoder(reply.headers.get("content-encoding", ""))
            why = "SSE answer not streamed"  # (not expected: mcpx streams every SSE answer it can decode)
        except ValueError as e:
            why = str(e)
        st.rewriter.passthrough(exch, "s2c", f"{why}: SSE stream forwarded untouched")
    elif sse:
        original = b"".join(events)
        body = SSERewriter(st.rewriter, exch, max_event=st.max_body).whole(original)
        for why in undecodable:
            st.rewriter.passthrough(exch, "s2c", why)
    else:
        original = reply.body
        if resp.raw_content is not None and resp.headers.get("content-encoding", "").strip().lower() not in ("", "identity"):
            # decoded strictly, as any answer is (ServerResponses.response): mitmproxy's decoder of mcpx's own
            # flow takes a truncated gzip body for a whole one
            plain, why = decoded(resp, st.max_body)
            if plain is None:
                st.rewriter.passthrough(exch, "s2c", why)
            original = plain
        new = st.rewriter.response_json(exch, original, reply.headers.get("content-type", "")) if original else None
        if new is None:
            hop = hop - {"content-encoding"}
            original = body = raw
        else:
            body = new
    # (for _unsealed: a body mcpx rewrote; one it leaves as it is may still be encoded, _unsealed takes got.original)
    got.body = body if body is not original else None
    # an initialize the server did not accept (an HTTP error, a JSON-RPC error, an answer mcpx could not
    # read: no server revision learnt) starts no session: nothing sealed, nothing bound to the connection
    failed = exch.session is not None and not st.tracker.settle(exch.session, reply.status, reply.headers.get(SESSION_HEADER))
    token = None if failed else st.rewriter.session_learned(exch, reply.headers.get(SESSION_HEADER), seal=True)
    headers = [(k, v) for k, v in reply.flow.response.headers.items(multi=True) if k.lower() not in hop]
    carried = (reply.flow.metadata.get("mcpx") or {}).get("transports")
    if token:
        headers.append(("Mcp-Session-Id", token))
        if isinstance(carried, dict):  # an upstream HTTP+SSE stream: the session lives in this process only
            headers.append((AFFINITY_HEADER, token))
    elif reply.flow.response.headers.get_all(SESSION_HEADER):
        # an answer mcpx could not learn the session from (not sealed): the server's own id reaches the
        # client byte for byte, and the client's later requests carrying it go untouched
        headers += [(k, v) for k, v in reply.flow.response.headers.items(multi=True) if k.lower() == SESSION_HEADER]
        unsealed = exch.session.unsealed if exch.session is not None else None
        if unsealed:  # a session mcpx knows, in this process only: the client's requests are rewritten as usual
            headers.append((AFFINITY_HEADER, reply.flow.response.headers[SESSION_HEADER]))
            why = (f"{unsealed}: session not sealed, the server's Mcp-Session-Id passed to the client unchanged; the "
                   "session lives in this process's memory only (after a restart, or on another replica, its requests "
                   "get 404 and the client starts a new one)")
            logger.warning(f"mcpx: {why}")
            st.rewriter.passthrough(exch, "s2c", why)
        else:
            st.rewriter.passthrough(exch, "s2c", "initialize result not understood: session not sealed, "
                                                 "the server's Mcp-Session-Id passed to the client unchanged")
    if any(k.lower() == "content-encoding" for k, _ in headers):  # the server's bytes, not encoded once more
        flow.response = http.Response.make(reply.status, b"", ())  # (an empty content would drop Content-Encoding)
        flow.response.headers = http.Headers(header_fields(headers))
        flow.response.raw_content = body
        flow.response.headers["content-length"] = str(len(body))
    else:
        flow.response = http.Response.make(reply.status, body, header_fields(headers))
    if isinstance(carried, dict):  # mcpx's initialize went over another transport (transport/upstream_sse): so did the client's
        flow.metadata.setdefault("mcpx", {})["transports"] = dict(carried)
    if body != original:
        st.keep_body(flow, "response", original)


def _late_record(events: int, tail: int) -> str:
    """The record of what the server sent on an initialize's SSE answer after the event that answered
    it: ``events`` complete events, and ``tail`` bytes of an event the stream ended inside."""
    after = "after the initialize result, on a stream mcpx had answered"
    if not tail:
        return f"{events} SSE events the server sent {after}: not delivered"
    if not events:
        return f"SSE stream ends inside an event (no blank line after it), {after}: its {tail} bytes not delivered"
    return (f"{events} SSE events the server sent {after}, and the {tail} bytes of an unfinished event at its end "
            "(no blank line after it): not delivered")


def _legacy_initialize(flow: http.HTTPFlow, exch: Exchange) -> bool:
    """Whether an ``initialize`` comes from a legacy client (REVISIONS.md 2.3): not when it names a
    revision outside the handshake era in ``MCP-Protocol-Version`` or in ``params._meta`` (a 2026-07-28
    client, or a conformance suite, checking that the server refuses it: it is forwarded as it is,
    and the server's refusal teaches mcpx nothing about legacy clients)."""
    from ..session import revision_in_meta
    header = flow.request.headers.get(VERSION_HEADER)
    if header is not None and header.strip() not in revisions.LEGACY:
        return False
    named = revision_in_meta(exch.initialize)
    return named is None or named in revisions.LEGACY


def _client_host(flow: http.HTTPFlow) -> str | None:
    """The ``Host`` the client sent, where it reaches mcpx: in reverse mode mitmproxy replaces it with
    the server's before any hook, unless ``keep_host_header`` is set; in regular mode it names the
    server the client asked for, not mcpx (None: unknown)."""
    from mitmproxy import ctx
    from mitmproxy.proxy.mode_specs import ReverseMode
    if isinstance(flow.client_conn.proxy_mode, ReverseMode) and getattr(ctx.options, "keep_host_header", False):
        return flow.request.host_header
    return None


def refuse_foreign_origin(st: State, flow: http.HTTPFlow, exch: Exchange) -> bool:
    """Where mcpx answers for the server (a bridge), the check a local server makes against DNS rebinding
    (bridge/origin_check.py): a foreign Origin (or Host) gets 403 with a JSON-RPC error and a record, and
    nothing goes upstream. Returns whether the request was refused."""
    sock = flow.client_conn.sockname
    why = origin_check.refusal(sock[0] if sock else None, flow.request.headers.get("origin"), _client_host(flow))
    if why is None:
        return False
    st.rewriter.record(exch, [Change(pointer="header:Origin", action="answer-locally", rule="MCPX-origin-check",
                                     detail=f"{why}: refused 403 as a local MCP server refuses DNS rebinding, nothing sent upstream")],
                       "c2s", None, None)
    exch.answered = True
    flow.response = make_response(403, json_body.dumps({"jsonrpc": "2.0", "id": None, "error": {
        "code": -32000, "message": f"Forbidden: {why} (mcpx refuses it as the server would)"}}),
        (("content-type", "application/json"),))
    return True


async def _bridge_initialize(st: State, flow: http.HTTPFlow, exch: Exchange, bridge, refused: str | None) -> bool:
    """Answer a legacy client's initialize in front of a 2026-07-28-only server (bridge/legacy_client.py);
    False when the server does not speak 2026-07-28 either (its own answer is then delivered). A foreign
    Origin is refused first (:func:`refuse_foreign_origin`): the answer comes from ``server/discover``, maybe
    cached, which the server's own Origin check never saw for this request."""
    from .state import FlowUpstream
    if refuse_foreign_origin(st, flow, exch):
        if exch.session is not None:  # (no session is left behind for a refused initialize)
            st.tracker.abandon(exch.session)
        return True
    try:
        out = await bridge.initialize(exch, FlowUpstream(st.sender, flow), refused)
    except upstream.UpstreamError as e:
        logger.warning(f"mcpx: bridging initialize failed: {e.reason}")
        return False
    if out is None:
        return False
    exch.answered = True
    exch.answered_by = out.note
    flow.response = make_response(out.status, out.body, out.headers)
    return True


async def learn_era(st: State, flow: http.HTTPFlow, origin: str) -> None:
    """Ask the server at ``origin`` whether it speaks 2026-07-28: a ``server/discover`` probe (mcpx's
    own flow, bridge/era.py), its verdict cached per origin. A probe that gets no answer (the
    server unreachable) leaves no verdict: the request then goes as it is, untouched."""
    from ..bridge import era
    rid = f"mcpx-era-probe-{flow.id[:8]}"
    try:
        reply = await st.sender.send(flow, "POST", json_body.dumps(era.discover_request(rid)),
                                     st.sender.headers_for(flow, era.discover_headers(), on_behalf=True),
                                     "server/discover, to learn the server's era", timeout=30)
    except upstream.UpstreamError as e:
        logger.warning(f"mcpx: era probe of {origin} failed: {e.reason}")
        return
    if era.about_the_client(reply.status, reply.headers.get("content-type", ""), reply.body):
        logger.info(f"mcpx: era probe of {origin}: HTTP {reply.status} (an authorization answer): no verdict, "
                    "the request goes as it is")
        return
    speaks, discover = era.classify_discover(reply.status, reply.headers.get("content-type", ""), reply.body)
    st.rewriter.era.learn(origin, speaks_2026=speaks, discover=discover)
    logger.info(f"mcpx: {origin} speaks 2026-07-28: {'yes' if speaks else 'no'} (server/discover answered HTTP {reply.status})")


def _answers(payload: bytes, rid) -> bool:
    try:
        parsed = json_body.parse(payload)
    except json_body.Unparseable:
        return False
    return any(isinstance(m, dict) and m.get("id") == rid and ("result" in m or "error" in m) for m in parsed.messages)


async def split_batch(st: State, flow: http.HTTPFlow, exch: Exchange, members: tuple[bytes, ...]) -> None:
    """RPC-batch-request: POST each member alone (mcpx's own flows), answer the client with one batch.

    A member whose POST fails (the server unreachable, its certificate not trusted, ...), or whose
    answer holds no JSON-RPC response to it (an HTML error page, truncated JSON, an empty body), is
    answered with a JSON-RPC error -32603 naming what the server sent, with a record; nothing is
    retried. A notification (or request) the server sends on a member's SSE answer cannot go into
    the batch response (an array of responses only: JSON-RPC 2.0, 2025-03-26 ``JSONRPCBatchResponse``):
    it is dropped, with a ``drop-message`` record. A member's SSE answer that a 2025-11-25 server
    closes after an event id and before the member's response (SSE polling) is resumed in place with
    GET and ``Last-Event-ID`` (``bridge/resume.py`` :meth:`~mcpx_core.bridge.resume.Resumer.member`,
    under ``mcpx_sse_resume``); not resumed, its -32603 says why."""
    exch.answered = True
    headers = {k.lower(): v for k, v in flow.request.headers.items()}
    headers.pop("content-length", None)
    headers.pop("accept-encoding", None)
    answers: list[bytes] = []  # JSON texts, joined into one batch as they are (exact numbers)
    for body in members:
        rid = _request_id(body)
        exch.upstream_sent = True  # from here on the batch must never be forwarded as well
        try:
            reply = await st.sender.send(flow, "POST", body, headers, "a member of a split batch", timeout=600)
        except upstream.UpstreamError as e:
            st.rewriter.passthrough(exch, "c2s", f"batch member not sent: {e.reason}")
            if rid is not None:
                answers.append(json_body.dumps(_error(rid, -32603, f"mcpx could not reach the server: {e.reason}")))
            continue
        ctype = reply.headers.get("content-type", "")
        why = "an empty body"
        found = False
        if reply.status == 202 or not reply.body:
            pass
        elif ctype.startswith("text/event-stream"):
            why = "no JSON-RPC response to it on the SSE stream"
            sse = reply.body
            if rid is not None:  # a 2025-11-25 server that closed the stream early (SSE polling): resumed in place
                sse, closed = await st.resume.member(flow, exch, rid, flow.request.url, headers, body, sse, st.max_body)
                why = closed or why
            parser = SSEParser()
            delivered = SSERewriter(st.rewriter, exch).whole(sse)
            for ev in parser.feed(delivered) + parser.close()[0]:
                if ev.payload is not None and not ev.blank():
                    try:
                        parsed = json_body.parse(ev.payload, exact_ints=True)
                        answers.extend(json_body.response_texts(ev.payload))
                    except json_body.Unparseable:
                        continue
                    found = _responds(parsed.messages, rid) or found
                    _drop_others(st, exch, parsed.messages)
        else:
            try:
                json_body.parse(reply.body)
            except json_body.Unparseable as e:
                why = e.reason
            else:
                new = st.rewriter.response_json(exch, reply.body)
                delivered = new if new is not None else reply.body
                try:
                    found = _responds(json_body.parse(delivered, exact_ints=True).messages, rid)
                    answers.extend(json_body.response_texts(delivered))
                except json_body.Unparseable as e:
                    why = e.reason
                else:
                    why = "no JSON-RPC response to it"
        if rid is None or found:
            continue
        what = f"HTTP {reply.status}" + (f" ({ctype.split(';')[0].strip()})" if ctype else "")
        message = f"mcpx: the server answered this batch member with {what}, which mcpx could not read as its answer: {why}"
        error = _error(rid, -32603, message)
        answers.append(json_body.dumps(error))
        st.rewriter._emit(exch, [Change(pointer="", action="answer-locally", rule="RPC-batch-request",
                                        detail=f"batch member id={json_body.dumps(rid).decode()}: {what}, {why}: "
                                               "answered -32603 in the batch response")],
                          "s2c", error, exch.request_ids.get(rid), *exch.revisions)
    exch.is_mcp = True
    if answers:
        flow.response = http.Response.make(200, b"[" + b",".join(answers) + b"]", {"content-type": "application/json"})
    else:
        flow.response = http.Response.make(202, b"", {})
    sid = exch.session.token if exch.session is not None and exch.session.token else flow.request.headers.get(SESSION_HEADER)
    if sid:
        flow.response.headers[SESSION_HEADER] = sid


def _responds(messages: list, rid) -> bool:
    """Whether ``messages`` hold a response to ``rid`` (or one with a null id: the server could not read it)."""
    return any(isinstance(m, dict) and ("result" in m or "error" in m) and (m.get("id") == rid or m.get("id") is None)
               for m in messages)


def _drop_others(st: State, exch: Exchange, messages: list) -> None:
    """A record for each message of a member's SSE answer that is not a response (not delivered)."""
    for m in messages:
        if isinstance(m, dict) and ("result" in m or "error" in m):
            continue
        method = m.get("method") if isinstance(m, dict) else None
        st.rewriter._emit(exch, [Change(pointer="", action="drop-message", rule="RPC-batch-response",
                                        before=method or "a JSON value",
                                        detail="sent on the SSE answer of a split batch's member: a batch response "
                                               "array holds only responses (JSON-RPC 2.0; 2025-03-26 JSONRPCBatchResponse)")],
                          "s2c", m, method, *exch.revisions)


def _request_id(body: bytes):
    try:
        m = json_body.parse(body, exact_ints=True).messages[0]
    except (json_body.Unparseable, IndexError):
        return None
    return m.get("id") if isinstance(m, dict) and "method" in m else None
