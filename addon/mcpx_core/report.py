"""Per-session reports of what mcpx changed for whom (the ``mcpx.report`` command).

Shape of the JSON: ``{"sessions": [Session.summary(), ...], "totals": {"sessions": N, "messages": N,
"changes": N, "dropped": N}}``; the text table has one row per (session, rule, action).
"""

from __future__ import annotations

from .session import Session, SessionStore


def _who(info: dict | None) -> str:
    info = info if isinstance(info, dict) else {}
    return f"{info.get('name', '?')} {info.get('version', '')}".strip()


def session_line(s: Session) -> str:
    """One line per session (the ``mcpx.sessions`` command)::

        sess-1: client example-client 1.0.0 receives 2025-03-26 (pinned), server example-server 2.0.0 speaks 2025-06-18: 6 messages, 2 changes, 1 dropped
    """
    d = s.summary()
    pinned = " (pinned)" if d["pinned"] else ""
    return (f"{d['session']}: client {_who(d['client'])} receives {d['pinned'] or d['client_revision'] or '?'}{pinned}, "
            f"server {_who(d['server'])} speaks {d['server_revision'] or '?'}: "
            f"{d['messages']} messages, {d['changes']} changes, {d['dropped']} dropped")


def sessions_text(store: SessionStore) -> str:
    """Every session the store remembers, least recently used first, or ``no MCP sessions yet``."""
    return "\n".join(session_line(s) for s in store) or "no MCP sessions yet"


def session_report(store: SessionStore) -> tuple[dict, str]:
    sessions = [s.summary() for s in store]
    totals = {k: sum(s[k] for s in sessions) for k in ("messages", "changes", "dropped")}
    totals["sessions"] = len(sessions)
    rows = [("session", "client", "revisions", "rule", "action", "count")]
    for s in sessions:
        client = _who(s["client"])
        revs = f"{s['server_revision']}->{s['pinned'] or s['client_revision']}"
        for r in s["by_rule"] or [{"rule": "-", "action": "-", "count": 0}]:
            rows.append((str(s["session"])[:36], client, revs, r["rule"], r["action"], str(r["count"])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    table = "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
    return {"sessions": sessions, "totals": totals}, table
