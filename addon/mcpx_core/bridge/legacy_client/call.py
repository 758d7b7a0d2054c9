"""A call: one client request of a bridged session until its final answer, its upstream round
trips and what the client receives meanwhile. Its lifecycle is :mod:`.lifecycle`'s table."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import orjson

from ... import upstream as upstream_mod
from ...changes import Change
from ...downgrade import classify
from ...framing import json_body
from ...framing.sse import SSEParser
from ...rules.headers import upgrade_headers
from .. import Answer, Streamed
from .input_rounds import InputRounds
from .lifecycle import CallEvent, CallLifecycle, CallState
from .shared import LATEST, MAX_ROUNDS, NOTE, SessionState, _error, logger, sse_event

if TYPE_CHECKING:
    from .bridge import LegacyClientBridge
    from .envelope import Prepared


class Call(InputRounds):
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
        #: why it was cancelled, or None
        self.cancelled: str | None = None
        #: proxy ids of this call's input requests awaiting the client's answer
        self.waiting: list[str] = []
        self.life = CallLifecycle()

    async def begin(self) -> Answer | Streamed:
        b = self.b
        b.log(self.exch, "c2s", self.m, self.method, self.p.changes, self.client_rev, LATEST)
        if self.stream_ok:
            await b.answers.ensure()
        self.life.fire(CallEvent.BEGIN)
        self.ss.calls[self.rid] = self
        self.task = asyncio.get_running_loop().create_task(self._run())
        decision = await self.decided
        sent = json_body.dumps(self.p.message)
        if isinstance(decision, Answer):
            decision.sent = sent
            return decision
        return Streamed(self.outlet, note=NOTE + "; answer streamed by mcpx")

    def cancel(self, why: str) -> None:
        before = self.life.fire(CallEvent.CANCEL)
        self.cancelled = why
        for pid in self.waiting:
            p = self.b.pending.pop(pid, None)
            if p is not None and not p.future.done():
                p.future.cancel()
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.outlet is not None:
            self.outlet.close()
        if before is CallState.WAITING:
            self.decided.set_result(Answer(202, b"", (), note=NOTE + f"; {why}"))

    # -- delivery to the client --------------------------------------------------------------------
    def _streaming(self) -> bool:
        """Switch the answer to an SSE stream (once); False when the client cannot take one."""
        if self.outlet is not None:
            return True
        if not self.stream_ok or self.life.state is not CallState.WAITING:
            return False
        self.outlet = self.b.answers.make(on_close=self._closed, keep=self.b.state.keep_original or (1 << 20))
        self.life.fire(CallEvent.STREAM)
        self.decided.set_result("stream")
        return True

    async def _closed(self) -> None:
        """The answer stream ended: by the bridge (done), or because the client went away."""
        if self.outlet is not None and not self.outlet.finished and self.task is not None and not self.task.done() \
                and self.life.state is not CallState.CANCELLED:
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
            self.life.fire(CallEvent.FINAL)
            self.b.log(self.exch, "s2c", msg, self.method, changes, LATEST, self.client_rev)
            self.outlet.put(sse_event(msg))
            self.outlet.close()
            return
        self.b.log(self.exch, "s2c", msg, self.method, changes, LATEST, self.client_rev)
        if self.life.fire(CallEvent.ANSWER) is CallState.WAITING:
            self.decided.set_result(Answer(status, json_body.dumps(msg), self.b._json_headers(self.exch), note=NOTE))

    def _fail(self, code: int, message: str, change: Change, data: Any = None, status: int = 200) -> None:
        self._final(_error(self.rid, code, message, data), [change], status)

    # -- the rounds ----------------------------------------------------------------------------------
    async def _run(self) -> None:
        try:
            await self._rounds()
        except asyncio.CancelledError:
            before = self.life.fire(CallEvent.CANCEL)
            self.ss.calls.pop(self.rid, None)
            if self.outlet is not None:
                self.outlet.close()
            if before is CallState.WAITING:
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
        if self.life.state is CallState.WAITING:
            self.life.fire(CallEvent.ANSWER)
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

