"""Legacy clients through mcpx in front of a 2026-07-28-only server (issue 13): the scenario each
client runs, and both legs of what happened, read back from mitmdump's -w file.

- client leg: the client's own flows (``flow.metadata["mcpx"]["session"]`` set): what it sent (the
  kept original request, else the request) and what it received (JSON body or SSE events);
- server leg: mcpx's own flows (``metadata["mcpx"]["origin"] == "mcpx"``): what the server received
  and answered.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

import peers_lib as pl
from mcpx_core.framing.sse import SSEParser
from proxy_lib import Proxy

#: the capability-free notification ops every client runs (SUB-*, TR-get-stream, TR-mcp-param-headers)
NOTIFY_OPS: list[dict[str, Any]] = [
    {"id": "subscribe", "op": "subscribeResource", "uri": "resource://greeting"},
    {"id": "add-dynamic-tool", "op": "callTool", "name": "add_dynamic_tool", "arguments": {"name": "dynamic_echo"}},
    {"id": "wait-tools-changed", "op": "waitNotification", "method": "notifications/tools/list_changed", "timeoutMs": 10000},
    {"id": "touch-resource", "op": "callTool", "name": "touch_resource", "arguments": {"uri": "resource://greeting"}},
    {"id": "wait-resource-updated", "op": "waitNotification", "method": "notifications/resources/updated", "timeoutMs": 10000},
    {"id": "unsubscribe", "op": "unsubscribeResource", "uri": "resource://greeting"},
    {"id": "region", "op": "callTool", "name": "region_echo", "arguments": {"region": "Zürich "}},
]
#: logging/setLevel (the TypeScript SDKs refuse it: the server declares no logging capability)
LOG_OPS: list[dict[str, Any]] = [
    {"id": "log-level", "op": "setLoggingLevel", "level": "info"},
    {"id": "log-note", "op": "callTool", "name": "log_note", "arguments": {"text": "hello"}},
    {"id": "wait-log", "op": "waitNotification", "method": "notifications/message", "timeoutMs": 10000},
]
#: the py scenario's ask_name calls ctx.elicit() itself: a 2026-07-28 request has no back-channel for
#: it, so the server refuses it for every client of that revision, a native 2026 one included
#: (tests/peers/BRIDGING.md 1, trace client-2.4.0-2026__py-2026.json #9): not part of the scenario
SERVER_LIMITS = {"ask-name"}
OPTIONS = {"roots": pl.TEST_ROOTS}


def scenario(client: str) -> list[dict[str, Any]]:
    """The full scenario of a legacy client against the 2026-only py server: the py scenario, every
    multi round-trip op, the notification ops (and logging for the Python SDK)."""
    ops = [op for op in pl.scenario_ops("py", client) if op["id"] not in SERVER_LIMITS]
    return ops + pl.MRTR_OPS + NOTIFY_OPS + (LOG_OPS if client.startswith("mcp-") else [])


def lacks(client: str) -> set[str]:
    """Capabilities the client's SDK cannot declare (scenarios.json): elicitation before 2025-06-18."""
    caps = pl.load_scenarios()["clients"][client]
    return {c for c in ("elicitation", "sampling") if not caps.get(c)}


#: op id -> the capabilities it needs (mrtr_all: all three; mrtr_two_rounds: elicitation, then sampling)
NEEDS = {"mrtr-elicit": {"elicitation"}, "mrtr-sample": {"sampling"}, "mrtr-roots": {"roots"},
         "mrtr-all": {"elicitation", "sampling", "roots"}, "mrtr-two-rounds": {"elicitation", "sampling"},
         "mrtr-prompt": {"elicitation"}, "mrtr-resource": {"roots"}}


def sse_messages(body: bytes) -> list[dict]:
    p = SSEParser()
    out = []
    for ev in p.feed(body) + p.close()[0]:
        if ev.payload is not None and not ev.blank():
            v = orjson.loads(ev.payload)
            out.extend(v if isinstance(v, list) else [v])
    return out


