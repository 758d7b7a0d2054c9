"""SSE polling for clients older than 2025-11-25 (``TR-sse-priming-polling``), outside the bridges.

A 2025-11-25 server may open a POST's SSE answer with a priming event (an event ``id`` and empty
``data``), tell the client a ``retry`` delay, and close the connection before the JSON-RPC response;
the client then resumes with ``GET`` and ``Last-Event-ID`` after that delay, and the server sends the
rest on the GET's stream (2025-11-25 ``basic/transports.mdx:107-115``, ``:187``). A client of an
older revision does not know this: it drops priming events (``rewrite/sse.py``, the same rule), but its
stream ends, and the answer is lost. So, for such a client, mcpx relays the call and resumes it:

1. The ``request`` hook (``addons/requests.py``) routes the client's request, already rewritten
   for the server, to mcpx's in-process endpoint (:meth:`AnswerStreams.relay`, ``bridge/stream.py``)
   and hands it to a :class:`Relay`, which sends the same request upstream itself
   (:class:`mcpx_core.upstream.Sender`: mitmproxy's own connections, TLS, upstream proxy, the
   client's credentials, same origin only).
2. The endpoint answers the client's flow with the server's status and headers as soon as they
   come (``Content-Encoding`` removed from a stream mcpx decodes), then each complete SSE event
   as it arrives. mitmproxy streams that answer through mcpx's SSE rewriting on the client's flow,
   event by event, as it does the server's own: what the client gets is unchanged.
3. When the server's stream ends after an event ``id`` and before a response to every request of
   the POST, the relay waits the last ``retry`` (milliseconds, at most :data:`RETRY_CAP_MS`; 0 when
   none came), sends ``GET`` with ``Last-Event-ID``, the server's own ``Mcp-Session-Id`` (never
   mcpx's sealed token), ``MCP-Protocol-Version: 2025-11-25`` and the client's other end-to-end
   headers, and streams the GET's events into the same answer; again after each close that follows
   a newer id (never once an event larger than ``mcpx_max_body`` came: it may have held the answer,
   which a resume would deliver twice). One ``rewrite`` record per resume. The bytes of an event the close cut short are not
   delivered (the server sends that event again after the last id); no event is delivered twice.
4. A GET that fails (not a ``200`` SSE answer, a connection error), or a resumed stream that ends
   with no newer event id, ends the client's stream: one ``passthrough`` record and one warning line.

Which flows (:meth:`Resumer.wants`): a session whose client leg is older than 2025-11-25 and whose
server leg is 2025-11-25, a POST (not compressed, not streamed by mitmproxy) holding at least one
JSON-RPC request, from a client that accepts ``text/event-stream``; ``mcpx_sse_resume`` says which
of them: ``auto`` only those to a server (origin and path) seen sending a priming event on any flow
of this process (:meth:`Resumer.learn`), ``always`` all, ``off`` none. A call that is not relayed
and whose stream the server closes early gets a ``passthrough`` record saying so
(:meth:`Resumer.closed_early`). A JSON answer through the relay reaches the client byte for byte
as the server sent it (then rewritten as any other); one cut short (the connection closed before its
``Content-Length``) gets ``502`` with a JSON-RPC error -32603, one ``passthrough`` record and one line.
An answer whose head went to the client and that the server then breaks off (a connection error, not
a clean end: a streamed body before its ``Content-Length`` or last chunk, an SSE stream not resumed)
is broken off toward the client too (:meth:`.stream.AnswerStream.abort`), never ended as complete:
one ``passthrough`` record and one line.

The relayed flow shows this endpoint as its server in mitmweb, with a comment saying it was relayed;
``flow.metadata["mcpx"]["relay"]`` holds ``{"server": <the server's URL>, "resumed_after": [<event
id of each resume>]}``; a split batch's flow, whose members are resumed in place, ``{"server": <URL>,
"members": [{"id": <member's request id>, "resumed_after": [...]}]}`` (members resumed at least
once). mcpx's own POST and GETs are flows of their own (``sent by mcpx``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

from mitmproxy import http

from .. import revisions, upstream
from ..changes import Change
from ..framing import json_body
from ..framing.sse import BOM, Event, SSEParser
from ..rewrite import PRIMING_RULE, Exchange, SSERewriter, undecodable_detail

logger = logging.getLogger("mcpx")

#: the revision whose servers poll (priming events, server-closed streams)
POLLING = "2025-11-25"
#: the longest ``retry`` mcpx waits before a resuming GET, in milliseconds (as the 2026-07-28 bridge)
RETRY_CAP_MS = 60_000
#: a ``retry`` of more digits than this is read as :data:`RETRY_HUGE` (longer than any cap: :func:`retry_of`)
RETRY_DIGITS = 15
RETRY_HUGE = 10 ** RETRY_DIGITS
#: servers remembered as seen priming (origin and path; the least recently seen forgotten first)
LEARNED_MAX = 10_000
#: request headers a relayed POST does not copy (hop by hop, and the length, which mcpx sets)
_NOT_COPIED = frozenset({"content-length", "connection", "transfer-encoding", "keep-alive", "upgrade", "te", "trailer",
                         "proxy-authorization", "proxy-connection"})
#: ... and a resuming GET neither (its body, its content negotiation and the MCP headers mcpx sets)
_NOT_RESUMED = _NOT_COPIED | {"content-type", "content-encoding", "accept", "last-event-id", "mcp-session-id",
                              "mcp-protocol-version", "mcp-method", "mcp-name"}
#: response headers the endpoint does not repeat (their framing is its own)
_FRAMING = frozenset({b"content-length", b"transfer-encoding", b"connection", b"keep-alive"})


class Resumer:
    """Decides which flows are relayed (``mode``: the ``mcpx_sse_resume`` value) and starts
    their :class:`Relay`. ``rewriter``: where records go; ``sender``: mcpx's own requests;
    ``answers``: the in-process endpoint."""

    def __init__(self, rewriter, sender: upstream.Sender, answers) -> None:
        self.rewriter, self.sender, self.answers = rewriter, sender, answers
        self.mode = "auto"
        #: servers (``Exchange.endpoint``) seen sending a priming event
        self.learned: OrderedDict[str, None] = OrderedDict()
        self.tasks: set[asyncio.Task] = set()

    # -- which flows --------------------------------------------------------------------------
    def learn(self, exch: Exchange) -> None:
        """A priming event came from ``exch``'s server (``Rewriter.on_priming``)."""
        key = exch.endpoint
        if not key:
            return
        if key not in self.learned and self.mode == "auto":
            logger.info(f"mcpx: {key} primes SSE streams (2025-11-25 polling): its calls from older clients are relayed from now on")
        self.learned[key] = None
        self.learned.move_to_end(key)
        if len(self.learned) > LEARNED_MAX:
            self.learned.popitem(last=False)

    def wants(self, flow: http.HTTPFlow, exch: Exchange) -> bool:
        """Whether ``flow`` (a request mcpx forwards, already rewritten) is relayed (see the module)."""
        if self.mode == "off" or exch.answered or exch.streamed or exch.upstream_sent or not exch.request_ids:
            return False
        if not _polling_legs(exch):
            return False
        if self.mode == "auto" and exch.endpoint not in self.learned:
            return False
        req = flow.request
        if req.method != "POST" or req.stream or req.raw_content is None:
            return False
        if req.headers.get("content-encoding", "").strip().lower() not in ("", "identity"):
            return False
        if "text/event-stream" not in req.headers.get("accept", "").lower():
            return False
        return self.sender.available(flow)

    async def start(self, flow: http.HTTPFlow, exch: Exchange, max_event: int) -> None:
        """Relay ``flow``: its request goes upstream as mcpx's own, the flow to the endpoint.
        ``max_event``: the largest SSE event (bytes) the relay reads whole (``mcpx_max_body``)."""
        try:
            await self.answers.ensure()
        except OSError as e:  # no endpoint: the flow goes to the server as any other
            logger.warning(f"mcpx: SSE polling: mcpx's endpoint does not listen ({e}): request forwarded unrelayed")
            return
        req = flow.request
        headers: dict[str, str] = {}
        for k, v in req.headers.items(multi=True):
            lk = k.lower()
            if lk not in _NOT_COPIED:
                headers[lk] = f"{headers[lk]}{'; ' if lk == 'cookie' else ', '}{v}" if lk in headers else v
        relay = Relay(self, flow, exch, req.url, headers, req.raw_content or b"", max_event)
        relay.stream = self.answers.relay(flow, on_close=relay.closed)
        s = exch.session
        exch.relayed = f"relayed by mcpx, which resumes the server's SSE polling for a {s.client_leg if s else '?'} client"
        flow.metadata.setdefault("mcpx", {})["relay"] = relay.meta
        task = asyncio.get_running_loop().create_task(relay.run())
        relay.task = task
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # -- a split batch's member (addons/actions.py split_batch) --------------------------------
    async def member(self, flow: http.HTTPFlow, exch: Exchange, rid: Any, url: str, headers: dict[str, str], body: bytes,
                     answer: bytes, max_event: int) -> tuple[bytes, str | None]:
        """A split batch's member: ``body``, POSTed by mcpx itself with ``headers`` (lower-case names)
        to ``url``, got the SSE ``answer`` (whole, decoded). When the server closed that stream after
        an event id and before a response to ``rid``, the member's request is resumed in place as a
        relayed call is (:meth:`Relay.resume_while_closed`: GET with ``Last-Event-ID``, records under
        ``rid``), unless ``mcpx_sse_resume`` is ``off`` (``auto`` too: the answer itself shows the
        server polls). Returns the SSE bytes that hold the member's answer (``answer``, then the
        resumed GETs' events; ``answer`` as it is when nothing was resumed) and, when no response to
        ``rid`` came, why (for its -32603), else None."""
        if not _polling_legs(exch):
            return answer, None
        relay = Relay(self, flow, exch, url, headers, body, max_event, rid=rid)
        relay.stream = _Collected()
        relay.holder = "the split batch's answer waits for it"
        relay.without = "the member is answered -32603 in the batch's answer"
        relay.as_ended = "the batch's answer holds the member's events as the server ended them"
        relay.streaming = True
        relay._on_chunk(answer)
        if self.mode == "off":
            events, _ = relay.parser.close()
            relay._forward(events)
            if relay.pending and relay.last and not relay.unread:
                return answer, (f"the server closed its SSE stream after event {relay.last} before the answer; "
                                "not resumed (mcpx_sse_resume=off)")
            return answer, None
        await relay.resume_while_closed()
        if not relay.meta["resumed_after"]:
            return answer, relay.ended
        # the batch's flow lists each member resumed: {"server": url, "members": [{"id", "resumed_after"}]}
        meta = flow.metadata.setdefault("mcpx", {}).setdefault("relay", {"server": url, "members": []})
        meta["members"].append({"id": rid, "resumed_after": relay.meta["resumed_after"]})
        return b"".join(relay.stream.chunks), relay.ended

    # -- a call that was not relayed ---------------------------------------------------------
    def closed_early(self, exch: Exchange, stream: SSERewriter) -> None:
        """The server's SSE answer to a flow mcpx did not relay ended (``stream``, streamed live):
        if it ended after an event id and before the answer to every request, toward a client that
        cannot resume it, one ``passthrough`` record says so; not when an event of it went through
        unread (its own ``passthrough`` record: it may have held the answer)."""
        last = stream.last_id
        if exch.relayed or not last or stream.undecodable or not _polling_legs(exch):
            return
        if all(i in exch.answered_ids for i in exch.request_ids):
            return
        if any(c.action == "passthrough" and c.direction == "s2c" for c in exch.changes):
            return  # an event mcpx could not read (not JSON, no JSON-RPC message, too large) may hold the answer
        s = exch.session
        assert s is not None
        if self.mode != "auto":
            then = f"not resumed (mcpx_sse_resume={self.mode})"
        elif exch.endpoint in self.learned:
            then = "mcpx relays and resumes this server's later calls (mcpx_sse_resume=auto)"
        else:
            then = "not resumed: mcpx saw no priming event from this server (mcpx_sse_resume=auto)"
        detail = (f"the server closed the SSE stream after event {last} before the answer; a {s.client_leg} client cannot "
                  f"resume it, so its stream ended without the answer; {then}")
        record(self.rewriter, exch, "passthrough", detail)


