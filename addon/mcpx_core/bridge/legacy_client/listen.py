"""Listen: a legacy client's GET stream, served from upstream ``subscriptions/listen`` requests
(TR-get-stream, SUB-*)."""

from __future__ import annotations

import asyncio
import copy
from typing import TYPE_CHECKING, Any

import orjson

from ... import upstream as upstream_mod
from ...changes import Change
from ...downgrade import classify
from ...framing import json_body
from ...framing.sse import SSEParser
from .. import Answer, Streamed, era
from .shared import CAPS, INFO, LATEST, NOTE, PV, SessionState, logger, sse_event

if TYPE_CHECKING:
    from .bridge import LegacyClientBridge


class Listening:
    """The part of :class:`~.bridge.LegacyClientBridge` that serves the GET stream."""

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
