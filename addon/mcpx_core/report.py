"""Per-session reports of what mcpx changed for whom (the ``mcpx.report`` command).

Shape of the JSON: ``{"sessions": [Session.summary(), ...], "totals": {"sessions": N, "messages": N,
"changes": N, "dropped": N}}``; the text table has one row per (session, rule, action).
"""

from __future__ import annotations

from .session import SessionStore


def session_report(store: SessionStore) -> tuple[dict, str]:
    sessions = [s.summary() for s in store]
    totals = {k: sum(s[k] for s in sessions) for k in ("messages", "changes", "dropped")}
    totals["sessions"] = len(sessions)
    rows = [("session", "client", "revisions", "rule", "action", "count")]
    for s in sessions:
        client = f"{(s['client'] or {}).get('name', '?')} {(s['client'] or {}).get('version', '')}".strip()
        revs = f"{s['server_revision']}->{s['client_revision']}"
        for r in s["by_rule"] or [{"rule": "-", "action": "-", "count": 0}]:
            rows.append((str(s["session"])[:36], client, revs, r["rule"], r["action"], str(r["count"])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    table = "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
    return {"sessions": sessions, "totals": totals}, table
