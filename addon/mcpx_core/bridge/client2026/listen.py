"""Listen: a 2026-07-28 ``subscriptions/listen`` served from the legacy server's GET stream."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from ...changes import Change
from ...downgrade import classify
from ...framing import json_body
from ...framing.sse import SSEParser, json_values
from .. import Streamed, Upstream
from .shared import LATEST, _mint, logger
from .sessions import Upstream2026Session
from .get_stream import Subscriber


class Listening:
    """The part of :class:`~.bridge.Client2026Bridge` that serves subscriptions/listen."""

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
        box = up.inbox
        sub: list[Subscriber] = []

        async def ended() -> None:  # the client closed its listen stream: off the GET stream (it stays the session's), unsubscribe
            up.listening -= 1
            up.used = time.monotonic()
            if sub and sub[0] in box.listeners:
                box.listeners.remove(sub[0])
            for uri in honoured.get("resourceSubscriptions") or ():
                unsub = {"jsonrpc": "2.0", "id": _mint(), "method": "resources/unsubscribe", "params": {"uri": uri}}
                try:
                    await upstream.send(json_body.dumps(unsub), self._headers(up), f"resources/unsubscribe {uri}, the listen ended", timeout=30)
                except Exception as e:  # the session may be gone: nothing to undo then
                    logger.info(f"mcpx: resources/unsubscribe {uri} after a listen: {e}")

        stream = await self.answers.open(on_close=ended)
        # the session's GET stream (get_stream.py) answers the server's requests; the listen delivers what it asked for
        transform = ListenStream(listen, lambda changes: self.rw.record(exch, changes, "s2c", s.server_rev, LATEST), lambda m: None)
        for chunk in transform(None):
            stream.put(chunk)  # the acknowledgement, before anything comes from upstream

        def on_chunk(chunk: bytes) -> None:
            for out in transform(chunk):
                stream.put(out)
            if chunk == b"":
                stream.close()

        def on_broken(why: str) -> None:
            # the GET's connection broke off before its end (the server died, a reset), or the GET was refused or
            # failed: the listen ends as when the server ends the GET (what was parsed so far delivered, then the
            # client's stream closed), and a record says why; never after the client closed its listen
            if not stream.closed:
                self.rw.passthrough(exch, "s2c", f"{why}: the listen ends")
            on_chunk(b"")

        sub.append(Subscriber(on_chunk, on_broken))
        box.listeners.append(sub[0])
        self._open_get(up, upstream)
        return Streamed(stream)


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
