"""Capture the wire traces in tests/peers/traces/ (what real 2026-07-28 peers send).

    .venv/bin/python tests/peers/capture_traces.py [SCENARIO ...]     (all when none given)

Each scenario starts its server(s), puts a plain recording mitmdump (trace_tap.py, no mcpx)
between client and server, runs a real client (or raw HTTP probes) and writes
traces/<scenario>.json: every HTTP exchange in order, request and response headers and
bodies, SSE events one by one with a sequence number shared by all concurrent streams.
Normalised so reruns differ as little as possible: ports -> PORT, Mcp-Session-Id values ->
<session-N>, sealed requestState tokens -> <requestState-N (len L)> (the same token gets the
same label, so a byte-exact echo is visible), Date headers -> <date>. traces/README.md gets a
one-line-per-exchange index of every scenario.
"""

from __future__ import annotations

import http.client
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peers_lib as pl  # noqa: E402
from proxy_lib import Proxy  # noqa: E402

from mcpx_core.framing.sse import events_of, field_lines  # noqa: E402

TRACES = HERE / "traces"
TAP = HERE / "trace_tap.py"
PIN = {"versionNegotiation": "pin:2026-07-28"}
ROOTS = pl.TEST_ROOTS
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"

# The full 2026 scenario for client-2.4.0 against the py server (2026 mode).
FULL_2026_OPS: list[dict[str, Any]] = [
    {"id": "listTools", "op": "listTools"},
    {"id": "listPrompts", "op": "listPrompts"},
    {"id": "listResources", "op": "listResources"},
    {"id": "listResourceTemplates", "op": "listResourceTemplates"},
    {"id": "add", "op": "callTool", "name": "add", "arguments": {"a": 2, "b": 3}},
    {"id": "weather", "op": "callTool", "name": "weather", "arguments": {"city": "Oslo"}},
    {"id": "progress", "op": "callTool", "name": "progress", "arguments": {"steps": 2}, "progress": True},
    {"id": "ask-name-legacy-style", "op": "callTool", "name": "ask_name", "arguments": {}},
    {"id": "mrtr-elicit", "op": "callTool", "name": "mrtr_elicit", "arguments": {}},
    {"id": "mrtr-sample", "op": "callTool", "name": "mrtr_sample", "arguments": {"topic": "proxies"}},
    {"id": "mrtr-roots", "op": "callTool", "name": "mrtr_roots", "arguments": {}},
    {"id": "mrtr-all", "op": "callTool", "name": "mrtr_all", "arguments": {"topic": "sse"}},
    {"id": "mrtr-two-rounds", "op": "callTool", "name": "mrtr_two_rounds", "arguments": {}},
    {"id": "mrtr-prompt", "op": "getPrompt", "name": "mrtr_prompt", "arguments": {}},
    {"id": "mrtr-resource", "op": "readResource", "uri": "resource://mrtr/7"},
    {"id": "prompt-plain", "op": "getPrompt", "name": "plain_prompt", "arguments": {"topic": "tests"}},
    {"id": "read-greeting", "op": "readResource", "uri": "resource://greeting"},
    {"id": "read-missing", "op": "readResource", "uri": "resource://missing"},
    {
        "id": "listen",
        "op": "listen",
        "filter": {"toolsListChanged": True, "promptsListChanged": True, "resourceSubscriptions": ["resource://greeting"]},
    },
    {"id": "add-dynamic-tool", "op": "callTool", "name": "add_dynamic_tool", "arguments": {"name": "dynamic_echo"}},
    {"id": "wait-tools-changed", "op": "waitNotification", "method": "notifications/tools/list_changed"},
    {"id": "touch-resource", "op": "callTool", "name": "touch_resource", "arguments": {"uri": "resource://greeting"}},
    {"id": "wait-resource-updated", "op": "waitNotification", "method": "notifications/resources/updated"},
    {"id": "unlisten", "op": "unlisten"},
    {"id": "listTools-after-change", "op": "listTools"},
    {"id": "ping", "op": "ping"},
]


# --- normalisation ------------------------------------------------------------------------


