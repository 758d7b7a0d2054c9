"""The sessions of a set of flows, read from what mcpx stored on them (views stage).

``mcpx.sessions`` and ``mcpx.report`` read these where mitmproxy keeps a flow list (the console,
mitmweb): every flow's ``flow.metadata["mcpx"]`` (session, both legs' revisions and software, the
change records) and its bodies, so a file recorded through mcpx (``-w``) and read back with ``-r``
gives the same lines as the live flows did. A 2026-07-28 client belongs to no session (its requests
name their revision, schema/2026-07-28/schema.ts ``_meta``): its flows are one entry per client
(the clientInfo of its requests' ``_meta``), shown as ``(no session)``.

Line shape (as :func:`mcpx_core.report.session_line`)::

    00000000-…-0001: client mcpx-js-client 1.10.2 receives 2024-11-05, server mcp-servers/everything 2.0.0 speaks 2024-11-05: 40 messages, 63 changes, 46 dropped
    (no session): client mcpx-js-client 2.4.0 receives 2026-07-28, server mcpx-py-peer 1.0.0 speaks 2026-07-28: 40 messages, 0 changes, 0 dropped

``messages``: the JSON-RPC messages on the session's flows as their senders sent them, both ways.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mitmproxy import http

from . import calls as calls_mod
from .calls import Call, meta_of, sent_units, session_key
from .terminal import printable

SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"  # schema/2026-07-28/schema.ts (DiscoverResult _meta)
DROPS = frozenset({"drop", "drop-message"})


@dataclass
class FlowSession:
    key: str
    client_info: dict | None = None
    server_info: dict | None = None
    client_revision: str | None = None
    server_revision: str | None = None
    pinned: str | None = None
    profile: str | None = None
    messages: int = 0
    changes: int = 0
    dropped: int = 0
    by_rule: Counter = field(default_factory=Counter)
    closed: bool = False
    calls: list[Call] = field(default_factory=list)

    @property
    def sessionless(self) -> bool:
        return self.key.startswith("(")

    def summary(self) -> dict:
        """The session's entry of the ``mcpx.report`` JSON (the keys of ``Session.summary()``)."""
        out = {"session": "(no session)" if self.sessionless else self.key, "client_revision": self.client_revision,
               "server_revision": self.server_revision, "requested_revision": None, "pinned": self.pinned,
               "client": self.client_info, "server": self.server_info, "messages": self.messages,
               "changes": self.changes, "dropped": self.dropped,
               "by_rule": [{"rule": r, "action": a, "count": n} for (r, a), n in sorted(self.by_rule.items())]}
        if self.profile:
            out["profile"] = self.profile
        return out | {"closed": self.closed}


def _server_info_2026(units) -> dict | None:
    return calls_mod.info_2026(units, "result", SERVER_INFO_META)


def sessions(flows: list[http.HTTPFlow]) -> list[FlowSession]:
    """The MCP sessions of ``flows``, in the order their first flow was sent."""
    flows = sorted((f for f in flows if isinstance(f, http.HTTPFlow) and meta_of(f)),
                   key=lambda f: f.request.timestamp_start or 0)
    out: dict[str, FlowSession] = {}
    for f in flows:
        meta = meta_of(f)
        requests = sent_units(f, "request")
        key = session_key(f, requests)
        if not isinstance(key, str):
            continue
        s = out.get(key)
        if s is None:
            s = out[key] = FlowSession(key)
        responses = sent_units(f, "response")
        s.messages += len(requests) + len(responses)
        s.client_revision = meta.get("client_revision") or s.client_revision
        s.server_revision = meta.get("server_revision") or s.server_revision
        s.client_info = meta.get("client_info") or s.client_info or (calls_mod.client_info_2026(requests) if s.sessionless else None)
        s.server_info = meta.get("server_info") or s.server_info or (_server_info_2026(responses) if s.sessionless else None)
        s.profile = meta.get("profile") or s.profile
        for c in calls_mod.records_of(f):
            s.changes += 1
            s.dropped += c.get("action") in DROPS
            s.by_rule[(str(c.get("rule")), str(c.get("action")))] += 1
            if c.get("rule") == "MCPX-pin":
                s.pinned = s.client_revision
        if f.request.method == "DELETE" and f.response is not None and f.response.status_code < 300:
            s.closed = True
    for c in calls_mod.calls(flows):
        s = out.get(c.session) if isinstance(c.session, str) else None
        if s is not None:
            s.calls.append(c)
    return list(out.values())


def _who(info: Any) -> str:
    info = info if isinstance(info, dict) else {}
    return printable(f"{info.get('name', '?')} {info.get('version', '')}".strip(), 128)


def line(s: FlowSession) -> str:
    """One session's line of ``mcpx.sessions`` (see the module docstring)."""
    label = "(no session)" if s.sessionless else printable(s.key, 128)
    profile = f" (profile {printable(s.profile, 80)})" if s.profile else ""
    pinned = " (pinned)" if s.pinned else ""
    return (f"{label}{' (closed)' if s.closed else ''}: client {_who(s.client_info)}{profile} receives "
            f"{printable(s.client_revision or '?', 40)}{pinned}, server {_who(s.server_info)} speaks "
            f"{printable(s.server_revision or '?', 40)}: "
            f"{s.messages} messages, {s.changes} changes, {s.dropped} dropped")


def lines(flows: list[http.HTTPFlow]) -> list[str]:
    """``mcpx.sessions`` on ``flows``: one line per session, or ``no MCP sessions yet``."""
    return [line(s) for s in sessions(flows)] or ["no MCP sessions yet"]
