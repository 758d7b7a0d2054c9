"""Legacy clients (2024-11-05 .. 2025-11-25) in front of a 2026-07-28-only server (REVISIONS.md 2.4
"cross-era mode"; the ``bridge``, ``answer-locally`` and ``synthesize`` records toward legacy clients
and the *Upgrade direction* paragraphs of revision-delta.json).

A 2026-07-28 server has no handshake, sessions, GET stream, ``ping``, ``logging/setLevel``,
resource subscriptions nor server->client requests (docs/specification/2026-07-28/changelog.mdx:12-20);
a legacy client starts with ``initialize`` and fails at once (tests/peers/BRIDGING.md 1). In a
session of this bridge the client's flows never reach the server as they are: mcpx answers some
itself and sends the 2026-07-28 requests as flows of its own (:class:`mcpx_core.bridge.Upstream`).

- **Handshake** (LC-initialize, LC-instructions, TR-session-id): :meth:`LegacyClientBridge.initialize`
  answers ``initialize`` from a ``server/discover`` (schema/2026-07-28/schema.ts:665): the client's
  requested revision, the DiscoverResult's capabilities downgraded to it, ``serverInfo`` from its
  ``_meta`` (schema/2026-07-28/schema.ts:157), ``instructions``; the session is sealed with
  ``bridge="legacy-client"``, server leg 2026-07-28 (:mod:`mcpx_core.seal`).
- **Answered locally**: ``notifications/initialized`` (LC-initialized), ``ping`` (LC-ping),
  ``logging/setLevel`` (LOG-setLevel: the level is kept and sent as ``_meta`` logLevel),
  ``resources/(un)subscribe`` (SUB-resources-subscribe: the URIs go into the listen filter),
  ``DELETE`` (TR-session-delete), ``notifications/roots/list_changed`` (ROOTS-list-changed),
  client ``notifications/progress`` (PROG-direction).
- **Every request upstream** (:meth:`_upgrade`): walked toward the 2026-07-28 schema, then the
  per-request ``_meta`` (META-protocolVersion, META-clientCapabilities upgraded, META-clientInfo,
  META-logLevel; ``params`` created where absent: PAGE-params-required) and the headers
  ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*`` (TR-protocol-version-header,
  TR-mcp-method-name, TR-mcp-param-headers: from each tool's ``x-mcp-header`` seen in tools/list,
  schema/2026-07-28/schema.ts:1997); ``Mcp-Session-Id`` and ``Last-Event-ID`` stay behind.
- **Multi round-trip requests** (:class:`Call`; MRTR-bridge-legacy-client,
  docs/specification/2026-07-28/basic/patterns/mrtr.mdx:249): an ``InputRequiredResult``
  (schema/2026-07-28/schema.ts:584) becomes server->client requests on the SSE stream of the
  client's POST (MRTR-embedded-requests: ``jsonrpc`` and a proxy id added, downgraded to the
  client's revision; a URL elicitation to a 2025-11-25 client gets a synthesized ``elicitationId``,
  ELIC-elicitationId); the client's answers (separate POSTs, consumed: a 2026 server never gets a
  POSTed response, TR-post-body) go upstream as ``inputResponses`` with the untouched
  ``requestState`` under a new id, as long as the server asks; the final result reaches the client
  under its own id. A client lacking the capability gets -32603 naming it.
  The answer streams through mcpx's answer endpoint (:mod:`.stream`: mitmproxy has no API for a
  response an addon writes over time), only when it must (an input request, a notification before
  the result); an answer that is one JSON body is given at once.
- **Notifications** (:class:`Listen`; TR-get-stream, SUB-*): the client's GET stream is served from
  an upstream ``subscriptions/listen`` (schema/2026-07-28/schema.ts:1314) whose filter has the
  ``listChanged`` kinds the server announced and the URIs the client subscribed; the ack is
  consumed (SUB-acknowledged), ``subscriptionId`` removed (META-subscriptionId).
- **Answers**: downgraded by the rules as any 2026-07-28 message toward the client's revision
  (RES-resultType, RES-ttlMs, RES-cacheScope, META-serverInfo, ERR-*); an HTTP 400/404 carrying a
  JSON-RPC error reaches the client as HTTP 200 (TR-modern-400-errors, TR-unknown-method-404;
  mcp 2.3.0 sends every -32602/-32600 as 400: BRIDGING.md 4.3).

State: what never changes is sealed in the session token (revisions, capabilities, clientInfo);
the log level, subscribed URIs, open listen streams and outstanding input requests live in this
process only (a failover loses them: README "Legacy clients in front of a 2026-07-28 server").
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import logging
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import revisions, upstream as upstream_mod
from ..changes import Change
from ..downgrade import Walk, classify, downgrade
from ..framing import json_body
from ..framing.sse import SSEParser
from ..rules.api import escape
from ..rules.headers import upgrade_headers, x_mcp_header_map
from . import Answer, Streamed, era

logger = logging.getLogger("mcpx")

NAME = "legacy-client"
LATEST = revisions.LATEST
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
LOG = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
#: requests whose params are PaginatedRequestParams in 2026 (schema/2026-07-28/schema.ts:1064)
PAGINATED = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
#: rounds of input_required mcpx answers for one request (as @modelcontextprotocol/client 2.4.0: 10 retries)
MAX_ROUNDS = 10
#: seconds mcpx waits for the client to answer the input requests of one round (a human may answer an
#: elicitation; mcp 2.3.0 seals requestState for 600 s: tests/peers/BRIDGING.md 2.5)
INPUT_TIMEOUT = 600.0
#: sessions whose mutable state (log level, subscriptions, listen) is kept at most
MAX_SESSIONS = 10000
NOTE = "bridge legacy-client: the server speaks only 2026-07-28"
JSON_HEADERS = (("content-type", "application/json"),)


def _ptr(*keys: str) -> str:
    return "".join("/" + escape(k) for k in keys)


def _error(rid: Any, code: int, message: str, data: Any = None) -> dict:
    err: dict = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": err}


def sse_event(message: dict) -> bytes:
    """One SSE event carrying ``message`` (``event: message``: mcp 1.x Python clients ignore others)."""
    return b"event: message\ndata: " + json_body.dumps(message) + b"\n\n"


@dataclass
class Pending:
    """A server->client request mcpx sent to the client for one ``inputRequests`` entry."""

    key: str
    method: str
    session: str
    future: asyncio.Future


@dataclass
class SessionState:
    """A bridged session's mutable state (memory only)."""

    log_level: str | None = None
    subscribed: list[str] = field(default_factory=list)
    listen: Listen | None = None
    #: client request id -> its call in flight (for notifications/cancelled)
    calls: dict = field(default_factory=dict)
    caps_2026: tuple[dict, list] | None = None


