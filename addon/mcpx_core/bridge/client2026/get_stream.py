"""The upstream session's own GET stream: what a legacy server sends outside any call, for a 2026-07-28 client.

A legacy server sends the requests and notifications that belong to no client request on the
session's standalone GET stream (2025-11-25 basic/transports.mdx, "Listening for Messages from the
Server"; e.g. the TypeScript SDK's ``listRoots()`` without a related request: the everything
server's roots sync after ``notifications/initialized`` and its ``get-roots-list`` tool). A 2026-07-28
client has no such stream: it takes a server request only as an ``InputRequiredResult`` of one of its
calls (schema/2026-07-28/schema.ts:567-600, ``MRTR-embedded-requests``) and a notification only on its
``subscriptions/listen`` stream. So mcpx opens the GET stream itself (one per upstream session: a
legacy server answers a second one 409) as soon as the session is initialized when the client
declared ``roots``, ``sampling`` or ``elicitation``, else with the first listen, and:

- a ``roots/list``, ``sampling/createMessage`` or ``elicitation/create`` the client declared the
  capability for goes to the call of that session in progress (the first begun that is not waiting
  for the client's retry, else the first begun; its
  ``input_required`` carries it, ``MRTR-bridge-legacy-server``), else it waits for the client's next
  ``tools/call``, ``prompts/get`` or ``resources/read``, which is answered ``input_required`` at once:
  the retry's ``inputResponses`` answer the server, then mcpx sends the call (:meth:`SessionStreams._carry`);
  one that no call carries within ``PENDING_TTL`` seconds is answered -32603 saying so, with a
  ``passthrough`` record and a warning line (the server never waits for ever);
- ``ping``: ``{}``; any other request, or one the client declared no capability for: -32601 on the
  client's behalf (as during a call);
- every event goes to each listen open on the session (:class:`~.listen.ListenStream`: what it asked for).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from ...changes import Change
from ...downgrade import classify
from ...framing import json_body
from ...framing.sse import SSEParser, json_values
from ...lifecycle import Lifecycle
from .. import Answer, Upstream
from .shared import LATEST, EMBEDDED, STATE_PREFIX, CAPABILITY, _declares, logger, timing
from .lifecycle import GE, SE, TE, get_lifecycle


@dataclass
class Subscriber:
    """A listen served from the session's GET stream: ``chunk(bytes)`` with each chunk (``b""``: it
    ended), ``broken(why)`` when its connection broke off or the GET was refused or failed."""

    chunk: Callable[[bytes], None]
    broken: Callable[[str], None]


@dataclass
class Inbox:
    """The upstream session's GET stream and what it carries that waits for the client."""

    #: closed (none open), opening (sent, no byte yet), open (streaming): :data:`.lifecycle.GET_TABLE`
    life: Lifecycle = field(default_factory=get_lifecycle)
    flow_id: str = ""
    task: asyncio.Task | None = None
    parser: SSEParser = field(default_factory=SSEParser)
    listeners: list[Subscriber] = field(default_factory=list)
    #: the Held round trips of the calls in progress on the session (bridge/client2026/held.py)
    calls: list = field(default_factory=list)
    #: (server request, monotonic time it came) waiting for the client's next call
    pending: list[tuple[dict, float]] = field(default_factory=list)
    #: the exchange of the session's latest client request: records of what comes outside any call go there
    exch: Any = None
    #: (answer, method) to server requests of the GET stream waiting to be sent, and the senders running
    answers: deque = field(default_factory=deque)
    senders: int = 0
    #: the answer queue is full: what comes is left unanswered (one record until it drains)
    full: bool = False


def wants_get(caps: dict | None) -> bool:
    """Whether a client with ``caps`` can answer a server request sent outside a call (so mcpx opens
    the session's GET stream at once)."""
    return any(_declares(caps, m) for m in CAPABILITY)