class Relay:
    """One relayed flow: sends its request upstream, feeds the endpoint's answer (:attr:`stream`,
    an :class:`~.stream.AnswerStream` with a ``head``), resumes (see the module)."""

    def __init__(self, owner: Resumer, flow: http.HTTPFlow, exch: Exchange, url: str, headers: dict[str, str],
                 body: bytes, max_event: int, rid: Any = None) -> None:
        """``rid``: the one request id this relay waits for (a split batch's member, whose records go
        under it); None: every request of ``exch``, records under the call's id."""
        self.owner, self.flow, self.exch = owner, flow, exch
        self.rid = rid
        #: what a resume record says of the client's side meanwhile
        s = exch.session
        self.holder = f"the {s.client_leg if s else '?'} client's stream stays open"
        #: what a failure record says of the client's side: without the answer; as the server ended it
        self.without = "the client's stream ends without the answer"
        self.as_ended = "the client's stream ends as the server ended it"
        #: why the answer did not come, once a resume failed or was not made (:meth:`_fail`)
        self.ended: str | None = None
        self.url, self.headers, self.body = url, headers, body
        self.max_event = max_event
        self.stream: Any = None
        self.task: asyncio.Task | None = None
        #: the request ids the server has not answered yet
        self.pending = {rid} if rid is not None else set(exch.request_ids)
        self.parser = SSEParser(max_event)
        #: the last event id (``id:`` field) and ``retry`` (ms) the server gave; the id resumed after
        self.last: str | None = None
        self.retry: int | None = None
        self.resumed_from: str | None = None
        self.streaming = False
        #: the server's (non-SSE) body streams through as it came, not kept whole
        self.raw = False
        self.undecodable: str | None = None
        self.strip_bom = False
        #: an event larger than ``max_event`` came (its parts raw, unread): it may hold the answer,
        #: so the relay no longer knows what is pending, and never resumes (the server could send it again)
        self.unread = False
        #: the head of the current resuming GET: (status, content type, streamed)
        self.get_head: tuple[int, str, bool] | None = None
        #: why the last upstream answer that fed the client's stream (the POST's, or a resuming GET's that
        #: streamed) broke off after its head (a connection error, not a clean end); None: it ended cleanly
        self.broke: str | None = None
        self.meta: dict[str, Any] = {"server": url, "resumed_after": []}

    # -- the endpoint's answer ------------------------------------------------------------------
    def _set_head(self, status: int, reason: str, fields: list[tuple[bytes, bytes]], body: bytes | None) -> None:
        if not self.stream.head.done():
            self.stream.head.set_result((status, reason or None, fields, body))

    def _on_head(self, response: http.Response, streamed: bool) -> None:
        """The server's answer to the POST: a stream the relay forwards event by event, or (not
        streamed) a body given whole when it is complete."""
        self.streaming = streamed
        if streamed:  # decoded by the Sender: the client gets it as it was not encoded
            drop = _FRAMING | {b"content-encoding"}
            self._set_head(response.status_code, response.reason,
                           [(k, v) for k, v in response.headers.fields if k.lower() not in drop], None)
        elif response.stream or _length_unknown(self.flow.request, response):
            # a body mitmproxy streams (larger than stream_large_bodies), or may decide to stream once it
            # has buffered that much (no Content-Length: chunked, or read to the connection's end; its
            # bytes would then go to mcpx's own flow's replay client, not here): its bytes as they come
            self.raw = True
            self._set_head(response.status_code, response.reason,
                           [(k, v) for k, v in response.headers.fields if k.lower() not in _FRAMING], None)

            def through(data: bytes) -> bytes:
                self.stream.put(data)
                return data
            response.stream = through

    def _on_chunk(self, data: bytes) -> None:
        if data:
            self._forward(self.parser.feed(data))

    def _on_undecodable(self, failed: Any, at: int) -> None:
        events, tail = self.parser.close()
        self._forward(events)
        self.undecodable = undecodable_detail(at, failed, len(tail))

    def _forward(self, events: list[Event]) -> None:
        """Put complete events (and the raw parts of one above ``max_event``) on the client's
        stream, noting ids, ``retry`` and the responses that came."""
        out = []
        for ev in events:
            raw = ev.raw
            if self.strip_bom:  # a resumed stream's BOM: not in the middle of the client's stream
                self.strip_bom = False
                if raw.startswith(BOM):
                    raw = raw[len(BOM):]
            out.append(raw)
            if ev.oversize:
                self.unread = True
                continue
            if ev.crlf_rest:
                continue
            if ev.last_id is not None:
                self.last = ev.last_id
            retry = retry_of(ev)
            if retry is not None:
                self.retry = retry
            p = ev.payload
            if self.pending and p and (b'"result"' in p or b'"error"' in p):
                try:
                    value = json_body.loads(p)
                except Exception:
                    continue
                for m in value if isinstance(value, list) else [value]:
                    if isinstance(m, dict) and ("result" in m or "error" in m):
                        rid = m.get("id")
                        if isinstance(rid, (str, int)) and not isinstance(rid, bool):
                            self.pending.discard(rid)
        if out:
            self.stream.put(b"".join(out))

    async def closed(self) -> None:
        """The endpoint's answer ended (``on_close``): if the client went away first, the upstream
        request (POST or GET) is aborted, as mitmproxy closes a server connection whose client left."""
        if self.task is not None and not self.task.done() and not self.stream.finished:
            logger.info(f"mcpx: client of relayed flow {self.flow.id[:8]} went away: upstream request aborted")
            self.task.cancel()

    # -- the relay --------------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            await self._run()
        except asyncio.CancelledError:
            pass
        except Exception as e:  # never lose the client's answer silently: an error answer, or the stream ends
            logger.exception("mcpx: SSE relay failed")
            self._record("passthrough", f"SSE relay failed: {type(e).__name__}: {e}")
            if not self.stream.head.done():
                self._error(f"mcpx relay failed: {type(e).__name__}")
        finally:
            if not self.stream.head.done():
                self._error("mcpx relay ended without an answer")
            if self.broke is not None and not self.stream.closed:
                # as the server's answer ended, the client's does: broken off, never a truncated body that looks whole
                self._fail(f"relayed request: the server's answer broke off after its head: "
                           f"{self.broke}; the client's answer is broken off there too")
                self.stream.abort()
            self.stream.close()

    def _error(self, message: str) -> None:
        rid = self.exch.single_request_id
        body = json_body.dumps({"jsonrpc": "2.0", "id": None if json_body.inexact_number(rid) else rid,
                                "error": {"code": -32603, "message": message}})
        self._set_head(502, "", [(b"content-type", b"application/json")], body)

    async def _run(self) -> None:
        sender = self.owner.sender
        try:
            reply = await sender.send(self.flow, "POST", self.body, self.headers, "request relayed to resume SSE polling "
                                      "(TR-sse-priming-polling)", timeout=None, on_chunk=self._on_chunk, on_head=self._on_head,
                                      on_undecodable=self._on_undecodable, url=self.url)  # type: ignore[arg-type]
        except upstream.UpstreamError as e:
            if not self.streaming and not self.raw:  # no answer at all: the client gets a JSON-RPC error, as from a bridge
                logger.warning(f"mcpx: relayed request: the server did not answer: {e.reason}")
                self._record("passthrough", f"relayed request: upstream request failed: {e.reason}")
                self._error(f"mcpx could not reach the server: {e.reason}")
                return
            reply = None  # the stream broke off: as when it ends (resumed if it can be), else broken off (run)
            self.broke = e.reason
        if reply is not None and (self.streaming or self.raw) and reply.flow.error is not None:
            self.broke = reply.flow.error.msg
        if self.raw:
            return
        if not self.streaming:
            assert reply is not None
            if reply.flow.error is not None:  # the body broke off (a close before its Content-Length): never a
                # truncated body given as whole; the client gets a JSON-RPC error, as when the server is not reached
                why = reply.flow.error.msg
                logger.warning(f"mcpx: relayed request: the server's answer broke off: {why}")
                self._record("passthrough", f"relayed request: the server's answer broke off: {why}")
                self._error(f"mcpx: the server's answer broke off: {why}")
                return
            r = reply.flow.response
            self._set_head(r.status_code, r.reason, [(k, v) for k, v in r.headers.fields if k.lower() not in _FRAMING],
                           r.raw_content or b"")
            return
        await self.resume_while_closed()

    async def resume_while_closed(self) -> None:
        """After each upstream stream ends: done (answered, or nothing to resume after), resume, or fail."""
        while True:
            inside = self.parser.inside_oversize
            events, tail = self.parser.close()
            self._forward(events)
            last = self.last
            if self.undecodable is not None:  # the client got the events before the fault, as without the relay
                self._record("passthrough", self.undecodable)
                return
            if not self.pending or not last:
                self.stream.put(tail)  # ended as the server ended it (a cut event: the client's rewriting records it)
                return
            if last == self.resumed_from:
                self.stream.put(tail)
                self._fail(f"the server closed the SSE stream after event {last} before the answer and mcpx could not "
                       f"resume it: the resumed stream ended with no newer event; {self.without}")
                return
            if last in self.meta["resumed_after"]:  # an id that came back (a loop): no newer event either
                self.stream.put(tail)
                self._fail(f"the server closed the SSE stream after event {last} before the answer and mcpx could not "
                           f"resume it: the resumed stream ended after event {last}, which mcpx had resumed from before "
                           f"(no newer event); {self.without}")
                return
            if inside:
                self._fail(f"the server closed the SSE stream after event {last} before the answer, inside an event larger "
                       f"than mcpx_max_body: not resumed; {self.without}")
                return
            if self.unread:
                self.stream.put(tail)
                self._fail("the server closed the SSE stream after an event larger than mcpx_max_body, which mcpx "
                       "cannot read and which may hold the answer: not resumed (the server could send that event "
                       f"again); {self.as_ended}")
                return
            retry = min(self.retry or 0, RETRY_CAP_MS)
            cut = f"; the {len(tail)} bytes of an unfinished event after it not delivered (the server sends it again)" if tail else ""
            self._record("rewrite", f"the server closed the SSE stream after event {last} before the answer: resumed by mcpx "
                                        f"with GET and Last-Event-ID after {retry} ms (retry); "
                                        f"{self.holder}{cut}")
            self.meta["resumed_after"].append(last)
            await asyncio.sleep(retry / 1000)
            self.resumed_from = last
            self.parser = SSEParser(self.max_event)
            self.strip_bom = True
            why = await self._get(last)
            if why is not None:
                self._fail(f"the server closed the SSE stream after event {last} before the answer and mcpx could not "
                       f"resume it: {why}; {self.without}")
                return

    def _record(self, action: str, detail: str) -> None:
        """One ``TR-sse-priming-polling`` record (see :func:`record`) under :attr:`rid`."""
        record(self.owner.rewriter, self.exch, action, detail, self.rid)

    def _fail(self, detail: str) -> None:
        """The answer will not come (a resume that could not be made, an answer broken off): kept as
        :attr:`ended`, one ``passthrough`` record and one warning line."""
        self.ended = detail
        logger.warning(f"mcpx: SSE polling: {detail}")
        self._record("passthrough", detail)

    async def _get(self, last: str) -> str | None:
        """The resuming GET after event ``last``; its events go to the client's stream. None: it
        streamed (and ended); else why it failed."""
        headers = {k: v for k, v in self.headers.items() if k not in _NOT_RESUMED}
        headers.update({"accept": "text/event-stream", "last-event-id": last, "mcp-protocol-version": POLLING})
        sid = self.headers.get("mcp-session-id")  # the server's own id (TR-session-id put it on the forwarded request)
        if sid:
            headers["mcp-session-id"] = sid
        self.get_head = None

        def on_head(response: http.Response, streamed: bool) -> None:
            ctype = response.headers.get("content-type", "")
            self.get_head = (response.status_code, ctype, streamed and response.status_code == 200)
            if self.get_head[2]:
                self.broke = None  # this GET now feeds the client's stream: how it ends decides

        def on_chunk(data: bytes) -> None:
            if self.get_head is not None and self.get_head[2]:
                self._on_chunk(data)

        try:
            reply = await self.owner.sender.send(self.flow, "GET", b"", headers, f"GET resuming SSE polling after event {last} "
                                                 "(TR-sse-priming-polling)", timeout=None, on_chunk=on_chunk, on_head=on_head,
                                                 on_undecodable=self._on_undecodable, url=self.url)  # type: ignore[arg-type]
        except upstream.UpstreamError as e:
            if self.get_head is None or not self.get_head[2]:
                return f"the GET with Last-Event-ID {last} failed: {e.reason}"
            self.broke = e.reason
        else:
            if self.get_head is not None and self.get_head[2] and reply.flow.error is not None:
                self.broke = reply.flow.error.msg
        if self.get_head is None or not self.get_head[2]:
            status, ctype, _ = self.get_head or (0, "", False)
            return f"the GET with Last-Event-ID {last} was answered HTTP {status} ({ctype or 'no content-type'}), not an SSE stream"
        return None