class Normaliser:
    def __init__(self) -> None:
        self.labels: dict[str, str] = {}
        self.counts: dict[str, int] = {}

    def label(self, kind: str, value: str) -> str:
        if value not in self.labels:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            extra = f" (len {len(value)})" if kind == "requestState" else ""
            self.labels[value] = f"<{kind}-{self.counts[kind]}{extra}>"
        return self.labels[value]

    def text(self, s: str) -> str:
        s = re.sub(r"(127\.0\.0\.1|localhost):\d+", r"\1:PORT", s)
        for value, lab in self.labels.items():
            s = s.replace(value, lab)
        return s

    def json(self, v: Any) -> Any:
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if k == "requestState" and isinstance(x, str) and x.startswith("v1."):
                    out[k] = self.label("requestState", x)
                else:
                    out[k] = self.json(x)
            return out
        if isinstance(v, list):
            return [self.json(x) for x in v]
        if isinstance(v, str):
            if v.startswith("v1.") and len(v) > 60:
                return self.label("requestState", v)
            return self.text(v)
        return v

    def headers(self, pairs: list[list[str]]) -> list[str]:
        out = []
        for k, v in pairs:
            lk = k.lower()
            if lk == "mcp-session-id":
                v = self.label("session", v)
            elif lk == "date":
                v = "<date>"
            out.append(f"{k}: {self.text(v)}")
        return out

    def body(self, text: str) -> Any:
        if not text:
            return None
        try:
            return self.json(json.loads(text))
        except ValueError:
            return self.text(text)

    def sse(self, raw: str) -> dict[str, Any]:
        """One event the tap logged, framed by mcpx's SSE parser (``framing/sse.py``, ``events_of``)."""
        eol = "CRLF" if "\r\n" in raw else ("CR" if "\r" in raw else "LF")
        fields: dict[str, Any] = {}
        data: list[str] = []
        comments: list[str] = []
        for event in events_of(raw.encode("utf-8", "surrogatepass")):
            for name, value in field_lines(event, "surrogatepass"):
                if not name:
                    comments.append(":" + value)
                elif name != "data":
                    fields[name] = value
            if event.payload is not None:
                data.append(event.payload.decode("utf-8", "surrogatepass"))
        ev: dict[str, Any] = dict(fields)
        if data:
            ev["data"] = self.body("\n".join(data))
        if comments:
            ev["comments"] = comments
        ev["eol"] = eol
        return ev


