"""The upstream sessions: one legacy session per 2026-07-28 client identity, opened, reused and ended when idle."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from ... import revisions
from ...changes import Change
from ...downgrade import downgrade
from ...framing import json_body
from ...session import Session
from .. import Answer, Upstream
from ..era import first_response
from .shared import NAME, LATEST, NEWEST_LEGACY, _mint, Refused, logger
from .get_stream import Inbox, wants_get


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
    #: its GET stream and the server requests that wait for the client's next call (get_stream.py)
    inbox: Inbox = field(default_factory=Inbox)



class UpstreamSessions:
    """The part of :class:`~.bridge.Client2026Bridge` that keeps its upstream sessions."""

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
        up.inbox.exch = exch
        if wants_get(caps):  # a server request outside any call can reach this client: read the GET stream from now on
            self._open_get(up, upstream)
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

    def forget_session(self, session: Session) -> None:
        """Drop the upstream session whose :class:`Session` is ``session`` (the server answered 404
        for it): the next request of that client makes a new one."""
        for k in [k for k, up in self.sessions.items() if up.session is session]:
            self._close_get(self.sessions.pop(k))

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
        self._close_get(up)
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


