"""The 2026 envelope (upgrade direction): a legacy client's request as a 2026-07-28 server takes
it, walked toward 2026-07-28, with the per-request ``_meta`` (protocol version, capabilities,
clientInfo, log level) and the routing headers (``MCP-Protocol-Version``, ``Mcp-Method``,
``Mcp-Name``, ``Mcp-Param-*`` from each tool's ``x-mcp-header``)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ... import revisions
from ...changes import Change
from ...downgrade import Walk
from ...framing import json_body
from ...rules.headers import upgrade_headers, x_mcp_header_map
from .. import Answer
from .shared import CAPS, INFO, LATEST, LOG, MAX_SESSIONS, PAGINATED, PV, SessionState, _ptr


@dataclass
class Prepared:
    """A client request as mcpx sends it upstream: ``message`` (2026-07-28), ``headers`` and the records."""

    message: dict
    headers: dict[str, str]
    changes: list[Change]
    #: the tool's x-mcp-header map was known (or the request needs none)
    headers_known: bool = True


class _Refused(Exception):
    def __init__(self, answer: Answer):
        self.answer = answer



class Envelope:
    """The part of :class:`~.bridge.LegacyClientBridge` that upgrades a client request for the server."""

    def _caps(self, s, ss: SessionState | None) -> tuple[dict, list[Change]]:
        """The client's capabilities in 2026-07-28 shape (META-clientCapabilities upgrade direction:
        roots.listChanged and tasks dropped, schema/2026-07-28/schema.ts:712) and the records."""
        if ss is not None and ss.caps_2026 is not None:
            return ss.caps_2026
        caps = copy.deepcopy(s.client_caps) if isinstance(s.client_caps, dict) else {}
        walk = Walk(s.client_leg if revisions.is_known(s.client_leg) else revisions.LEGACY[-1], LATEST, "c2s", self.rw.policy, self.rw.options)
        caps = walk.named(caps, "ClientCapabilities", _ptr("params", "_meta", CAPS))
        out = (caps, walk.changes)
        if ss is not None:
            ss.caps_2026 = out
        return out

    def _upgrade(self, exch, s, ss: SessionState, m: dict, headers: dict[str, str]) -> Prepared:
        """The 2026-07-28 request for the client's request ``m`` (its id kept) and its headers."""
        client_rev = s.client_leg
        name = m.get("method")
        msg = copy.deepcopy(m)
        out = self.walk(msg, "request", name, client_rev, LATEST, "c2s")
        changes = list(out.changes)
        if out.message is None:
            reply = out.reply or {"code": -32601, "message": f"Method not found: {name}"}
            raise _Refused(self._local_error(exch, m, reply.get("code", -32601), reply.get("message", ""), "", changes))
        msg = out.message
        if not isinstance(msg.get("params"), dict):
            msg["params"] = {}
            rule = "PAGE-params-required" if name in PAGINATED else "META-protocolVersion"
            changes.append(Change(pointer="/params", action="synthesize", rule=rule,
                                  detail="params (with _meta) is required in 2026-07-28"))
        params = msg["params"]
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else None
        if meta is None:
            meta = params["_meta"] = {}
        meta[PV] = LATEST
        changes.append(Change(pointer=_ptr("params", "_meta", PV), action="synthesize", rule="META-protocolVersion", after=f'"{LATEST}"'))
        caps, cap_changes = self._caps(s, ss)
        meta[CAPS] = copy.deepcopy(caps)
        changes.append(Change(pointer=_ptr("params", "_meta", CAPS), action="synthesize", rule="META-clientCapabilities",
                              after=json_body.dumps(caps).decode()[:80], detail="the capabilities of the client's initialize"))
        changes.extend(cap_changes)
        if isinstance(s.client_info, dict) and s.client_info.get("name"):
            meta[INFO] = {"name": s.client_info.get("name"), "version": s.client_info.get("version") or ""}
            changes.append(Change(pointer=_ptr("params", "_meta", INFO), action="synthesize", rule="META-clientInfo",
                                  detail="the clientInfo of the client's initialize"))
        if ss.log_level:
            meta[LOG] = ss.log_level
            changes.append(Change(pointer=_ptr("params", "_meta", LOG), action="synthesize", rule="META-logLevel",
                                  after=f'"{ss.log_level}"', detail="the level of the client's last logging/setLevel"))
        param_map = None
        if name == "tools/call" and isinstance(params.get("name"), str):
            param_map = self.tools_of(exch).get(params["name"])
        hdrs, hchanges = self._headers(headers, name, params, param_map)
        return Prepared(msg, hdrs, changes + hchanges, param_map is not None or name != "tools/call")

    def _headers(self, client_headers: dict[str, str], name: str, params: dict, param_map) -> tuple[dict[str, str], list[Change]]:
        lower = {k.lower(): k for k in client_headers}
        hdrs = {"mcp-protocol-version": LATEST}
        changes = []
        if "mcp-protocol-version" in lower:
            before = client_headers[lower["mcp-protocol-version"]]
            changes.append(Change(pointer="header:MCP-Protocol-Version", action="rewrite", rule="TR-protocol-version-header",
                                  before=before, after=LATEST))
        else:
            changes.append(Change(pointer="header:MCP-Protocol-Version", action="synthesize", rule="TR-protocol-version-header",
                                  after=LATEST))
        route, rchanges = upgrade_headers(name, params, param_map)
        hdrs.update({k.lower(): v for k, v in route.items()})
        changes += rchanges
        if "mcp-session-id" in lower:
            changes.append(Change(pointer="header:Mcp-Session-Id", action="drop", rule="TR-session-id",
                                  detail="a 2026-07-28 server keeps no session"))
        if "last-event-id" in lower:
            changes.append(Change(pointer="header:Last-Event-ID", action="drop", rule="TR-sse-resumability"))
        return hdrs, changes

    def tools_of(self, exch: Any) -> dict[str, dict | None]:
        """The ``x-mcp-header`` maps learnt for ``exch``'s URL and credentials (:attr:`Exchange.client_scope`)."""
        return self.tools.get(exch.client_scope) or {}

    def learn_tools(self, exch: Any, result: Any) -> None:
        """Keep each listed tool's ``x-mcp-header`` map (TR-mcp-param-headers), for the origin and
        the credentials of ``exch``, the exchange whose tools/list answered: what one user's list
        taught is never used for another's calls."""
        where = exch.client_scope
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return
        known = self.tools.setdefault(where, {})
        while len(self.tools) > MAX_SESSIONS:  # one map per origin and credentials, oldest forgotten first
            self.tools.pop(next(iter(self.tools)))
        for t in tools:
            if isinstance(t, dict) and isinstance(t.get("name"), str):
                known[t["name"]] = x_mcp_header_map(t.get("inputSchema")) or None
        if len(known) > 10000:
            known.clear()

