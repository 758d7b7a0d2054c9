"""The main job on a real example: an older MCP client fails against a modern server directly
and succeeds through mcpx, with every change logged.

Starts the npm everything server (2026.8.31) on 127.0.0.1, mitmdump -s addon/mcpx.py in front of it,
and runs the released @modelcontextprotocol/sdk 1.10.2 client (2024-11-05) and PyPI mcp 1.8.1 against both.
"""
from __future__ import annotations

import json
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "addon")]

import peers_lib  # noqa: E402
from proxy_lib import Proxy  # noqa: E402

OPS = [{"id": "get-resource-links", "op": "callTool", "name": "get-resource-links", "arguments": {"count": 2}},
       {"id": "get-structured-content", "op": "callTool", "name": "get-structured-content", "arguments": {"location": "Chicago"}}]


def verdict(res: dict) -> str:
    if res.get("ok"):
        return "ok: " + json.dumps(res["result"]["content"])[:160]
    return "FAILED: " + " ".join(str(res.get("error")).split())[:160]


def main() -> int:
    work = pathlib.Path(tempfile.mkdtemp(prefix="mcpx-demo-"))
    with peers_lib.start_everything_server() as srv:
        print(f"server: npm @modelcontextprotocol/server-everything at {srv.url}")
        with Proxy(f"http://127.0.0.1:{srv.port}", work) as px:
            print(f"mcpx:   mitmdump -s addon/mcpx.py --mode reverse:http://127.0.0.1:{srv.port} at {px.url}\n")
            ok = True
            for client in ("sdk-1.10.2", "mcp-1.8.1"):
                direct = peers_lib.run_client(client, srv.url, OPS)
                via = peers_lib.run_client(client, px.url, OPS)
                print(f"client {client} (negotiates {via.get('protocolVersion')}):")
                for op, d, v in zip(OPS, direct["results"], via["results"]):
                    print(f"  {op['name']}\n    direct:     {verdict(d)}\n    via mcpx:   {verdict(v)}")
                    ok = ok and v.get("ok", False)
                print()
        records = px.changes()
    print(f"change log ({px.log_path}, {len(records)} records); the tools/call ones:")
    for c in records:
        if c["method"] == "tools/call":
            print(f"  {c['to_rev']} id={c['jsonrpc_id']} {c['action']:<8} {c['pointer']:<32} [{c['rule']}] {c['before'] or ''}"[:200])
    print("\n" + ("OK: the calls that fail directly pass through mcpx." if ok else "FAILED: a call failed through mcpx."))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