class LegacyClientBridge:
    """``State.bridges["legacy-client"]``: serves every flow of a session whose token names it."""

    name = NAME
    #: it records what it does with every client POST body (Rewriter.self_recording)
    records_every_body = True

    def __init__(self, state: Any):
        self.state = state
        self.sessions: OrderedDict[str, SessionState] = OrderedDict()
        #: proxy id of a server->client request -> what it asks
        self.pending: dict[str, Pending] = {}
        #: (URL, credentials) -> tool name -> {argument path: x-mcp-header token} (None: invalid
        #: annotations); what one client's tools/list taught is never used for other credentials
        self.tools: dict[tuple[str, str], dict[str, dict | None]] = {}
        #: (URL, credentials) -> (DiscoverResult, monotonic time it expires)
        self.discovered: dict[tuple[str, str], tuple[dict, float]] = {}
        self._ids = itertools.count(1)
        self._prefix = os.urandom(3).hex()
        self.input_timeout = INPUT_TIMEOUT

    @property
    def rw(self):
        return self.state.rewriter

    def mint_id(self, kind: str = "") -> str:
        """A request id in mcpx's own namespace (RPC-request-id-reuse): unique per process and session."""
        return f"mcpx-{self._prefix}-{kind}{next(self._ids)}"

    def holds(self, jid: Any) -> bool:
        """Whether ``jid`` is the id of a server->client request mcpx made for some session and awaits
        the client's answer to (:attr:`pending`)."""
        return isinstance(jid, str) and jid in self.pending

    def session_state(self, s: Any) -> SessionState:
        ss = self.sessions.get(s.key)
        if ss is None:
            ss = self.sessions[s.key] = SessionState()
            while len(self.sessions) > MAX_SESSIONS:
                _, old = self.sessions.popitem(last=False)
                if old.listen is not None:
                    old.listen.close("session state evicted")
        else:
            self.sessions.move_to_end(s.key)
        return ss

    def can_stream(self, headers: dict[str, str]) -> bool:
        accept = next((v for k, v in headers.items() if k.lower() == "accept"), None)
        return accept is None or "text/event-stream" in accept or "*/*" in accept

    # -- records --------------------------------------------------------------------------------
    def log(self, exch: Any, direction: str, msg: Any, method: str | None, changes: list[Change],
            from_rev: str | None, to_rev: str | None, entry: bool = True) -> None:
        """One message's records (``msg`` None: the body's), with its entry for the views."""
        kind = classify(msg) if isinstance(msg, dict) else None
        if entry and kind is not None:
            jid = msg.get("id")
            if len(exch.messages) < 1000:
                exch.messages.append({"direction": direction, "kind": kind, "method": method,
                                      "id": json_body.plain_id(jid),
                                      "changes": len(changes)})
            else:
                exch.messages_omitted += 1
        self.rw._emit(exch, changes, direction, msg, method, from_rev, to_rev)

    def walk(self, msg: dict, kind: str, method: str | None, from_rev: str, to_rev: str, direction: str,
             request_id: Any = None):
        return downgrade(msg, kind, method, from_rev, to_rev, direction, self.rw.policy, self.rw.options,  # type: ignore[arg-type]
                         request_id=request_id)

    # -- the handshake ----------------------------------------------------------------------------
    async def discover(self, origin: str, upstream: Any, client_info: dict | None, caps: dict | None,
                       scope: tuple[str, str] | None = None) -> dict | None:
        """The server's DiscoverResult (cached for its ``ttlMs``, per ``scope``: the URL the client asked
        for and its credentials, :attr:`Exchange.client_scope`, since the server may answer each user and
        tenant otherwise), or None when it does not speak 2026-07-28."""
        scope = scope or (origin, "")
        hit = self.discovered.get(scope)
        if hit is not None and hit[1] > time.monotonic():
            return hit[0]
        rid = self.mint_id("discover-")
        try:
            reply = await upstream.send(json_body.dumps(era.discover_request(rid, client_info, caps)), era.discover_headers(),
                                        "server/discover, for a legacy client's initialize", timeout=30)
        except upstream_mod.UpstreamError as e:
            logger.warning(f"mcpx: server/discover to {origin} failed: {e.reason}")
            return None
        if era.about_the_client(reply.status, reply.headers.get("content-type", ""), reply.body):
            return None  # (no verdict from an authorization answer: it is about these credentials)
        speaks, result = era.classify_discover(reply.status, reply.headers.get("content-type", ""), reply.body)
        self.rw.era.learn(origin, speaks_2026=speaks, discover=result)
        if not speaks or result is None:
            return None
        ttl = result.get("ttlMs")
        if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) and ttl > 0:
            self.discovered[scope] = (result, time.monotonic() + ttl / 1000)
            while len(self.discovered) > MAX_SESSIONS:
                self.discovered.pop(next(iter(self.discovered)))
        return result

    async def initialize(self, exch: Any, upstream: Any, refused: str | None = None) -> Answer | None:
        """LC-initialize: answer the client's ``initialize`` from ``server/discover`` and seal the
        session for this bridge. ``refused``: what the server answered the forwarded initialize
        (None: not sent, the era was known). None when the server does not speak 2026-07-28 either
        (the caller then delivers the server's own answer)."""
        s = exch.session
        init = exch.initialize or {}
        rid = init.get("id")
        caps_2026 = self._caps(s, None)[0] if s.client_caps is not None else {}
        disc = await self.discover(exch.origin, upstream, s.client_info, caps_2026, exch.client_scope)
        if disc is None:
            return None
        requested = s.requested_rev
        client_rev = requested if requested in revisions.LEGACY else revisions.LEGACY[-1]
        changes = [Change(pointer="", action="answer-locally", rule="LC-initialize",
                          detail=(f"the server refused initialize ({refused}): " if refused else "the server speaks only 2026-07-28: ")
                          + "answered from server/discover, not forwarded")]
        if s.pinned_rev in revisions.LEGACY and revisions.older(s.pinned_rev, client_rev):  # mcpx_pin / mcpx.pin
            changes.append(Change(pointer="/result/protocolVersion", action="rewrite", rule="MCPX-pin", before=f'"{client_rev}"',
                                  after=f'"{s.pinned_rev}"', detail="session pinned to an older revision by mcpx.pin"))
            client_rev = s.pinned_rev
        s.client_rev, s.server_rev, s.bridge, s.pinned_rev = client_rev, LATEST, NAME, None
        result: dict = {"protocolVersion": client_rev}
        caps = copy.deepcopy(disc.get("capabilities")) if isinstance(disc.get("capabilities"), dict) else {}
        res_caps = caps.get("resources")
        if isinstance(res_caps, dict) and res_caps.get("subscribe"):
            changes.append(Change(pointer="/result/capabilities/resources/subscribe", action="keep",
                                  rule="CAP-server-resources-subscribe",
                                  detail="resources/subscribe is bridged onto subscriptions/listen"))
        result["capabilities"] = caps
        info = (disc.get("_meta") or {}).get(SERVER_INFO) if isinstance(disc.get("_meta"), dict) else None
        if isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str):
            result["serverInfo"] = copy.deepcopy(info)
        else:
            result["serverInfo"] = {"name": exch.origin or "mcp-server", "version": "unknown"}
            changes.append(Change(pointer="/result/serverInfo", action="synthesize", rule="LC-initialize",
                                  after=json_body.dumps(result["serverInfo"]).decode(),
                                  detail="DiscoverResult has no _meta serverInfo"))
        if isinstance(disc.get("instructions"), str):
            result["instructions"] = disc["instructions"]
            changes.append(Change(pointer="/result/instructions", action="rewrite", rule="LC-instructions",
                                  detail="copied from DiscoverResult.instructions"))
        msg = {"jsonrpc": "2.0", "id": rid, "result": result}
        out = self.walk(msg, "result", "initialize", LATEST, client_rev, "s2c", rid)
        changes += out.changes
        msg = out.message or msg
        s.server_caps = msg["result"].get("capabilities")
        s.server_info = msg["result"].get("serverInfo")
        token = self.rw.tracker.learn(s, None, seal=True)
        headers = list(JSON_HEADERS)
        if token:
            headers.append(("mcp-session-id", token))
            changes.append(Change(pointer="header:Mcp-Session-Id", action="synthesize", rule="TR-session-id",
                                  detail="session minted by mcpx: the server keeps none"))
        self.log(exch, "s2c", msg, "initialize", changes, LATEST, client_rev)
        logger.info(f"mcpx: {exch.origin} speaks only 2026-07-28: {(s.client_info or {}).get('name')} "
                    f"bridged at {client_rev} (session {s.key})")
        return Answer(200, json_body.dumps(msg), tuple(headers), note=NOTE)

    # -- every later flow of the session -------------------------------------------------------------
    async def request(self, exch: Any, method: str, body: bytes | None, headers: dict[str, str], upstream: Any) -> Answer | Streamed:
        s = exch.session
        exch.is_mcp = True
        ss = self.session_state(s)
        if method == "DELETE":
            return self._delete(exch, s, ss)
        if method == "GET":
            return await self._get(exch, s, ss, headers, upstream)
        if method != "POST":
            return Answer(405, b"", (("allow", "GET, POST, DELETE"),), note=NOTE)
        try:
            parsed = json_body.parse(body or b"", exact_ints=True)
        except json_body.Unparseable as e:
            self.rw.passthrough(exch, "c2s", f"{e.reason}: answered -32700")
            return Answer(400, json_body.dumps(_error(None, -32700, f"Parse error: {e.reason}")), note=NOTE)
        if parsed.batch and not parsed.messages:
            # an empty array: no message to send (RPC-batch-request; JSON-RPC 2.0 calls it an invalid
            # request, MCP's transport answers a body of no request 202): answered by mcpx
            self.rw.record(exch, [Change(pointer="", action="answer-locally", rule="RPC-batch-request",
                                         detail="empty batch: no message to send to the server; answered 202 by mcpx")],
                           "c2s", s.client_leg, LATEST)
            return Answer(202, b"", self._json_headers(exch)[1:], note=NOTE)
        if parsed.batch:
            return await self._batch(exch, s, ss, parsed.messages, headers, upstream)
        out = await self._one(exch, s, ss, parsed.messages[0], headers, upstream, stream=self.can_stream(headers))
        return out

    async def _one(self, exch, s, ss, m: Any, headers, upstream, stream: bool) -> Answer | Streamed:
        kind = classify(m)
        client_rev = s.client_leg
        if kind is None:
            self.rw.passthrough(exch, "c2s", "body holds no JSON-RPC 2.0 message: answered -32600")
            return Answer(400, json_body.dumps(_error(None, -32600, "Invalid Request")), note=NOTE)
        if kind in ("result", "error"):
            return self._client_answer(exch, s, m)
        if kind == "notification":
            return self._notification(exch, s, ss, m)
        rid, name = m.get("id"), m.get("method")
        exch.request_ids[rid] = name
        exch.single_request_id = rid
        if name == "ping":
            return self._local(exch, m, {}, [Change(pointer="", action="answer-locally", rule="LC-ping",
                                                    detail="2026-07-28 has no ping: answered {} by mcpx")])
        if name == "logging/setLevel":
            level = (m.get("params") or {}).get("level") if isinstance(m.get("params"), dict) else None
            if not isinstance(level, str):
                return self._local_error(exch, m, -32602, "logging/setLevel needs params.level", "LOG-setLevel")
            ss.log_level = level
            return self._local(exch, m, {}, [Change(pointer="", action="answer-locally", rule="LOG-setLevel",
                                                    detail=f"level {level!r} kept; sent as _meta logLevel on every later request")])
        if name in ("resources/subscribe", "resources/unsubscribe"):
            return await self._subscribe(exch, s, ss, m, name)
        if name == "initialize":  # sent with the session's token (one without starts a new session): as a server would
            # answer it: HTTP 400 -32600 in the TypeScript SDK's words (tests/peers/node_modules/sdk-1.13.0/dist/esm/
            # server/streamableHttp.js:270-278), under the request's id (its null is no RequestId of a legacy
            # revision: schema/2025-06-18/schema.json:909 JSONRPCError requires a RequestId, string or integer)
            return self._local_error(exch, m, -32600, "Invalid Request: Server already initialized", "LC-initialize",
                                     [Change(pointer="", action="answer-locally", rule="LC-initialize",
                                             detail="initialize inside a session: answered HTTP 400 -32600, as a legacy server does")],
                                     status=400)
        try:
            prepared = self._upgrade(exch, s, ss, m, headers)
        except _Refused as r:
            return r.answer
        call = Call(self, exch, s, ss, m, prepared, upstream, stream)
        return await call.begin()

    # -- local answers ---------------------------------------------------------------------------
    def _local(self, exch, m: dict, result: dict, changes: list[Change]) -> Answer:
        client_rev = exch.session.client_leg
        self.log(exch, "c2s", m, m.get("method"), changes, client_rev, LATEST)
        answer = {"jsonrpc": "2.0", "id": m.get("id"), "result": result}
        self.log(exch, "s2c", answer, m.get("method"), [], LATEST, client_rev)
        return Answer(200, json_body.dumps(answer), self._json_headers(exch), note=NOTE)

    def _local_error(self, exch, m: dict, code: int, message: str, rule: str, changes: list[Change] | None = None,
                     status: int = 200) -> Answer:
        client_rev = exch.session.client_leg
        changes = changes if changes is not None else [Change(pointer="", action="answer-locally", rule=rule, detail=message)]
        self.log(exch, "c2s", m, m.get("method"), changes, client_rev, LATEST)
        answer = _error(m.get("id"), code, message)
        self.log(exch, "s2c", answer, m.get("method"), [], LATEST, client_rev)
        return Answer(status, json_body.dumps(answer), self._json_headers(exch), note=NOTE)

    @staticmethod
    def _json_headers(exch) -> tuple[tuple[str, str], ...]:
        s = exch.session
        return JSON_HEADERS + ((("mcp-session-id", s.token),) if s is not None and s.token else ())

    def _delete(self, exch, s, ss: SessionState) -> Answer:
        """TR-session-delete: the server keeps no session; mcpx ends its own."""
        if ss.listen is not None:
            ss.listen.close("session ended (DELETE)")
        for call in list(ss.calls.values()):
            call.cancel("session ended (DELETE)")
        self.sessions.pop(s.key, None)
        self.rw.tracker.terminate(s)
        closed = getattr(self.state, "closed", None)
        if closed is not None:
            closed.append(s)
        self.rw.record(exch, [Change(pointer="", action="answer-locally", rule="TR-session-delete",
                                     detail="session ended by mcpx: a 2026-07-28 server keeps none")], "c2s", s.client_leg, LATEST)
        exch.is_mcp = True
        return Answer(200, b"", (), note=NOTE)  # 200: mcp 1.x clients warn on any other 2xx

    def _notification(self, exch, s, ss: SessionState, m: dict) -> Answer:
        """Client notifications: a 2026-07-28 server takes none over HTTP but ``notifications/cancelled``
        (docs/specification/2026-07-28/basic/transports/streamable-http.mdx:95), whose HTTP meaning
        is closing the request's stream (TR-cancel-by-stream-close)."""
        name = m.get("method")
        client_rev = s.client_leg
        params = m.get("params") if isinstance(m.get("params"), dict) else {}
        if name == "notifications/cancelled":
            call = ss.calls.get(params.get("requestId"))
            if call is not None:
                call.cancel(f"client cancelled request {params.get('requestId')!r}")
                change = Change(pointer="", action="drop-message", rule="TR-cancel-by-stream-close",
                                detail=f"upstream exchange of request {params.get('requestId')!r} aborted "
                                       "(closing the stream is the 2026-07-28 cancel)")
            else:
                change = Change(pointer="", action="drop-message", rule="CANCEL-direction",
                                detail="no request of this session in flight under that id")
        else:
            rule = {"notifications/initialized": "LC-initialized", "notifications/roots/list_changed": "ROOTS-list-changed",
                    "notifications/progress": "PROG-direction"}.get(name or "")
            if rule is None:
                out = self.walk(copy.deepcopy(m), "notification", name, client_rev, LATEST, "c2s")
                changes = out.changes or [Change(pointer="", action="drop-message", rule="SCHEMA-undefined",
                                                 detail="not a notification a 2026-07-28 server takes over HTTP")]
                self.log(exch, "c2s", m, name, changes, client_rev, LATEST)
                return Answer(202, b"", self._json_headers(exch)[1:], note=NOTE)
            change = Change(pointer="", action="drop-message", rule=rule, detail="consumed by mcpx (202): not defined in 2026-07-28")
        self.log(exch, "c2s", m, name, [change], client_rev, LATEST)
        return Answer(202, b"", self._json_headers(exch)[1:], note=NOTE)

    def _client_answer(self, exch, s, m: dict) -> Answer:
        """The client's answer to a server->client request mcpx made from an inputRequests entry:
        consumed (a 2026 server never receives a POSTed response, TR-post-body)."""
        jid = m.get("id")
        p = self.pending.get(jid) if isinstance(jid, str) else None
        client_rev = s.client_leg
        if p is None or p.session != s.key:
            change = Change(pointer="", action="drop-message", rule="MRTR-bridge-legacy-client",
                            detail="answer to no outstanding input request of this session (mcpx restarted or failed over?): dropped")
        else:
            self.pending.pop(jid, None)
            if not p.future.done():
                p.future.set_result(m)
            change = Change(pointer="", action="answer-locally", rule="MRTR-bridge-legacy-client",
                            detail=f"answer to input request {p.key!r} ({p.method}): kept for the retry's inputResponses (202)")
        self.log(exch, "c2s", m, p.method if p else None, [change], client_rev, LATEST)
        return Answer(202, b"", self._json_headers(exch)[1:], note=NOTE)

    async def _batch(self, exch, s, ss, members: list, headers, upstream) -> Answer:
        """A 2025-03-26 batch: each member alone, answers in one JSON array (no streaming: an
        input_required member gets -32603, MRTR-bridge-legacy-client)."""
        answers: list[bytes] = []
        for m in members:
            out = await self._one(exch, s, ss, m, headers, upstream, stream=False)
            rid = m.get("id") if classify(m) == "request" else None
            found, why = False, "an empty body"
            if isinstance(out, Answer) and out.body:
                # every JSON-RPC response of the member's answer, whatever its HTTP status (an upstream
                # failure is a 502 carrying the member's -32603); a body that holds none is no answer
                try:
                    parsed = json_body.parse(out.body, exact_ints=True)
                except json_body.Unparseable as e:
                    why = e.reason
                else:
                    if all(classify(x) in ("result", "error") for x in parsed.messages):
                        answers.extend(json_body.response_texts(out.body))
                        found = any(x.get("id") == rid or x.get("id") is None for x in parsed.messages)
                    why = "no JSON-RPC response to it"
            if rid is None or found or (isinstance(out, Answer) and out.status == 202):
                continue  # a notification, a client's answer, or a cancelled request: nothing to answer
            # never leave a member without an answer (JSON-RPC 2.0: the batch response holds one
            # response per request; RPC-batch-request): -32603 naming what the server sent
            what = f"HTTP {out.status}" if isinstance(out, Answer) else "a stream"
            error = _error(rid, -32603, f"mcpx: the server answered this batch member with {what}, "
                                        f"which mcpx could not read as its answer: {why}")
            self.log(exch, "s2c", error, m.get("method"), [Change(
                pointer="", action="answer-locally", rule="RPC-batch-request",
                detail=f"batch member id={json_body.dumps(rid).decode()}: {what}, {why}: answered -32603 in the batch response")],
                LATEST, s.client_leg)
            answers.append(json_body.dumps(error))
        if not answers:
            return Answer(202, b"", self._json_headers(exch)[1:], note=NOTE)
        return Answer(200, b"[" + b",".join(answers) + b"]", self._json_headers(exch), note=NOTE)

    # -- the 2026 envelope (upgrade direction) -------------------------------------------------------
    def _caps(self, s, ss: SessionState | None) -> tuple[dict, list[Change]]:
        """The client's capabilities in 2026-07-28 shape (META-clientCapabilities upgrade direction:
        roots.listChanged and tasks dropped, schema/2026-07-28/schema.ts:712) and the records."""
        if ss is not None and ss.caps_2026 is not None:
            return ss.caps_2026
        caps = copy.deepcopy(s.client_caps) if isinstance(s.client_caps, dict) else {}
        walk = Walk(s.client_leg if revisions.is_known(s.client_leg) else revisions.LEGACY[-1], LATEST, "c2s", self.rw.policy, self.rw.options)
        caps = walk.named(caps, "ClientCapabilities", _ptr("params", "_meta", CAPS))
        out = (caps, walk.changes)
        if ss is not None:
            ss.caps_2026 = out
        return out

    def _upgrade(self, exch, s, ss: SessionState, m: dict, headers: dict[str, str]) -> Prepared:
        """The 2026-07-28 request for the client's request ``m`` (its id kept) and its headers."""
        client_rev = s.client_leg
        name = m.get("method")
        msg = copy.deepcopy(m)
        out = self.walk(msg, "request", name, client_rev, LATEST, "c2s")
        changes = list(out.changes)
        if out.message is None:
            reply = out.reply or {"code": -32601, "message": f"Method not found: {name}"}
            raise _Refused(self._local_error(exch, m, reply.get("code", -32601), reply.get("message", ""), "", changes))
        msg = out.message
        if not isinstance(msg.get("params"), dict):
            msg["params"] = {}
            rule = "PAGE-params-required" if name in PAGINATED else "META-protocolVersion"
            changes.append(Change(pointer="/params", action="synthesize", rule=rule,
                                  detail="params (with _meta) is required in 2026-07-28"))
        params = msg["params"]
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else None
        if meta is None:
            meta = params["_meta"] = {}
        meta[PV] = LATEST
        changes.append(Change(pointer=_ptr("params", "_meta", PV), action="synthesize", rule="META-protocolVersion", after=f'"{LATEST}"'))
        caps, cap_changes = self._caps(s, ss)
        meta[CAPS] = copy.deepcopy(caps)
        changes.append(Change(pointer=_ptr("params", "_meta", CAPS), action="synthesize", rule="META-clientCapabilities",
                              after=json_body.dumps(caps).decode()[:80], detail="the capabilities of the client's initialize"))
        changes.extend(cap_changes)
        if isinstance(s.client_info, dict) and s.client_info.get("name"):
            meta[INFO] = {"name": s.client_info.get("name"), "version": s.client_info.get("version") or ""}
            changes.append(Change(pointer=_ptr("params", "_meta", INFO), action="synthesize", rule="META-clientInfo",
                                  detail="the clientInfo of the client's initialize"))
        if ss.log_level:
            meta[LOG] = ss.log_level
            changes.append(Change(pointer=_ptr("params", "_meta", LOG), action="synthesize", rule="META-logLevel",
                                  after=f'"{ss.log_level}"', detail="the level of the client's last logging/setLevel"))
        param_map = None
        if name == "tools/call" and isinstance(params.get("name"), str):
            param_map = self.tools_of(exch).get(params["name"])
        hdrs, hchanges = self._headers(headers, name, params, param_map)
        return Prepared(msg, hdrs, changes + hchanges, param_map is not None or name != "tools/call")

    def _headers(self, client_headers: dict[str, str], name: str, params: dict, param_map) -> tuple[dict[str, str], list[Change]]:
        lower = {k.lower(): k for k in client_headers}
        hdrs = {"mcp-protocol-version": LATEST}
        changes = []
        if "mcp-protocol-version" in lower:
            before = client_headers[lower["mcp-protocol-version"]]
            changes.append(Change(pointer="header:MCP-Protocol-Version", action="rewrite", rule="TR-protocol-version-header",
                                  before=before, after=LATEST))
        else:
            changes.append(Change(pointer="header:MCP-Protocol-Version", action="synthesize", rule="TR-protocol-version-header",
                                  after=LATEST))
        route, rchanges = upgrade_headers(name, params, param_map)
        hdrs.update({k.lower(): v for k, v in route.items()})
        changes += rchanges
        if "mcp-session-id" in lower:
            changes.append(Change(pointer="header:Mcp-Session-Id", action="drop", rule="TR-session-id",
                                  detail="a 2026-07-28 server keeps no session"))
        if "last-event-id" in lower:
            changes.append(Change(pointer="header:Last-Event-ID", action="drop", rule="TR-sse-resumability"))
        return hdrs, changes

    def tools_of(self, exch: Any) -> dict[str, dict | None]:
        """The ``x-mcp-header`` maps learnt for ``exch``'s URL and credentials (:attr:`Exchange.client_scope`)."""
        return self.tools.get(exch.client_scope) or {}

    def learn_tools(self, exch: Any, result: Any) -> None:
        """Keep each listed tool's ``x-mcp-header`` map (TR-mcp-param-headers), for the origin and
        the credentials of ``exch``, the exchange whose tools/list answered: what one user's list
        taught is never used for another's calls."""
        where = exch.client_scope
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return
        known = self.tools.setdefault(where, {})
        while len(self.tools) > MAX_SESSIONS:  # one map per origin and credentials, oldest forgotten first
            self.tools.pop(next(iter(self.tools)))
        for t in tools:
            if isinstance(t, dict) and isinstance(t.get("name"), str):
                known[t["name"]] = x_mcp_header_map(t.get("inputSchema")) or None
        if len(known) > 10000:
            known.clear()

    # -- resources/subscribe -------------------------------------------------------------------------
    async def _subscribe(self, exch, s, ss: SessionState, m: dict, name: str) -> Answer:
        """SUB-resources-subscribe: answered {} by mcpx; the URI goes into (or out of) the listen filter,
        the open listen is re-opened with it before the client hears back."""
        params = m.get("params") if isinstance(m.get("params"), dict) else {}
        uri = params.get("uri")
        if not isinstance(uri, str):
            return self._local_error(exch, m, -32602, f"{name} needs params.uri", "SUB-resources-subscribe")
        if name == "resources/subscribe" and uri not in ss.subscribed:
            ss.subscribed.append(uri)
        elif name == "resources/unsubscribe" and uri in ss.subscribed:
            ss.subscribed.remove(uri)
        detail = f"{'added to' if name == 'resources/subscribe' else 'removed from'} the subscriptions/listen filter"
        if ss.listen is not None and not ss.listen.ended:
            if not await ss.listen.reopen():
                # the open listen keeps its old filter: say so rather than promise updates that will not come
                (ss.subscribed.remove if name == "resources/subscribe" else ss.subscribed.append)(uri)
                ss.listen.filter = self.listen_filter(s, ss)
                return self._local_error(exch, m, -32603, f"mcpx could not re-open the server's subscriptions/listen: {ss.listen.failure}",
                                         "SUB-resources-subscribe")
            detail += "; listen re-opened"
        else:
            detail += " (no GET stream open: applies when the client opens one)"
        return self._local(exch, m, {}, [Change(pointer="", action="answer-locally", rule="SUB-resources-subscribe", detail=detail)])

    # -- the GET stream --------------------------------------------------------------------------------
    def listen_filter(self, s, ss: SessionState) -> dict:
        """SubscriptionFilter (schema/2026-07-28/schema.ts:1270) for a legacy GET stream: the list
        kinds the server announced (TR-get-stream) and the subscribed URIs."""
        caps = s.server_caps if isinstance(s.server_caps, dict) else {}
        f: dict = {}
        for cap, key in (("tools", "toolsListChanged"), ("prompts", "promptsListChanged"), ("resources", "resourcesListChanged")):
            if isinstance(caps.get(cap), dict) and caps[cap].get("listChanged"):
                f[key] = True
        if ss.subscribed:
            f["resourceSubscriptions"] = list(ss.subscribed)
        return f

    async def _get(self, exch, s, ss: SessionState, headers: dict[str, str], upstream) -> Answer | Streamed:
        """TR-get-stream: the client's GET stream is served from an upstream ``subscriptions/listen``."""
        client_rev = s.client_leg
        if not self.can_stream(headers):
            self.rw.record(exch, [Change(pointer="", action="answer-locally", rule="TR-get-stream",
                                         detail="answered 405: the client accepts no event stream")], "c2s", client_rev, LATEST)
            return Answer(405, b"", (("allow", "POST, DELETE"),), note=NOTE)
        if ss.listen is not None:
            ss.listen.close("replaced by a new GET stream")
        await self.answers.ensure()
        listen = Listen(self, exch, s, ss, upstream)
        ss.listen = listen
        ok = await listen.start()
        if not ok:
            ss.listen = None
            self.answers.streams.pop(listen.outlet.token, None)  # never routed to: nobody fetches it
            self.rw.record(exch, [Change(pointer="", action="answer-locally", rule="TR-get-stream",
                                         detail=f"answered 405 (a legal 'no stream'): {listen.failure}")], "c2s", client_rev, LATEST)
            return Answer(405, b"", (("allow", "POST, DELETE"),), note=NOTE)
        self.rw.record(exch, [Change(pointer="", action="rewrite", rule="TR-get-stream",
                                     detail="GET stream served from an upstream subscriptions/listen "
                                            f"{json_body.dumps(listen.filter).decode()[:120]}")], "c2s", client_rev, LATEST)
        return Streamed(listen.outlet, note=NOTE + "; GET stream relayed from subscriptions/listen")

    @property
    def answers(self):
        """mcpx's answer streams (:class:`.stream.AnswerStreams`, shared with the other bridges)."""
        return self.state.answers

    def closing(self) -> None:
        """mitmproxy shuts down: end every stream."""
        for ss in self.sessions.values():
            if ss.listen is not None:
                ss.listen.close("mcpx shutting down")
            for call in list(ss.calls.values()):
                call.cancel("mcpx shutting down")


