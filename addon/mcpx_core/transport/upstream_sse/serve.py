"""The IO adapter of the upstream HTTP+SSE transport: Streamable HTTP clients in front of a server
that speaks only the 2024-11-05 HTTP+SSE transport. The hooks (:mod:`mcpx_core.addons.upstream_sse`)
ask it one question per flow (:meth:`UpstreamSseTransport.request`, :meth:`UpstreamSseTransport.response`)
and act on its one typed answer: None (not this transport's), :class:`~mcpx_core.bridge.Answer`,
:class:`~mcpx_core.bridge.Streamed` (the client's GET stream) or :class:`Relay` (a POST's answer).

To every other stage of mcpx, the transport is a Streamable HTTP server: its ``request`` hook runs
after :class:`~mcpx_core.addons.requests.ClientRequests` (the client's message already rewritten for
the server's revision, the sealed token already opened to the session id below), and what it
answers comes back through :class:`~mcpx_core.addons.responses.ServerResponses` as any server's
answer (downgrades, repairs, records). No rule runs here.

- A client's ``initialize`` POST the server refuses (:func:`.wire.refused_initialize`: 400, 404,
  405; 2025-03-26 transports "Backwards compatibility") makes mcpx GET the paths
  :func:`.wire.probe_paths` names (verdicts cached, :class:`.verdicts.Verdicts`). The GET that finds
  an ``endpoint`` event (schema/2024-11-05 transports "HTTP with SSE") stays open as the session's
  upstream stream; the ``initialize`` goes to the endpoint and its answer, from the stream, replaces
  the refusal, with ``Mcp-Session-Id: mcpx-sse-<random>`` (which the session stage seals into the
  client's token as it seals any server's id). On a path known to be HTTP+SSE, the next ``initialize``
  goes there at once.
- A later POST with that session id goes to the endpoint (``202``); each request's answer (and, for
  a client that accepts ``text/event-stream``, the messages routed to it, :class:`.router.Router`)
  is the client's answer (:func:`.wire.answer`), written by mcpx's answer endpoint
  (:meth:`~mcpx_core.bridge.stream.AnswerStreams.relay`); the client's GET gets the other messages.
- ``DELETE``, idle expiry (``mcpx_session_ttl``) or mcpx's shutdown end the upstream stream; a stream
  that breaks gives each pending request -32603, and the session's later requests 404 (2025-03-26
  Streamable HTTP 2.5.3: the client initializes again), as do those of a session this process does
  not hold (a restart, another replica: the upstream stream lives in memory only).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson
from mitmproxy import http

from ... import upstream
from ...bridge import Answer, Streamed
from ...bridge.stream import AnswerStream
from ...framing.sse import SSEParser
from ...rewrite.leg import UNKNOWN_SESSION
from . import wire
from .lifecycle import UpstreamEvent as E
from .lifecycle import UpstreamLifecycle
from .router import GET, Pending, Router, id_key
from .verdicts import Verdicts

logger = logging.getLogger("mcpx")
#: the session ids this transport gives (never a server's): a later request carrying one is this transport's
SID_PREFIX = "mcpx-sse-"
#: the purpose of every request this transport sends (its flows in mitmweb)
PURPOSE = "upstream HTTP+SSE"
_JSON = (("content-type", "application/json"),)
_SSE = [("content-type", "text/event-stream"), ("cache-control", "no-cache, no-transform"), ("x-accel-buffering", "no")]
#: seconds a message POSTed to the endpoint waits for the server's ``202``
POST_TIMEOUT = 60.0
#: seconds the ``initialize`` waits for its answer on the stream
INITIALIZE_TIMEOUT = 60.0


@dataclass
class Relay:
    """The client's POST is answered by mcpx's answer endpoint: ``fill`` gives the relay's head and
    body (:meth:`~mcpx_core.bridge.stream.AnswerStreams.relay`), then mitmproxy reads it as the server's."""

    fill: Callable[[AnswerStream], Awaitable[None]]
    note: str


