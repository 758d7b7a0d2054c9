"""Write the sections of docs/ that list shipped data, so they cannot drift from it.

    .venv/bin/python scripts/gen_docs.py          # rewrite the generated sections in place
    .venv/bin/python scripts/gen_docs.py --check  # exit 1 (and name the file) if one differs

A generated section lies between ``<!-- BEGIN gen_docs:NAME -->`` and ``<!-- END gen_docs:NAME -->``
in a docs page (HTML comments: GitHub does not show them). Today one section:
``revision-delta`` in docs/repairs-and-completeness.md, the rule tables of
``addon/mcpx_core/data/revision-delta.json`` (one table per category). tests/unit/test_docs.py fails
when a section differs from what this script writes."""
from __future__ import annotations

import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "addon" / "mcpx_core" / "data"


def cell(text: object) -> str:
    """One Markdown table cell: no line breaks, ``|`` escaped; outside code spans also ``*``, ``<``
    and a ``_`` that starts a word, so the data's text renders as it is written."""
    parts = re.split(r"(`[^`]*`)", " ".join(str(text).split()))
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 0:  # prose
            part = re.sub(r"(?<![A-Za-z0-9])_", r"\\_", re.sub(r"([\\*<])", r"\\\1", part))
        out.append(part.replace("|", "\\|"))
    return "".join(out)


def revision_delta() -> str:
    delta = json.loads((DATA / "revision-delta.json").read_text())
    records = delta["records"]
    revs = delta["revisions"]
    snap = delta["spec_snapshot"]
    out = [
        f"{len(records)} records, from the specification repository `{snap['repository']}` at commit "
        f"`{snap['commit'][:12]}` ({snap['commit_date']}), revisions {', '.join(revs)}. "
        "*defined*: the first revision that defines it (and the first that no longer does); "
        "*toward*: the receiving revisions for which the action applies (none: informational).",
        "",
        "The actions the records ask for (`rule` in the data):",
        "",
        "| action | meaning |",
        "|---|---|",
    ]
    out += [f"| `{name}` | {cell(text)} |" for name, text in delta["rules"].items()]
    for cat, title in delta["categories"].items():
        rows = [r for r in records if r["category"] == cat]
        if not rows:
            continue
        out += ["", f"### {title} ({cat})", "", "| id | where | defined | toward | action |", "|---|---|---|---|---|"]
        for r in rows:
            defined = r["introduced"] + (f", removed {r['removed']}" if r.get("removed") else "")
            toward = ", ".join(r.get("targets") or []) or "-"
            out.append(f"| `{r['id']}` | {cell(r['where'])} | {defined} | {toward} | `{r['rule']}` |")
    return "\n".join(out)


#: (docs page, section name) -> the function that writes it
SECTIONS = {("docs/repairs-and-completeness.md", "revision-delta"): revision_delta}


def render(text: str, name: str, body: str) -> str:
    pat = re.compile(rf"(<!-- BEGIN gen_docs:{re.escape(name)} -->\n)(?:.*?\n)?(<!-- END gen_docs:{re.escape(name)} -->)", re.S)
    if not pat.search(text):
        raise SystemExit(f"gen_docs: no section {name} in the page")
    return pat.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for (page, name), make in SECTIONS.items():
        path = ROOT / page
        text = path.read_text()
        new = render(text, name, make())
        if new != text:
            stale.append(f"{page} ({name})")
            if not check:
                path.write_text(new)
    if stale:
        print(("out of date: " if check else "rewrote: ") + ", ".join(stale))
        return 1 if check else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
