"""Direct (no proxy) baseline: every client x both servers x scenarios.json ops.

    /work/main/.venv/bin/python tests/peers/baseline.py [--runs N] [--json out.json]

Prints a Markdown matrix (cell: ok | isError | FAIL) and the distinct errors.
Used to write tests/peers/BASELINE.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from peers_lib import load_scenarios, run_client, scenario_ops, start_everything_server, start_py_server  # noqa: E402

CLIENTS = ["sdk-1.10.2", "sdk-1.12.3", "sdk-1.13.0", "sdk-1.25.0", "client-2.4.0",
           "mcp-1.8.1", "mcp-1.9.4", "mcp-1.12.4", "mcp-2.3.0"]


def label(op: dict) -> str:
    return op.get("id") or op.get("name") or op.get("uri") or op["op"]


def _zod_issues(issues: list) -> list[str]:
    out = []
    for i in issues:
        if i.get("code") == "invalid_union" and i.get("unionErrors"):
            for u in i["unionErrors"]:
                out += _zod_issues(u.get("issues", []))
        else:
            out.append(".".join(str(x) for x in i.get("path", [])) + ": " + i.get("message", ""))
    return out


def summarize(msg: str) -> str:
    """One line out of a zod (JSON issue list) or pydantic error message."""
    msg = msg or ""
    at = msg.find("[")
    if at != -1 and msg.rstrip().endswith("]"):
        try:
            issues = json.loads(msg[at:])
            uniq = list(dict.fromkeys(_zod_issues(issues)))
            return (msg[:at] + f"zod: {len(uniq)} issue(s), e.g. " + "; ".join(uniq[:2]))[:220]
        except ValueError:
            pass
    lines = [ln.strip() for ln in msg.splitlines() if ln.strip()]
    if len(lines) >= 3 and "validation error" in lines[0]:
        return f"{lines[0]} (e.g. {lines[1]}: {lines[2].split(' [type=')[0]})"[:220]
    return (lines[0] if lines else "")[:220]


def cell(res: dict) -> tuple[str, str]:
    if not res.get("ok"):
        return "FAIL", summarize(res.get("error") or "")
    result = res.get("result") or {}
    if isinstance(result, dict) and result.get("isError"):
        texts = [c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)]
        return "isError", summarize(" ".join(texts))
    return "ok", ""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()
    sc = load_scenarios()
    data: dict = {}
    for server_name, start in (("everything", start_everything_server), ("py", start_py_server)):
        with start() as srv:
            for client in CLIENTS:
                ops = scenario_ops(server_name, client)
                for run in range(args.runs):
                    t = time.monotonic()
                    out = run_client(client, srv.url, ops)
                    dt = time.monotonic() - t
                    key = f"{server_name}|{client}"
                    entry = data.setdefault(key, {"protocolVersion": out.get("protocolVersion"), "cells": {},
                                                  "seconds": []})
                    entry["seconds"].append(round(dt, 2))
                    if out.get("error"):
                        entry["connectError"] = out["error"]
                    for op, res in zip(ops, out.get("results", [])):
                        st, msg = cell(res)
                        entry["cells"].setdefault(label(op), []).append([st, msg])
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1))
    for server_name in ("everything", "py"):
        ops = sc["servers"][server_name]["ops"]
        print(f"\n### {server_name}\n")
        print("| op | " + " | ".join(CLIENTS) + " |")
        print("|---|" + "---|" * len(CLIENTS))
        print("| revision | " + " | ".join(str(data[f"{server_name}|{c}"]["protocolVersion"]) for c in CLIENTS) + " |")
        for op in ops:
            row = []
            for c in CLIENTS:
                cells = data[f"{server_name}|{c}"]["cells"].get(label(op))
                if cells is None:
                    row.append("-")
                    continue
                states = sorted({s for s, _ in cells})
                row.append("/".join(states) + ("" if len(states) == 1 else f" ({len(cells)} runs)"))
            print(f"| {op['op']} {label(op) if 'name' in op or 'uri' in op else ''} | " + " | ".join(row) + " |")
        print("\nerrors:")
        seen = set()
        for c in CLIENTS:
            for lab, cells in data[f"{server_name}|{c}"]["cells"].items():
                for st, msg in cells:
                    if st != "ok" and (c, lab, msg) not in seen:
                        seen.add((c, lab, msg))
                        print(f"- {c} {lab}: {st}: {msg}")
        print("\nseconds per client run: " + ", ".join(
            f"{c}={data[f'{server_name}|{c}']['seconds']}" for c in CLIENTS))


if __name__ == "__main__":
    main()