@dataclass(eq=False)
class UpstreamSession:
    """One client session and its upstream HTTP+SSE stream (memory only)."""

    sid: str
    stream_url: str
    host: str
    life: UpstreamLifecycle = field(default_factory=UpstreamLifecycle)
    router: Router = field(default_factory=Router)
    parser: SSEParser = field(default_factory=SSEParser)
    endpoint: str | None = None
    #: done with True (``endpoint`` came), False (not an HTTP+SSE stream)
    opened: asyncio.Future | None = None
    stream_flow: str | None = None
    #: what each pending POST's messages go to, by ``id(Pending)``
    sinks: dict[int, Callable[[dict, bool], None]] = field(default_factory=dict)
    get_stream: AnswerStream | None = None
    last: float = field(default_factory=time.monotonic)


def _members(body: bytes) -> list[dict] | None:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    members = value if isinstance(value, list) else [value]
    return [m for m in members if isinstance(m, dict)]


async def _keepalive(us: UpstreamSession, stream: AnswerStream) -> None:
    """A comment on the client's GET stream every ``KEEPALIVE`` seconds, as long as it is the session's."""
    from . import KEEPALIVE
    while True:
        await asyncio.sleep(KEEPALIVE)
        if stream.closed or us.get_stream is not stream:
            return
        stream.put(wire.KEEPALIVE_COMMENT)


