"""Third-party clients (tp_client.py) x servers: direct, through mitmdump + mcpx, and pinned.

    .venv/bin/python tests/peers/tp_baseline.py [--runs N] [--json out.json] [--clients a,b]

Servers: the npm everything server, py_server.py (stateful, SSE) and py_server.py stateless with
JSON answers. For each pair it runs the scenario ops (scenario_ops(server, client)) directly N
times and once through mcpx (tests/proxy_lib.Proxy), and prints Markdown: the verdicts that are
not ok, the distinct errors, and what the flows show about each client's HTTP behaviour (GET
before initialize, client connections, MCP-Protocol-Version header). Then two pinned runs through
mcpx (--set mcpx_pin=mcp=2025-03-26) that check PEERS.md's claims.
Used to write the "Released third-party clients" section of BASELINE.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import peers_lib as pl  # noqa: E402
from baseline import summarize  # noqa: E402
from proxy_lib import Proxy  # noqa: E402

SERVERS = {
    "everything": ("everything", pl.start_everything_server),
    "py": ("py", pl.start_py_server),
    "py-stateless": ("py", lambda: pl.start_py_server(stateless=True, json_response=True)),
}


def cell(res: dict) -> tuple[str, str]:
    v = pl.verdict(res)
    if v == "FAIL":
        return v, f"{res.get('errorType')}: {summarize(res.get('error') or '')}"
    if v == "isError":
        texts = [c.get("text", "") for c in res["result"].get("content", []) if isinstance(c, dict)]
        return v, summarize(" ".join(texts))
    return v, ""


def http_facts(flows: list) -> dict:
    """What the client did on the wire, from mitmdump's flows."""
    conns, gets_before_init, init_seen, with_header, without_header, deletes = set(), 0, False, 0, 0, 0
    for f in flows:
        conns.add(f.client_conn.id)
        req = f.request
        if req.method == "GET" and not init_seen:
            gets_before_init += 1
        if req.method == "DELETE":
            deletes += 1
        if req.method != "POST":
            continue
        body = req.get_content(strict=False) or b""
        try:
            msg = json.loads(body)
        except ValueError:
            continue
        if isinstance(msg, dict) and msg.get("method") == "initialize":
            init_seen = True
            continue
        if "mcp-protocol-version" in req.headers:
            with_header += 1
        else:
            without_header += 1
    methods = sorted({f.request.method for f in flows})
    return {
        "connections": len(conns),
        "requests": len(flows),
        "methods": methods,
        "getsBeforeInitialize": gets_before_init,
        "postsWithProtocolHeader": with_header,
        "postsWithoutProtocolHeader": without_header,
        "deletes": deletes,
    }