def retry_of(ev: Event) -> int | None:
    """The last valid ``retry`` field of ``ev`` (milliseconds; WHATWG HTML 9.2.6: ASCII digits only
    after one optional space, else ignored), or None. A value of more than :data:`RETRY_DIGITS`
    digits (leading zeros aside) is :data:`RETRY_HUGE` (int() refuses more than 4300 digits, and
    any such wait is capped anyway: :data:`RETRY_CAP_MS`)."""
    retry = None
    for line, _ in ev.lines:
        name, _, value = line.partition(b":")
        if name == b"retry":
            value = value[1:] if value[:1] == b" " else value
            if value.isdigit():
                digits = value.lstrip(b"0")
                retry = int(digits or b"0") if len(digits) <= RETRY_DIGITS else RETRY_HUGE
    return retry


def retry_text(retry_ms: int) -> str:
    """A ``retry`` for a record: ``"50 ms"``, or for one :func:`retry_of` did not read out, ``"over 999999999999999 ms"``."""
    return f"over {RETRY_HUGE - 1} ms" if retry_ms >= RETRY_HUGE else f"{retry_ms} ms"


def _length_unknown(request: http.Request, response: http.Response) -> bool:
    """Whether ``response``'s body length is not known from its head (chunked, or to the connection's
    end; an invalid length too): mitmproxy streams such a body once it grew past ``stream_large_bodies``."""
    from mitmproxy.net.http.http1.read import expected_http_body_size
    try:
        size = expected_http_body_size(request, response)
    except ValueError:
        return True
    return size is None or size < 0


def _polling_legs(exch: Exchange) -> bool:
    """Whether ``exch``'s session has a client leg older than 2025-11-25 and a 2025-11-25 server leg."""
    s = exch.session
    return s is not None and not s.bridge and s.server_rev == POLLING and revisions.is_known(s.client_leg) \
        and revisions.older(s.client_leg, POLLING)  # type: ignore[arg-type]


class _Collected:
    """Where a split batch member's relay puts its events (:meth:`Resumer.member`): kept, in order."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def put(self, chunk: bytes) -> None:
        if chunk:
            self.chunks.append(chunk)


def record(rw, exch: Exchange, action: str, detail: str, rid: Any = None) -> None:
    """One ``TR-sse-priming-polling`` record on ``exch`` (server -> client, under ``rid`` or else the
    call's id, and its method)."""
    s = exch.session
    rid = exch.single_request_id if rid is None else rid
    rw.record(exch, [Change(pointer="", action=action, rule=PRIMING_RULE, detail=detail)], "s2c",  # type: ignore[arg-type]
              s.server_rev if s else None, s.client_leg if s else None,
              msg={"id": rid} if rid is not None else None, method=exch.request_ids.get(rid) if rid is not None else None)