class SessionStreams:
    """The part of :class:`~.bridge.Client2026Bridge` that reads each upstream session's GET stream."""

    def _open_get(self, up, upstream: Upstream) -> None:
        """Open ``up``'s GET stream unless one is open or being opened (in the background)."""
        box = up.inbox
        if not box.life.can(GE.OPEN):
            return
        box.life.fire(GE.OPEN)
        box.parser = SSEParser()

        def on_chunk(chunk: bytes) -> None:
            box.life.fire(GE.CHUNK if chunk else GE.END)
            self._get_chunk(up, upstream, chunk)

        def on_broken(why: str) -> None:
            box.life.fire(GE.END)
            self._get_broken(up, f"the server's GET stream broke off ({why})")

        async def run() -> None:
            headers = {**self._headers(up), "accept": "text/event-stream"}
            first: asyncio.Future = asyncio.get_running_loop().create_future()
            try:
                reply = await upstream.send(b"", headers, "GET stream of the upstream session, for a 2026-07-28 client", method="GET",
                                            on_chunk=lambda c: (on_chunk(c), first.done() or first.set_result(True)), stop=first,
                                            timeout=24 * 3600, on_broken=on_broken, detached=True)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                box.life.fire(GE.END)
                self._get_broken(up, f"the server's GET stream failed: {e}")
                return
            box.flow_id = reply.flow_id
            if not reply.headers.get("content-type", "").startswith("text/event-stream"):
                box.life.fire(GE.END)
                self._get_broken(up, f"the server's GET stream answered HTTP {reply.status}")

        box.task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(box.task)

    def _close_get(self, up, upstream: Upstream | None = None) -> None:
        """End ``up``'s GET stream (its session is ended or forgotten); what waits for a call is dropped."""
        box = up.inbox
        if box.task is not None and not box.task.done():
            box.task.cancel()  # (Sender.send aborts a request it was sending when cancelled)
        elif box.flow_id and (upstream or up.upstream) is not None:
            try:
                (upstream or up.upstream).abort(box.flow_id)
            except Exception as e:  # never end the expiry loop
                logger.info(f"mcpx: ending an upstream GET stream: {type(e).__name__}: {e}")
        box.life.fire(GE.END)
        box.pending = []

    def _get_chunk(self, up, upstream: Upstream, chunk: bytes) -> None:
        box = up.inbox
        for m in json_values(box.parser.feed(chunk) if chunk else box.parser.close()[0]):
            if isinstance(m, dict) and classify(m) == "request":
                self._server_request(up, upstream, m)
        for sub in list(box.listeners):
            sub.chunk(chunk)
        if chunk == b"":
            box.listeners.clear()

    def _get_broken(self, up, why: str) -> None:
        box = up.inbox
        for sub in list(box.listeners):
            sub.broken(why)
        box.listeners.clear()

    # -- a server request outside any call -------------------------------------------------------
    def _server_request(self, up, upstream: Upstream, m: dict) -> None:
        s, box, method = up.session, up.inbox, m.get("method")
        where = f"{method} id={m.get('id')!r} on the upstream GET stream"
        if method in EMBEDDED and _declares(s.client_caps, method):
            calls = [h for h in box.calls if h.reading]
            # a call reading its stream now first (one whose input_required awaits the client's retry reads it then)
            calls = [h for h in calls if h.handle not in self.held] or calls
            if calls and calls[0].queue.qsize() < timing("PENDING_MAX"):
                h = calls[0]
                self.rw.record(h.exch if h.exch is not None else box.exch, [Change(
                    pointer="", action="bridge", rule="MRTR-bridge-legacy-server", before=where,
                    after=f"the {h.method} in progress", detail="a server request outside any call: carried by the client's "
                    "call in progress as input_required")], "s2c", s.server_rev, LATEST)
                h.queue.put_nowait(m)
                return
            self._pend(up, upstream, m)
            return
        ping = method == "ping"
        answer = {"jsonrpc": "2.0", "id": m.get("id"), **({"result": {}} if ping else {"error": {
            "code": -32601, "message": f"Method not found: {method} (no 2026-07-28 equivalent; answered by mcpx)"}})}
        self.rw.record(box.exch, [Change(pointer="", action="answer-locally", rule="LC-ping" if ping else "MRTR-server-requests-removed",
                                         before=where, detail="answered {} on the client's behalf" if ping else
                                         "no 2026-07-28 equivalent: -32601 on the client's behalf")], "s2c", s.server_rev, LATEST)
        self._post_answer(up, upstream, answer, method)

    def _post_answer(self, up, upstream: Upstream, answer: dict, method: Any) -> None:
        """POST ``answer`` upstream: in order, at most ANSWERS_IN_FLIGHT at once per session, at most
        ANSWERS_QUEUED waiting (one more is left unanswered, one ``passthrough`` record until the queue
        drains: the server's own request timeout ends its wait)."""
        box = up.inbox
        if len(box.answers) >= timing("ANSWERS_QUEUED"):
            if not box.full:
                box.full = True
                self.rw.record(box.exch, [Change(pointer="", action="passthrough", rule="MRTR-bridge-legacy-server", detail=(
                    f"{method} id={answer.get('id')!r} on the upstream GET stream: {len(box.answers)} answers to the server "
                    "already wait to be sent; left unanswered (and every one more until they are sent)"))],
                    "s2c", up.session.server_rev, LATEST)
            return
        box.answers.append((answer, method))
        if box.senders >= timing("ANSWERS_IN_FLIGHT"):
            return

        async def sender() -> None:
            try:
                while box.answers:
                    msg, what = box.answers.popleft()
                    if not box.answers:
                        box.full = False
                    try:
                        await upstream.send(json_body.dumps(msg), self._headers(up), f"answer to server request id={msg.get('id')!r} "
                                            f"({what}) on the upstream GET stream", timeout=60, detached=True)
                    except Exception as e:
                        logger.info(f"mcpx: answer to server request {msg.get('id')!r} on the upstream GET stream: {e}")
            finally:
                box.senders -= 1
        box.senders += 1  # (counted as it is made: the flood's next message must not make one more)
        task = asyncio.get_running_loop().create_task(sender())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _pend(self, up, upstream: Upstream, m: dict) -> None:
        """``m`` waits for the client's next call; answered -32603 after PENDING_TTL s if none carries it."""
        box = up.inbox
        if len(box.pending) >= timing("PENDING_MAX"):
            self._refuse_pending(up, upstream, m, f"{len(box.pending)} server requests sent outside any call already wait for "
                         f"the 2026-07-28 client: {m.get('method')} refused")
            return
        entry = (m, time.monotonic())
        box.pending.append(entry)
        ttl = timing("PENDING_TTL")

        async def expire() -> None:
            await asyncio.sleep(ttl)
            if entry not in box.pending:
                return
            box.pending.remove(entry)
            detail = (f"{m.get('method')} id={m.get('id')!r} (sent outside any call) waited {ttl:g} s for a call of the 2026-07-28 "
                      "client to carry it as input_required, and none came: -32603 on the client's behalf")
            logger.warning(f"mcpx: client2026: {detail}")
            self.rw.record(box.exch, [Change(pointer="", action="passthrough", rule="MRTR-bridge-legacy-server", detail=detail)],
                           "s2c", up.session.server_rev, LATEST)
            self._post_answer(up, upstream, {"jsonrpc": "2.0", "id": m.get("id"), "error": {"code": -32603, "message": (
                f"mcpx: no request of the 2026-07-28 client came within {ttl:g} s to carry {m.get('method')} (a 2026-07-28 "
                "client takes server requests only as input_required of its calls)")}}, m.get("method"))
        task = asyncio.get_running_loop().create_task(expire())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _refuse_pending(self, up, upstream: Upstream, m: dict, why: str) -> None:
        """``m`` cannot wait (PENDING_MAX already wait): -32603 ``mcpx: why`` at once, a ``passthrough``
        record (no line each: a flood would flood the terminal too)."""
        self.rw.record(up.inbox.exch, [Change(pointer="", action="passthrough", rule="MRTR-bridge-legacy-server",
                                              detail=f"{m.get('method')} id={m.get('id')!r} on the upstream GET stream: {why}")],
                       "s2c", up.session.server_rev, LATEST)
        self._post_answer(up, upstream, {"jsonrpc": "2.0", "id": m.get("id"), "error": {"code": -32603, "message": f"mcpx: {why}"}},
                          m.get("method"))

    def _carry(self, exch, msg: dict, up) -> Answer | None:
        """The client's call ``msg`` carries the server requests waiting for it: answered
        ``input_required`` at once (nothing sent upstream yet); its retry answers them, then sends the
        call (the round trip's ``REPLAY`` state, :mod:`.lifecycle`). None when nothing waits."""
        box = up.inbox
        if not box.pending:
            return None
        from .held import Held  # (held.py imports this module's part of the bridge)
        waiting, box.pending = box.pending, []
        held = Held(handle=STATE_PREFIX + os.urandom(12).hex(), upstream=up, method=msg.get("method"),
                    record=lambda detail: self.rw.passthrough(exch, "s2c", detail))
        held.stream.fire(SE.END)  # (nothing is sent upstream before the retry: no stream)
        asks: dict[str, dict] = {}
        for m, _ in waiting:
            key = f"mcpx:{m.get('id')}"
            while key in held.waiting:
                key += "'"
            held.waiting[key] = (m.get("id"), m.get("method"))
            asks[key] = self._embedded(exch, m, up.session.server_rev)
        self.rw.record(exch, [Change(pointer="/result", action="bridge", rule="MRTR-bridge-legacy-server",
                                     before=", ".join(f"{k}: {v['method']}" for k, v in asks.items()), after="input_required",
                                     detail="server requests sent outside any call (the upstream GET stream) become this call's "
                                     "InputRequiredResult; the call is sent upstream on the retry, after their answers")],
                       "s2c", up.session.server_rev, LATEST)
        return self._input_required(exch, msg.get("id"), held, asks, [], TE.ASK_REPLAY)