def body_messages(body: bytes, ctype: str) -> list[dict]:
    if not body:
        return []
    if ctype.split(";")[0].strip().lower() == "text/event-stream":
        return sse_messages(body)
    v = orjson.loads(body)
    return v if isinstance(v, list) else [v]


@dataclass
class Leg:
    """One HTTP exchange of a leg: the request message(s) and the answer's message(s)."""

    flow: Any
    sent: list[dict]
    received: list[dict]
    status: int | None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def purpose(self) -> str:
        return (self.flow.metadata.get("mcpx") or {}).get("purpose", "")


@dataclass
class BridgeRun:
    client: str
    report: dict
    seconds: float
    changes: list[dict]
    client_leg: list[Leg]
    server_leg: list[Leg]
    output: str

    def result(self, op_id: str) -> dict:
        return next(e for e in self.report["results"] if e.get("id") == op_id)

    def client_flow(self, method: str, name: str | None = None) -> Leg:
        """The client flow that carried ``method`` (with params.name/uri ``name``)."""
        for leg in self.client_leg:
            for m in leg.sent:
                p = m.get("params") or {}
                if m.get("method") == method and (name is None or name in (p.get("name"), p.get("uri"))):
                    return leg
        raise KeyError((method, name))

    def records(self, leg: Leg) -> list[tuple[str, str, str]]:
        return [(c["pointer"], c["action"], c["rule"]) for c in self.changes if c["flow"] == leg.flow.id]

    def for_flow(self, leg: Leg) -> list[Leg]:
        """The server-leg exchanges mcpx made for one client flow, in order."""
        return [s for s in self.server_leg if (s.flow.metadata.get("mcpx") or {}).get("for_flow") == leg.flow.id]


def run_bridged(client: str, server, workdir, ops: list[dict] | None = None, options: dict | None = None,
                proxy_options: dict | None = None, proxy=None, timeout: float = 180) -> BridgeRun:
    """``client`` runs ``ops`` (default :func:`scenario`) through mcpx in front of ``server``."""
    ops = ops if ops is not None else scenario(client)
    factory = proxy or (lambda up, wd: Proxy(up, wd, options=proxy_options))
    with factory(f"http://127.0.0.1:{server.port}", workdir) as px:
        t = time.monotonic()
        report = pl.run_client(client, px.url, ops, options={**OPTIONS, **(options or {})}, timeout=timeout)
        seconds = time.monotonic() - t
    flows = px.flows()
    client_leg, server_leg = [], []
    for f in sorted(flows, key=lambda f: f.request.timestamp_start):
        meta = f.metadata.get("mcpx") or {}
        own = meta.get("origin") == "mcpx"
        orig = meta.get("original_request")
        raw = orig.encode() if (isinstance(orig, str) and not own) else (f.request.get_content(strict=False) or b"")
        try:
            sent = body_messages(raw, f.request.headers.get("content-type", "application/json"))
        except orjson.JSONDecodeError:
            sent = []
        received: list[dict] = []
        if f.response is not None:
            try:
                received = body_messages(f.response.get_content(strict=False) or b"", f.response.headers.get("content-type", ""))
            except orjson.JSONDecodeError:
                received = []
        leg = Leg(f, sent, received, f.response.status_code if f.response else None,
                  {k.lower(): v for k, v in f.request.headers.items()})
        (server_leg if own else client_leg).append(leg)
    return BridgeRun(client, report, seconds, px.changes(), client_leg, server_leg, px.output())


_MCPX_ID = re.compile(r"^mcpx-[0-9a-f]{6}-([a-z-]*?)\d+$")


def norm_id(value: Any) -> Any:
    """mcpx's own ids (``mcpx-<process>-<kind><n>``) as ``mcpx-<kind>N``, for exact comparisons."""
    if isinstance(value, str):
        m = _MCPX_ID.match(value)
        if m:
            return f"mcpx-{m.group(1)}N"
    return value


def normalized(msg: dict) -> dict:
    out = dict(msg)
    if "id" in out:
        out["id"] = norm_id(out["id"])
    return out