@dataclass
class Prepared:
    """A client request as mcpx sends it upstream: ``message`` (2026-07-28), ``headers`` and the records."""

    message: dict
    headers: dict[str, str]
    changes: list[Change]
    #: the tool's x-mcp-header map was known (or the request needs none)
    headers_known: bool = True


class _Refused(Exception):
    def __init__(self, answer: Answer):
        self.answer = answer


class Call:
    """One client request of a bridged session until its final answer: the upstream rounds
    (MRTR-bridge-legacy-client) and what the client receives meanwhile.

    :meth:`begin` returns what the client's flow gets: an :class:`Answer` when the whole answer is
    one JSON body (the common case: no notification, no input request), else :class:`Streamed`:
    the flow is routed to mcpx's answer endpoint, where the answer continues as SSE events."""

    def __init__(self, bridge: LegacyClientBridge, exch: Any, s: Any, ss: SessionState, m: dict, prepared: Prepared,
                 upstream: Any, stream: bool):
        self.b, self.exch, self.s, self.ss = bridge, exch, s, ss
        self.m, self.p, self.up = m, prepared, upstream
        self.client_rev = s.client_leg
        self.rid = m.get("id")
        self.method = m.get("method")
        self.stream_ok = stream
        loop = asyncio.get_running_loop()
        self.decided: asyncio.Future = loop.create_future()
        self.outlet = None
        self.task: asyncio.Task | None = None
        self.cancelled: str | None = None
        self.waiting: list[str] = []

    async def begin(self) -> Answer | Streamed:
        b = self.b
        b.log(self.exch, "c2s", self.m, self.method, self.p.changes, self.client_rev, LATEST)
        if self.stream_ok:
            await b.answers.ensure()
        self.ss.calls[self.rid] = self
        self.task = asyncio.get_running_loop().create_task(self._run())
        decision = await self.decided
        sent = json_body.dumps(self.p.message)
        if isinstance(decision, Answer):
            decision.sent = sent
            return decision
        return Streamed(self.outlet, note=NOTE + "; answer streamed by mcpx")

    def cancel(self, why: str) -> None:
        self.cancelled = why
        for pid in self.waiting:
            p = self.b.pending.pop(pid, None)
            if p is not None and not p.future.done():
                p.future.cancel()
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.outlet is not None:
            self.outlet.close()
        if not self.decided.done():
            self.decided.set_result(Answer(202, b"", (), note=NOTE + f"; {why}"))

    # -- delivery to the client --------------------------------------------------------------------
    def _streaming(self) -> bool:
        """Switch the answer to an SSE stream (once); False when the client cannot take one."""
        if self.outlet is not None:
            return True
        if not self.stream_ok or self.decided.done():
            return False
        self.outlet = self.b.answers.make(on_close=self._closed, keep=self.b.state.keep_original or (1 << 20))
        self.decided.set_result("stream")
        return True

    async def _closed(self) -> None:
        """The answer stream ended: by the bridge (done), or because the client went away."""
        if self.outlet is not None and not self.outlet.finished and self.task is not None and not self.task.done() \
                and self.cancelled is None:
            self.b.log(self.exch, "s2c", None, None, [Change(
                pointer="", action="drop-message", rule="TR-cancel-by-stream-close",
                detail="the client closed the stream before the answer: upstream exchange aborted "
                       "(a legacy client cannot resume it through mcpx, TR-sse-resumability)")], LATEST, self.client_rev)
            self.cancel("client gone")

    def _deliver(self, msg: dict, changes: list[Change], method: str | None) -> bool:
        """Send one message to the client on the stream; False (logged) when there is none."""
        if not self._streaming():
            self.b.log(self.exch, "s2c", msg, method, changes + [Change(
                pointer="", action="drop-message", rule="MRTR-bridge-legacy-client",
                detail="no SSE stream to the client (it accepts only application/json)")],
                LATEST, self.client_rev)
            return False
        self.b.log(self.exch, "s2c", msg, method, changes, LATEST, self.client_rev)
        self.outlet.put(sse_event(msg))  # type: ignore[union-attr]
        return True

    def _final(self, msg: dict, changes: list[Change], status: int = 200) -> None:
        """The final answer under the client's id: the last event of the stream, or the JSON answer."""
        self.ss.calls.pop(self.rid, None)
        if self.outlet is not None:
            self.b.log(self.exch, "s2c", msg, self.method, changes, LATEST, self.client_rev)
            self.outlet.put(sse_event(msg))
            self.outlet.close()
            return
        self.b.log(self.exch, "s2c", msg, self.method, changes, LATEST, self.client_rev)
        if not self.decided.done():
            self.decided.set_result(Answer(status, json_body.dumps(msg), self.b._json_headers(self.exch), note=NOTE))

    def _fail(self, code: int, message: str, change: Change, data: Any = None, status: int = 200) -> None:
        self._final(_error(self.rid, code, message, data), [change], status)

    # -- the rounds ----------------------------------------------------------------------------------
    async def _run(self) -> None:
        try:
            await self._rounds()
        except asyncio.CancelledError:
            self.ss.calls.pop(self.rid, None)
            if self.outlet is not None:
                self.outlet.close()
            if not self.decided.done():
                self.decided.set_result(Answer(202, b"", (), note=NOTE))
        except Exception as e:  # never leave the client without an answer
            logger.exception("mcpx: legacy-client bridge call failed")
            self._fail(-32603, f"mcpx bridge failed: {type(e).__name__}", Change(
                pointer="", action="passthrough", rule="PASSTHROUGH-error", detail=f"bridge failed: {type(e).__name__}: {e}"))

    async def _rounds(self) -> None:
        body = self.p.message
        headers = dict(self.p.headers)
        rid = self.rid
        retried_headers = False
        for round_no in range(1, MAX_ROUNDS + 2):
            reply, resp = await self._send(body, headers, rid, round_no)
            if reply is None:
                return
            if resp is None:
                return self._no_answer(reply)
            result = resp.get("result")
            err = resp.get("error")
            if isinstance(err, dict) and err.get("code") == -32020 and not retried_headers and self.method == "tools/call" \
                    and not self.p.headers_known and await self._learn_tools(body):
                # TR-mcp-param-headers: the tool's x-mcp-header were unknown here (mcpx did not see its
                # tools/list, e.g. after a failover): listed now, the call goes again with them
                retried_headers = True
                params = body["params"]
                param_map = self.b.tools_of(self.exch).get(params.get("name"))
                hdrs, hchanges = upgrade_headers(self.method, params, param_map)
                headers.update({k.lower(): v for k, v in hdrs.items()})
                self.b.log(self.exch, "c2s", None, None, [c for c in hchanges if c.rule == "TR-mcp-param-headers"],
                           self.client_rev, LATEST)
                continue
            if isinstance(result, dict) and result.get("resultType") == "input_required":
                if round_no > MAX_ROUNDS:
                    return self._fail(-32603, f"mcpx: the server asked for input more than {MAX_ROUNDS} times", Change(
                        pointer="/result", action="rewrite", rule="MRTR-bridge-legacy-client", detail="too many input_required rounds"))
                nxt = await self._input_round(body, resp, round_no)
                if nxt is None:
                    return
                body, rid = nxt
                continue
            return self._complete(resp, reply.status)

    async def _send(self, body: dict, headers: dict[str, str], rid: Any, round_no: int):
        """One upstream exchange; notifications on its SSE answer reach the client as they come.
        Returns (reply, the response to ``rid`` or None), or (None, None) when the client was answered."""
        parser = SSEParser()
        found: list[dict] = []

        def on_chunk(chunk: bytes) -> None:
            events = parser.feed(chunk) if chunk else parser.close()[0]
            for ev in events:
                if ev.payload is None or ev.blank():
                    continue
                try:
                    value = json_body.loads(ev.payload)
                except orjson.JSONDecodeError:
                    self.b.rw.passthrough(self.exch, "s2c", "SSE event data is not JSON: not delivered")
                    continue
                for msg in value if isinstance(value, list) else [value]:
                    if isinstance(msg, dict) and ("result" in msg or "error" in msg) and msg.get("id") == rid:
                        found.append(msg)
                    elif isinstance(msg, dict):
                        self._relay(msg)

        purpose = f"{self.method} for a legacy client" + (f" (round {round_no})" if round_no > 1 else "")
        try:
            reply = await self.up.send(json_body.dumps(body), headers, purpose, on_chunk=on_chunk, timeout=3600, client_headers=True)
        except upstream_mod.UpstreamError as e:
            self._fail(-32603, f"mcpx could not reach the server: {e.reason}", Change(
                pointer="", action="passthrough", rule="PASSTHROUGH-error", detail=f"upstream request failed: {e.reason}"), status=502)
            return None, None
        if found:
            return reply, found[0]
        ctype = reply.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype == "application/json" and reply.body:
            try:
                parsed = json_body.parse(reply.body, exact_ints=True)
            except json_body.Unparseable:
                return reply, None
            for msg in parsed.messages:
                if isinstance(msg, dict) and ("result" in msg or "error" in msg) and (msg.get("id") == rid or msg.get("id") is None):
                    return reply, msg
        return reply, None

    def _relay(self, msg: dict) -> None:
        """A message the server sent on a request's SSE answer before the response (progress, log)."""
        kind = classify(msg)
        if kind == "notification":
            out = self.b.walk(msg, "notification", msg.get("method"), LATEST, self.client_rev, "s2c")
            if out.message is None:
                self.b.log(self.exch, "s2c", msg, msg.get("method"), out.changes, LATEST, self.client_rev)
                return
            self._deliver(out.message, out.changes, msg.get("method"))
            return
        self.b.log(self.exch, "s2c", msg, msg.get("method"), [Change(
            pointer="", action="drop-message", rule="MRTR-server-requests-removed",
            detail="a 2026-07-28 server sent a JSON-RPC request or a foreign response on a request stream")],
            LATEST, self.client_rev)

    def _no_answer(self, reply: Any) -> None:
        """The server answered without a JSON-RPC response (e.g. 401 with WWW-Authenticate, a 5xx page)."""
        change = Change(pointer="", action="passthrough", rule="PASSTHROUGH-error",
                        detail=f"HTTP {reply.status} without a JSON-RPC response to the request")
        self.ss.calls.pop(self.rid, None)
        if self.outlet is None and not self.decided.done():
            keep = ("content-type", "www-authenticate", "retry-after")
            headers = reply.answer_headers(keep)  # (with its Content-Encoding when mcpx did not decode it)
            if reply.undecoded:
                change = Change(pointer="", action="passthrough", rule="PASSTHROUGH-error", detail=reply.undecoded)
            self.b.log(self.exch, "s2c", None, None, [change], LATEST, self.client_rev)
            self.decided.set_result(Answer(reply.status, reply.body, headers, note=NOTE + "; the server's own answer, as it was"))
            return
        self._fail(-32603, f"mcpx: the server answered HTTP {reply.status} without a JSON-RPC response", change)

    def _complete(self, resp: dict, status: int) -> None:
        """The final result or error, downgraded for the client, under its own id."""
        changes: list[Change] = []
        if resp.get("id") != self.rid:
            changes.append(Change(pointer="/id", action="rewrite", rule="RPC-request-id-reuse", before=json_body.dumps(resp.get("id")).decode(),
                                  after=json_body.dumps(self.rid).decode(), detail="mcpx's retry id mapped back to the client's"))
            resp["id"] = self.rid
        if self.method == "tools/list" and isinstance(resp.get("result"), dict):
            self.b.learn_tools(self.exch, resp["result"])
        err = resp.get("error")
        if isinstance(err, dict) and self.method == "resources/read" and err.get("code") == -32602:
            changes.append(Change(pointer="/error/code", action="keep", rule="ERR-resource-not-found",
                                  detail="-32602 kept (a legacy client may expect -32002 for an unknown resource)"))
        out = self.b.walk(resp, "result" if "result" in resp else "error", self.method, LATEST, self.client_rev, "s2c", self.rid)
        changes += out.changes
        msg = out.message if out.message is not None else resp
        if status in (400, 404) and "error" in msg:
            rule = "TR-unknown-method-404" if status == 404 else "TR-modern-400-errors"
            changes.append(Change(pointer="http:status", action="rewrite", rule=rule, before=str(status), after="200",
                                  detail="a legacy client reads a JSON-RPC error only on 2xx"))
        self._final(msg, changes)

    # -- input_required ------------------------------------------------------------------------
    async def _input_round(self, body: dict, resp: dict, round_no: int) -> tuple[dict, str] | None:
        """MRTR-bridge-legacy-client: ask the client what ``inputRequests`` asks, then the retry body."""
        result = resp["result"]
        requests = result.get("inputRequests") if isinstance(result.get("inputRequests"), dict) else {}
        state = result.get("requestState")
        ptr = "/result/inputRequests"
        # every entry must be expressible for this client before anything is sent
        wires: list[tuple[str, str, dict, list[Change]]] = []
        for key, req in requests.items():
            made = self._legacy_request(key, req, f"{ptr}/{escape(key)}")
            if isinstance(made, Change):
                missing = made.detail or ""
                return self._fail(-32603, f"mcpx: the server needs input this client cannot give: {missing}", made,
                                  data={"inputRequest": key, "method": (req or {}).get("method") if isinstance(req, dict) else None})
            wires.append(made)
        if wires and not self._streaming():
            return self._fail(-32603, "mcpx: input required but not expressible for this client (it accepts only application/json)",
                              Change(pointer=ptr, action="rewrite", rule="MRTR-bridge-legacy-client",
                                     detail="no SSE stream to send the input requests on"))
        loop = asyncio.get_running_loop()
        futures = []
        for key, method, wire, changes in wires:
            fut = loop.create_future()
            self.b.pending[wire["id"]] = Pending(key, method, self.s.key, fut)
            self.waiting.append(wire["id"])
            self.exch.request_ids[wire["id"]] = method
            futures.append((key, method, wire["id"], fut))
            self._deliver(wire, changes, method)
        answers: dict[str, Any] = {}
        if futures:
            try:
                done = await asyncio.wait_for(asyncio.gather(*(f for *_, f in futures)), self.b.input_timeout)
            except asyncio.TimeoutError:
                for _, _, pid, _ in futures:
                    self.b.pending.pop(pid, None)
                return self._fail(-32603, f"mcpx: the client did not answer the server's input requests within {self.b.input_timeout:g} s",
                                  Change(pointer=ptr, action="rewrite", rule="MRTR-bridge-legacy-client", detail="input timeout"))
            self.waiting.clear()
            rchanges: list[Change] = []
            for (key, method, pid, _), answer in zip(futures, done):
                if "error" in answer or not isinstance(answer.get("result"), dict):
                    e = answer.get("error") if isinstance(answer.get("error"), dict) else {}
                    return self._fail(-32603, f"mcpx: the client refused the server's {method} request: {e.get('message', 'error')}",
                                      Change(pointer=f"{ptr}/{escape(key)}", action="rewrite", rule="MRTR-bridge-legacy-client",
                                             detail=f"client answered {method} with error {e.get('code')}"),
                                      data={"inputRequest": key, "error": e})
                answers[key] = self._upgrade_answer(key, method, answer["result"], rchanges)
        elif not isinstance(state, str):
            return self._fail(-32603, "mcpx: the server asked for input without inputRequests or requestState", Change(
                pointer="/result", action="rewrite", rule="MRTR-input-required-result", detail="neither inputRequests nor requestState"))
        else:
            rchanges = []
            await asyncio.sleep(0.25)  # only requestState: retry after a pause (as @modelcontextprotocol/client 2.4.0)
        retry = copy.deepcopy(self.p.message)
        new_id = self.b.mint_id("retry-")
        retry["id"] = new_id
        params = retry["params"]
        changes = [Change(pointer="/id", action="rewrite", rule="RPC-request-id-reuse", before=json_body.dumps(self.rid).decode(),
                          after=f'"{new_id}"', detail=f"retry {round_no} of the client's request: a new id")]
        if answers:
            params["inputResponses"] = answers
            changes.append(Change(pointer="/params/inputResponses", action="synthesize", rule="MRTR-bridge-legacy-client",
                                  after=", ".join(answers)[:80], detail="the client's answers to this round's input requests"))
        if isinstance(state, str):
            params["requestState"] = state
            changes.append(Change(pointer="/params/requestState", action="synthesize", rule="MRTR-bridge-legacy-client",
                                  detail="echoed untouched"))
        self.b.log(self.exch, "c2s", retry, self.method, changes + rchanges, self.client_rev, LATEST)
        return retry, new_id

    def _legacy_request(self, key: str, req: Any, ptr: str) -> tuple[str, str, dict, list[Change]] | Change:
        """One inputRequests entry as a server->client request of the client's revision, or the
        record saying why it cannot be one (the client lacks the capability, the revision lacks the shape)."""
        if not isinstance(req, dict) or not isinstance(req.get("method"), str):
            return Change(pointer=ptr, action="rewrite", rule="MRTR-embedded-requests", detail=f"input request {key!r} is not a request")
        method = req["method"]
        caps = self.s.client_caps if isinstance(self.s.client_caps, dict) else {}
        rev = self.client_rev
        params = copy.deepcopy(req.get("params")) if isinstance(req.get("params"), dict) else None
        changes = [Change(pointer=ptr, action="rewrite", rule="MRTR-embedded-requests",
                          detail=f"input request {key!r} sent to the client as a JSON-RPC request")]
        if method == "elicitation/create":
            mode = (params or {}).get("mode", "form")
            elic = caps.get("elicitation")
            if not isinstance(elic, dict):
                return Change(pointer=ptr, action="rewrite", rule="ELIC-request",
                              detail="elicitation (the client did not declare the elicitation capability)" if "elicitation/create" in
                              revisions.model(rev).server_requests else f"elicitation (MCP {rev} has no elicitation)")
            if mode == "url":
                if revisions.older(rev, "2025-11-25") or not isinstance(elic.get("url"), dict):
                    return Change(pointer=ptr, action="rewrite", rule="ELIC-url-mode",
                                  detail="URL-mode elicitation (the client did not declare elicitation.url)")
                params = params or {}
                if "elicitationId" not in params:
                    params["elicitationId"] = self.b.mint_id("elicitation-")
                    changes.append(Change(pointer=f"{ptr}/params/elicitationId", action="synthesize", rule="ELIC-elicitationId",
                                          after=f'"{params["elicitationId"]}"'))
            elif rev == "2025-11-25" and elic and "form" not in elic and "url" in elic:
                return Change(pointer=ptr, action="rewrite", rule="ELIC-url-mode",
                              detail="form elicitation (the client declared only elicitation.url)")
        elif method == "sampling/createMessage":
            if not isinstance(caps.get("sampling"), dict):
                return Change(pointer=ptr, action="rewrite", rule="MRTR-bridge-legacy-client",
                              detail="sampling (the client did not declare the sampling capability)")
            if isinstance((params or {}).get("tools"), list) and rev == "2025-11-25" and not isinstance(caps["sampling"].get("tools"), dict):
                return Change(pointer=ptr, action="rewrite", rule="SAMP-tools",
                              detail="sampling with tools (the client did not declare sampling.tools)")
        elif method == "roots/list":
            if not isinstance(caps.get("roots"), dict):
                return Change(pointer=ptr, action="rewrite", rule="MRTR-bridge-legacy-client",
                              detail="roots (the client did not declare the roots capability)")
        else:
            return Change(pointer=ptr, action="rewrite", rule="MRTR-embedded-requests",
                          detail=f"{method} (not an input request a legacy client can answer)")
        wire: dict = {"jsonrpc": "2.0", "id": self.b.mint_id("input-"), "method": method}
        if params is not None:
            wire["params"] = params
        out = self.b.walk(wire, "request", method, LATEST, rev, "s2c")
        if out.message is None or out.reply is not None:
            why = (out.reply or {}).get("message") or f"{method} cannot be expressed for MCP {rev}"
            rule = next((c.rule for c in out.changes if c.action == "drop-message"), "MRTR-embedded-requests")
            return Change(pointer=ptr, action="rewrite", rule=rule, detail=f"{method}: {why}")
        return key, method, out.message, changes + out.changes

    def _upgrade_answer(self, key: str, method: str, result: dict, changes: list[Change]) -> dict:
        """The client's result as an inputResponses entry (MRTR-embedded-requests: ElicitResult and
        ListRootsResult lose ``_meta``, schema/2026-07-28/schema.ts:2718, :2856), walked toward 2026."""
        ptr = f"/params/inputResponses/{escape(key)}"
        result = copy.deepcopy(result)
        if method in ("elicitation/create", "roots/list") and "_meta" in result:
            changes.append(Change(pointer=f"{ptr}/_meta", action="drop", rule="MRTR-embedded-requests",
                                  detail="not a Result in 2026-07-28"))
            del result["_meta"]
        model = revisions.model(LATEST)
        walk = Walk(self.client_rev, LATEST, "c2s", self.b.rw.policy, self.b.rw.options)
        result = walk.named(result, model.result_for(method), ptr)
        changes.extend(walk.changes)
        return result

    async def _learn_tools(self, body: dict) -> bool:
        """tools/list upstream (every page) to learn the called tool's x-mcp-header; True when it has some."""
        cursor = None
        name = body["params"].get("name")
        for _ in range(50):
            params: dict = {"_meta": body["params"]["_meta"]}
            if cursor:
                params["cursor"] = cursor
            req = {"jsonrpc": "2.0", "id": self.b.mint_id("tools-"), "method": "tools/list", "params": params}
            headers = {"mcp-protocol-version": LATEST, "mcp-method": "tools/list"}
            try:
                reply = await self.up.send(json_body.dumps(req), headers, "tools/list, to learn a tool's x-mcp-header", timeout=60)
            except upstream_mod.UpstreamError:
                return False
            msg = era.first_response(reply.headers.get("content-type", ""), reply.body)
            result = msg.get("result") if isinstance(msg, dict) else None
            if not isinstance(result, dict):
                return False
            self.b.learn_tools(self.exch, result)
            cursor = result.get("nextCursor")
            if not cursor:
                break
        return bool(self.b.tools_of(self.exch).get(name))


