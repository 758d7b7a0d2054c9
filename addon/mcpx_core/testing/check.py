"""``python -m mcpx check FILE.mitm [--client-revision REV ...] [--json]``: what each client revision
would lose of a recorded session, for any CI.

The file is replayed offline (:func:`mcpx_core.testing.run.replay_as`) as its recorded client
revision and as each revision asked (default: every revision older than the recorded client's that
its server can serve). Per method (``tools/call`` and ``prompts/get`` per name, ``resources/read``
per URI) it lists the changes by action and rule, the messages not delivered and the delivered
messages that are invalid for their receiver's revision; then the calls of the recorded replay with
their durations. Exit status 1 when a message would not be delivered or a delivered one is invalid.
"""

from __future__ import annotations

import os
from collections import Counter

from .. import revisions
from ..changes import WORDS
from ..terminal import printable
from .replay import Unreadable
from .run import RECORDED, CallResult, Replay, ReplayError, replay_as


def _group(call: str) -> str:
    """A call's method and name without its id: ``tools/call echo #2`` -> ``tools/call echo``."""
    head, sep, tail = call.rpartition(" #")
    return head if sep and " " not in tail else call


def by_method(calls: list[CallResult]) -> dict[str, dict]:
    """method/name -> {"calls", "changes": {"dropped": N, ...}, "rules": [...], "not_delivered", "invalid"}."""
    out: dict[str, dict] = {}
    for c in calls:
        g = out.setdefault(_group(c.call), {"calls": 0, "changes": Counter(), "rules": [], "not_delivered": 0, "invalid": 0})
        g["calls"] += 1
        for r in c.changes:
            g["changes"][WORDS.get(str(r.get("action")), str(r.get("action")))] += 1
            if r.get("rule") not in g["rules"]:
                g["rules"].append(r.get("rule"))
        g["not_delivered"] += len(c.not_delivered)
        g["invalid"] += len(c.invalid)
    return {k: {**v, "changes": dict(v["changes"])} for k, v in out.items()}


def default_revisions(client_rev: str | None, server_rev: str | None, pinnable: bool) -> list[str]:
    """The revisions older than the recorded client's (not newer than its server's), newest first."""
    if not pinnable or not client_rev:
        return []
    return [r for r in reversed(revisions.REVISIONS) if revisions.older(r, client_rev)
            and (server_rev is None or not revisions.older(server_rev, r)) and r != "2026-07-28"]


def run_check(path: str, asked: list[str] | None) -> tuple[list[Replay], dict]:
    """The replays of ``path`` (the recorded one first) and the facts of the recording."""
    from .replay import load
    from .run import client_names

    recorded = replay_as(path)
    replays = [recorded]
    client_rev, server_rev = _revisions(recorded)
    todo = asked if asked is not None else default_revisions(client_rev, server_rev, bool(client_names(load(path))))
    replays += [replay_as(path, rev) for rev in todo if rev != RECORDED]
    return replays, {"client_revision": client_rev, "server_revision": server_rev}


def _revisions(run: Replay) -> tuple[str | None, str | None]:
    client = next((d["revision"] for c in run.calls for d in c.delivered if d["to"] == "client" and d["revision"]), None)
    server = next((d["revision"] for c in run.calls for d in c.delivered if d["to"] == "server" and d["revision"]), None)
    return client, server


def report(path: str, replays: list[Replay], facts: dict) -> dict:
    """The JSON form (``--json``)."""
    out = {"file": path, "client_revision": facts["client_revision"], "server_revision": facts["server_revision"],
           "revisions": [], "ok": True}
    for r in replays:
        entry = {"revision": r.revision if r.revision != RECORDED else facts["client_revision"], "recorded": r.revision == RECORDED,
                 "by_method": by_method(r.calls), "not_delivered": r.not_delivered, "invalid": r.invalid,
                 "calls": [c.as_dict() | {"duration_ms": c.duration_ms} for c in r.calls]}
        out["revisions"].append(entry)
        out["ok"] = out["ok"] and not r.not_delivered and not r.invalid
    return out


def _words(changes: dict) -> str:
    return ", ".join(f"{n} {printable(w, 40)}" for w, n in changes.items()) or "no change"


def text(data: dict) -> list[str]:
    """The text form: per revision, per method what it loses; then the recorded replay's calls."""
    lines = [f"{printable(data['file'])}: client {printable(data['client_revision'] or '?', 40)}, "
             f"server {printable(data['server_revision'] or '?', 40)}"]
    for entry in data["revisions"]:
        label = printable(f"{entry['revision']} (recorded)" if entry["recorded"] else entry["revision"], 60)
        changed = sum(1 for g in entry["by_method"].values() if g["changes"])
        lines += ["", f"as {label}: {changed} of {len(entry['by_method'])} methods changed, "
                      f"{len(entry['not_delivered'])} not delivered, {len(entry['invalid'])} invalid"]
        width = max((len(k) for k in entry["by_method"]), default=0)
        for name, g in entry["by_method"].items():
            if not g["changes"] and not g["not_delivered"] and not g["invalid"]:
                continue
            rules = f" [{', '.join(printable(str(r), 60) for r in g['rules'])}]" if g["rules"] else ""
            lines.append(f"  {printable(name, 80).ljust(width)}  {_words(g['changes'])}{rules}")
        lines += [f"  not delivered: {printable(n)}" for n in entry["not_delivered"]]
        lines += [f"  invalid: {printable(n)}" for n in entry["invalid"]]
    recorded = data["revisions"][0]
    lines += ["", "calls (recorded):"]
    width = max((len(c["call"]) for c in recorded["calls"]), default=0)
    for c in recorded["calls"]:
        took = f"{c['duration_ms']} ms" if c["duration_ms"] is not None else "-"
        n = len(c["changes"])
        lines.append(f"  {printable(c['call'], 100).ljust(width)}  {took:>8}  {n} change{'' if n == 1 else 's'}")
    lines += ["", "ok" if data["ok"] else "FAILED: a message would not be delivered or is invalid for its revision"]
    return lines


def main(path: str, asked: list[str] | None, as_json: bool) -> int:
    import orjson

    if not os.path.exists(path):
        print(f"mcpx check: no such file: {path}")
        return 2
    try:
        replays, facts = run_check(path, asked)
    except (ReplayError, Unreadable) as e:  # (its text may name what the file holds)
        print(f"mcpx check: {printable(str(e))}")
        return 2
    data = report(path, replays, facts)
    if as_json:
        print(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    else:
        print("\n".join(text(data)))
    return 0 if data["ok"] else 1
