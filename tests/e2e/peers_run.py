"""Run real SDK clients against real servers, directly and through mitmdump + mcpx, and collect
per-op results, change records and the messages mcpx delivered (from the -w flow file)."""
from __future__ import annotations

import pathlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from mcpx_core.framing.sse import SSEParser
from peers_lib import run_client, scenario_ops
from proxy_lib import Proxy


@dataclass
class Run:
    client: str
    server: str
    ops: list[dict]
    direct: dict
    via: dict
    changes: list[dict]
    #: op id -> [(pointer, action, rule)] of the change records of the flows that carried that op
    records: dict[str, list[tuple]] = field(default_factory=dict)
    #: (revision, message, method-it-answers, direction) for every message mcpx delivered
    delivered: list[tuple] = field(default_factory=list)
    output: str = ""

    def result(self, side: str, op_id: str) -> dict:
        results = (self.direct if side == "direct" else self.via)["results"]
        return next(r for r, op in zip(results, self.ops) if op.get("id") == op_id)


def _messages(body: bytes, ctype: str) -> list[Any]:
    if not body:
        return []
    if ctype.startswith("text/event-stream"):
        p = SSEParser()
        evs = p.feed(body) + p.close()[0]
        out = []
        for e in evs:
            if e.data and e.data.strip():
                v = orjson.loads(e.data)
                out.extend(v if isinstance(v, list) else [v])
        return out
    try:
        v = orjson.loads(body)
    except orjson.JSONDecodeError:
        return []
    return v if isinstance(v, list) else [v]


def _op_key(req: dict) -> tuple:
    params = req.get("params") or {}
    return (req.get("method"), params.get("name") or params.get("uri"), orjson.dumps(params.get("arguments"), option=orjson.OPT_SORT_KEYS))


def op_key(op: dict) -> tuple:
    method = {"listTools": "tools/list", "callTool": "tools/call", "listPrompts": "prompts/list", "getPrompt": "prompts/get",
              "listResources": "resources/list", "readResource": "resources/read", "listResourceTemplates": "resources/templates/list",
              "ping": "ping"}[op["op"]]
    args = op.get("arguments") if op["op"] in ("callTool", "getPrompt") else None
    return (method, op.get("name") or op.get("uri"), orjson.dumps(args, option=orjson.OPT_SORT_KEYS))


def run(client: str, server_name: str, server, workdir: pathlib.Path, ops: list[dict] | None = None,
        proxy=None, direct: dict | None = None) -> Run:
    """``proxy``: a factory ``proxy(upstream, workdir)`` of a context manager with ``url``, ``changes()``,
    ``flows()`` and ``output()`` (default: one mitmdump, :class:`proxy_lib.Proxy`); ``direct``: a
    direct run's report to reuse instead of running the client directly again."""
    ops = ops if ops is not None else scenario_ops(server_name, client)
    direct = direct if direct is not None else run_client(client, server.url, ops)
    with (proxy or Proxy)(f"http://127.0.0.1:{server.port}", workdir) as px:
        via = run_client(client, px.url, ops)
    r = Run(client, server_name, ops, direct, via, px.changes(), output=px.output())
    by_flow: dict[str, list[tuple]] = {}
    for c in r.changes:
        by_flow.setdefault(c["flow"], []).append((c["pointer"], c["action"], c["rule"]))
    keys = {op_key(op): op.get("id") for op in ops}
    pending: dict[Any, str] = {}
    for f in px.flows():
        meta = f.metadata.get("mcpx") or {}
        rev = meta.get("client_revision")
        req_msgs = _messages(f.request.get_content(strict=False) or b"", f.request.headers.get("content-type", "application/json"))
        for m in req_msgs:
            if isinstance(m, dict) and "method" in m and "id" in m:
                pending[m["id"]] = m["method"]
                op_id = keys.get(_op_key(m))
                if op_id is not None:
                    r.records.setdefault(op_id, []).extend(by_flow.get(f.id, []))
            if rev and isinstance(m, dict):
                r.delivered.append((meta.get("server_revision"), m, None, "c2s"))
        if f.response is not None and rev:
            for m in _messages(f.response.get_content(strict=False) or b"", f.response.headers.get("content-type", "")):
                if isinstance(m, dict):
                    r.delivered.append((rev, m, pending.get(m.get("id")) if "method" not in m else None, "s2c"))
    return r
