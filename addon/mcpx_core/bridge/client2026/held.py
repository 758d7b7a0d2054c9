"""Held round trips: an upstream call that asked for client input, its stream going on in the background until the client's retry; their expiry. Where the call's upstream stream and the client's round trip are: :mod:`.lifecycle`."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ...changes import Change
from ...downgrade import classify, downgrade, downgrade_params
from ...framing import json_body
from .. import Answer, Upstream
from .shared import NAME, LATEST, EMBEDDED, _log_wanted, _declares, logger, timing
from .sessions import Upstream2026Session
from .lifecycle import STREAM_ENDS, SE, TE, TS, TolerantLifecycle, stream_lifecycle, trip_lifecycle


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
    #: key -> (upstream request id, method) of the server requests waiting for the client's answers
    waiting: dict[str, tuple[Any, str]] = field(default_factory=dict)
    #: messages (dicts) the upstream stream delivered that nobody took yet
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    at: float = field(default_factory=time.monotonic)
    #: the id of mcpx's flow that carries the upstream call's stream (the resumed GET's, once resumed),
    #: and the Upstream it went through: ended when the round trip is forgotten (:meth:`Client2026Bridge._expire`)
    flow_id: str = ""
    via: Any = None
    #: why the call's answer will not come (a resume that failed, a stream that stopped decoding,
    #: CALL_IDLE): the client's -32603 says it
    unanswered: str | None = None
    #: the task resuming the call's SSE stream (waiting the server's ``retry``, or sending its GET), if
    #: one ran: cancelled when nobody waits any more (:meth:`HeldRoundTrips._stop`)
    resume_task: asyncio.Task | None = None
    #: why nobody waits for the call any more (``FORGOTTEN``), as the info line of a resume not made says it
    forgotten: str = ""
    #: the client's exchange the call came on (records of a server request routed to it from the GET stream)
    exch: Any = None
    #: a ``passthrough`` record on the client's exchange, for a transition the tables refuse (a bug)
    record: Callable[[str], None] | None = None
    #: the upstream stream's lifecycle and the client round trip's (:mod:`.lifecycle`)
    stream: TolerantLifecycle = field(init=False)
    trip: TolerantLifecycle = field(init=False)

    def __post_init__(self) -> None:
        self.stream = stream_lifecycle(self._refused)
        self.trip = trip_lifecycle(self._refused)

    def _refused(self, detail: str) -> None:
        if self.record is not None:
            self.record(f"{self.method}: {detail}")

    @property
    def expired(self) -> bool:
        """Nobody waits for the call any more (``FORGOTTEN``): its stream is not resumed."""
        return self.trip.state is TS.FORGOTTEN

    @property
    def reading(self) -> bool:
        """A call in progress that a server request sent outside any call can go to: its stream not
        ended, and somebody waits for it."""
        return self.stream.state not in STREAM_ENDS and not self.expired


class HeldRoundTrips:
    """The part of :class:`~.bridge.Client2026Bridge` that holds input_required round trips."""

    async def _next(self, exch, rid: Any, minted: str, held: Held, upstream: Upstream) -> Answer:
        """Read the held call's messages until its result or until it asks for client input."""
        s = held.upstream.session
        notes: list[dict] = []
        asks: dict[str, dict] = {}
        asked: dict[str, dict] = {}  # key -> the server request of each entry of asks
        while True:
            if asks and held.queue.empty():  # (the server waits for the answers: ask now, never wait with a question pending)
                break
            try:
                m = await asyncio.wait_for(held.queue.get(), timeout=timing("CALL_IDLE"))
            except asyncio.TimeoutError:
                # the server sent no message for CALL_IDLE s: the call ends, and so does its upstream request
                # (and a resume of its stream, waiting or streaming), or they would go on for nobody
                resume = self._stop(held, f"the call {held.method} ended after {timing('CALL_IDLE'):g} s without a message from the server")
                held.stream.fire(SE.STOP)
                held.unanswered = (f"no JSON-RPC message from the server for {timing('CALL_IDLE'):g} s: mcpx "
                              + ("cancelled the resume of the call's SSE stream" if resume else "ended the call's upstream request"))
                detail = f"{held.unanswered}; the call ends with -32603"
                logger.warning(f"mcpx: {NAME}: {held.method}: {detail}")
                self.rw.passthrough(exch, "s2c", detail)
                m = None
            if m is None:
                break
            kind = classify(m)
            if kind == "error" and m.get("id") == minted and (m.get("error") or {}).get("code") == -32042:
                self._settled(held, asked)
                return self._url_elicitations(exch, rid, m, held)
            if kind in ("result", "error") and m.get("id") == minted:
                self._settled(held, asked)
                self.held.pop(held.handle, None)
                m["id"] = rid
                exch.request_ids[rid] = held.method
                final = self.rw.s2c_message(exch, m, held.method, s.server_rev, LATEST) or m
                held.trip.fire(TE.ANSWER)
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
                    asked[key] = m
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
            self.rw.record(exch, [Change(pointer="/result", action="bridge", rule="MRTR-bridge-legacy-server",
                                         before=", ".join(f"{k}: {v['method']}" for k, v in asks.items()),
                                         after="input_required", detail="server requests sent during the call become an "
                                         "InputRequiredResult; the upstream call is held for the client's retry")],
                           "s2c", s.server_rev, LATEST)
            return self._input_required(exch, rid, held, asks, notes, TE.ASK)
        self._settled(held, asked)
        self.held.pop(held.handle, None)
        held.trip.fire(TE.ANSWER)  # (a late event to a call forgotten for CALL_IDLE: its -32603)
        if held.unanswered is not None:  # a resume that failed, a stream that stopped decoding: its record and line were made then
            err = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": f"mcpx: {held.unanswered}"}}
            return self._answer(exch, notes, err)
        err = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "mcpx: the server ended the call without an answer"}}
        self.rw.passthrough(exch, "s2c", "the upstream call ended without an answer")
        return self._answer(exch, notes, err)

    def _input_required(self, exch, rid: Any, held: Held, asks: dict[str, dict], notes: list[dict], event: TE) -> Answer:
        """The client's request ends with an InputRequiredResult of ``asks``; ``held`` is kept for its
        retry (``event``: ``ASK``, the upstream call held; ``ASK_REPLAY``, the retry sends the request again)."""
        s = held.upstream.session
        held.trip.fire(event)
        held.at = time.monotonic()  # (HELD_TTL counts from the input_required answer, not from the call's start)
        self.held[held.handle] = held
        result = {"resultType": "input_required", "inputRequests": asks, "requestState": held.handle}
        if isinstance(s.server_info, dict):
            result["_meta"] = {"io.modelcontextprotocol/serverInfo": s.server_info}
        return self._answer(exch, notes, {"jsonrpc": "2.0", "id": rid, "result": result})

    def _settled(self, held: Held, asked: dict[str, dict]) -> None:
        """``held``'s call is over: no server request goes to it any more; those it read and did not
        ask the client yet (``asked``: key -> request; one the GET stream routed to it just before its
        answer, say) wait for the client's next call, and so does one still queued."""
        box = held.upstream.inbox
        if held in box.calls:
            box.calls.remove(held)
        left = [asked[k] for k in list(held.waiting) if k in asked]
        for k in [k for k in held.waiting if k in asked]:
            held.waiting.pop(k)
        while not held.queue.empty():
            m = held.queue.get_nowait()
            if isinstance(m, dict) and classify(m) == "request" and m.get("method") in EMBEDDED:
                left.append(m)
        for m in left:
            box.pending.append((m, time.monotonic()))

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
        held.trip.fire(TE.ASK_REPLAY)
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
        replay = held.trip.state is TS.REPLAY
        held.trip.fire(TE.RETRY)
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
        if replay:  # after URL elicitations, or server requests sent outside any call: the request itself now (a new upstream call)
            again = {k: v for k, v in msg.items()}
            again["params"] = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
            return await self._call(exch, again, held.upstream, upstream)
        return await self._next(exch, rid, held.call_id, held, upstream)

    def _answer(self, exch, notes: list[dict], final: dict) -> Answer:
        if not notes:
            return Answer(200, self.rw.write(exch, "s2c", final))
        body = b"".join(b"event: message\ndata: " + self.rw.write(exch, "s2c", m) + b"\n\n" for m in [*notes, final])
        return Answer(200, body, (("content-type", "text/event-stream"), ("cache-control", "no-cache")))


    def _expire(self) -> None:
        """Forget the input_required round trips held for more than HELD_TTL seconds, and end the upstream
        call each still holds open (its stream would otherwise stay open for as long as the server keeps
        it: its session's DELETE may be refused, 405, or never sent, for a server that gave no session id),
        and the resume of its SSE stream that waits the server's ``retry`` or sends its GET (cancelled: no
        GET goes out, or the one going out is aborted)."""
        now = time.monotonic()
        for k in [k for k, h in self.held.items() if now - h.at > timing("HELD_TTL")]:
            h = self.held.pop(k)
            self._stop(h, f"the input_required round trip of {h.method} was forgotten")

    def _stop(self, h: Held, why: str) -> bool:
        """Nobody waits for ``h``'s call any more (``why``: for the info line of a resume not made):
        its stream is not resumed, a resume waiting the server's ``retry`` or sending its GET is
        cancelled (``Sender.send`` aborts a request it was sending when cancelled), and its upstream
        request, if still open, is ended. Returns whether a resume was cancelled (the call's stream had
        ended: its upstream request was already over)."""
        replay = h.trip.state is TS.REPLAY  # (nothing held upstream: the request's answer came, a URL elicitation)
        h.trip.fire(TE.STOP)
        h.forgotten = why
        resume = h.resume_task is not None and not h.resume_task.done()
        if resume:
            h.resume_task.cancel()
        if h.flow_id and h.via is not None and h.stream.state not in STREAM_ENDS and not replay:
            try:
                h.via.abort(h.flow_id)
            except Exception as e:  # never end the expiry loop
                logger.warning(f"mcpx: {NAME}: ending a held upstream call failed: {type(e).__name__}: {e}")
        return resume