def _single_request_id(body: bytes) -> Any:
    """The id of the one JSON-RPC request ``body`` holds (the id an error answering it carries,
    schema/2024-11-05/schema.ts JSONRPCError), else None (a batch, a notification, no JSON)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return value.get("id") if isinstance(value, dict) and _is_request(value) else None


def _unmatchable(requests: list[dict], pending: dict) -> tuple[Any, str] | None:
    """(the id to answer under, why) for the first request whose answer the stream could not bring back
    to its POST, else None: an id that is no string or integer of at most 64 bits (schema/2024-11-05/
    schema.ts RequestId is ``string | number``; ``null``, ``true``, a fraction or an object is matched by
    no server's answer, a larger integer not kept exactly), or an id another POST of the session is still
    waiting on (its answer would go to one of the two)."""
    for m in requests:
        rid = m["id"]
        try:
            shown = orjson.dumps(rid).decode()[:40]
        except TypeError:  # an integer beyond 64 bits
            shown = str(rid)[:40]
        if not (isinstance(rid, str) or (type(rid) is int and -(1 << 63) <= rid < (1 << 64))):
            return None, f"request id {shown} is no string or 64-bit integer"
        if id_key(rid) in pending:
            return rid, f"request id {shown} is already pending in this session"
    return None


def _is_request(m: dict) -> bool:
    return isinstance(m.get("method"), str) and "id" in m


def _drop(us: UpstreamSession, p: Pending) -> bool:
    """Take ``p`` off the router's pending requests; whether it was there."""
    for k, v in list(us.router.pending.items()):
        if v is p:
            del us.router.pending[k]
            return True
    return False


def _error(rid: Any, why: str) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": why}}


def _relay_sink(s: AnswerStream, p: Pending, pendings: list[Pending], batch: bool,
                finals: dict[int, dict]) -> Callable[[dict, bool], None]:
    """Where the messages of ``p`` (one of a POST's ``pendings``) go: the relay ``s``. A batch's
    answers wait for each other (one JSON array, or ``202`` when none is owed); a lone request's
    final answer is JSON, unless a companion came first (then SSE events, the answer last)."""
    def sink(m: dict, final: bool) -> None:
        if s.head.done() and s.closed:
            return
        if batch:
            if final:
                finals[id(p)] = m
            if all(id(q) in finals for q in pendings):
                out = [finals[id(q)] for q in pendings if finals[id(q)]]
                s.head.set_result((200, None, list(_JSON), orjson.dumps(out)) if out else (202, None, [], b""))
            return
        if not final:
            if not s.head.done():
                s.head.set_result((200, None, _SSE, None))
            s.put(wire.answer([m], True)[1])
            return
        if not m:  # cancelled: no answer
            if not s.head.done():
                s.head.set_result((202, None, [], b""))
            else:
                s.close()
            return
        if not s.head.done():
            ctype, data = wire.answer([m], False)
            s.head.set_result((200, None, [("content-type", ctype)], data))
        else:
            s.put(wire.answer([m], True)[1])
            s.close()
    return sink


def _own_purpose(flow: http.HTTPFlow) -> bool:
    """Whether ``flow`` is one this transport sent (its stream, its POSTs to the endpoint)."""
    meta = flow.metadata.get("mcpx")
    return upstream.is_own(flow) and isinstance(meta, dict) and str(meta.get("purpose", "")).startswith(PURPOSE)


def _initialize(flow: http.HTTPFlow) -> dict | None:
    """The client's ``initialize`` request, when ``flow`` is a sessionless POST of one alone."""
    r = flow.request
    if r.method != "POST" or "mcp-session-id" in r.headers:
        return None
    try:
        m = orjson.loads(r.get_content(strict=False) or b"")
    except orjson.JSONDecodeError:
        return None
    return m if isinstance(m, dict) and m.get("method") == "initialize" and "id" in m else None


def _fail(pendings: list[Pending], us: UpstreamSession, why: str) -> None:
    """Each of ``pendings`` still waiting gets -32603 saying ``why`` (its message never reached the server)."""
    for p in pendings:
        if _drop(us, p):
            sink = us.sinks.pop(id(p), None)
            if sink is not None:
                sink(_error(p.id, why), True)


class UpstreamSseTransport:
    """The upstream HTTP+SSE transport. ``state``: the addon's :class:`~mcpx_core.addons.state.State`."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.verdicts = Verdicts()
        self.sessions: dict[str, UpstreamSession] = {}
        self._tasks: set[asyncio.Task] = set()
        #: ``mcpx_upstream_sse``: off, or the client's Streamable HTTP path -> the server's SSE path
        self.enabled = True
        self.routes: dict[str, str] = {}

    def configure(self, specs: tuple[str, ...]) -> None:
        """``mcpx_upstream_sse`` (checked by :mod:`mcpx_core.settings`): ``off`` never serves it; each
        ``MCP_PATH=SSE_PATH`` pair says where the server's HTTP+SSE stream is once it refused an
        ``initialize`` POST to ``MCP_PATH`` (the server is still asked first). Cached verdicts are dropped."""
        self.enabled = specs != ("off",)
        self.routes = dict(spec.split("=", 1) for spec in specs) if self.enabled else {}
        self.verdicts.clear()

    # -- the one question of each hook --------------------------------------------------------
    async def request(self, flow: http.HTTPFlow) -> Answer | Streamed | Relay | None:
        """After the client-request stage: what ``flow`` gets (None: it goes on to the server)."""
        st = self.state
        r = flow.request
        if flow.response is not None or _own_purpose(flow) or st.tracker.sealer is None or not st.sender.available(flow):
            return None
        exch = st.exchanges.get(flow.id)
        if exch is not None and exch.answered:
            return None
        sid = r.headers.get("mcp-session-id", "")
        if sid.startswith(SID_PREFIX):
            return await self._in_session(flow, sid)
        if not self.enabled or _initialize(flow) is None:
            return None
        origin, path = f"{r.scheme}://{r.host}:{r.port}", urlsplit(r.path).path or "/"
        known, _ = self.verdicts.to_probe(origin, [path])
        if known is None:
            # the server is asked first; its refusal comes to response(). (A stream known at another path, the
            # …/sse beside this …/mcp, is no reason to skip it: a server may serve both transports.)
            return None
        us = await self._connect(flow, origin + known)
        if us is None:
            return None
        return await self._send_initialize(flow, us)

    async def response(self, flow: http.HTTPFlow) -> Answer | None:
        """Before the server-response stage: the answer that replaces the server's refusal of an
        ``initialize`` (None: the server's answer stands)."""
        st = self.state
        resp, r = flow.response, flow.request
        if resp is None or not self.enabled or _own_purpose(flow) or st.tracker.sealer is None or not st.sender.available(flow) \
                or "mcp-session-id" in r.headers or _initialize(flow) is None \
                or not wire.refused_initialize(r.method, resp.status_code, True) \
                or wire.jsonrpc_refusal(resp.get_content(strict=False) or b""):
            return None
        origin, path = f"{r.scheme}://{r.host}:{r.port}", urlsplit(r.path).path or "/"
        known, todo = self.verdicts.to_probe(origin, wire.probe_paths(path, self.routes))
        for p in [known] if known is not None else todo:
            us = await self._connect(flow, origin + p)
            if us is not None:
                logger.info(f"mcpx: {path} refused the initialize (HTTP {resp.status_code}); {p} is an HTTP+SSE server: "
                            f"messages go to {urlsplit(us.endpoint or '').path}")
                return await self._send_initialize(flow, us)
        return None

    # -- the upstream stream ----------------------------------------------------------------------
    async def _connect(self, parent: http.HTTPFlow, url: str) -> UpstreamSession | None:
        """GET ``url`` as SSE: the session whose stream's first event was ``endpoint`` (its stream stays
        open), or None (the verdict, when there is one, is kept)."""
        from . import PROBE_TIMEOUT
        sender = self.state.sender
        loop = asyncio.get_running_loop()
        us = UpstreamSession(SID_PREFIX + os.urandom(16).hex(), url, urlsplit(url).netloc, opened=loop.create_future())

        def on_head(resp: http.Response, streams: bool) -> None:
            if (resp.status_code != 200 or not streams) and not us.opened.done():
                us.opened.set_result(False)
        headers = sender.headers_for(parent, {"accept": "text/event-stream", "host": us.host}, on_behalf=True)
        headers.pop("content-type", None)
        try:
            reply = await asyncio.wait_for(sender.send(
                parent, "GET", None, headers, f"{PURPOSE}: the server's SSE stream", url=url, timeout=None,
                on_chunk=lambda c: self._feed(us, c), on_head=on_head, on_broken=lambda why: self._broken(us, why),
                stop=us.opened), PROBE_TIMEOUT)
        except (upstream.UpstreamError, asyncio.TimeoutError) as e:
            logger.debug(f"mcpx: HTTP+SSE probe of {url}: {getattr(e, 'reason', None) or 'no endpoint event in time'}")
            return None  # no verdict: asked again next time
        us.stream_flow = reply.flow.id
        verdict = us.opened.done() and us.opened.result()
        self.verdicts.put(url, bool(verdict))
        if not verdict:
            sender.abort(reply.flow.id)
            logger.debug(f"mcpx: HTTP+SSE probe of {url}: HTTP {reply.status}, not an HTTP+SSE server")
            return None
        self.sessions[us.sid] = us
        return us

    def _feed(self, us: UpstreamSession, chunk: bytes) -> None:
        try:
            events = us.parser.feed(chunk) if chunk else us.parser.close()[0]
            for ev in events:
                if us.endpoint is None:
                    if ev.payload is None and ev.event_type is None:
                        continue  # a comment, a retry: no event to a client
                    url = wire.resolve_endpoint(us.stream_url, ev.data or "") if wire.is_endpoint(ev.event_type) else None
                    us.endpoint = url
                    if url is not None:
                        us.life.fire(E.ENDPOINT)
                    if not us.opened.done():
                        us.opened.set_result(url is not None)
                    if url is None:
                        return
                elif ev.event_type in (None, "message") and ev.payload is not None and not ev.blank():
                    self._message(us, ev.payload)
            if not chunk:
                if not us.opened.done():
                    us.opened.set_result(False)
                self._broken(us, "the server ended its SSE stream")
        except Exception as e:  # never break mitmproxy's stream
            logger.warning(f"mcpx: upstream HTTP+SSE stream: {type(e).__name__}: {e}")

    def _message(self, us: UpstreamSession, payload: bytes) -> None:
        members = _members(payload)
        if not members:
            logger.warning(f"mcpx: upstream HTTP+SSE stream: an event that holds no JSON-RPC message ({len(payload)} bytes): "
                           "no client request it could answer")
            return
        for m in members:
            to = us.router.route(m)
            if isinstance(to, Pending):
                sink = us.sinks.pop(id(to), None) if to.done else us.sinks.get(id(to))
                if sink is not None:
                    sink(m, to.done)
        self._flush_get(us)

    def _flush_get(self, us: UpstreamSession) -> None:
        out, us.router.get_out = us.router.get_out, []
        if us.get_stream is not None:
            for m in out:
                us.get_stream.put(wire.answer([m], True)[1])

    def _broken(self, us: UpstreamSession, why: str) -> None:
        if us.life.ended:
            return
        us.life.fire(E.BREAK)
        logger.warning(f"mcpx: upstream HTTP+SSE stream of {us.stream_url}: {why}; the session's later requests get 404")
        self._end(us, f"mcpx: the server's HTTP+SSE stream ended ({why}): this request's answer cannot come")

    def close(self, us: UpstreamSession, why: str) -> None:
        """The client's DELETE, idle expiry, shutdown: end the upstream stream."""
        if us.life.ended:
            return
        us.life.fire(E.CLOSE)
        logger.info(f"mcpx: upstream HTTP+SSE stream of {us.stream_url} ended: {why}")
        if us.stream_flow is not None:
            self.state.sender.abort(us.stream_flow)
        self._end(us, f"mcpx: the session ended ({why})")

    def _end(self, us: UpstreamSession, why: str) -> None:
        self.sessions.pop(us.sid, None)
        for p in us.router.fail_all(why):
            sink = us.sinks.pop(id(p), None)
            if sink is not None:
                sink(p.out[-1], True)
        if us.get_stream is not None:
            us.get_stream.close()

    def expire_idle(self, ttl: float) -> int:
        now = time.monotonic()
        idle = [us for us in self.sessions.values() if now - us.last > ttl and not us.router.pending]
        for us in idle:
            self.close(us, f"idle for more than {ttl:g} s")
        return len(idle)

    def stop(self) -> None:
        for us in list(self.sessions.values()):
            self.close(us, "mcpx shut down")
        for task in list(self._tasks):
            task.cancel()

    # -- client messages --------------------------------------------------------------------------
    async def _send_initialize(self, flow: http.HTTPFlow, us: UpstreamSession) -> Answer:
        body = flow.request.get_content(strict=False) or b""
        msg = _initialize(flow) or {}
        done: asyncio.Future = asyncio.get_running_loop().create_future()
        p = us.router.register(msg, sse=False)
        us.sinks[id(p)] = lambda m, final: final and not done.done() and done.set_result(m)
        us.life.fire(E.INITIALIZE)
        failed = await self._post(flow, us, body, "initialize")
        if failed is not None:
            _fail([p], us, failed)
        try:
            answer = await asyncio.wait_for(asyncio.shield(done), INITIALIZE_TIMEOUT)
        except asyncio.TimeoutError:
            _drop(us, p)
            answer = _error(msg.get("id"), f"mcpx: no answer to the initialize on the server's HTTP+SSE stream in {INITIALIZE_TIMEOUT:g} s")
        ok = isinstance(answer.get("result"), dict) and us.life.can(E.INITIALIZED)
        headers = _JSON + ((("mcp-session-id", us.sid),) if ok else ())
        if ok:
            us.life.fire(E.INITIALIZED)
        else:
            if us.life.can(E.REFUSED):
                us.life.fire(E.REFUSED)
            self.close(us, "the initialize was not accepted")
        return Answer(200, orjson.dumps(answer), headers, note=f"the server's HTTP+SSE stream ({us.stream_url})")

    async def _in_session(self, flow: http.HTTPFlow, sid: str) -> Answer | Streamed | Relay:
        r = flow.request
        us = self.sessions.get(sid)
        if us is None or not us.life.ready:
            return Answer(404, orjson.dumps({"jsonrpc": "2.0", "id": _single_request_id(r.get_content(strict=False) or b""),
                                             "error": UNKNOWN_SESSION}),
                          note="upstream HTTP+SSE: no open upstream stream for this session (it ended, or lives in another process)")
        us.last = time.monotonic()
        accepts = wire.accepts_sse({k.lower(): v for k, v in r.headers.items()})
        if r.method == "DELETE":
            self.close(us, "the client's DELETE")
            return Answer(200, b"", (), note="upstream HTTP+SSE: the client's DELETE ended the upstream stream")
        if r.method == "GET":
            if not accepts:
                return Answer(405, b"", (), note="upstream HTTP+SSE: a GET that takes no SSE stream")
            return await self._get(us)
        if r.method != "POST":
            return Answer(405, b"", (), note=f"upstream HTTP+SSE: {r.method} is no Streamable HTTP request")
        body = r.get_content(strict=False) or b""
        members = _members(body) or []
        for m in members:
            if m.get("method") == "notifications/cancelled" and isinstance(m.get("params"), dict):
                p = us.router.cancel(m["params"].get("requestId"))
                sink = us.sinks.pop(id(p), None) if p is not None else None
                if sink is not None:
                    sink({}, True)  # schema/2024-11-05/schema.ts CancelledNotification: no answer is owed
        requests = [m for m in members if _is_request(m)]
        if not requests:
            failed = await self._post(flow, us, body, "a notification or response")
            if failed is not None:
                return Answer(502, orjson.dumps(_error(None, failed)), note="upstream HTTP+SSE: the endpoint refused the message")
            return Answer(202, b"", (), note="upstream HTTP+SSE: sent to the server's endpoint")
        refused = _unmatchable(requests, us.router.pending)
        if refused is not None:  # its answer could never be told apart on the stream: the POST would wait for ever
            logger.warning(f"mcpx: upstream HTTP+SSE: {refused[1]}; answered -32600, nothing sent")
            return Answer(400, orjson.dumps({"jsonrpc": "2.0", "id": refused[0], "error": {"code": -32600, "message": f"mcpx: {refused[1]}"}}),
                          _JSON, note=f"upstream HTTP+SSE: {refused[1]}")
        batch = len(requests) > 1 or body.lstrip()[:1] == b"["
        pendings = [us.router.register(m, sse=accepts and not batch) for m in requests]
        host = {"host": us.host}
        return Relay(lambda s: self._answer(flow, us, body, pendings, batch, s, host),
                     note=f"upstream HTTP+SSE: answered from the server's stream ({us.stream_url})")

    async def _answer(self, flow: http.HTTPFlow, us: UpstreamSession, body: bytes, pendings: list[Pending], batch: bool,
                      s: AnswerStream, host: dict) -> None:
        """Fill the relay of a POST carrying requests: the final answer as JSON, or the POST's messages
        as SSE once the first companion comes (:func:`.wire.answer`)."""
        finals: dict[int, dict] = {}
        for p in pendings:
            us.sinks[id(p)] = _relay_sink(s, p, pendings, batch, finals)
        failed = await self._post(flow, us, body, "a request", host)
        if failed is not None:
            _fail(pendings, us, failed)

    async def _post(self, flow: http.HTTPFlow, us: UpstreamSession, body: bytes, what: str, host: dict | None = None) -> str | None:
        """POST ``body`` to the endpoint (schema/2024-11-05 "HTTP with SSE": ``202 Accepted``); None,
        or why it failed."""
        sender = self.state.sender
        headers = sender.headers_for(flow, host or {"host": us.host}, on_behalf=True)
        try:
            reply = await sender.send(flow, "POST", body, headers, f"{PURPOSE}: {what}, to the server's endpoint",
                                      url=us.endpoint, timeout=POST_TIMEOUT)
        except upstream.UpstreamError as e:
            return f"mcpx could not reach the server's HTTP+SSE endpoint: {e.reason}"
        if not 200 <= reply.status < 300:
            logger.warning(f"mcpx: the HTTP+SSE endpoint answered HTTP {reply.status} to {what}")
            return f"mcpx: the server's HTTP+SSE endpoint answered HTTP {reply.status}"
        return None

    async def _get(self, us: UpstreamSession) -> Streamed:
        """The client's GET stream. One per session: a new one ends the one before, and the server's
        messages that come meanwhile are queued for the new one (none is put on the closed one)."""
        old, us.get_stream = us.get_stream, None
        us.router.close_get()
        if old is not None:
            old.close()
        stream: AnswerStream | None = None

        async def closed() -> None:
            if us.get_stream is stream:
                us.get_stream = None
                us.router.close_get()
        stream = await self.state.answers.open(on_close=closed)
        us.get_stream = stream
        for m in us.router.open_get():
            stream.put(wire.answer([m], True)[1])
        task = asyncio.get_running_loop().create_task(_keepalive(us, stream))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return Streamed(stream, note="upstream HTTP+SSE: the server's messages outside any request")
