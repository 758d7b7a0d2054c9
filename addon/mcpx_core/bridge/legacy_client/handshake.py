"""The handshake (LC-initialize, LC-instructions, TR-session-id): a legacy client's ``initialize``
answered from the server's ``server/discover``, and the session sealed for this bridge."""

from __future__ import annotations

import copy
import time
from typing import Any

from ... import revisions, upstream as upstream_mod
from ...changes import Change
from ...framing import json_body
from .. import Answer, era
from .shared import JSON_HEADERS, LATEST, MAX_SESSIONS, NAME, NOTE, SERVER_INFO, logger


class Handshake:
    """The part of :class:`~.bridge.LegacyClientBridge` that answers ``initialize``."""

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

