"""The legacy-client bridge: serves every flow of a session whose token names it, from its parts
(:mod:`.handshake`, :mod:`.envelope`, :mod:`.local`, :mod:`.listen`, a :class:`~.call.Call` per request)."""

from __future__ import annotations

import itertools
import os
from collections import OrderedDict
from typing import Any

from ...changes import Change
from ...downgrade import classify, downgrade
from ...framing import json_body
from .. import Answer, Streamed
from .call import Call
from .envelope import Envelope, _Refused
from .handshake import Handshake
from .listen import Listening
from .local import LocalAnswers
from .shared import INPUT_TIMEOUT, LATEST, MAX_SESSIONS, NAME, NOTE, Pending, SessionState, _error


class LegacyClientBridge(Handshake, Envelope, LocalAnswers, Listening):
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

