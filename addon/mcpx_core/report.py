"""Per-session reports of what mcpx changed for whom (the ``mcpx.report`` command).

Shape of the JSON: ``{"sessions": [Session.summary() + {"closed": bool}, ...], "totals": {"sessions": N, "messages": N,
"changes": N, "dropped": N}}``; the text table has one row per (session, rule, action).

A session with a host profile has ``"profile": NAME``; one whose tool results the dual-result audit
flagged has ``"audits": N`` and ``"findings"`` (the newest 100: ``{"id", "tool", "text_lacks": N,
"text_lacks_shown": [...], "structured_lacks": N, "structured_lacks_shown": [...], "profile"}``), the
totals then ``"audits"``, and the text adds a second table, one row per finding: what a host that
shows its model only the text misses (``text lacks``), and only structuredContent (``structured lacks``).
"""

from __future__ import annotations

from collections.abc import Iterable

from .session import Session
from .terminal import printable


def _who(info: dict | None) -> str:
    info = info if isinstance(info, dict) else {}
    return printable(f"{info.get('name', '?')} {info.get('version', '')}".strip(), 128)  # (the peer's words: escaped)


def session_line(s: Session, closed: bool = False, evidence=None) -> str:
    """One line per session (the ``mcpx.sessions`` command)::

        sess-1: client example-client 1.0.0 receives 2025-03-26 (pinned), server example-server 2.0.0 speaks 2025-06-18: 6 messages, 2 changes, 1 dropped
        sess-0 (closed): client ...
    """
    d = s.summary()
    pinned = " (pinned)" if d["pinned"] else ""
    why = evidence(d["profile"]) if evidence is not None and d.get("profile") else None
    profile = f" (profile {d['profile']}{f' on {why}' if why else ''})" if d.get("profile") else ""
    audits = f", {d['audits']} audit finding{'' if d['audits'] == 1 else 's'}" if d.get("audits") else ""
    return (f"{d['session']}{' (closed)' if closed else ''}: client {_who(d['client'])}{profile} receives "
            f"{d['pinned'] or d['client_revision'] or '?'}{pinned}, "
            f"server {_who(d['server'])} speaks {d['server_revision'] or '?'}: "
            f"{d['messages']} messages, {d['changes']} changes, {d['dropped']} dropped{audits}")


def _split(live: Iterable[Session], closed: Iterable[Session]) -> tuple[list[Session], list[Session]]:
    """Each session once (a store may reach one session under several keys), closed ones only as closed."""
    ended = list({id(s): s for s in closed}.values())
    gone = {id(s) for s in ended}
    return [s for s in {id(s): s for s in live}.values() if id(s) not in gone], ended


def sessions_text(live: Iterable[Session], closed: Iterable[Session] = (), evidence=None) -> str:
    """The live sessions (least recently used first), then the closed ones, or ``no MCP sessions yet``.
    ``evidence(profile name)``: what a session's profile applied on (:meth:`ProfileSet.evidence`)."""
    live, closed = _split(live, closed)
    lines = [printable(session_line(s, evidence=evidence)) for s in live] + [printable(session_line(s, True, evidence)) for s in closed]
    return "\n".join(lines) or "no MCP sessions yet"


def session_report(live: Iterable[Session], closed: Iterable[Session] = ()) -> tuple[dict, str]:
    """(JSON-able report, text table) of the live sessions, then the closed ones (``"closed": true``)."""
    live, closed = _split(live, closed)
    return _report([s.summary() | {"closed": False} for s in live] + [s.summary() | {"closed": True} for s in closed])


def flows_report(found: list) -> tuple[dict, str]:
    """(JSON-able report, text table) of the sessions of a flow list (:func:`mcpx_core.flowsessions.sessions`):
    as :func:`session_report`, each session with its ``"calls"`` (:meth:`mcpx_core.calls.Call.as_dict`) and
    the text with a second table, one row per call: its answer, the flows, its duration and changes."""
    data, table = _report([s.summary() for s in found])
    for entry, s in zip(data["sessions"], found):
        entry["calls"] = [c.as_dict() for c in s.calls]
    data["totals"]["calls"] = sum(len(s.calls) for s in found)
    rows = [("session", "call", "answer", "flows", "duration", "changes")]
    for entry, s in zip(data["sessions"], found):
        for c in s.calls:
            where = c.request_flow[:8] + ("" if c.answer_flow in (None, c.request_flow) else f" -> {c.answer_flow[:8]}")
            answer = (c.answer or "no answer") + "".join(f", {t.request} -> {t.answer or 'no answer'}" for t in c.round_trips)
            took = f"{c.duration_ms} ms" if c.duration_ms is not None else "-"
            rows.append((str(entry["session"])[:36], c.name, answer, where, took, str(c.changes)))
    if len(rows) > 1:
        table += "\n\ncalls:\n" + _table(rows)
    return data, table


def _report(sessions: list[dict]) -> tuple[dict, str]:
    totals = {k: sum(s[k] for s in sessions) for k in ("messages", "changes", "dropped")}
    totals["sessions"] = len(sessions)
    if any(s.get("audits") for s in sessions):
        totals["audits"] = sum(s.get("audits", 0) for s in sessions)
    rows = [("session", "client", "revisions", "rule", "action", "count")]
    for s in sessions:
        client = _who(s["client"])
        revs = f"{s['server_revision']}->{s['pinned'] or s['client_revision']}"
        for r in s["by_rule"] or [{"rule": "-", "action": "-", "count": 0}]:
            rows.append((str(s["session"])[:36] + (" (closed)" if s["closed"] else ""), client, revs, r["rule"], r["action"], str(r["count"])))
    table = _table(rows)
    found = [("session", "client", "profile", "id", "tool", "text lacks", "structured lacks")]
    for s in sessions:
        for f in s.get("findings", ()):
            found.append((str(s["session"])[:36], _who(s["client"]), f.get("profile") or "-", str(f.get("id")), f.get("tool") or "?",
                          _lacks(f["text_lacks"], f["text_lacks_shown"]), _lacks(f["structured_lacks"], f["structured_lacks_shown"])))
    if len(found) > 1:
        table += ("\n\ndual-result audit (a host that shows its model only the text misses what the text lacks; "
                  "only structuredContent, what it lacks):\n" + _table(found))
    return {"sessions": sessions, "totals": totals}, table


def _lacks(n: int, shown: list[str]) -> str:
    if not n:
        return "-"
    return f"{n}: " + ", ".join(shown) + (f", …+{n - len(shown)}" if n > len(shown) else "")


def _table(rows: list[tuple]) -> str:
    rows = [tuple(printable(c, 200) for c in r) for r in rows]  # cells hold the peers' words (tool names, ids)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
