"""The main job on a real example: an older MCP client fails against a modern server directly
and succeeds through mcpx, with every change logged.

Starts the npm everything server (2026.8.31) on 127.0.0.1, mitmdump -s addon/mcpx.py in front of it,
and runs the released @modelcontextprotocol/sdk 1.10.2 client (2024-11-05) and PyPI mcp 1.8.1 against both.
"""
from __future__ import annotations

import json
import os
import pathlib
import shlex
import sys
import tempfile
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "addon")]

import peers_lib  # noqa: E402
from proxy_lib import Proxy  # noqa: E402

OPS = [{"id": "get-resource-links", "op": "callTool", "name": "get-resource-links", "arguments": {"count": 2}},
       {"id": "get-structured-content", "op": "callTool", "name": "get-structured-content", "arguments": {"location": "Chicago"}}]


def shown(path: pathlib.Path | str) -> str:
    """A path as a command line should name it: relative to the working directory when it lies below
    it (``.venv/bin/mitmweb``, ``addon/mcpx.py`` from the checkout), else absolute; shell-quoted."""
    path, cwd = os.path.abspath(path), os.getcwd()
    return shlex.quote(os.path.relpath(path, cwd) if path.startswith(cwd + os.sep) else path)


def tool(name: str) -> str:
    """This venv's ``mitmdump``/``mitmweb`` as a runnable command (``.venv/bin/mitmweb``), never a bare name."""
    return shown(pathlib.Path(sys.executable).with_name(name))


def cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def verdict(res: dict) -> str:
    if res.get("ok"):
        return cut("ok: " + json.dumps(res["result"]["content"]), 160)
    return cut("FAILED: " + " ".join(str(res.get("error")).split()), 160)


def main() -> int:
    work = pathlib.Path(tempfile.mkdtemp(prefix="mcpx-demo-"))
    with peers_lib.start_everything_server() as srv:
        print(f"server: npm @modelcontextprotocol/server-everything at {srv.url}")
        with Proxy(f"http://127.0.0.1:{srv.port}", work) as px:
            addon = shown(ROOT / "addon" / "mcpx.py")
            print(f"mcpx:   {px.url}, started as {tool('mitmdump')} -s {addon} --mode reverse:http://127.0.0.1:{srv.port} "
                  f"--listen-host 127.0.0.1 -p {px.port} (with -w and --set options of the demo's own)\n")
            ok = True
            clients = ("sdk-1.10.2", "mcp-1.8.1")
            for client in clients:
                direct = peers_lib.run_client(client, srv.url, OPS)
                via = peers_lib.run_client(client, px.url, OPS)
                print(f"client {client} (negotiates {via.get('protocolVersion')}):")
                for op, d, v in zip(OPS, direct["results"], via["results"]):
                    print(f"  {op['name']}\n    direct:     {verdict(d)}\n    via mcpx:   {verdict(v)}")
                    ok = ok and v.get("ok", False)
                print()
        records = px.changes()
    # each client ran one session, one after the other: sessions in order of first record are the clients'
    sessions = list(dict.fromkeys(c["session"] for c in records))
    who = dict(zip(sessions, clients))
    calls = [c for c in records if c["method"] == "tools/call"]
    print(f"files in {work}: the change log {px.log_path.name}, the flows {px.flows_path.name}, mitmdump's output "
          f"{px.out_path.name}; to inspect the flows: {tool('mitmweb')} -r {shown(px.flows_path)} -s {shown(ROOT / 'addon' / 'mcpx.py')} --listen-host 127.0.0.1")
    per_method = Counter(c["method"] or "(no method)" for c in records)
    print(f"change log: {len(records)} records ({', '.join(f'{n} for {m}' for m, n in per_method.items())}); the tools/call ones:")
    print(f"  {'client':<11} {'receiver':<10} {'id':<5} {'action':<8} {'JSON Pointer':<32} [rule] value before")
    for c in calls:
        print(cut(f"  {who.get(c['session'], '?'):<11} {c['to_rev']:<10} {'id=' + str(c['jsonrpc_id']):<5} {c['action']:<8} "
                  f"{c['pointer']:<32} [{c['rule']}] {c['before'] or ''}", 200))
    print("\n" + ("OK: the calls that fail directly pass through mcpx." if ok else "FAILED: a call failed through mcpx."))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