def build(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Group tap records into exchanges ordered by request seq."""
    norm = Normaliser()
    # Labels must exist before any text replacement: collect session ids and tokens first.
    for rec in lines:
        for k, v in rec.get("headers", []):
            if k.lower() == "mcp-session-id":
                norm.label("session", v)
    exchanges: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for rec in sorted(lines, key=lambda r: r["seq"]):
        fid = rec["flow"]
        if rec["kind"] == "request":
            order.append(fid)
            exchanges[fid] = {
                "n": len(order),
                "seq": rec["seq"],
                "request": {
                    "method": rec["method"],
                    "path": rec["path"],
                    "headers": norm.headers(rec["headers"]),
                    "body": norm.body(rec["body"]),
                },
            }
            continue
        ex = exchanges.get(fid)
        if ex is None:
            continue
        if rec["kind"] == "response":
            resp: dict[str, Any] = {"seq": rec["seq"], "status": rec["status"], "headers": norm.headers(rec["headers"])}
            if "body" in rec:
                resp["body"] = norm.body(rec["body"])
            ex["response"] = resp
        elif rec["kind"] == "sse":
            ev = norm.sse(rec["raw"])
            ev = {"seq": rec["seq"], **ev}
            if rec.get("unterminated"):
                ev["unterminated"] = True
            ex.setdefault("response", {}).setdefault("sse", []).append(ev)
        elif rec["kind"] == "end":
            ex["end"] = {"seq": rec["seq"], "how": rec["how"]}
    return [exchanges[f] for f in order]


# --- one-line summaries for README.md ------------------------------------------------------


def _rpc_summary(msg: Any) -> str:
    if not isinstance(msg, dict):
        return "?" if msg is None else "(text)"
    if "method" in msg:
        p = msg.get("params") or {}
        name = p.get("name") or p.get("uri") or ""
        extra = ""
        if "inputResponses" in p:
            extra += f" inputResponses={sorted(p['inputResponses'])}"
        if "requestState" in p:
            extra += f" requestState={p['requestState']}"
        ident = f" id={msg['id']}" if "id" in msg else ""
        return f"{msg['method']}{ident}{' ' + name if name else ''}{extra}"
    if "error" in msg:
        return f"error id={msg.get('id')} {msg['error'].get('code')} {msg['error'].get('message', '')[:70]}"
    res = msg.get("result")
    if isinstance(res, dict):
        rt = res.get("resultType", "-")
        if rt == "input_required":
            return f"result id={msg.get('id')} input_required inputRequests={sorted(res.get('inputRequests') or {})}"
        keys = [k for k in res if k not in ("_meta", "resultType")]
        return f"result id={msg.get('id')} resultType={rt} keys={keys}"
    return "?"


def header_map(lines: list[str]) -> dict[str, str]:
    return {k.lower(): v for k, _, v in (x.partition(": ") for x in lines)}


def summary(ex: dict[str, Any]) -> str:
    req = ex["request"]
    hdr = header_map(req["headers"])
    head = f"{ex['n']:>3}. {'(' + ex['probe'] + ') ' if 'probe' in ex else ''}{req['method']} {req['path']}"
    if "mcp-protocol-version" in hdr:
        head += f" [MCP-Protocol-Version: {hdr['mcp-protocol-version']}]"
    body = req.get("body")
    if body is not None:
        head += f" {_rpc_summary(body)}"
    resp = ex.get("response")
    if not resp:
        return head + f" -> (no response: {ex.get('end', {}).get('how')})"
    rh = header_map(resp.get("headers", []))
    tail = f" -> {resp.get('status')}"
    if "sse" in resp or rh.get("content-type", "").startswith("text/event-stream"):
        evs = [_rpc_summary(e["data"]) if e["data"] is not None else "(empty data: priming event)"
               for e in resp.get("sse", []) if "data" in e]
        tail += f" SSE[{'; '.join(evs)}]"
    elif resp.get("body") is not None:
        tail += f" {_rpc_summary(resp['body'])}"
    if ex.get("end", {}).get("how", "complete") != "complete":
        tail += f" (ended: {ex['end']['how']})"
    return head + tail


# --- running ------------------------------------------------------------------------------


def record(name: str, description: str, upstream_url: str, drive, meta: dict[str, Any]) -> dict[str, Any]:
    """Put a tracing mitmdump in front of `upstream_url`, call drive(proxy_url), write the trace."""
    upstream = upstream_url.rsplit("/mcp", 1)[0]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "trace.jsonl"
        proxy = Proxy(
            upstream,
            Path(tmp),
            script=False,
            save=False,
            scripts=(str(TAP),),
            options={"trace_out": out, "keep_host_header": "true", "termlog_verbosity": "warn"},
        )
        try:
            outcome = drive(proxy.url)
            time.sleep(0.3)
        finally:
            proxy.stop()
        lines = [json.loads(x) for x in out.read_text().splitlines() if x.strip()] if out.exists() else []
    exchanges = build(lines)
    if isinstance(outcome, list):  # raw probes: name each exchange after its probe
        labels = {e["n"]: e["probe"] for e in outcome if "n" in e}
        for ex in exchanges:
            tag = header_map(ex["request"]["headers"]).get("x-mcpx-probe")
            if tag in labels:
                ex["probe"] = labels[tag]
    doc = {"scenario": name, "description": description, **meta, "outcome": outcome, "exchanges": exchanges}
    TRACES.mkdir(exist_ok=True)
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    text = Normaliser().text(text)  # ports inside the client's own report
    (TRACES / f"{name}.json").write_text(text)
    print(f"{name}: {len(exchanges)} exchanges, {len(text) // 1024} KB")
    return doc


def client_outcome(rep: dict[str, Any]) -> dict[str, Any]:
    """The client's own report, shortened: per op ok/error (results are in the exchanges)."""
    out: dict[str, Any] = {"protocolVersion": rep.get("protocolVersion")}
    if rep.get("error"):
        out["connectError"] = rep["error"]
        out["connectErrorCode"] = rep.get("code")
    ops = []
    for r in rep.get("results", []):
        e = {k: r[k] for k in ("id", "op", "name", "uri", "ok") if k in r}
        if not r.get("ok"):
            e["error"] = r.get("error")
            if "code" in r:
                e["code"] = r["code"]
        elif r.get("op") in ("listen", "waitNotification"):
            e["result"] = r.get("result")
        elif isinstance(r.get("result"), dict) and "content" in r["result"]:
            e["content"] = r["result"]["content"]
        ops.append(e)
    out["ops"] = ops
    if rep.get("serverRequests"):
        out["handlerCalls"] = [s["method"] for s in rep["serverRequests"]]
    if rep.get("notifications"):
        out["notifications"] = rep["notifications"]
    return out


def js(alias: str, ops: list[dict[str, Any]], options: dict[str, Any] | None = None):
    return lambda url: client_outcome(pl.run_js_client(alias, url, ops, options=options, timeout=120))


def py(version: str, ops: list[dict[str, Any]], options: dict[str, Any] | None = None):
    return lambda url: client_outcome(pl.run_py_client(version, url, ops, options=options, timeout=120))


# --- raw probes -------------------------------------------------------------------------------


def envelope(caps: dict[str, Any] | None = None, version: str = "2026-07-28") -> dict[str, Any]:
    return {PV: version, CAPS: caps if caps is not None else {"elicitation": {}, "sampling": {}, "roots": {}},
            INFO: {"name": "mcpx-probe", "version": "0"}}


_probe_counter = [0]


def post(url: str, body: Any, headers: dict[str, str] | None = None, method: str = "POST") -> tuple[int, str, str]:
    """One HTTP exchange; returns (status, content-type, body text) and reads SSE to its end.

    Each carries `X-Mcpx-Probe: #k` (k counts up) so record() can name the exchange after its probe."""
    _probe_counter[0] += 1
    u = url.split("//", 1)[1]
    hostport, path = u.split("/", 1)
    host, port = hostport.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    h = {"Accept": "application/json, text/event-stream", "X-Mcpx-Probe": f"#{_probe_counter[0]}"}
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    h = {k: v for k, v in h.items() if v is not None}
    conn.request(method, "/" + path, body=data, headers=h)
    resp = conn.getresponse()
    text = resp.read().decode("utf-8", "replace")
    conn.close()
    return resp.status, resp.getheader("content-type") or "", text


def modern(url: str, rid: Any, method: str, params: dict[str, Any] | None = None, *, caps=None,
           headers: dict[str, str | None] | None = None, meta: dict[str, Any] | None = None) -> tuple[int, str, str]:
    p = dict(params or {})
    p["_meta"] = meta if meta is not None else envelope(caps)
    h: dict[str, str | None] = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    name = p.get("uri") if method == "resources/read" else p.get("name")
    if method in ("tools/call", "prompts/get", "resources/read") and name is not None:
        h["Mcp-Name"] = name
    h.update(headers or {})
    return post(url, {"jsonrpc": "2.0", "id": rid, "method": method, "params": p}, h)


def _result(text: str, ctype: str) -> dict[str, Any]:
    if ctype.startswith("text/event-stream"):
        msgs = [json.loads(line[5:].strip()) for line in text.splitlines() if line.startswith("data:")]
        return msgs[-1]
    return json.loads(text)


def probes_2026_only(url: str) -> list[dict[str, Any]]:
    """Legacy traffic and malformed 2026 traffic against the 2026-only gate; MRTR edge cases."""
    log: list[dict[str, Any]] = []

    def note(what: str, status: int, ctype: str, text: str) -> None:
        log.append({"probe": what, "n": f"#{_probe_counter[0]}", "status": status})

    legacy_init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "mcpx-probe", "version": "0"}}}
    note("legacy initialize (no MCP-Protocol-Version)", *post(url, legacy_init))
    note("legacy notifications/initialized", *post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}))
    note("GET (legacy standalone stream)", *post(url, None, {"Accept": "text/event-stream"}, method="GET"))
    note("DELETE with Mcp-Session-Id", *post(url, None, {"Mcp-Session-Id": "abc"}, method="DELETE"))
    note("legacy tools/list with MCP-Protocol-Version 2025-11-25, no _meta",
         *post(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"MCP-Protocol-Version": "2025-11-25"}))
    note("legacy ping, no header", *post(url, {"jsonrpc": "2.0", "id": 2, "method": "ping"}))
    note("2026 envelope but no MCP-Protocol-Version header",
         *modern(url, 3, "tools/list", headers={"MCP-Protocol-Version": None}))
    note("2026 envelope, header 2025-11-25 (mismatch)",
         *modern(url, 4, "tools/list", headers={"MCP-Protocol-Version": "2025-11-25"}))
    note("2026 envelope, version 2099-01-01 in header and _meta",
         *modern(url, 5, "tools/list", headers={"MCP-Protocol-Version": "2099-01-01"},
                 meta={**envelope(), PV: "2099-01-01"}))
    note("2026 envelope without clientCapabilities",
         *modern(url, 6, "tools/list", meta={PV: "2026-07-28", INFO: {"name": "p", "version": "0"}}))
    note("2026 envelope without clientInfo (optional)", *modern(url, 7, "tools/list", meta={PV: "2026-07-28", CAPS: {}}))
    note("Mcp-Method header mismatch", *modern(url, 8, "tools/list", headers={"Mcp-Method": "prompts/list"}))
    note("tools/call without Mcp-Name", *modern(url, 9, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}},
                                                headers={"Mcp-Name": None}))
    note("tools/call with wrong Mcp-Name", *modern(url, 10, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}},
                                                   headers={"Mcp-Name": "weather"}))
    note("tools/call with base64 sentinel Mcp-Name",
         *modern(url, 11, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, headers={"Mcp-Name": "=?base64?YWRk?="}))
    note("ping (removed in 2026)", *modern(url, 12, "ping"))
    note("logging/setLevel (removed)", *modern(url, 13, "logging/setLevel", {"level": "info"}))
    note("resources/subscribe (removed)", *modern(url, 14, "resources/subscribe", {"uri": "resource://greeting"}))
    note("initialize with a 2026 envelope and header", *modern(url, 15, "initialize", {
        "protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "p", "version": "0"}}))
    note("unknown method", *modern(url, 16, "tools/frobnicate"))
    note("server/discover", *modern(url, 17, "server/discover"))
    note("tools/list with an Mcp-Session-Id header (ignored)", *modern(url, 18, "tools/list",
                                                                      headers={"Mcp-Session-Id": "legacy-session"}))
    note("batch array", *post(url, [{"jsonrpc": "2.0", "id": 19, "method": "tools/list", "params": {"_meta": envelope()}}],
                              {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}))
    note("POSTed JSON-RPC response", *post(url, {"jsonrpc": "2.0", "id": 20, "result": {}},
                                          {"MCP-Protocol-Version": "2026-07-28"}))
    note("notifications/cancelled with 2026 header",
         *post(url, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
               {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "notifications/cancelled"}))
    note("subscriptions/listen with Accept: application/json only",
         *modern(url, 21, "subscriptions/listen", {"notifications": {"toolsListChanged": True}},
                 headers={"Accept": "application/json"}))
    note("tools/call mrtr_sample, client without sampling capability",
         *modern(url, 22, "tools/call", {"name": "mrtr_sample", "arguments": {"topic": "x"}}, caps={"elicitation": {}}))
    note("resources/read of a missing resource", *modern(url, 23, "resources/read", {"uri": "resource://missing"}))
    note("tools/call unknown tool", *modern(url, 24, "tools/call", {"name": "no_such_tool", "arguments": {}}))

    # MRTR by hand: round 1, then wrong retries, then the right one.
    args = {"name": "mrtr_elicit", "arguments": {}}
    st, ct, tx = modern(url, 30, "tools/call", args)
    note("mrtr_elicit round 1", st, ct, tx)
    first = _result(tx, ct)["result"]
    key = next(iter(first["inputRequests"]))
    answer = {key: {"action": "accept", "content": {"name": "Probe"}}}
    state = first["requestState"]
    note("retry with a tampered requestState",
         *modern(url, 31, "tools/call", {**args, "inputResponses": answer, "requestState": state[:-4] + "AAAA"}))
    note("retry with the requestState but other arguments",
         *modern(url, 32, "tools/call", {"name": "mrtr_elicit", "arguments": {"x": 1}, "inputResponses": answer,
                                         "requestState": state}))
    note("retry with inputResponses but no requestState", *modern(url, 33, "tools/call", {**args, "inputResponses": answer}))
    note("retry with requestState but no inputResponses", *modern(url, 34, "tools/call", {**args, "requestState": state}))
    note("retry with an answer under another key",
         *modern(url, 35, "tools/call", {**args, "inputResponses": {"other": answer[key]}, "requestState": state}))
    note("retry with decline", *modern(url, 36, "tools/call", {**args, "inputResponses": {key: {"action": "decline"}},
                                                               "requestState": state}))
    note("retry, correct (same id as round 1 is allowed: it is no longer outstanding)",
         *modern(url, 30, "tools/call", {**args, "inputResponses": answer, "requestState": state}))
    note("same requestState replayed a second time", *modern(url, 37, "tools/call",
                                                             {**args, "inputResponses": answer, "requestState": state}))
    # two rounds by hand
    args2 = {"name": "mrtr_two_rounds", "arguments": {}}
    st, ct, tx = modern(url, 40, "tools/call", args2)
    r1 = _result(tx, ct)["result"]
    k1 = next(iter(r1["inputRequests"]))
    st, ct, tx = modern(url, 41, "tools/call", {**args2, "inputResponses": {k1: {"action": "accept", "content": {"name": "Ann"}}},
                                                "requestState": r1["requestState"]})
    r2 = _result(tx, ct)["result"]
    k2 = next(iter(r2["inputRequests"]))
    sample = {"role": "assistant", "content": {"type": "text", "text": "hi Ann"}, "model": "probe", "stopReason": "endTurn"}
    note("mrtr_two_rounds round 3 (only the round-2 answer; round 1 rides requestState)",
         *modern(url, 42, "tools/call", {**args2, "inputResponses": {k2: sample}, "requestState": r2["requestState"]}))
    return log


def probes_dual_era(url: str) -> list[dict[str, Any]]:
    """How the dual-era server routes mixed traffic (era = MCP-Protocol-Version header)."""
    log: list[dict[str, Any]] = []

    def note(what: str, status: int, ctype: str, text: str) -> None:
        log.append({"probe": what, "n": f"#{_probe_counter[0]}", "status": status})

    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "p", "version": "0"}}}
    u = url.split("//", 1)[1]
    hostport, path = u.split("/", 1)
    host, port = hostport.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", "/" + path, body=json.dumps(init).encode(),
                 headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json"})
    resp = conn.getresponse()
    sid = resp.getheader("mcp-session-id")
    resp.read()
    log.append({"probe": "legacy initialize (no X-Mcpx-Probe header)", "status": resp.status})
    conn.close()
    legacy = {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sid}
    note("legacy notifications/initialized", *post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, legacy))
    note("legacy tools/list on the session", *post(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, legacy))
    note("2026 tools/list carrying the legacy Mcp-Session-Id (header 2026-07-28: served by the 2026 entry)",
         *modern(url, 2, "tools/list", headers={"Mcp-Session-Id": sid}))
    note("2026 envelope on the legacy session with header 2025-11-25 (served as legacy, _meta keys ignored)",
         *post(url, {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": envelope()}}, legacy))
    note("2026 envelope, no header, no session (legacy path: new session, not initialize)",
         *post(url, {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": envelope()}}))
    note("server/discover on the legacy session", *post(url, {"jsonrpc": "2.0", "id": 5, "method": "server/discover"}, legacy))
    note("initialize with header 2026-07-28 (2026 entry)", *post(url, init, {"MCP-Protocol-Version": "2026-07-28"}))
    note("2026 ping", *modern(url, 6, "ping"))
    note("legacy ping on the session", *post(url, {"jsonrpc": "2.0", "id": 7, "method": "ping"}, legacy))
    note("GET with header 2026-07-28", *post(url, None, {"Accept": "text/event-stream", "MCP-Protocol-Version": "2026-07-28"},
                                             method="GET"))
    note("legacy DELETE of the session", *post(url, None, legacy, method="DELETE"))
    return log


# --- scenarios ----------------------------------------------------------------------------------


def scripted_tool_cases() -> list[str]:
    from scripted_2026_server import TOOL_CASES

    return TOOL_CASES


def start_scripted(minimal_discover: bool = False) -> Any:
    from scripted_2026_server import ScriptedServer

    return ScriptedServer(minimal_discover=minimal_discover)


def scenarios() -> dict[str, Any]:
    s: dict[str, Any] = {}

    def py2026(only_2026: bool = True, **kw: Any):
        return lambda: pl.start_py_server(only_2026=only_2026, mrtr_tools=True, **kw)

    s["client-2.4.0-2026__py-2026"] = (
        "client-2.4.0 pinned to 2026-07-28 against the py server (mcp 2.3.0) behind the 2026-only gate: "
        "discover, lists, plain calls, progress, every MRTR kind (elicitation, sampling, roots, all three in one "
        "round, two rounds, prompts/get, resources/read), a listen stream with tools/list_changed and "
        "resources/updated, unlisten, the cache-evicted tools/list refetch. ping never reaches the wire.",
        py2026(), js("client-2.4.0", FULL_2026_OPS, {**PIN, "roots": ROOTS}),
        {"client": "@modelcontextprotocol/client@2.4.0 {versionNegotiation: {mode: {pin: '2026-07-28'}}}",
         "server": "py_server.py --only-2026 (mcp 2.3.0)"},
    )
    s["client-2.4.0-2026__py-2026-json"] = (
        "The same client against the gate in JSON-response mode (--json): an InputRequiredResult as "
        "application/json; subscriptions/listen is SSE even so.",
        py2026(json_response=True),
        js("client-2.4.0", [
            {"id": "mrtr-elicit", "op": "callTool", "name": "mrtr_elicit", "arguments": {}},
            {"id": "listen", "op": "listen", "filter": {"toolsListChanged": True}},
            {"id": "add-dynamic-tool", "op": "callTool", "name": "add_dynamic_tool", "arguments": {"name": "dyn2"}},
            {"id": "wait", "op": "waitNotification", "method": "notifications/tools/list_changed"},
            {"id": "unlisten", "op": "unlisten"},
        ], {**PIN, "roots": ROOTS}),
        {"client": "@modelcontextprotocol/client@2.4.0 pinned 2026-07-28", "server": "py_server.py --only-2026 --json"},
    )
    s["client-2.4.0-2026-declined__py-2026"] = (
        "client-2.4.0 pinned 2026, declining every elicitation and without the sampling capability: "
        "declined answers inside inputResponses; a tool that needs sampling -> -32021.",
        py2026(),
        js("client-2.4.0", [
            {"id": "mrtr-elicit", "op": "callTool", "name": "mrtr_elicit", "arguments": {}},
            {"id": "mrtr-sample", "op": "callTool", "name": "mrtr_sample", "arguments": {}},
        ], {**PIN, "elicitation": "decline", "sampling": False}),
        {"client": "@modelcontextprotocol/client@2.4.0 pinned 2026-07-28", "server": "py_server.py --only-2026"},
    )
    s["client-2.4.0-2026-manual__py-2026"] = (
        "client-2.4.0 pinned 2026 with inputRequired.autoFulfill=false: the InputRequiredResult surfaces as an error.",
        py2026(),
        js("client-2.4.0", [{"id": "mrtr-elicit", "op": "callTool", "name": "mrtr_elicit", "arguments": {}}],
           {**PIN, "autoFulfill": False}),
        {"client": "@modelcontextprotocol/client@2.4.0 pinned 2026-07-28, autoFulfill false",
         "server": "py_server.py --only-2026"},
    )
    s["client-2.4.0-auto__py-2026"] = (
        "client-2.4.0 with versionNegotiation 'auto' against the 2026-only gate: the discover probe wins, modern era.",
        py2026(), js("client-2.4.0", [{"id": "listTools", "op": "listTools"}], {"versionNegotiation": "auto"}),
        {"client": "@modelcontextprotocol/client@2.4.0 {versionNegotiation: {mode: 'auto'}}",
         "server": "py_server.py --only-2026"},
    )
    legacy_ops = [{"id": "listTools", "op": "listTools"}, {"id": "add", "op": "callTool", "name": "add",
                                                           "arguments": {"a": 2, "b": 3}}]
    s["sdk-1.25.0__py-2026"] = (
        "A legacy client (npm sdk 1.25.0, 2025-11-25) against the 2026-only gate: initialize -> 400/-32022, connect fails.",
        py2026(), js("sdk-1.25.0", legacy_ops),
        {"client": "@modelcontextprotocol/sdk@1.25.0", "server": "py_server.py --only-2026"},
    )
    s["sdk-1.10.2__py-2026"] = (
        "npm sdk 1.10.2 (2024-11-05) against the 2026-only gate.",
        py2026(), js("sdk-1.10.2", legacy_ops),
        {"client": "@modelcontextprotocol/sdk@1.10.2", "server": "py_server.py --only-2026"},
    )
    s["mcp-1.12.4__py-2026"] = (
        "PyPI mcp 1.12.4 (2025-06-18) against the 2026-only gate.",
        py2026(), py("1.12.4", legacy_ops),
        {"client": "PyPI mcp==1.12.4", "server": "py_server.py --only-2026"},
    )
    s["mcp-1.8.1__py-2026"] = (
        "PyPI mcp 1.8.1 (2024-11-05) against the 2026-only gate.",
        py2026(), py("1.8.1", legacy_ops),
        {"client": "PyPI mcp==1.8.1", "server": "py_server.py --only-2026"},
    )
    s["client-2.4.0-2026__everything"] = (
        "client-2.4.0 pinned 2026-07-28 against the legacy-only everything server: the discover probe is "
        "answered as a legacy request and connect fails.",
        pl.start_everything_server, js("client-2.4.0", [{"id": "listTools", "op": "listTools"}], PIN),
        {"client": "@modelcontextprotocol/client@2.4.0 pinned 2026-07-28",
         "server": "@modelcontextprotocol/server-everything@2026.8.31 (sdk 1.32.2)"},
    )
    s["client-2.4.0-auto__everything"] = (
        "client-2.4.0 'auto' against the legacy-only everything server: probe, fallback to initialize 2025-11-25.",
        pl.start_everything_server, js("client-2.4.0", [{"id": "listTools", "op": "listTools"}], {"versionNegotiation": "auto"}),
        {"client": "@modelcontextprotocol/client@2.4.0 {versionNegotiation: {mode: 'auto'}}",
         "server": "@modelcontextprotocol/server-everything@2026.8.31"},
    )
    s["client-2.4.0-legacy-mrtr__py"] = (
        "For contrast: client-2.4.0 in its default legacy mode (2025-11-25) against the dual-era py server "
        "with the same MRTR tools: the SDK sends elicitation/sampling/roots as server->client requests on the "
        "POST's SSE stream and the client POSTs each answer back.",
        py2026(only_2026=False),
        js("client-2.4.0", [
            {"id": "mrtr-all", "op": "callTool", "name": "mrtr_all", "arguments": {"topic": "sse"}},
            {"id": "mrtr-prompt", "op": "getPrompt", "name": "mrtr_prompt", "arguments": {}},
            {"id": "add-dynamic-tool", "op": "callTool", "name": "add_dynamic_tool", "arguments": {"name": "dyn3"}},
            {"id": "wait", "op": "waitNotification", "method": "notifications/tools/list_changed"},
        ], {"roots": ROOTS}),
        {"client": "@modelcontextprotocol/client@2.4.0 (legacy mode)", "server": "py_server.py --mrtr-tools (dual-era)"},
    )
    strict_ops: list[dict[str, Any]] = [
        {"id": "listTools", "op": "listTools"},
        {"id": "prompts/list without ttlMs", "op": "listPrompts"},
        {"id": "resources/list without cacheScope", "op": "listResources"},
        {"id": "resources/templates/list without resultType", "op": "listResourceTemplates"},
        {"id": "resources/read ttlMs as string", "op": "readResource", "uri": "res://ttl-string"},
        {"id": "resources/read valid", "op": "readResource", "uri": "res://ok"},
        {"id": "prompts/get without result _meta", "op": "getPrompt", "name": "p_no_meta"},
    ]
    strict_ops += [{"id": n, "op": "callTool", "name": n, "arguments": {}, "timeoutMs": 8000}
                   for n in scripted_tool_cases()]
    strict_ops += [
        {"id": "listen: ack without subscriptionId", "op": "listen", "key": "a", "filter": {"toolsListChanged": True},
         "timeoutMs": 2000},
        {"id": "listen: ack, then list_changed with and without subscriptionId", "op": "listen", "key": "b",
         "filter": {"promptsListChanged": True}},
        {"id": "wait for notifications", "op": "waitNotification", "count": 2, "timeoutMs": 2000},
        {"id": "listen: immediate SubscriptionsListenResult", "op": "listen", "key": "c",
         "filter": {"resourcesListChanged": True}, "timeoutMs": 2000},
        {"id": "unlisten b", "op": "unlisten", "key": "b"},
    ]
    s["client-2.4.0-2026__scripted"] = (
        "What client-2.4.0 pinned to 2026-07-28 accepts and rejects: a scripted server "
        "(scripted_2026_server.py) answers with one off-spec shape per op (missing resultType/ttlMs/cacheScope, "
        "odd InputRequiredResults, legacy server->client requests on SSE, priming events, error statuses, "
        "listen acks without subscriptionId ...). Read outcome.ops for the client's verdict on each.",
        start_scripted, js("client-2.4.0", strict_ops, {**PIN, "elicitation": "accept"}),
        {"client": "@modelcontextprotocol/client@2.4.0 pinned 2026-07-28", "server": "scripted_2026_server.py"},
    )
    s["client-2.4.0-2026__scripted-minimal-discover"] = (
        "client-2.4.0 pinned 2026 against the scripted server whose server/discover answer is only "
        "{supportedVersions: [2025-11-25, 2026-07-28], capabilities: {tools: {}}}: no resultType, ttlMs, cacheScope, "
        "_meta.serverInfo. The probe accepts it.",
        lambda: start_scripted(minimal_discover=True), js("client-2.4.0", [{"id": "listTools", "op": "listTools"}], PIN),
        {"client": "@modelcontextprotocol/client@2.4.0 pinned 2026-07-28", "server": "scripted_2026_server.py (minimal discover)"},
    )
    s["raw-probes__py-2026"] = (
        "Raw HTTP probes (no SDK client) against the 2026-only gate: every kind of legacy traffic, malformed "
        "2026 traffic (headers, _meta, versions), removed methods, and MRTR retries done wrong and right "
        "(tampered requestState, other arguments, missing requestState, missing inputResponses, wrong key, "
        "decline, replay, two rounds by hand).",
        py2026(), probes_2026_only, {"client": "capture_traces.py probes (http.client)", "server": "py_server.py --only-2026"},
    )
    s["raw-probes__py-dual-era"] = (
        "Raw HTTP probes against the dual-era py server (no gate): how mcp 2.3.0 routes mixed-era traffic.",
        py2026(only_2026=False), probes_dual_era,
        {"client": "capture_traces.py probes (http.client)", "server": "py_server.py --mrtr-tools (dual-era)"},
    )
    return s


def write_index() -> None:
    lines = ["# Wire traces of real 2026-07-28 peers", "",
             "Made by `capture_traces.py` (see its docstring for the normalisation). One file per scenario; "
             "each exchange: request (method, path, headers, body), response (status, headers, body or `sse` "
             "events with a global `seq`), `end`. Index below: one line per HTTP exchange.", ""]
    for path in sorted(TRACES.glob("*.json")):
        doc = json.loads(path.read_text())
        lines += [f"## {path.name}", "", doc["description"], "", "```"]
        lines += [summary(ex) for ex in doc["exchanges"]]
        lines += ["```", ""]
    (TRACES / "README.md").write_text("\n".join(lines))


def main(names: list[str]) -> None:
    all_s = scenarios()
    for name in names or list(all_s):
        description, start, drive, meta = all_s[name]
        with start() as srv:
            record(name, description, srv.url, drive, meta)
    write_index()


if __name__ == "__main__":
    main(sys.argv[1:])
