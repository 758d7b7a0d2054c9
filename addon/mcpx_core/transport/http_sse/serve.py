"""The IO adapter of the HTTP+SSE transport: the one question the request hook asks
(:meth:`HttpSseTransport.request`), the client's stream, the probe, the legs.

Which client requests it takes (:mod:`.wire`):

- the opening ``GET`` (no session, ``Accept: text/event-stream``) of a path the server does not serve
  an SSE stream at. The server is asked once per origin and path (a probe: the same GET, sent by
  mcpx, ended as soon as its status line came; the verdict is kept for the process's life, at
  most :data:`VERDICTS` of them): where :func:`.wire.mcp_endpoint` names the server's MCP endpoint
  (``…/sse`` 404: ``…/mcp``; the path 400: itself), mcpx serves the stream: ``200 text/event-stream``
  at once, the ``endpoint`` event, keepalive comments; otherwise (``2xx``: the server serves
  HTTP+SSE itself; any other answer) the client's GET goes on untouched, now and from then on;
- each ``POST`` to an endpoint URL it gave (``…/messages?mcpx_session=<sealed token>``):
  ``202 Accepted`` at once, the message sent to the server's Streamable HTTP endpoint as a leg
  (:mod:`.legs`), its answers on the client's stream. A token that does not open, or whose stream
  is gone (another replica, a restart), gets ``404`` as an SDK server answers an unknown session.

What the token seals (:class:`mcpx_core.seal.Facts`): a random ``sid``, the bridge name
``http+sse``, the digest of the server's MCP endpoint and of the GET's credentials; the stream itself
lives in memory, and so do the links from the token to it and to the legs' session. The stream's
event ids seal what another process needs to continue it when the client reconnects (:mod:`.resume`);
the stream's response carries ``Mcpx-Affinity: <token>`` (:data:`mcpx_core.session.AFFINITY_HEADER`)
for a load balancer to send its POSTs where it lives (deploy/haproxy.cfg).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson
from mitmproxy import connection, http

from ... import flowlist, upstream
from ...bridge import Answer, Streamed
from ...bridge.stream import AnswerStream
from ...seal import ENDPOINT_ONLY, BadToken, Facts
from ...session import AFFINITY_HEADER, endpoint_digest
from . import legs as legs_mod
from . import resume as resume_mod
from . import wire
from .lifecycle import TransportEvent as E
from .lifecycle import TransportLifecycle

logger = logging.getLogger("mcpx")
NAME = ENDPOINT_ONLY
#: probe verdicts kept (origin and path -> the MCP endpoint, or None: not served by mcpx)
VERDICTS = 1024
#: sids of streams whose client went away here (their upstream session deleted): not resumed
ENDED = 4096
_TEXT = (("content-type", "text/plain; charset=utf-8"),)
#: the MCP revision from which a Streamable HTTP client sends ``MCP-Protocol-Version`` (2025-06-18 transports 2.7)
_HEADER_FROM = "2025-06-18"


@dataclass
class TransportSession:
    """One client stream mcpx serves, and what its legs need."""

    sid: str
    url: str
    endpoint: str
    stream: AnswerStream
    client_conn: connection.Client
    headers: dict[str, str]
    life: TransportLifecycle = field(default_factory=TransportLifecycle)
    #: the ``Mcp-Session-Id`` mcpx gave for the legs (its sealed token; the server's own id when unsealed)
    session_id: str | None = None
    revision: str | None = None
    listen: legs_mod.Leg | None = None
    keepalive: asyncio.Task | None = None
    #: done when the last leg that later legs must follow (``initialize``, ``notifications/initialized``) ended
    barrier: asyncio.Future | None = None
    #: the POST legs in flight (a cancelled request's id leaves theirs: its server sends it no answer, nor does mcpx)
    inflight: set = field(default_factory=set)
    #: the endpoint token; the id the next stream's ``endpoint`` event carries (:mod:`.resume`)
    token: str = ""
    event_id: str = ""


class HttpSseTransport:
    """The HTTP+SSE transport served by mcpx. ``state``: the addon's :class:`~mcpx_core.addons.state.State`."""

    name = NAME

    def __init__(self, state: Any) -> None:
        self.state = state
        self.legs = legs_mod.Legs()
        #: SSE path -> MCP endpoint path (``mcpx_http_sse``); the conventions otherwise
        self.routes: dict[str, str] = {}
        self.enabled = True
        self.verdicts: dict[tuple[str, str], str | None] = {}
        self.sessions: dict[str, TransportSession] = {}
        self.ended: dict[str, None] = {}
        #: sid -> done when a stream of it opens here (:meth:`_stream_of`)
        self.waiting: dict[str, asyncio.Future] = {}
        #: the client's stream by its flow's id, until the flow ends (its body: what the client got)
        self.streams: dict[str, AnswerStream] = {}
        self._tasks: set[asyncio.Task] = set()

    def configure(self, specs: tuple[str, ...]) -> None:
        """``mcpx_http_sse``: ``SSE_PATH=MCP_PATH`` pairs, or ``off`` (checked by :mod:`mcpx_core.settings`)."""
        self.enabled = specs != ("off",)
        self.routes = dict(spec.split("=", 1) for spec in specs) if self.enabled else {}
        self.verdicts.clear()

    def claim(self, flow: http.HTTPFlow) -> None:
        """From the request's headers alone: a POST to an endpoint URL mcpx gave is this stage's (its body,
        of unknown length, is judged by no other stage before the ``request`` hook)."""
        token = wire.token_of(flow.request.method, flow.request.path)
        if self.enabled and token is not None and token.startswith("mcpx1.") and not self.legs.owns(flow):
            flow.metadata["mcpx_transport"] = NAME

    def takes(self, flow: http.HTTPFlow) -> bool:
        """Whether this stage answers ``flow`` (the client's own stream and POSTs), so that no other does."""
        return flow.metadata.get("mcpx_transport") == NAME

    async def request(self, flow: http.HTTPFlow) -> Answer | Streamed | None:
        """What the client's request gets: an :class:`Answer`, a :class:`Streamed` (the client's
        stream), or None: not this transport's (the request goes on as any other)."""
        st = self.state
        r = flow.request
        if not self.enabled or st.tracker.sealer is None or not st.sender.available(flow) or upstream.is_own(flow) \
                or self.legs.owns(flow):
            return None
        token = wire.token_of(r.method, r.path)
        if token is not None and token.startswith("mcpx1."):
            return await self._post(flow, token)
        hv = {k.lower(): v for k, v in r.headers.items()}
        if not wire.opens_stream(r.method, hv):
            return None
        path = urlsplit(r.path).path or "/"
        origin = f"{r.scheme}://{r.host}:{r.port}"
        if _streamable_client(st.tracker, flow, hv, origin + path):
            return None
        if path in self.routes:
            mcp_path = self.routes[path]
        else:
            if (origin, path) not in self.verdicts:
                status = await _probe(st.sender, flow)
                if status is None:
                    return None
                if len(self.verdicts) >= VERDICTS:
                    self.verdicts.pop(next(iter(self.verdicts)))
                self.verdicts[(origin, path)] = wire.mcp_endpoint(path, status, self.routes)
            mcp_path = self.verdicts[(origin, path)]
        if mcp_path is None:
            return None
        return await self._open(flow, path, f"{origin}{mcp_path}", hv)

    async def _open(self, flow: http.HTTPFlow, path: str, url: str, hv: dict[str, str]) -> Streamed | Answer:
        """The client's stream: a new session, or (``Last-Event-ID`` of mcpx's) the one it reconnects to."""
        st = self.state
        digest, holder = endpoint_digest(url), resume_mod.holder(flow.request.headers.items(multi=True))
        last = hv.get("last-event-id", "")
        prior = resume_mod.resumed(st.tracker.sealer, last, digest, holder) if resume_mod.is_mcpx(last) else None
        if isinstance(prior, str) or (prior is not None and prior.sid in self.ended):
            why = prior if isinstance(prior, str) else "the client's stream ended here, and its upstream session with it"
            logger.info(f"mcpx: HTTP+SSE client reconnects on {path}: not resumed: {why}: 404")
            flow.metadata["mcpx_transport"] = NAME
            return Answer(404, b"Could not find session", _TEXT, note=f"HTTP+SSE stream not resumed: {why}")
        if prior is None:
            sid = os.urandom(8).hex()
            token = st.tracker.sealer.seal(Facts(sid=sid, bridge=NAME, endpoint=digest, issued=int(time.time()), holder=holder))
        else:
            sid, token = prior.sid, prior.token
        ts: TransportSession | None = self.sessions.get(sid)
        stream = None

        async def closed() -> None:
            if ts is not None and ts.stream is stream:  # (a stream the client replaced by a newer one ends nothing)
                self._close(ts)
        stream = await st.answers.open(on_close=closed)
        stream.headers.append((AFFINITY_HEADER, token))
        if ts is not None and not ts.life.closed:  # reconnected to this process while its old stream lingers
            old, ts.stream, ts.client_conn = ts.stream, stream, flow.client_conn
            old.close()
        else:
            ts = TransportSession(sid, url, digest, stream, flow.client_conn, legs_mod.leg_headers(flow.request),
                                  token=token, event_id=token)
            self.sessions[sid] = ts
            waiting = self.waiting.pop(sid, None)
            if waiting is not None and not waiting.done():
                waiting.set_result(None)
            if prior is not None and prior.upstream_id is not None:
                ts.session_id, ts.revision, ts.event_id = prior.upstream_id, prior.revision, prior.event_id
                ts.life.fire(E.RESUME)
                self._listen(ts)
            ts.keepalive = self._spawn(self._keepalive(ts))
        stream.put(wire.endpoint_event(wire.endpoint_url(path, token, wire.forwarded_prefix(hv)), ts.event_id, resume_mod.RETRY_MS))
        flow.metadata["mcpx_transport"] = NAME
        self.streams[flow.id] = stream
        how = "resumed" if prior is not None else "served"
        logger.info(f"mcpx: HTTP+SSE client on {path}: {how} by mcpx, messages to {urlsplit(url).path} (Streamable HTTP)")
        return Streamed(stream, note=f"the HTTP+SSE transport, {how} by mcpx; messages go to {urlsplit(url).path} as Streamable HTTP")

    # -- the server->client hooks (addons/transport.py): the client's stream flow, the legs -----------
    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if self.takes(flow) and flow.response is not None:
            flow.response.stream = True  # the client's stream mcpx writes: through as it comes
        self.legs.responseheaders(flow)

    def response(self, flow: http.HTTPFlow) -> None:
        self._ended(flow)
        self.legs.response(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._ended(flow)
        self.legs.error(flow)

    def _ended(self, flow: http.HTTPFlow) -> None:
        """The client's stream flow ended: its body is what the client got (views, ``-w`` files)."""
        stream = self.streams.pop(flow.id, None)
        if stream is not None and flow.response is not None and flow.response.raw_content in (None, b""):
            flow.response.content = stream.delivered

    async def _post(self, flow: http.HTTPFlow, token: str) -> Answer:
        flow.metadata["mcpx_transport"] = NAME
        try:
            facts = self.state.tracker.sealer.open(token)
        except BadToken as e:
            logger.info(f"mcpx: HTTP+SSE POST: {e.reason}: 404")
            return Answer(404, b"Could not find session", _TEXT, note="HTTP+SSE endpoint: unknown session")
        ts = await self._stream_of(facts.sid) if facts.bridge == NAME else None
        if facts.bridge != NAME or ts is None or ts.life.closed or facts.endpoint != ts.endpoint:
            return Answer(404, b"Could not find session", _TEXT, note="HTTP+SSE endpoint: no open stream for this session")
        body = flow.request.get_content(strict=False) or b""
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            return Answer(400, b"Could not parse message", _TEXT, note="HTTP+SSE endpoint: not JSON")
        members = value if isinstance(value, list) else [value]
        methods = [m.get("method") for m in members if isinstance(m, dict)]
        kind = "initialize" if "initialize" in methods else "initialized" if "notifications/initialized" in methods else "message"
        if kind == "initialize" and ts.life.can(E.INITIALIZE):
            ts.life.fire(E.INITIALIZE)
        for m in members:  # schema/2024-11-05 CancelledNotification: no answer to that request is owed any more
            if isinstance(m, dict) and m.get("method") == "notifications/cancelled" and isinstance(m.get("params"), dict):
                for leg in ts.inflight:
                    leg.ids = [i for i in leg.ids if i != m["params"].get("requestId")]
        # each message goes with its own POST's credentials (a server checks each request's), never the stream's
        self._spawn(self._leg(ts, flow.client_conn, legs_mod.leg_headers(flow.request), body, kind, wire.request_ids(body), methods))
        carried = flowlist.carried(members, isinstance(value, list)) or "a message"
        return Answer(202, b"Accepted", _TEXT, note=f"HTTP+SSE endpoint: {carried}, sent to the server as Streamable HTTP")

    async def _stream_of(self, sid: str) -> TransportSession | None:
        """The session of ``sid``, waiting at most :data:`.resume.RESUME_WAIT` for a stream that broke
        (a replica that died or restarted) to be reconnected here by its client."""
        ts = self.sessions.get(sid)
        if ts is not None or sid in self.ended:
            return ts
        fut = self.waiting.setdefault(sid, asyncio.get_running_loop().create_future())
        try:
            await asyncio.wait_for(asyncio.shield(fut), resume_mod.RESUME_WAIT)
        except asyncio.TimeoutError:
            if self.waiting.get(sid) is fut:
                del self.waiting[sid]
        return self.sessions.get(sid)

    async def _leg(self, ts: TransportSession, conn: connection.Client, client: dict[str, str], body: bytes, kind: str,
                   ids: list, methods: list) -> None:
        """Send one client message as a leg, after the legs it must follow."""
        prev = ts.barrier
        done: asyncio.Future | None = None
        if kind in ("initialize", "initialized"):
            done = ts.barrier = asyncio.get_running_loop().create_future()
        if prev is not None:
            await asyncio.shield(prev)

        def finished(leg: legs_mod.Leg) -> None:
            ts.inflight.discard(leg)
            try:
                self._leg_done(ts, leg)
            finally:
                if done is not None and not done.done():
                    done.set_result(None)
        purpose = ", ".join(str(m) for m in methods if m) or "a JSON-RPC response"
        sent: list[legs_mod.Leg] = []

        def deliver(ev: bytes) -> None:  # the initialize answer's event carries the id a reconnect resumes by
            self._deliver(ts, _ready_event(self.state.tracker.sealer, ts, sent[0], ev) if kind == "initialize" and sent else ev)
        sent.append(self.legs.send(conn, "POST", ts.url, body, self._headers(ts, client=client), kind, ids, deliver, finished,
                                   purpose=purpose))
        ts.inflight.add(sent[0])

    def _headers(self, ts: TransportSession, accept: str = "application/json, text/event-stream",
                 client: dict[str, str] | None = None) -> dict[str, str]:
        """A leg's headers: the client's end-to-end ones (``client``: its POST's; else its stream's), the
        Streamable HTTP negotiation, the session and, from 2025-06-18, the revision."""
        h = {**(ts.headers if client is None else client), "content-type": "application/json", "accept": accept}
        if ts.session_id is not None:
            h["mcp-session-id"] = ts.session_id
        if ts.revision is not None and ts.revision >= _HEADER_FROM:
            h["mcp-protocol-version"] = ts.revision
        return h

    def _deliver(self, ts: TransportSession, event: bytes) -> None:
        if not ts.life.closed:
            ts.stream.put(event)

    def _leg_done(self, ts: TransportSession, leg: legs_mod.Leg) -> None:
        resp = leg.flow.response
        ok = resp is not None and 200 <= resp.status_code < 300
        if leg.kind == "initialize" and not ts.life.closed:
            result = next((m.get("result") for m in leg.messages if isinstance(m, dict) and "result" in m), None)
            if ok and isinstance(result, dict):
                ts.session_id = resp.headers.get("mcp-session-id")
                version = result.get("protocolVersion")
                ts.revision = version if isinstance(version, str) else None
                if ts.life.can(E.SESSION):
                    ts.life.fire(E.SESSION)
            elif ts.life.can(E.REFUSED):
                ts.life.fire(E.REFUSED)
        elif leg.kind == "initialized" and ok and ts.life.ready and ts.listen is None and ts.session_id is not None:
            self._listen(ts)
        elif leg.kind == "listen":
            ts.listen = None
            if ts.life.can(E.UNLISTEN):
                ts.life.fire(E.UNLISTEN)

    def _listen(self, ts: TransportSession) -> None:
        """Open the upstream GET stream: the server's messages outside any request reach the client's stream."""
        def head(leg: legs_mod.Leg) -> None:
            if leg.flow.response is not None and leg.flow.response.status_code == 200 and ts.life.can(E.LISTEN):
                ts.life.fire(E.LISTEN)
        h = self._headers(ts, accept="text/event-stream")
        h.pop("content-type", None)
        ts.listen = self.legs.send(ts.client_conn, "GET", ts.url, b"", h, "listen", [], lambda ev: self._deliver(ts, ev),
                                   lambda leg: self._leg_done(ts, leg), on_head=head, purpose="the GET stream")

    def _close(self, ts: TransportSession, delete: bool = True) -> None:
        """The client's stream went away: end the upstream GET stream and (``delete``) the upstream session.
        At shutdown the session stays: its client may reconnect to another process (:mod:`.resume`)."""
        if ts.life.closed:
            return
        ts.life.fire(E.CLOSE)
        self.sessions.pop(ts.sid, None)
        if ts.keepalive is not None:
            ts.keepalive.cancel()
        if ts.listen is not None:
            self.legs.abort(ts.listen)
        if not delete:
            ts.stream.close()
            return
        self.ended[ts.sid] = None
        if len(self.ended) > ENDED:
            self.ended.pop(next(iter(self.ended)))
        if ts.session_id is not None:
            h = self._headers(ts)
            h.pop("content-type", None)
            self.legs.send(ts.client_conn, "DELETE", ts.url, b"", h, "delete", [], lambda _ev: None, lambda _leg: None,
                           purpose="the client's stream closed: DELETE")
        logger.info("mcpx: HTTP+SSE client stream closed: upstream session ended")

    async def _keepalive(self, ts: TransportSession) -> None:
        from . import KEEPALIVE
        while not ts.life.closed:
            await asyncio.sleep(KEEPALIVE)
            self._deliver(ts, wire.KEEPALIVE_COMMENT)

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def stop(self) -> None:
        for ts in list(self.sessions.values()):
            self._close(ts, delete=False)


def _streamable_client(tracker: Any, flow: http.HTTPFlow, hv: dict[str, str], endpoint: str) -> bool:
    """Whether a sessionless SSE ``GET`` is a Streamable HTTP client's GET stream, never this
    transport's: it names its revision (``MCP-Protocol-Version``, sent on every request after
    ``initialize`` from 2025-06-18 on), or its connection or host holds a session without a server
    session id at this very endpoint (a client of a stateless server, after its ``initialize``)."""
    if "mcp-protocol-version" in hv:
        return True
    peer = flow.client_conn.peername
    if not peer:
        return False
    digest = endpoint_digest(endpoint)
    for key in (f"conn:{peer[0]}:{peer[1]}", f"host:{peer[0]}"):
        s = tracker.get(key)
        if s is not None and s.upstream_id is None and s.endpoint == digest:
            return True
    return False


def _ready_event(sealer: Any, ts: TransportSession, leg: legs_mod.Leg, event: bytes) -> bytes:
    """The ``initialize`` answer's event with ``id: T~R`` (:mod:`.resume`) when it answers the initialize."""
    resp = leg.flow.response
    result = wire.initialize_result(event)
    if resp is None or not 200 <= resp.status_code < 300 or result is None:
        return event
    version = result.get("protocolVersion")
    event_id = resume_mod.ready_id(sealer, ts.token, ts.sid, ts.endpoint, resp.headers.get("mcp-session-id"),
                                   version if isinstance(version, str) else None)
    if event_id is None:
        return event
    ts.event_id = event_id
    return wire.with_id(event, event_id)


async def _probe(sender: Any, flow: http.HTTPFlow) -> int | None:
    """The status the server gives a sessionless SSE ``GET`` of the client's path (the probe is
    ended once its status line came), or None when it could not be asked."""
    from . import PROBE_TIMEOUT
    head: asyncio.Future = asyncio.get_running_loop().create_future()

    def on_head(resp: http.Response, _streams: bool) -> None:
        if not head.done():
            head.set_result(resp.status_code)
    headers = sender.headers_for(flow, {"accept": "text/event-stream"}, on_behalf=True)
    headers.pop("content-type", None)
    try:
        reply = await sender.send(flow, "GET", None, headers, "HTTP+SSE probe: does the server serve this SSE path",
                                  timeout=PROBE_TIMEOUT, on_chunk=lambda _c: None, on_head=on_head, stop=head)
    except upstream.UpstreamError as e:
        logger.info(f"mcpx: HTTP+SSE probe of {flow.request.path}: {e.reason}")
        return None
    sender.abort(reply.flow.id)
    logger.info(f"mcpx: HTTP+SSE probe of {flow.request.path}: HTTP {reply.status}")
    return reply.status