def through(client: str, scenario: str, srv: pl.PeerServer, ops: list[dict], options: dict | None = None,
            client_options: dict | None = None) -> tuple[dict, dict, list]:
    with tempfile.TemporaryDirectory(prefix="mcpx-tp-") as tmp:
        with Proxy(f"http://127.0.0.1:{srv.port}", Path(tmp), options=options) as px:
            rep = pl.run_tp_client(client, px.url, ops, options=client_options)
        flows = px.flows()
        changes = [(c["pointer"], c["action"], c["rule"]) for c in px.changes()]
    return rep, http_facts(flows), changes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--clients", default=",".join(pl.TP_CLIENTS))
    args = ap.parse_args()
    clients = args.clients.split(",")
    data: dict = {}
    for server, (scenario, start) in SERVERS.items():
        with start() as srv:
            for client in clients:
                ops = pl.scenario_ops(scenario, client)
                d = data.setdefault(f"{server}|{client}", {"direct": [], "via": None})
                for _ in range(args.runs):
                    t = time.monotonic()
                    rep = pl.run_tp_client(client, srv.url, ops)
                    rep["seconds"] = round(time.monotonic() - t, 2)
                    d["direct"].append(rep)
                rep, facts, changes = through(client, scenario, srv, ops)
                d["via"], d["facts"], d["changes"] = rep, facts, changes
                print(f"# {server} {client}: done", file=sys.stderr)
    # langchain's README path: client.get_tools() opens a new MCP session for every tool call
    per_call = {}
    lc = "langchain-mcp-adapters-0.1.7"
    if lc in clients:
        for server, (scenario, start) in SERVERS.items():
            with start() as srv:
                ops = pl.scenario_ops(scenario, lc)
                direct = pl.run_tp_client(lc, srv.url, ops, options={"langchain": "per-call"})
                via, facts, _ = through(lc, scenario, srv, ops, client_options={"langchain": "per-call"})
                per_call[server] = {"direct": direct, "via": via, "facts": facts}
    pinned = {}
    with pl.start_py_server() as srv:
        for client, op_ids in (("fastmcp-2.10.6", ["weather", "progress", "listTools"]), ("pydantic-ai-slim-0.4.4", ["resource-link", "weather"])):
            ops = [op for op in pl.scenario_ops("py", client) if op["id"] in op_ids]
            rep, facts, changes = through(client, "py", srv, ops, {"mcpx_pin": "mcp=2025-03-26"})
            pinned[client] = {"report": rep, "changes": changes}
    if args.json:
        Path(args.json).write_text(json.dumps({"pairs": data, "pinned": pinned, "perCall": per_call}, indent=1))

    print("| server | client | revision | op | direct | through mcpx |\n|---|---|---|---|---|---|")
    errors: dict[str, set] = {}
    for key, d in data.items():
        server, client = key.split("|")
        runs = d["direct"]
        pv = {r.get("protocolVersion") for r in runs} | {d["via"].get("protocolVersion")}
        via = {r.get("id"): r for r in d["via"]["results"]}
        for i, res in enumerate(runs[0]["results"]):
            cells = {cell(r["results"][i]) for r in runs}
            dv = "/".join(sorted({c[0] for c in cells}))
            vv, ve = cell(via.get(res.get("id"), {}))
            if dv != "ok" or vv != "ok":
                print(f"| {server} | {client} | {'/'.join(sorted(map(str, pv)))} | {res.get('id')} | {dv} | {vv} |")
            for c in cells:
                if c[1]:
                    errors.setdefault(f"{client} direct {res.get('id')}", set()).add(c[1])
            if ve:
                errors.setdefault(f"{client} via mcpx {res.get('id')}", set()).add(ve)
    print("\n## errors")
    for k, v in errors.items():
        for e in sorted(v):
            print(f"- {k}: `{e}`")
    print("\n## HTTP behaviour (through mcpx)")
    print("| server | client | clientInfo | initializes | connections | requests | methods | GET before initialize | POSTs with / without MCP-Protocol-Version | DELETE |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key, d in data.items():
        server, client = key.split("|")
        f, v = d["facts"], d["via"]
        print(f"| {server} | {client} | {v.get('clientInfo')} | {v.get('initializeCount')} | {f['connections']} | {f['requests']} | {','.join(f['methods'])} | {f['getsBeforeInitialize']} | {f['postsWithProtocolHeader']} / {f['postsWithoutProtocolHeader']} | {f['deletes']} |")
    if per_call:
        print("\n## langchain per-call (client.get_tools(): one MCP session per tool call)")
        for server, p in per_call.items():
            bad = lambda rep: {r.get("id"): cell(r) for r in rep["results"] if pl.verdict(r) != "ok"}  # noqa: E731
            print(f"- {server}: initializes direct {p['direct'].get('initializeCount')}, via {p['via'].get('initializeCount')}; "
                  f"connections via {p['facts']['connections']}; not ok direct {bad(p['direct'])}; via mcpx {bad(p['via'])}")
    print("\n## pinned mcpx_pin=mcp=2025-03-26 (py server)")
    for client, p in pinned.items():
        rep = p["report"]
        print(f"- {client}: protocolVersion {rep.get('protocolVersion')}; " + "; ".join(f"{r.get('id')}: {cell(r)[0]} {cell(r)[1]}".strip() for r in rep["results"]))
        print(f"  changes: {sorted(set(p['changes']))}")
    print("\n## timing (direct, seconds per client run)")
    for key, d in data.items():
        secs = [r["seconds"] for r in d["direct"]]
        print(f"- {key}: {min(secs)}-{max(secs)}")


if __name__ == "__main__":
    main()
