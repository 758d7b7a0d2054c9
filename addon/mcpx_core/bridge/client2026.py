"""A 2026-07-28 client in front of a legacy server (REVISIONS.md 2.4 cross-era mode; issue 12).

The 2026 client is stateless: every request names its revision and carries its capabilities and
clientInfo in ``params._meta`` (schema/2026-07-28/schema.ts:76-110). The legacy server wants a
session. Per distinct client identity (the URL it asks for, its credentials, clientInfo,
clientCapabilities; the credentials as a keyed digest, :mod:`mcpx_core.identity`) mcpx keeps one
upstream legacy session: it sends ``initialize`` (the newest legacy revision, the client's
capabilities downgraded, its clientInfo) and ``notifications/initialized`` itself (``LC-initialize``,
upgrade direction), and sends every request of that client on it. What each method becomes:

- ``server/discover`` (``DISC-request``): answered by mcpx from the upstream InitializeResult:
  ``supportedVersions ["2026-07-28"]``, the server's capabilities (walked to 2026-07-28),
  ``instructions`` (``LC-instructions``), ``_meta`` serverInfo, ``ttlMs`` 0, ``cacheScope``
  "private", ``resultType`` "complete".
- ``tools/call``, ``prompts/get``, ``resources/read``: sent upstream by mcpx (its own flow), so that
  a server->client request the legacy server sends while the call runs (``sampling/createMessage``,
  ``elicitation/create``, ``roots/list``; ``MRTR-bridge-legacy-server``) can end the client's
  request with an InputRequiredResult (``inputRequests`` built from the held requests,
  ``MRTR-embedded-requests``; ``requestState`` a handle mcpx keeps) while the upstream call stays
  open; the client's retry (``inputResponses`` + that ``requestState``) answers the held upstream
  requests and gets the call's final result, or the next round. A ``ping`` the server sends is
  answered ``{}``, any other request -32601 (``MRTR-bridge-legacy-server``). Progress and other
  notifications of the call reach the client before its result, in the answer's SSE body (the
  answer is written when the call ends or asks for input: not streamed as it comes). A server that
  closes the call's SSE stream after an event id and before the answer (SSE polling,
  ``TR-sse-priming-polling``, 2025-11-25 basic/transports.mdx:107-115), or whose stream breaks off
  there, is resumed by mcpx: ``GET`` with ``Last-Event-ID``, the server's session id and revision,
  after its ``retry`` (milliseconds, at most ``resume.RETRY_CAP_MS``), again after each close that
  follows a newer id (a ``bridge`` record each); a resume that fails (the GET not answered with an
  SSE stream, or a resumed stream with no newer id) ends the call with -32603 saying why, one
  ``passthrough`` record and one warning line. No overall time limit while the server streams: the
  POST and each GET are ended after 600 s without a byte (``Sender.send`` ``idle``), the call after
  600 s without a message (``CALL_IDLE``: -32603 saying so, one ``passthrough`` record and one
  warning line; its upstream request is ended and a resume of its stream cancelled).
- ``subscriptions/listen`` (``SUB-listen``, ``TR-get-stream``): the client's POST becomes the
  upstream session's GET stream (``resources/subscribe`` first for the URIs it asks for); the first
  event the client gets is the ``notifications/subscriptions/acknowledged`` for what the server can
  honour, then each matching list_changed / resources/updated with ``subscriptionId``
  (``META-subscriptionId``); the rest is not delivered (``SUB-list-changed-delivery``). The listen
  ends when the GET stream does: ended by the server, or broken off (a connection error: then a
  ``passthrough`` record says why), refused or failed.
- ``notifications/cancelled`` of a listen: answered 202 (the stream's close ends it).
- every other request: forwarded on the upstream session, its answer walked to 2026-07-28 with the
  members 2026-07-28 requires added (rules/upgrade.py).

Request ids: a 2026 client's ids are unique only among its outstanding requests, and several
clients of one identity share an upstream session: every request mcpx sends upstream gets an id of
mcpx's own (``mcpx-<n>``, ``RPC-request-id-reuse``), mapped back on the answer.

Memory only (a restart or another replica makes a new upstream session on the next request, which
the stateless 2026 client does not notice): upstream sessions, held input_required round trips
(600 s from their input_required answer, ``HELD_TTL``: then forgotten, their upstream call ended and a
resume of its stream cancelled; one being retried is not held),
listen streams. An upstream session unused for ``mcpx_session_ttl`` (no call in progress,
no open listen stream, no held round trip) is ended: mcpx sends the server ``DELETE`` with its
``Mcp-Session-Id``, as a legacy client ends a session (:meth:`Client2026Bridge.expire_idle`). A retry whose ``requestState`` this process does not hold gets -32602.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import orjson

from .. import revisions
from ..changes import Change
from ..downgrade import classify, downgrade, downgrade_params
from ..framing import json_body
from ..framing.encoding import DecodeFailed
from ..framing.sse import SSEParser, json_values
from ..rewrite import PRIMING_RULE, undecodable_detail
from ..session import Session
from . import Answer, Pass, Reply, Streamed, Upstream
from .era import first_response
from .resume import RETRY_CAP_MS, retry_of, retry_text

logger = logging.getLogger("mcpx")

NAME = "client2026"
LATEST = revisions.LATEST
NEWEST_LEGACY = revisions.LEGACY[-1]
MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
EMBEDDED = frozenset({"sampling/createMessage", "elicitation/create", "roots/list"})
META_KEYS = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
             "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/logLevel")
STATE_PREFIX = "mcpx-rs1."
HELD_TTL = 600.0
#: seconds a bridged call waits for its next JSON-RPC message from the server (a message, not a byte:
#: an idle POST or GET is ended by ``Sender.send`` after as long); then the call ends with -32603 and
#: mcpx ends its upstream request (:meth:`Client2026Bridge._next`)
CALL_IDLE = 600.0
_IDS = itertools.count(1)
#: no JSON-RPC id in an error mcpx answers (the request it refuses has none to answer)
NO_ID = object()


def _mint() -> str:
    return f"mcpx-{next(_IDS)}"


@dataclass
class Upstream2026Session:
    """One upstream legacy session for one 2026 client identity."""

    session: Session
    instructions: str | None = None
    #: listen streams open on its GET stream
    listening: int = 0
    #: the log level last set on it (logging/setLevel)
    log_level: str | None = None
    #: client requests being handled on it now (a call waiting for its answer)
    active: int = 0
    #: when it was last used (``time.monotonic()``, seconds): idle past ``mcpx_session_ttl``, it is ended
    used: float = field(default_factory=time.monotonic)
    #: the :class:`~mcpx_core.bridge.Upstream` it was last used through: its DELETE goes there (:meth:`Client2026Bridge.expire_idle`)
    upstream: Any = None
    #: the URL and the keyed digest of the credentials it was opened with (:attr:`Exchange.client_scope`):
    #: only requests with the same use it, or retry a round trip held on it
    scope: tuple = ("", "")


@dataclass
class Held:
    """An upstream call that asked for client input: its stream goes on in the background."""

    handle: str
    upstream: Upstream2026Session
    method: str
    #: the id mcpx gave the upstream call
    call_id: str = ""
    #: the logLevel the client's request asked for (notifications/message below it are not delivered)
    log_level: str | None = None
    #: a URL elicitation round: the retry sends the original request again (nothing is held upstream)
    replay: bool = False
    #: key -> (upstream request id, method) of the server requests waiting for the client's answers
    waiting: dict[str, tuple[Any, str]] = field(default_factory=dict)
    #: messages (dicts) the upstream stream delivered that nobody took yet
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    done: bool = False
    at: float = field(default_factory=time.monotonic)
    #: the id of mcpx's flow that carries the upstream call's stream (the resumed GET's, once resumed),
    #: and the Upstream it went through: ended when the round trip is forgotten (:meth:`Client2026Bridge._expire`)
    flow_id: str = ""
    via: Any = None
    #: why the call's answer will not come: a resume of its SSE stream failed (the client's -32603 says it)
    ended: str | None = None
    #: the task resuming the call's SSE stream (waiting the server's ``retry``, or sending its GET), if
    #: one runs: cancelled when the round trip expires (:meth:`Client2026Bridge._expire`)
    resuming: asyncio.Task | None = None
    #: why nobody waits for the call any more (its round trip expired, or no message came for
    #: CALL_IDLE), as the info line of a resume not made says it (:meth:`Client2026Bridge._stop`); "" while
    #: somebody does
    stopped: str = ""

    @property
    def expired(self) -> bool:
        """Nobody waits for the call any more (:attr:`stopped`): its stream is not resumed."""
        return bool(self.stopped)


class Client2026Bridge:
    """``request(exch, method, body, headers, upstream) -> Answer | Pass`` for 2026 client requests
    whose server speaks no 2026-07-28 (see the module docstring)."""

    name = NAME

    def __init__(self, rewriter, answers):
        self.rw = rewriter
        self.answers = answers  # bridge/stream.py AnswerStreams: listen streams mcpx writes
        self.sessions: dict[tuple, Upstream2026Session] = {}
        #: upstream sessions of a client's second listen stream (not shared): ended once idle too
        self.unshared: list[Upstream2026Session] = []
        self.held: dict[str, Held] = {}
        self._tasks: set[asyncio.Task] = set()

    # -- entry --------------------------------------------------------------------------------
    async def request(self, exch, method: str, body: bytes | None, headers: dict[str, str], upstream: Upstream) -> Answer | Pass | Streamed:
        msg = _single(body)
        if msg is None:
            if method == "POST" and _batch(body):
                # a 2026-07-28 POST body is one request or notification (TR-post-body; JSON-RPC batches
                # were removed in 2025-06-18): refused as a 2026-07-28 server does, nothing forwarded
                return self._refuse(exch, NO_ID, 400, -32600, "Invalid Request: a 2026-07-28 POST body is one JSON-RPC "
                                    "request or notification, not a batch", "TR-post-body")
            return Pass()  # not one JSON-RPC message: as it is (the server answers it)
        kind = classify(msg)
        m = msg.get("method")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        if kind in ("result", "error"):
            # 2026-07-28 has no server->client requests: a client never POSTs a response (TR-post-body)
            return self._refuse(exch, NO_ID, 400, -32600, "Invalid Request: a 2026-07-28 client never POSTs a "
                                "JSON-RPC response", "TR-post-body")
        refusal = self._check(exch, msg, kind, meta, headers)
        if refusal is not None:
            return refusal
        if kind == "request":
            exch.single_request_id = msg.get("id")  # for an error answer should the upstream session fail
        try:
            up = await self._upstream_session(exch, meta, upstream)
        except Refused as r:  # the server's own refusal (e.g. 403 for a foreign Origin): the client gets it
            if r.reply.undecoded:  # (still in its Content-Encoding: the client gets it with that header)
                self.rw.passthrough(exch, "s2c", r.reply.undecoded)
            return Answer(r.reply.status, r.reply.body, (("content-type", r.reply.headers.get("content-type", "application/json")),)
                          + r.reply.answer_headers(()))
        exch.session = up.session
        self._expire()
        up.active += 1  # (a call in progress keeps its upstream session: expire_idle)
        up.upstream = upstream
        try:
            return await self._on_session(exch, msg, kind, m, params, body, headers, up, upstream)
        finally:
            up.active -= 1
            up.used = time.monotonic()

    async def _on_session(self, exch, msg: dict, kind: str, m: Any, params: dict, body: bytes | None, headers: dict[str, str],
                          up: Upstream2026Session, upstream: Upstream) -> Answer | Pass | Streamed:
        """A checked request of a 2026 client, on its upstream session ``up``."""
        if kind == "notification":
            if m == "notifications/cancelled":
                self.rw.record(exch, [Change(pointer="", action="answer-locally", rule="CANCEL-direction",
                                             detail="a 2026 client's cancel over HTTP: the stream's close ends the request")],
                               "c2s", LATEST, up.session.server_rev)
                return Answer(202, b"", ())
            return self._pass(exch, msg, body, headers, up)
        if kind != "request":
            return Pass()
        exch.single_request_id = msg.get("id")
        exch.request_ids[msg.get("id")] = m
        if m == "server/discover":
            return self._discover(exch, msg, up)
        if m == "subscriptions/listen":
            return await self._listen(exch, msg, params, up, upstream)
        if m in MRTR_METHODS:
            state = params.get("requestState")
            if isinstance(state, str) and state.startswith(STATE_PREFIX):
                return await self._retry(exch, msg, params, state, upstream)
            return await self._call(exch, msg, up, upstream)
        await self._log_level(exch, msg, up, upstream)
        return self._pass(exch, msg, body, headers, up)

    # -- the upstream session -------------------------------------------------------------------
    async def _upstream_session(self, exch, meta: dict, upstream: Upstream, shared: bool = True) -> Upstream2026Session:
        """The upstream session of the client identity of ``meta`` (made on first use); ``shared``
        False: a new one, not kept for other requests (a second listen stream)."""
        info = meta.get("io.modelcontextprotocol/clientInfo") if isinstance(meta.get("io.modelcontextprotocol/clientInfo"), dict) else None
        caps = meta.get("io.modelcontextprotocol/clientCapabilities") if isinstance(meta.get("io.modelcontextprotocol/clientCapabilities"), dict) else {}
        # the credentials are part of who the client is: two users of one app (same clientInfo and
        # capabilities) never share an upstream session opened with the first one's Authorization
        key = (*exch.client_scope, orjson.dumps(info, option=orjson.OPT_SORT_KEYS),
               orjson.dumps(caps, option=orjson.OPT_SORT_KEYS))
        up = self.sessions.get(key) if shared else None
        if up is not None:
            return up
        init = {"jsonrpc": "2.0", "id": _mint(), "method": "initialize", "params": {
            "protocolVersion": NEWEST_LEGACY, "capabilities": caps,
            "clientInfo": info or {"name": "mcpx", "version": "1"}}}
        # the client's capabilities as the legacy revision defines them (CAP-* records, c2s)
        out = downgrade(init, "request", "initialize", LATEST, NEWEST_LEGACY, "c2s", self.rw.policy, self.rw.options)
        reply = await upstream.send(json_body.dumps(out.message or init), {}, "initialize, for a 2026-07-28 client (LC-initialize)",
                                    timeout=60)
        answer = first_response(reply.headers.get("content-type", ""), reply.body)
        result = answer.get("result") if isinstance(answer, dict) else None
        if not isinstance(result, dict) or not revisions.is_known(result.get("protocolVersion")):
            self.rw.passthrough(exch, "c2s", f"the server refused the initialize mcpx sent for a 2026-07-28 client (HTTP {reply.status}): "
                                             "its answer goes to the client")
            raise Refused(reply)
        s = Session(f"(2026 client -> {result['protocolVersion']})", client_rev=LATEST, server_rev=result["protocolVersion"],
                    requested_rev=NEWEST_LEGACY, client_info=info, client_caps=caps, server_info=result.get("serverInfo"),
                    server_caps=result.get("capabilities"), upstream_id=reply.headers.get("mcp-session-id"), bridge=NAME)
        up = Upstream2026Session(s, result.get("instructions") if isinstance(result.get("instructions"), str) else None,
                                 scope=exch.client_scope)
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await upstream.send(json_body.dumps(note), self._headers(up), "notifications/initialized, for a 2026-07-28 client", timeout=30)
        up.upstream = upstream
        if shared:
            self.sessions[key] = up
        else:
            self.unshared.append(up)
        self.rw.record(exch, [Change(pointer="", action="bridge", rule="LC-initialize",
                                     before=f"2026-07-28 client {(info or {}).get('name', '?')}",
                                     after=f"upstream session at {s.server_rev}",
                                     detail="initialize and notifications/initialized sent upstream for a 2026-07-28 client")]
                       + out.changes, "c2s", LATEST, s.server_rev)
        return up

    # -- what a 2026-07-28 server checks first ---------------------------------------------------
    def _check(self, exch, msg: dict, kind: str, meta: dict, headers: dict[str, str]) -> Answer | None:
        """mcpx stands for a 2026-07-28 server: it checks the request as one must before anything
        else (docs/specification/2026-07-28/basic/transports/streamable-http.mdx:257-290, basic/index.mdx:375):
        ``params._meta`` carries protocolVersion and clientCapabilities (else 400, -32602); the
        ``MCP-Protocol-Version``, ``Mcp-Method`` and (tools/call, prompts/get: ``params.name``;
        resources/read: ``params.uri``) ``Mcp-Name`` headers equal the body (else 400, -32020
        HeaderMismatchError, schema/2026-07-28/schema.ts:463; header names case-insensitive, values
        trimmed, ``=?base64?...?=`` decoded); a method 2026-07-28 lacks is 404, -32601."""
        if kind not in ("request", "notification"):
            return None
        h = {k.lower(): v.strip() for k, v in headers.items()}
        rid = msg.get("id")
        method = msg.get("method")

        def refuse(status: int, code: int, message: str, rule: str, data: dict | None = None) -> Answer:
            # a notification has no id to answer under: the error carries none (2026-07-28
            # JSONRPCErrorResponse.id is an optional RequestId, a string or a number: never null)
            return self._refuse(exch, rid if kind == "request" else NO_ID, status, code, message, rule, data)

        if not isinstance(meta.get("io.modelcontextprotocol/protocolVersion"), str) \
                or not isinstance(meta.get("io.modelcontextprotocol/clientCapabilities"), dict):
            return refuse(400, -32602, "params._meta must carry io.modelcontextprotocol/protocolVersion and "
                          "io.modelcontextprotocol/clientCapabilities", "META-protocolVersion")
        version = meta["io.modelcontextprotocol/protocolVersion"]
        if h.get("mcp-protocol-version") != version:
            return refuse(400, -32020, "MCP-Protocol-Version header does not match params._meta protocolVersion", "TR-protocol-version-header")
        if version != LATEST:
            return refuse(400, -32022, f"Unsupported protocol version: {version}", "LC-unsupported-version",
                          {"supported": [LATEST], "requested": version})
        if kind == "request":
            if h.get("mcp-method") != method:
                return refuse(400, -32020, "Mcp-Method header does not match the request's method", "TR-mcp-method-name")
            named = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(method or "")
            if named is not None and _header_value(h.get("mcp-name")) != (msg.get("params") or {}).get(named):
                return refuse(400, -32020, f"Mcp-Name header does not match params.{named}", "TR-mcp-method-name")
            model = revisions.model(LATEST)
            if method not in model.client_requests:
                return refuse(404, -32601, f"Method not found: {method}", "TR-unknown-method-404")
            params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
            responses = params.get("inputResponses", {})
            if method in MRTR_METHODS and (not isinstance(responses, dict) or not all(isinstance(v, dict) for v in responses.values())
                                           or ("requestState" in params and not isinstance(params["requestState"], str))):
                # schema/2026-07-28/schema.ts:600 (InputResponses: an object), :567 (requestState: a string)
                return refuse(400, -32602, "Invalid params: inputResponses must be an object of results, requestState a string",
                              "MRTR-input-responses")
        return None

    def _refuse(self, exch, rid: Any, status: int, code: int, message: str, rule: str, data: dict | None = None) -> Answer:
        """Answer as a 2026-07-28 server refuses a request: HTTP ``status``, a JSON-RPC error under
        ``rid`` (``NO_ID``: without one; 2026-07-28 error ids are optional), and a record."""
        self.rw.record(exch, [Change(pointer="", action="answer-locally", rule=rule,
                                     detail=f"refused as a 2026-07-28 server does: HTTP {status}, {code} {message}")],
                       "c2s", LATEST, None)
        err = {"code": code, "message": message, **({"data": data} if data else {})}
        return Answer(status, json_body.dumps({"jsonrpc": "2.0", **({"id": rid} if rid is not NO_ID else {}), "error": err}))

    def forget_session(self, session: Session) -> None:
        """Drop the upstream session whose :class:`Session` is ``session`` (the server answered 404
        for it): the next request of that client makes a new one."""
        for k in [k for k, up in self.sessions.items() if up.session is session]:
            del self.sessions[k]

    @staticmethod
    def _headers(up: Upstream2026Session) -> dict[str, str]:
        s = up.session
        h = {"mcp-protocol-version": s.server_rev}
        if s.upstream_id:
            h["mcp-session-id"] = s.upstream_id
        return h

    # -- server/discover ----------------------------------------------------------------------
    def _discover(self, exch, msg: dict, up: Upstream2026Session) -> Answer:
        s = up.session
        result: dict[str, Any] = {"supportedVersions": [LATEST], "capabilities": s.server_caps or {}}
        changes = [Change(pointer="", action="answer-locally", rule="DISC-request",
                          detail=f"answered by mcpx from the upstream InitializeResult ({s.server_rev})")]
        if up.instructions is not None:
            result["instructions"] = up.instructions
            changes.append(Change(pointer="/result/instructions", action="rewrite", rule="LC-instructions",
                                  detail="InitializeResult.instructions copied into the DiscoverResult"))
        if isinstance(s.server_info, dict):
            result["_meta"] = {"io.modelcontextprotocol/serverInfo": s.server_info}
        answer = {"jsonrpc": "2.0", "id": msg.get("id"), "result": result}
        out = downgrade(answer, "result", "server/discover", s.server_rev, LATEST, "s2c", self.rw.policy, self.rw.options)
        self.rw.record(exch, changes + out.changes, "s2c", s.server_rev, LATEST)
        return Answer(200, self.rw.write(exch, "s2c", out.message or answer))

    # -- requests forwarded as they are -------------------------------------------------------
    async def _log_level(self, exch, msg: dict, up: Upstream2026Session, upstream: Upstream) -> None:
        """META-logLevel: the level a request asks for, set on the upstream session first when it differs
        from the level last set there (logging/setLevel, only if the server declared logging;
        docs/specification/2026-07-28/server/utilities/logging.mdx:63)."""
        level = _meta_of(msg).get("io.modelcontextprotocol/logLevel")
        if not isinstance(level, str) or level == up.log_level or not isinstance((up.session.server_caps or {}).get("logging"), dict):
            return
        req = {"jsonrpc": "2.0", "id": _mint(), "method": "logging/setLevel", "params": {"level": level}}
        await upstream.send(json_body.dumps(req), self._headers(up), f"logging/setLevel {level}, for a 2026-07-28 request's logLevel", timeout=30)
        up.log_level = level
        self.rw.record(exch, [Change(pointer="/params/_meta/io.modelcontextprotocol~1logLevel", action="rewrite", rule="META-logLevel",
                                     before=level, after=f"logging/setLevel {level} on the upstream session")],
                       "c2s", LATEST, up.session.server_rev)

    def _pass(self, exch, msg: dict, body: bytes, headers: dict[str, str], up: Upstream2026Session) -> Pass:
        """The client's flow goes on to the upstream session: the message walked to the server's
        revision (``_meta`` envelope keys dropped: META-*), an id of mcpx's own, the session's headers."""
        original = msg.get("id")
        if "id" in msg:
            minted = _mint()
            exch.id_map[minted] = original
            msg["id"] = minted
            exch.request_ids[minted] = msg.get("method")
            exch.single_request_id = minted
        new = self.rw.c2s_message(exch, msg, body) or json_body.dumps(msg)
        sets, removes = self.rw.session_headers(exch, headers)
        return Pass(body=new, set=sets, remove=removes)

    # -- calls that may need client input -------------------------------------------------------
    async def _call(self, exch, msg: dict, up: Upstream2026Session, upstream: Upstream, again: bool = True) -> Answer:
        rid, method = msg.get("id"), msg.get("method")
        minted = _mint()
        held = Held(handle=STATE_PREFIX + os.urandom(12).hex(), upstream=up, method=method, call_id=minted,
                    log_level=_meta_of(msg).get("io.modelcontextprotocol/logLevel"))
        await self._log_level(exch, msg, up, upstream)
        out_msg = dict(msg, id=minted)
        body = self.rw.c2s_message(exch, out_msg, None) or json_body.dumps(out_msg)
        first: asyncio.Future = asyncio.get_running_loop().create_future()
        # SSE polling (2025-11-25 transports.mdx:107-115, TR-sse-priming-polling): the server may close
        # the call's stream after an event id and before its answer; a 2026-07-28 client cannot resume
        # (no GET, no event ids), so mcpx resumes upstream with GET + Last-Event-ID, after ``retry``
        # (capped, resume.RETRY_CAP_MS), again after each close that follows a newer id
        # (``resumed``: every id resumed from: one that comes back is no newer event, or the resumes would loop)
        # (``undecodable``: the record's detail once the stream stopped decoding: the call ends, never resumed)
        stream = {"parser": SSEParser(), "last": None, "retry": 0, "answered": False, "resumed_from": None, "resumed": set(),
                  "undecodable": None}

        def end(why: str | None = None) -> None:
            """No more of the call comes; ``why``: the resume that failed (the client's -32603 says it)."""
            if why is not None:
                held.ended = (f"the server closed the call's SSE stream after event {stream['resumed_from']} without its "
                              f"answer and mcpx could not resume it: {why}")
                detail = f"{held.ended}; the call ends with -32603"
                logger.warning(f"mcpx: SSE polling: {detail}")
                self.rw.record(exch, [Change(pointer="", action="passthrough", rule=PRIMING_RULE, detail=detail)],
                               "s2c", up.session.server_rev, LATEST)
            held.done = True
            held.queue.put_nowait(None)

        def take(events: list) -> None:
            """The call's messages in ``events`` (complete SSE events) to ``held.queue``; their last id, retry."""
            for ev in events:
                if ev.last_id is not None:
                    stream["last"] = ev.last_id
                retry = retry_of(ev)
                if retry is not None:
                    stream["retry"] = retry
            for value in json_values(events):
                for m in value if isinstance(value, list) else [value]:
                    if isinstance(m, dict) and m.get("id") == minted and ("result" in m or "error" in m):
                        stream["answered"] = True
                    held.queue.put_nowait(m)

        def on_chunk(chunk: bytes) -> None:
            if stream["undecodable"] is not None:  # (nothing after a fault in the encoding is read)
                return
            parser = stream["parser"]
            take(parser.feed(chunk) if chunk else parser.close()[0])  # (a cut event's bytes: sent again after the last id)
            if chunk == b"":
                last = stream["last"]
                if stream["answered"] or not last or held.expired:  # (expired: nobody waits, nothing to resume or report)
                    end()
                elif last == stream["resumed_from"]:
                    end("the resumed stream ended with no newer event")
                elif last in stream["resumed"]:
                    end(f"the resumed stream ended after event {last}, which mcpx had resumed from before (no newer event)")
                else:
                    stream["resumed_from"] = last
                    stream["resumed"].add(last)
                    held.resuming = asyncio.get_running_loop().create_task(resume(last, stream["retry"]))
                    self._tasks.add(held.resuming)
                    self._tasks = {t for t in self._tasks if not t.done()}
            if not first.done():
                first.set_result(True)

        def on_undecodable(failed: DecodeFailed, at: int) -> None:
            """The call's SSE stream (the POST's, or a resuming GET's) stopped decoding (its
            Content-Encoding) at compressed byte ``at`` (``failed``: the fault): no close of the server's,
            so never resumed. The complete events before it are used (an unfinished one dropped); then,
            unless they held the answer, the call ends with -32603 saying why; one ``passthrough`` record
            and one warning line; its request is ended (``upstream.abort``: here when its flow is known, else
            once ``upstream.send`` returns it), so it no longer streams unread."""
            if stream["undecodable"] is not None:
                return
            events, tail = stream["parser"].close()
            take(events)
            detail = undecodable_detail(at, failed, len(tail))
            if stream["answered"]:
                detail += "; after the call's answer: its upstream request ended"
            else:
                where = ("SSE answer" if stream["resumed_from"] is None
                         else f"resumed SSE stream (after event {stream['resumed_from']})")
                held.ended = (f"the server's {where} stopped decoding at compressed byte {at} ({type(failed.error).__name__}: "
                              f"{failed.error}): mcpx ended the call's upstream request (not resumed: the server had not "
                              "closed the stream)")
                detail += "; the call ends with -32603, its upstream request ended, not resumed"
            stream["undecodable"] = detail
            logger.warning(f"mcpx: {NAME}: {method}: {detail}")
            self.rw.passthrough(exch, "s2c", detail)
            if held.flow_id:  # the stream's own flow, or (a GET not yet answered) the ended one before it: a no-op
                asyncio.get_running_loop().call_soon(upstream.abort, held.flow_id)  # (not inside mitmproxy's stream callback)
            held.done = True
            held.queue.put_nowait(None)
            if not first.done():
                first.set_result(True)

        async def resume(last: str, retry_ms: int) -> None:
            capped = f", capped at {RETRY_CAP_MS} ms" if retry_ms > RETRY_CAP_MS else ""
            self.rw.record(exch, [Change(pointer="", action="bridge", rule=PRIMING_RULE,
                                         detail=f"the server closed the call's SSE stream after event {last} without its answer: "
                                                f"resumed with GET and Last-Event-ID (retry {retry_text(retry_ms)}{capped})")],
                           "s2c", up.session.server_rev, LATEST)
            def not_made() -> None:  # the client will never read it: no GET (the server would hold it open for nobody)
                logger.info(f"mcpx: {NAME}: {held.stopped}: its resume after event {last} not made")
            try:
                await asyncio.sleep(min(retry_ms, RETRY_CAP_MS) / 1000)
            except asyncio.CancelledError:  # nobody waits for the call any more (_stop cancels this task)
                if held.expired:
                    not_made()
                raise
            if held.expired:
                not_made()
                return
            stream["parser"] = SSEParser()
            headers = {**self._headers(up), "accept": "text/event-stream", "last-event-id": last}
            resumed: asyncio.Future = asyncio.get_running_loop().create_future()

            def streaming(handler: Callable[..., None]) -> Callable[..., None]:
                """``handler``, then the GET counts as answered with a stream (``resumed``)."""
                def call(*args: Any) -> None:
                    handler(*args)
                    if not resumed.done():
                        resumed.set_result(True)
                return call
            got, undecodable = streaming(on_chunk), streaming(on_undecodable)
            try:
                # detached: the client's flow this call came on may have ended (answered input_required
                # before the server closed the stream); the GET is still for that flow's server
                reply = await upstream.send(b"", headers, f"GET resuming {method} after event {last}, for a 2026-07-28 client",
                                            method="GET", on_chunk=got, stop=resumed, on_broken=lambda why: got(b""), idle=True,
                                            detached=True, on_undecodable=undecodable)
            except Exception as e:  # no answer to the GET: the call ends, its -32603 says why
                end(f"the GET with Last-Event-ID {last} failed: {getattr(e, 'reason', None) or f'{type(e).__name__}: {e}'}")
                return
            held.flow_id = reply.flow_id
            if stream["undecodable"] is not None or held.expired:
                # it stopped decoding, or the round trip was forgotten, before the GET was returned: ended here
                upstream.abort(reply.flow_id)
                return
            if not resumed.done():  # it did not stream (an error status, JSON, an encoding mcpx cannot decode)
                ctype = reply.headers.get("content-type", "")
                end(f"the GET with Last-Event-ID {last} was answered HTTP {reply.status} ({ctype or 'no content-type'}), "
                    "not an SSE stream")

        # a stream broken off (a connection error) ends as one the server closed: resumed when it can be
        # (2025-11-25 basic/transports.mdx, "Sending Messages to the Server" 6: a disconnection is no cancellation);
        # idle: the POST (and each resuming GET) is ended only after 600 s without a byte from the server, never
        # while it streams (as on a direct connection; a call may stream its progress for longer)
        reply = await upstream.send(body, self._headers(up), f"{method}, for a 2026-07-28 client (may need client input)",
                                    on_chunk=on_chunk, stop=first, on_broken=lambda why: on_chunk(b""), idle=True,
                                    on_undecodable=on_undecodable)
        held.flow_id, held.via = reply.flow_id, upstream
        if stream["undecodable"] is not None:  # it stopped decoding before the POST was returned: ended here
            upstream.abort(reply.flow_id)
        if reply.status == 404 and up.session.upstream_id and again:
            # the server no longer knows the upstream session (restarted, expired): a new one, and once more
            self.forget_session(up.session)
            fresh = await self._upstream_session(exch, _meta_of(msg), upstream)
            return await self._call(exch, msg, fresh, upstream, again=False)
        if not reply.headers.get("content-type", "").startswith("text/event-stream"):
            # a JSON answer (or an HTTP error): nothing can be held
            held.done = True
            answer = first_response(reply.headers.get("content-type", ""), reply.body)
            if not isinstance(answer, dict):
                return self._unread(exch, reply, rid, minted)
            held.queue.put_nowait(answer)
            held.queue.put_nowait(None)
        return await self._next(exch, rid, minted, held, upstream)

    def _unread(self, exch, reply: Reply, rid: Any, minted: str) -> Answer:
        """The server's answer to a call holds no JSON-RPC response mcpx can read (truncated JSON, an
        HTML error page): it goes to the client as it came (a passthrough record), but never under
        mcpx's own id: where the body names it (``"id":"mcpx-<n>"``), the client's id is put back.
        A body mcpx did not decode (``reply.undecoded``: it decodes past ``mcpx_max_body``, or its
        Content-Encoding does not decode) goes as received, with its Content-Encoding, and that record."""
        if reply.undecoded:
            self.rw.passthrough(exch, "s2c", reply.undecoded)
            return Answer(reply.status, reply.body, reply.answer_headers(("content-type",)))
        body = reply.body
        ours = b'"id":' + json_body.dumps(minted)
        mapped = ours in body
        if mapped:
            body = body.replace(ours, b'"id":' + json_body.dumps(rid))
        self.rw.passthrough(exch, "s2c", f"the server's answer (HTTP {reply.status}) holds no JSON-RPC response mcpx can read: "
                            "forwarded as it came" + ("; mcpx's id in it mapped back to the client's" if mapped else ""))
        return Answer(reply.status, body, tuple((k, v) for k, v in reply.headers.items() if k in ("content-type",))
                      or (("content-type", "application/json"),))

    async def _next(self, exch, rid: Any, minted: str, held: Held, upstream: Upstream) -> Answer:
        """Read the held call's messages until its result or until it asks for client input."""
        s = held.upstream.session
        notes: list[dict] = []
        asks: dict[str, dict] = {}
        while True:
            if asks and held.queue.empty():  # (the server waits for the answers: ask now, never wait with a question pending)
                break
            try:
                m = await asyncio.wait_for(held.queue.get(), timeout=CALL_IDLE)
            except asyncio.TimeoutError:
                # the server sent no message for CALL_IDLE s: the call ends, and so does its upstream request
                # (and a resume of its stream, waiting or streaming), or they would go on for nobody
                resume = self._stop(held, f"the call {held.method} ended after {CALL_IDLE:g} s without a message from the server")
                held.ended = (f"no JSON-RPC message from the server for {CALL_IDLE:g} s: mcpx "
                              + ("cancelled the resume of the call's SSE stream" if resume else "ended the call's upstream request"))
                detail = f"{held.ended}; the call ends with -32603"
                logger.warning(f"mcpx: {NAME}: {held.method}: {detail}")
                self.rw.passthrough(exch, "s2c", detail)
                m = None
            if m is None:
                break
            kind = classify(m)
            if kind == "error" and m.get("id") == minted and (m.get("error") or {}).get("code") == -32042:
                return self._url_elicitations(exch, rid, m, held)
            if kind in ("result", "error") and m.get("id") == minted:
                self.held.pop(held.handle, None)
                m["id"] = rid
                exch.request_ids[rid] = held.method
                final = self.rw.s2c_message(exch, m, held.method, s.server_rev, LATEST) or m
                return self._answer(exch, notes, final)
            if kind == "request":
                if m.get("method") in EMBEDDED and not _declares(s.client_caps, m.get("method")):
                    # the 2026 client did not declare what this needs: answered as it would (-32601)
                    self.rw.record(exch, [Change(pointer="", action="answer-locally", rule="MRTR-bridge-legacy-server",
                                                 before=f"{m.get('method')} id={m.get('id')!r}",
                                                 detail="the client declared no capability for it: -32601 on its behalf")],
                                   "s2c", s.server_rev, LATEST)
                    await self._answer_upstream(exch, held, m.get("id"), None, m.get("method"), upstream)
                    continue
                if m.get("method") in EMBEDDED:
                    key = f"mcpx:{m.get('id')}"
                    while key in held.waiting:  # ids 1 and "1" of one round: two requests, two keys
                        key += "'"
                    held.waiting[key] = (m.get("id"), m.get("method"))
                    asks[key] = self._embedded(exch, m, s.server_rev)
                    continue  # (asked at the loop's top once nothing more is queued: what arrived together first)
                ping = m.get("method") == "ping"
                self.rw.record(exch, [Change(pointer="", action="answer-locally", rule="LC-ping" if ping else "MRTR-server-requests-removed",
                                             before=f"{m.get('method')} id={m.get('id')!r}",
                                             detail="answered {} on the client's behalf" if ping else
                                             "no 2026-07-28 equivalent: -32601 on the client's behalf")],
                               "s2c", s.server_rev, LATEST)
                await self._answer_upstream(exch, held, m.get("id"), {} if ping else None, m.get("method"), upstream)
                continue
            if kind == "notification":
                if m.get("method") == "notifications/message" and not _log_wanted(held.log_level, m):
                    self.rw.record(exch, [Change(pointer="", action="drop-message", rule="LOG-message-scope",
                                                 before=f"notifications/message ({(m.get('params') or {}).get('level')})",
                                                 detail="2026-07-28: log messages only at or above the logLevel the request asked for")],
                                   "s2c", s.server_rev, LATEST)
                    continue
                out = self.rw.s2c_message(exch, m, None, s.server_rev, LATEST)
                if out is not None:
                    notes.append(out)
        if asks:
            held.at = time.monotonic()  # (HELD_TTL counts from the input_required answer, not from the call's start)
            self.held[held.handle] = held
            result = {"resultType": "input_required", "inputRequests": asks, "requestState": held.handle}
            if isinstance(s.server_info, dict):
                result["_meta"] = {"io.modelcontextprotocol/serverInfo": s.server_info}
            self.rw.record(exch, [Change(pointer="/result", action="bridge", rule="MRTR-bridge-legacy-server",
                                         before=", ".join(f"{k}: {v['method']}" for k, v in asks.items()),
                                         after="input_required", detail="server requests sent during the call become an "
                                         "InputRequiredResult; the upstream call is held for the client's retry")],
                           "s2c", s.server_rev, LATEST)
            return self._answer(exch, notes, {"jsonrpc": "2.0", "id": rid, "result": result})
        self.held.pop(held.handle, None)
        if held.ended is not None:  # a resume that failed: its record and line were made then
            err = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": f"mcpx: {held.ended}"}}
            return self._answer(exch, notes, err)
        err = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "mcpx: the server ended the call without an answer"}}
        self.rw.passthrough(exch, "s2c", "the upstream call ended without an answer")
        return self._answer(exch, notes, err)

    def _embedded(self, exch, m: dict, server_rev: str) -> dict:
        """A legacy server request as an InputRequests entry (MRTR-embedded-requests): without
        ``jsonrpc``/``id``, params ``_meta`` and ``task`` removed (2026-07-28 CreateMessageRequestParams
        and Elicit*Params declare neither), then walked as 2026-07-28 defines them (e.g.
        ``ELIC-elicitationId``, schema/2026-07-28/schema.ts:2821)."""
        method = m.get("method")
        params = dict(m.get("params")) if isinstance(m.get("params"), dict) else {}
        dropped = [k for k in ("_meta", "task") if k in params and method != "roots/list"]
        for k in dropped:
            params.pop(k)
        params, changes = downgrade_params(params, method, server_rev, LATEST, "s2c", self.rw.policy, self.rw.options)
        out: dict[str, Any] = {"method": method}
        if params or method != "roots/list":
            out["params"] = params
        self.rw.record(exch, [Change(pointer="", action="rewrite", rule="MRTR-embedded-requests",
                                     before=f"{method} id={m.get('id')!r}", after="inputRequests entry",
                                     detail="jsonrpc/id removed" + (f"; params {', '.join(dropped)} removed" if dropped else ""))]
                       + changes, "s2c", server_rev, LATEST)
        return out

    def _url_elicitations(self, exch, rid: Any, m: dict, held: Held) -> Answer:
        """ELIC-url-required-error toward a 2026-07-28 client (schema/2025-11-25/schema.ts:188): the
        URLElicitationRequiredError becomes an InputRequiredResult whose inputRequests hold the URL
        elicitations (``elicitationId`` removed, ELIC-elicitationId); its ``requestState`` lets mcpx
        send the original request again when the client retries (the URL flow completes out of band)."""
        s = held.upstream.session
        data = (m.get("error") or {}).get("data") if isinstance((m.get("error") or {}).get("data"), dict) else {}
        asks: dict[str, dict] = {}
        for i, el in enumerate(data.get("elicitations") or []):
            if isinstance(el, dict):
                params = {k: v for k, v in el.items() if k in ("mode", "message", "url")}
                asks[f"mcpx-url:{i}"] = {"method": "elicitation/create", "params": {"mode": "url", **params}}
        held.replay = True
        held.done = True
        held.at = time.monotonic()
        self.held[held.handle] = held
        self.rw.record(exch, [Change(pointer="/error", action="rewrite", rule="ELIC-url-required-error", before="error -32042",
                                     after=f"input_required with {len(asks)} URL elicitation(s)",
                                     detail="elicitationId removed (ELIC-elicitationId); the retry sends the request again")],
                       "s2c", s.server_rev, LATEST)
        result: dict[str, Any] = {"resultType": "input_required", "inputRequests": asks, "requestState": held.handle}
        return self._answer(exch, [], {"jsonrpc": "2.0", "id": rid, "result": result})

    async def _answer_upstream(self, exch, held: Held, rid: Any, result: dict | None, method: str, upstream: Upstream,
                               error: dict | None = None) -> None:
        """POST the client's (or mcpx's) answer to a held server request on the upstream session."""
        if result is None and error is None:
            error = {"code": -32601, "message": f"Method not found: {method} (no 2026-07-28 equivalent; answered by mcpx)"}
        msg = {"jsonrpc": "2.0", "id": rid, **({"result": result} if error is None else {"error": error})}
        await upstream.send(json_body.dumps(msg), self._headers(held.upstream), f"answer to server request id={rid!r} ({method})", timeout=60)

    async def _retry(self, exch, msg: dict, params: dict, state: str, upstream: Upstream) -> Answer:
        rid = msg.get("id")
        held = self.held.get(state)
        if held is not None and held.upstream.scope != exch.client_scope:
            # a round trip held for other credentials (or another URL) is not this client's: as unknown as a forged one
            held = None
        if held is None:
            self.rw.passthrough(exch, "c2s", "requestState names no input_required round trip this mcpx holds (expired, or another replica)")
            return Answer(400, json_body.dumps({"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32602, "message": "Invalid or expired requestState (mcpx holds no such round trip)"}}))
        responses = params.get("inputResponses") if isinstance(params.get("inputResponses"), dict) else {}
        s = held.upstream.session
        exch.session = s
        # no longer held while retried (_next holds it again if the server asks again): never forgotten by
        # HELD_TTL while its answer is awaited (CALL_IDLE bounds that), nor retried twice at once
        self.held.pop(held.handle, None)
        if held.replay:  # after URL elicitations: the original request once more (a new upstream call)
            again = {k: v for k, v in msg.items()}
            again["params"] = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
            return await self._call(exch, again, held.upstream, upstream)
        for key, value in responses.items():
            waiting = held.waiting.pop(key, None)
            if waiting is None:
                continue
            up_id, method = waiting
            # the client's answer as the legacy revision's result (MRTR-embedded-requests, upgrade direction)
            out = downgrade({"jsonrpc": "2.0", "id": up_id, "result": value}, "result", method, LATEST, s.server_rev, "c2s",
                            self.rw.policy, self.rw.options)
            self.rw.record(exch, [Change(pointer=f"/params/inputResponses/{key}", action="bridge", rule="MRTR-bridge-legacy-server",
                                         after=f"answer to server request id={up_id!r} ({method})",
                                         detail="the retry's inputResponses entry answers the held upstream request")] + out.changes,
                           "c2s", LATEST, s.server_rev)
            await self._answer_upstream(exch, held, up_id, (out.message or {}).get("result", value), method, upstream)
        for key, (up_id, method) in list(held.waiting.items()):  # asked but not answered: the server must not wait forever
            held.waiting.pop(key)
            await self._answer_upstream(exch, held, up_id, None, method, upstream,
                                        error={"code": -32603, "message": "the client gave no answer (mcpx)"})
        return await self._next(exch, rid, held.call_id, held, upstream)

    def _answer(self, exch, notes: list[dict], final: dict) -> Answer:
        if not notes:
            return Answer(200, self.rw.write(exch, "s2c", final))
        body = b"".join(b"event: message\ndata: " + self.rw.write(exch, "s2c", m) + b"\n\n" for m in [*notes, final])
        return Answer(200, body, (("content-type", "text/event-stream"), ("cache-control", "no-cache")))

    # -- subscriptions/listen ---------------------------------------------------------------------
    async def _listen(self, exch, msg: dict, params: dict, up: Upstream2026Session, upstream: Upstream) -> Streamed:
        """The listen stream: an answer stream mcpx writes (bridge/stream.py), the acknowledgement at
        once, then the events of the upstream session's GET stream (mcpx's own request) that the
        client asked for (:class:`ListenStream`)."""
        if up.listening:
            # a legacy session has one GET stream (servers answer a second one 409): another listen of
            # the same client gets an upstream session of its own
            meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
            up = await self._upstream_session(exch, meta, upstream, shared=False)
        s = up.session
        wanted = params.get("notifications") if isinstance(params.get("notifications"), dict) else {}
        caps = s.server_caps or {}
        honoured: dict[str, Any] = {}
        for flag, cap in (("toolsListChanged", "tools"), ("promptsListChanged", "prompts"), ("resourcesListChanged", "resources")):
            if wanted.get(flag) and isinstance(caps.get(cap), dict) and caps[cap].get("listChanged"):
                honoured[flag] = True
        uris = [u for u in wanted.get("resourceSubscriptions") or [] if isinstance(u, str)]
        if uris and isinstance(caps.get("resources"), dict) and caps["resources"].get("subscribe"):
            for uri in uris:
                sub = {"jsonrpc": "2.0", "id": _mint(), "method": "resources/subscribe", "params": {"uri": uri}}
                await upstream.send(json_body.dumps(sub), self._headers(up), f"resources/subscribe {uri}, for a 2026-07-28 listen", timeout=30)
            honoured["resourceSubscriptions"] = uris
        listen = Listen(sub_id=msg.get("id"), honoured=honoured, server_rev=s.server_rev)
        self.rw.record(exch, [Change(pointer="", action="bridge", rule="SUB-listen", before="POST subscriptions/listen",
                                     after="GET stream of the upstream session",
                                     detail=f"honoured: {', '.join(honoured) or 'nothing'}")], "c2s", LATEST, s.server_rev)
        up.listening += 1
        get: dict[str, Any] = {}

        async def ended() -> None:  # the client closed its listen stream: end the GET, unsubscribe
            up.listening -= 1
            up.used = time.monotonic()
            if get.get("flow_id"):
                upstream.abort(get["flow_id"])
            for uri in honoured.get("resourceSubscriptions") or ():
                unsub = {"jsonrpc": "2.0", "id": _mint(), "method": "resources/unsubscribe", "params": {"uri": uri}}
                try:
                    await upstream.send(json_body.dumps(unsub), self._headers(up), f"resources/unsubscribe {uri}, the listen ended", timeout=30)
                except Exception as e:  # the session may be gone: nothing to undo then
                    logger.info(f"mcpx: resources/unsubscribe {uri} after a listen: {e}")

        stream = await self.answers.open(on_close=ended)
        def server_request(m: dict) -> None:
            # a request the legacy server sends on its GET stream (ping, roots/list, ...): a 2026-07-28
            # client takes none, and the server waits for an answer: mcpx answers on the client's behalf,
            # as it does for one sent during a call (ping {}, anything else -32601)
            ping = m.get("method") == "ping"
            answer = {"jsonrpc": "2.0", "id": m.get("id"), **({"result": {}} if ping else {"error": {
                "code": -32601, "message": f"Method not found: {m.get('method')} (no 2026-07-28 equivalent; answered by mcpx)"}})}
            self.rw.record(exch, [Change(pointer="", action="answer-locally", rule="LC-ping" if ping else "MRTR-server-requests-removed",
                                         before=f"{m.get('method')} id={m.get('id')!r} on the upstream GET stream",
                                         detail="answered {} on the client's behalf" if ping else
                                         "no 2026-07-28 equivalent: -32601 on the client's behalf")],
                           "s2c", s.server_rev, LATEST)

            async def send() -> None:
                try:
                    await upstream.send(json_body.dumps(answer), self._headers(up), f"answer to server request id={m.get('id')!r} "
                                        f"({m.get('method')}) on a 2026-07-28 listen's GET stream", timeout=60)
                except Exception as e:
                    logger.info(f"mcpx: answer to server request {m.get('id')!r} on a listen's GET stream: {e}")

            self._tasks.add(asyncio.get_running_loop().create_task(send()))

        transform = ListenStream(listen, lambda changes: self.rw.record(exch, changes, "s2c", s.server_rev, LATEST), server_request)
        for chunk in transform(None):
            stream.put(chunk)  # the acknowledgement, before anything comes from upstream

        def on_chunk(chunk: bytes) -> None:
            for out in transform(chunk):
                stream.put(out)
            if chunk == b"":
                stream.close()

        def on_broken(why: str) -> None:
            # the GET's connection broke off before its end (the server died, a reset): the listen ends as
            # when the server ends the GET (what was parsed so far delivered, then the client's stream
            # closed), and a record says why; never after the client closed its listen (mcpx aborted the GET)
            if not stream.closed:
                self.rw.passthrough(exch, "s2c", f"the server's GET stream broke off ({why}): the listen ends")
            on_chunk(b"")

        async def run_get() -> None:
            headers = {**self._headers(up), "accept": "text/event-stream"}
            first: asyncio.Future = asyncio.get_running_loop().create_future()
            try:
                reply = await upstream.send(b"", headers, "GET stream, for a 2026-07-28 listen", method="GET",
                                            on_chunk=lambda c: (on_chunk(c), first.done() or first.set_result(True)), stop=first,
                                            timeout=24 * 3600, on_broken=on_broken)
                get["flow_id"] = reply.flow_id
                if stream.closed:
                    upstream.abort(reply.flow_id)
                elif not reply.headers.get("content-type", "").startswith("text/event-stream"):
                    self.rw.passthrough(exch, "s2c", f"the server's GET stream answered HTTP {reply.status}: the listen ends")
                    stream.close()
            except Exception as e:
                self.rw.passthrough(exch, "s2c", f"the server's GET stream failed: {e}: the listen ends")
                stream.close()

        self._tasks.add(asyncio.get_running_loop().create_task(run_get()))
        self._tasks = {t for t in self._tasks if not t.done()}
        return Streamed(stream)

    def _expire(self) -> None:
        """Forget the input_required round trips held for more than HELD_TTL seconds, and end the upstream
        call each still holds open (its stream would otherwise stay open for as long as the server keeps
        it: its session's DELETE may be refused, 405, or never sent, for a server that gave no session id),
        and the resume of its SSE stream that waits the server's ``retry`` or sends its GET (cancelled: no
        GET goes out, or the one going out is aborted)."""
        now = time.monotonic()
        for k in [k for k, h in self.held.items() if now - h.at > HELD_TTL]:
            h = self.held.pop(k)
            self._stop(h, f"the input_required round trip of {h.method} was forgotten")

    def _stop(self, h: Held, why: str) -> bool:
        """Nobody waits for ``h``'s call any more (``why``: for the info line of a resume not made):
        its stream is not resumed, a resume waiting the server's ``retry`` or sending its GET is
        cancelled (``Sender.send`` aborts a request it was sending when cancelled), and its upstream
        request, if still open, is ended. Returns whether a resume was cancelled (the call's stream had
        ended: its upstream request was already over)."""
        h.stopped = why
        resume = h.resuming is not None and not h.resuming.done()
        if resume:
            h.resuming.cancel()
        if h.flow_id and h.via is not None and not h.done:
            try:
                h.via.abort(h.flow_id)
            except Exception as e:  # never end the expiry loop
                logger.warning(f"mcpx: {NAME}: ending a held upstream call failed: {type(e).__name__}: {e}")
        return resume

    def _busy(self, up: Upstream2026Session) -> bool:
        """Whether ``up`` is in use: a call in progress, an open listen stream, a held input_required round trip."""
        return bool(up.active or up.listening or any(h.upstream is up for h in self.held.values()))

    def evict(self, ttl: float, now: float | None = None) -> list[Upstream2026Session]:
        """Forget the upstream sessions unused for more than ``ttl`` seconds (``mcpx_session_ttl``) and
        not :meth:`_busy`; returns them (the next request of their client makes a new one)."""
        now = time.monotonic() if now is None else now
        self._expire()
        idle = [up for up in [*self.sessions.values(), *self.unshared] if not self._busy(up) and now - up.used > ttl]
        if idle:
            self.sessions = {k: up for k, up in self.sessions.items() if up not in idle}
            self.unshared = [up for up in self.unshared if up not in idle]
        return idle

    def expire_idle(self, ttl: float) -> int:
        """Called by the expiry loop (addons/expiry.py, as sessions are expired): :meth:`evict`, then end
        each evicted session on the server as a legacy client does (2025-03-26+ Streamable HTTP: ``DELETE``
        with its ``Mcp-Session-Id``), through the :class:`~mcpx_core.bridge.Upstream` it was last used
        through (a flow that has ended: ``detached``), in the background; one log line each. Returns the count."""
        idle = self.evict(ttl)
        for up in idle:
            task = asyncio.get_running_loop().create_task(self._end(up, ttl))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return len(idle)

    async def _end(self, up: Upstream2026Session, ttl: float) -> None:
        s = up.session
        who = f"upstream session of 2026-07-28 client {(s.client_info or {}).get('name', '?')!r} ({s.server_rev})"
        if not s.upstream_id or up.upstream is None:
            logger.info(f"mcpx: {NAME}: {who} idle for more than {ttl:g} s: forgotten (the server gave no session id)")
            return
        try:
            reply = await up.upstream.send(b"", self._headers(up), f"DELETE of an idle upstream session of a 2026-07-28 client",
                                           method="DELETE", timeout=30, detached=True)
            how = f"DELETE answered HTTP {reply.status}"
        except Exception as e:  # the server gone: nothing more to end
            how = f"DELETE failed: {getattr(e, 'reason', None) or type(e).__name__}"
        logger.info(f"mcpx: {NAME}: {who} idle for more than {ttl:g} s: ended ({how})")


@dataclass
class Listen:
    """A 2026 client's listen stream served from the upstream GET stream (see :class:`ListenStream`)."""

    sub_id: Any
    honoured: dict
    server_rev: str


class ListenStream:
    """The response stream of a listen served from the upstream GET stream: the acknowledgement first
    (``SUB-acknowledged`` upgrade direction), then each list_changed / resources/updated the client
    asked for, with ``subscriptionId`` (``META-subscriptionId``, ``SUB-list-changed-delivery``); every
    other upstream event is not delivered (a record each). A ``flow.response.stream`` callable."""

    KINDS = {"notifications/tools/list_changed": "toolsListChanged", "notifications/prompts/list_changed": "promptsListChanged",
             "notifications/resources/list_changed": "resourcesListChanged"}

    def __init__(self, listen: "Listen", record, server_request=None):
        self.listen, self.record = listen, record
        #: called with each JSON-RPC request the upstream stream carries (the server waits for its answer)
        self.server_request = server_request
        self.parser = SSEParser()
        self.started = False

    def _event(self, msg: dict) -> bytes:
        return b"event: message\ndata: " + json_body.dumps(msg) + b"\n\n"

    def _meta(self) -> dict:
        return {"io.modelcontextprotocol/subscriptionId": self.listen.sub_id}

    def __call__(self, chunk: bytes | None) -> list[bytes]:
        """The events to write for ``chunk`` of the upstream stream (``b""``: it ended; None: nothing
        came yet, the first call writes the acknowledgement)."""
        out: list[bytes] = []
        if not self.started:
            self.started = True
            ack = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"_meta": self._meta(), "notifications": self.listen.honoured}}
            out.append(self._event(ack))
            self.record([Change(pointer="", action="synthesize", rule="SUB-acknowledged",
                                after=f"acknowledged: {', '.join(self.listen.honoured) or 'nothing'}",
                                detail="the listen's first event, for what the legacy server can honour")])
        if chunk is None:
            return out
        for m in json_values(self.parser.feed(chunk) if chunk else self.parser.close()[0]):
            method = m.get("method") if isinstance(m, dict) else None
            wanted = (method == "notifications/resources/updated"
                      and (m.get("params") or {}).get("uri") in (self.listen.honoured.get("resourceSubscriptions") or ())) \
                or self.listen.honoured.get(self.KINDS.get(method or "", ""))
            if wanted and "id" not in m:
                params = dict(m.get("params") or {})
                params["_meta"] = {**(params.get("_meta") or {}), **self._meta()}
                out.append(self._event({"jsonrpc": "2.0", "method": method, "params": params}))
                self.record([Change(pointer="/params/_meta/io.modelcontextprotocol~1subscriptionId", action="synthesize",
                                    rule="META-subscriptionId", after=str(self.listen.sub_id))])
            elif classify(m) == "request" and self.server_request is not None:
                self.server_request(m)
            elif method == "notifications/message":
                self.record([Change(pointer="", action="drop-message", rule="LOG-message-scope",
                                    before="notifications/message on the upstream GET stream",
                                    detail="2026-07-28: log messages only on the stream of the request that asked for them")])
            else:
                self.record([Change(pointer="", action="drop-message", rule="SUB-list-changed-delivery",
                                    before=f"{method or 'event'} on the upstream GET stream",
                                    detail="not asked for by the listen request (or not expressible for 2026-07-28)")])
        return out


class Refused(Exception):
    """The server refused what mcpx sent for the client; ``reply`` is its answer."""

    def __init__(self, reply: Reply):
        super().__init__(f"HTTP {reply.status}")
        self.reply = reply


def _header_value(value: str | None) -> str | None:
    """A routing header's value: ``=?base64?...?=`` decoded (streamable-http.mdx:495), else as is."""
    if value and value.startswith("=?base64?") and value.endswith("?="):
        import base64
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
    return value


#: RFC 5424 severities, lowest first (schema/2026-07-28/schema.ts LoggingLevel)
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _log_wanted(asked: str | None, m: dict) -> bool:
    level = (m.get("params") or {}).get("level")
    return asked in LEVELS and level in LEVELS and LEVELS.index(level) >= LEVELS.index(asked)


def _meta_of(msg: dict) -> dict:
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    return params.get("_meta") if isinstance(params.get("_meta"), dict) else {}


#: the client capability each embedded request needs (schema/2026-07-28/schema.ts ClientCapabilities)
CAPABILITY = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}


def _declares(caps: dict | None, method: str) -> bool:
    return isinstance(caps, dict) and isinstance(caps.get(CAPABILITY[method]), dict)


def _batch(body: bytes | None) -> bool:
    """Whether ``body`` is a JSON-RPC batch (a JSON array)."""
    try:
        return bool(body) and json_body.parse(body, exact_ints=True).batch
    except json_body.Unparseable:
        return False


def _single(body: bytes | None) -> dict | None:
    if not body:
        return None
    try:
        parsed = json_body.parse(body, exact_ints=True)
    except json_body.Unparseable:
        return None
    return parsed.messages[0] if not parsed.batch and classify(parsed.messages[0]) else None


__all__ = ["Client2026Bridge", "Listen", "ListenStream", "NAME", "Reply"]
