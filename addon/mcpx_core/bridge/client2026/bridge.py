"""The client2026 bridge: a 2026-07-28 client in front of a legacy server, from its parts."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ... import revisions
from ...changes import Change
from ...downgrade import classify
from ...framing import json_body
from .. import Answer, Pass, Streamed, Upstream
from .shared import NAME, LATEST, MRTR_METHODS, STATE_PREFIX, NO_ID, Refused, _header_value, _batch, _single
from .calls import Calls
from .held import Held, HeldRoundTrips
from .listen import Listening
from .sessions import UpstreamSessions, Upstream2026Session
from .get_stream import SessionStreams


class Client2026Bridge(UpstreamSessions, Calls, HeldRoundTrips, Listening, SessionStreams):
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
        up.inbox.exch = exch  # (records of what its GET stream carries outside any call go to its latest request)
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
