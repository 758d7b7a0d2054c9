"""``python -m mcpx log FILE.jsonl [--follow]``: the change log (``mcpx_log``) summarised by session,
method and rule, each rule with its one-line meaning.

A rule's meaning comes from the data the rules come from: a ``revision-delta.json`` record (where,
which revisions define it, and the first sentence of what the record does: its ``rewrite_to``, else the
file's own ``rules`` text of its action), else the
docstring's first line of mcpx's own rule (:data:`OWN`, the rules no revision-delta record names:
the pin, repairs, profiles, passthrough). ``--follow`` prints the summary again each time lines are
added to the file (as ``tail -f``), until interrupted.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections import Counter
from importlib import resources

from ..changes import WORDS
from ..rules import AS_BUILT
from ..terminal import printable

#: longest text of what a record's action does (the rest: "…")
MEANING_MAX = 140
#: mcpx's own rule ids (no revision-delta record): what each means
OWN = {
    "MCPX-pin": "the initialize result tells a pinned client an older revision (mcpx_pin, mcpx.pin)",
    "MCPX-profile": "a host profile applies to this client (mcpx_profiles, mcpx_profile)",
    "MCPX-profile-revision": "a host profile's client is told the revision the profile names",
    "MCPX-profile-content": "a host profile's content rule rewrote a content block",
    "MCPX-version-bridge": "the client asked for a revision the server does not speak; mcpx bridges the two",
    "MCPX-audit-dual": "the dual-result audit: one half of a tool result carries what the other lacks (nothing changed)",
    "MCPX-dual-text-visible": "a profile's host shows its model only the text of a dual tool result",
    "MCPX-dual-structured-visible": "a profile's host shows its model only the structuredContent of a dual tool result",
    "MCPX-body-limit": "a body larger than mcpx_max_body that mcpx would have to read whole: answered by mcpx",
    "MCPX-origin-check": "a foreign Origin refused, as the local server would (DNS rebinding)",
    "REPAIR-invalid": "the message fails its receiver's schema beyond repair; delivered as it was",
    "REPAIR-null-optional": "null for an optional member that does not allow null: the member removed (absent)",
    "REPAIR-empty-array-object": "[] where the schema wants an object: {}",
    "REPAIR-required-default": "a required member missing that the specification gives a default: the default added",
    "PASSTHROUGH-error": "mcpx could not handle the body: forwarded byte for byte",
    "SCHEMA-undefined": "a field no revision-delta record names, undefined in the receiver's schema: dropped",
}


@functools.cache
def _delta() -> dict:
    data = resources.files("mcpx_core").joinpath("data/revision-delta.json").read_bytes()
    return json.loads(data)


def meaning(rule: str) -> str:
    """One line: what ``rule`` stands for (see the module docstring). Where mcpx's rewrite is not the
    one the record's text describes (:data:`mcpx_core.rules.AS_BUILT`), what mcpx does."""
    delta = _delta()
    rec = next((r for r in delta["records"] if r["id"] == rule), None)
    if rec is None:
        return OWN.get(rule, "mcpx's own rule (see docs/troubleshooting.md, what each record means)")
    defined = f"since {rec['introduced']}" + (f", removed {rec['removed']}" if rec.get("removed") else "")
    how = " ".join(str(AS_BUILT.get(rule) or rec.get("rewrite_to") or delta["rules"].get(rec["rule"], rec["rule"])).split())
    how = how.split(". ")[0].rstrip(".")
    how = how if len(how) <= MEANING_MAX else how[:MEANING_MAX - 1] + "…"
    return f"{' '.join(str(rec['where']).split())} ({defined}): {how}"


def read(path: str, offset: int = 0) -> tuple[list[dict], int]:
    """The records of ``path`` from byte ``offset`` on (whole lines only), and the offset after them."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read()
    end = data.rfind(b"\n") + 1
    out = []
    for line in data[:end].splitlines():
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):  # (not JSON, or nested past Python's recursion limit: not a record)
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out, offset + end


def summary(records: list[dict]) -> list[str]:
    """Per session: per method the changes by action; then every rule seen, with its count and meaning."""
    by_session: dict[str, dict[str, Counter]] = {}
    revs: dict[str, Counter] = {}
    rules: Counter = Counter()
    for r in records:
        s = str(r.get("session") or "(no session)")
        method = str(r.get("method") or "(body)")
        by_session.setdefault(s, {}).setdefault(method, Counter())[(WORDS.get(str(r.get("action")), str(r.get("action"))), str(r.get("rule")))] += 1
        revs.setdefault(s, Counter())[f"{r.get('from_rev') or '?'}->{r.get('to_rev') or '?'}"] += 1
        rules[str(r.get("rule"))] += 1
    lines = [f"{len(records)} records, {len(by_session)} sessions"]
    for s, methods in by_session.items():
        lines += ["", f"session {printable(s, 80)} ({printable(', '.join(revs[s]), 200)}): "
                      f"{sum(sum(c.values()) for c in methods.values())} records"]
        for m, counts in methods.items():
            parts = ", ".join(f"{n} {printable(w, 40)} [{printable(rule, 60)}]" for (w, rule), n in counts.most_common())
            lines.append(f"  {printable(m, 80)}: {parts}")
    if rules:
        lines += ["", "rules:"]
        width = max(len(r) for r in rules)
        lines += [f"  {printable(r, 60).ljust(width)}  {n:>5}  {meaning(r)}" for r, n in rules.most_common()]
    return lines


def main(path: str, follow: bool) -> int:
    if not os.path.exists(path):
        print(f"mcpx log: no such file: {path}")
        return 2
    records, offset = read(path)
    print("\n".join(summary(records)), flush=True)
    while follow:
        try:
            time.sleep(1)
        except KeyboardInterrupt:
            return 0
        more, offset = read(path, offset)
        if more:
            records += more
            print("\n" + "\n".join(summary(records)), flush=True)
    return 0