class Listen:
    """A legacy client's GET stream, served from upstream ``subscriptions/listen`` requests
    (TR-get-stream, SUB-list-changed-delivery); re-opened with a new filter when the client
    subscribes (SUB-resources-subscribe), reconnected when the server ends it early.

    Generations: each upstream listen has a number; the newest acknowledged one is ``active`` and
    only its notifications reach the client (a re-open switches at the new stream's ack, then ends
    the old one: nothing is lost in between; a change the server sent on both may arrive twice)."""

    def __init__(self, bridge: LegacyClientBridge, exch: Any, s: Any, ss: SessionState, upstream: Any):
        self.b, self.exch, self.s, self.ss, self.up = bridge, exch, s, ss, upstream
        self.client_rev = s.client_leg
        self.outlet = bridge.answers.make(on_close=self._closed, keep=bridge.state.keep_original or (1 << 20))
        self.filter: dict = {}
        self._gen = 0
        self.active = 0
        self.tasks: dict[int, asyncio.Task] = {}
        self.ended = False
        self.failure = ""

    def _request(self) -> tuple[str, dict]:
        lid = self.b.mint_id("listen-")
        caps, _ = self.b._caps(self.s, self.ss)
        meta = {PV: LATEST, CAPS: copy.deepcopy(caps)}
        if isinstance(self.s.client_info, dict) and self.s.client_info.get("name"):
            meta[INFO] = {"name": self.s.client_info.get("name"), "version": self.s.client_info.get("version") or ""}
        return lid, {"jsonrpc": "2.0", "id": lid, "method": "subscriptions/listen", "params": {"_meta": meta, "notifications": self.filter}}

    async def start(self) -> bool:
        """Open the first upstream listen; True once the server acknowledged it."""
        self.filter = self.b.listen_filter(self.s, self.ss)
        res = (self.s.server_caps or {}).get("resources") if isinstance(self.s.server_caps, dict) else None
        if not self.filter and not (isinstance(res, dict) and res.get("subscribe")):
            self.failure = "the server announced no notification a GET stream could carry"
            return False
        if not await self._open():
            return False
        return True

    async def reopen(self) -> bool:
        """The filter changed: open a listen with the new one (the old one ends at its ack)."""
        self.filter = self.b.listen_filter(self.s, self.ss)
        return await self._open()

    async def _open(self) -> bool:
        self._gen += 1
        gen = self._gen
        lid, req = self._request()
        acked: asyncio.Future = asyncio.get_running_loop().create_future()
        task = self.tasks[gen] = asyncio.get_running_loop().create_task(self._stream(gen, lid, req, acked))
        try:
            ok = await asyncio.wait_for(asyncio.shield(acked), 15)
        except asyncio.TimeoutError:
            ok = False
            self.failure = "no subscriptions/listen acknowledgement within 15 s"
        if not ok:
            task.cancel()
            self.tasks.pop(gen, None)
        return ok

    async def _stream(self, gen: int, lid: str, req: dict, acked: asyncio.Future) -> None:
        parser = SSEParser()
        headers = {"mcp-protocol-version": LATEST, "mcp-method": "subscriptions/listen"}

        def on_chunk(chunk: bytes) -> None:
            events = parser.feed(chunk) if chunk else parser.close()[0]
            for ev in events:
                if ev.payload is None:
                    if gen == self.active and ev.raw.startswith(b":"):
                        self.outlet.put(b": keep-alive\n\n")  # the server's keep-alive, as a comment
                    continue
                if ev.blank():
                    continue
                try:
                    msg = json_body.loads(ev.payload)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(msg, dict):
                    self._event(gen, lid, msg, acked)

        try:
            reply = await self.up.send(json_body.dumps(req), headers, "subscriptions/listen for a legacy client's GET stream "
                                       + json_body.dumps(self.filter).decode()[:100], on_chunk=on_chunk, timeout=24 * 3600,
                                       client_headers=True)
        except upstream_mod.UpstreamError as e:
            self.failure = f"subscriptions/listen failed: {e.reason}"
            if not acked.done():
                acked.set_result(False)
            else:
                self._ended(gen, self.failure)
            return
        finally:
            self.tasks.pop(gen, None)
        if not acked.done():
            first = era.first_response(reply.headers.get("content-type", ""), reply.body)
            err = (first or {}).get("error") if isinstance(first, dict) else None
            self.failure = f"subscriptions/listen answered HTTP {reply.status}" + \
                (f" {err.get('code')} {err.get('message')}" if isinstance(err, dict) else "")
            acked.set_result(False)
            return
        self._ended(gen, "the server ended the listen stream")

    def _event(self, gen: int, lid: str, msg: dict, acked: asyncio.Future) -> None:
        kind = classify(msg)
        method = msg.get("method")
        if method == "notifications/subscriptions/acknowledged":
            if gen > self.active:
                old, self.active = self.active, gen
                task = self.tasks.get(old)
                if task is not None:
                    task.cancel()  # the re-opened listen carries everything from here on
            if not acked.done():
                acked.set_result(True)
            self.b.log(self.exch, "s2c", msg, method, [Change(pointer="", action="drop-message", rule="SUB-acknowledged",
                                                              detail="consumed by mcpx")], LATEST, self.client_rev)
            return
        if gen != self.active:
            return
        if kind in ("result", "error") and msg.get("id") == lid:
            self.b.log(self.exch, "s2c", msg, "subscriptions/listen", [Change(
                pointer="", action="drop-message", rule="SUB-listen-result", detail="the server ended the listen stream")],
                LATEST, self.client_rev)
            return
        if kind != "notification":
            return
        out = self.b.walk(msg, "notification", method, LATEST, self.client_rev, "s2c")
        self.b.log(self.exch, "s2c", out.message if out.message is not None else msg, method, out.changes, LATEST, self.client_rev)
        if out.message is not None:
            self.outlet.put(sse_event(out.message))

    def _ended(self, gen: int, why: str) -> None:
        """The active upstream listen ended: open another after a pause, while the client listens."""
        if gen != self.active or self.ended:
            return
        logger.info(f"mcpx: {why}: re-opening subscriptions/listen")

        async def again() -> None:
            for delay in (1, 2, 5, 10, 30, 30, 60):
                await asyncio.sleep(delay)
                if self.ended or self.active != gen:
                    return
                if not self.up.live():
                    break
                if await self._open():
                    return
            self.close("subscriptions/listen could not be re-opened")

        asyncio.get_running_loop().create_task(again())

    async def _closed(self) -> None:
        if not self.outlet.finished:
            self.close("the client closed its GET stream")

    def close(self, why: str) -> None:
        if self.ended:
            return
        self.ended = True
        logger.debug(f"mcpx: legacy GET stream ended: {why}")
        for task in list(self.tasks.values()):
            task.cancel()
        self.outlet.close()
        if self.ss.listen is self:
            self.ss.listen = None
