"""A scripted 2026-07-28 server that answers with deliberately off-spec shapes, to learn what a
real 2026 client (client-2.4.0) accepts and rejects. Standard library only; 127.0.0.1.

    with ScriptedServer() as srv:      # .url http://127.0.0.1:N/mcp
        ...

server/discover is answered correctly (so a pinned client connects; with minimal_discover=True
only {supportedVersions, capabilities}); every other answer
depends on the method and on the tool name / prompt name / uri of the request:

| request | answer |
|---|---|
| tools/list | valid (tools named after the tools/call cases below) |
| prompts/list | valid except: no ttlMs |
| resources/list | valid except: no cacheScope |
| resources/templates/list | valid except: no resultType |
| resources/read res://ttl-string | ttlMs "60000" (a string) |
| resources/read res://ok | valid |
| prompts/get p_no_meta | valid, no result _meta (no serverInfo) |
| tools/call no_result_type | CallToolResult without resultType |
| tools/call weird_result_type | resultType "pending" |
| tools/call ir_empty | {resultType: input_required} and nothing else |
| tools/call ir_state_only | round 1: only requestState "s1"; a retry carrying it: complete |
| tools/call ir_requests_only | round 1: only inputRequests (elicitation); retry: complete, echoing its params |
| tools/call ir_ping | inputRequests {k: {method: "ping"}} |
| tools/call ir_jsonrpc_entry | inputRequests entry carrying jsonrpc + id (a raw legacy request) |
| tools/call ir_extra_keys | form elicitation whose params also carry elicitationId, _meta and task (not 2026 keys) |
| tools/call ir_roots_undeclared | inputRequests roots/list (client declared no roots) |
| tools/call ir_forever | input_required with a new requestState on every round |
| tools/call legacy_request_on_sse | SSE: a server->client JSON-RPC request elicitation/create, then the result |
| tools/call list_changed_on_post | SSE: notifications/tools/list_changed (no subscriptionId), then the result |
| tools/call sse_priming | SSE: 2025-11-25 priming event (id + empty data) + retry, then the result |
| tools/call session_header | valid, plus an Mcp-Session-Id response header |
| tools/call error_404 | HTTP 404 + -32601 |
| tools/call error_400_empty | HTTP 400, empty body |
| tools/call error_500 | HTTP 500 + -32603 |
| tools/call structured_array | structuredContent [1, 2] (2026 allows any JSON value) |
| subscriptions/listen {toolsListChanged} | ack WITHOUT subscriptionId |
| subscriptions/listen {promptsListChanged} | ack ok, then list_changed without subscriptionId, then with it |
| subscriptions/listen {resourcesListChanged} | SubscriptionsListenResult right away (graceful end) |
| notifications (any) | 202 |
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SERVER_INFO = {"name": "scripted-2026", "version": "0.0.1"}
META = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}
ELICIT = {"method": "elicitation/create", "params": {"mode": "form", "message": "Name?", "requestedSchema": {
    "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}
TOOL_CASES = [
    "no_result_type", "weird_result_type", "ir_empty", "ir_state_only", "ir_requests_only", "ir_ping",
    "ir_jsonrpc_entry", "ir_extra_keys", "ir_roots_undeclared", "ir_forever", "legacy_request_on_sse",
    "list_changed_on_post", "sse_priming", "session_header", "error_404", "error_400_empty", "error_500",
    "structured_array", "ok",
]


def _text(s: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": s}], "resultType": "complete", "_meta": META}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        body = b"" if obj is None else json.dumps(obj).encode()
        self.send_response(status)
        if obj is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _sse_start(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _sse(self, obj: Any = None, raw: str | None = None) -> None:
        text = raw if raw is not None else f"event: message\ndata: {json.dumps(obj)}\n\n"
        self.wfile.write(text.encode())
        self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802
        self._send_json(405, None, {"Allow": "POST"})

    do_DELETE = do_GET  # noqa: N815

    def do_POST(self) -> None:  # noqa: N802
        msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"null")
        if not isinstance(msg, dict) or "id" not in msg:
            self._send_json(202, None)
            return
        rid, method, params = msg["id"], msg.get("method"), msg.get("params") or {}
        self._current_id = rid

        def ok(result: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            self._send_json(200, {"jsonrpc": "2.0", "id": rid, "result": result}, headers)

        def err(status: int, code: int, message: str) -> None:
            self._send_json(status, {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})

        if method == "server/discover" and self.server.minimal_discover:  # type: ignore[attr-defined]
            ok({"supportedVersions": ["2025-11-25", "2026-07-28"], "capabilities": {"tools": {}}})
        elif method == "server/discover":
            ok({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": True},
                "prompts": {"listChanged": True}, "resources": {"listChanged": True, "subscribe": True}},
                "ttlMs": 0, "cacheScope": "private", "resultType": "complete", "_meta": META})
        elif method == "tools/list":
            tools = [{"name": n, "inputSchema": {"type": "object"}} for n in TOOL_CASES]
            ok({"tools": tools, "ttlMs": 0, "cacheScope": "private", "resultType": "complete", "_meta": META})
        elif method == "prompts/list":
            ok({"prompts": [{"name": "p_no_meta"}], "cacheScope": "private", "resultType": "complete", "_meta": META})
        elif method == "resources/list":
            ok({"resources": [], "ttlMs": 0, "resultType": "complete", "_meta": META})
        elif method == "resources/templates/list":
            ok({"resourceTemplates": [], "ttlMs": 0, "cacheScope": "private", "_meta": META})
        elif method == "resources/read":
            uri = params.get("uri")
            res = {"contents": [{"uri": uri, "text": "x"}], "ttlMs": 0, "cacheScope": "private",
                   "resultType": "complete", "_meta": META}
            if uri == "res://ttl-string":
                res["ttlMs"] = "60000"
            ok(res)
        elif method == "prompts/get":
            ok({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "resultType": "complete"})
        elif method == "tools/call":
            self._tool(params, ok, err)
        elif method == "subscriptions/listen":
            self._listen(rid, params)
        else:
            err(404, -32601, f"Method not found: {method}")

    def _tool(self, params: dict[str, Any], ok: Any, err: Any) -> None:
        name = params.get("name")
        state = params.get("requestState")
        responses = params.get("inputResponses")
        if name == "no_result_type":
            r = _text("no resultType")
            del r["resultType"]
            ok(r)
        elif name == "weird_result_type":
            ok({**_text("x"), "resultType": "pending"})
        elif name == "ir_empty":
            ok({"resultType": "input_required", "_meta": META})
        elif name == "ir_state_only":
            if state == "s1":
                ok(_text(f"state echoed; inputResponses={responses!r}"))
            else:
                ok({"resultType": "input_required", "requestState": "s1", "_meta": META})
        elif name == "ir_requests_only":
            if responses:
                ok(_text(f"retry params keys={sorted(params)}"))
            else:
                ok({"resultType": "input_required", "inputRequests": {"q": ELICIT}, "_meta": META})
        elif name == "ir_ping":
            ok({"resultType": "input_required", "inputRequests": {"q": {"method": "ping"}}, "requestState": "s"})
        elif name == "ir_jsonrpc_entry":
            if responses:
                ok(_text(f"answered {sorted(responses)}"))
            else:
                ok({"resultType": "input_required", "inputRequests": {"q": {"jsonrpc": "2.0", "id": 7, **ELICIT}},
                    "requestState": "s"})
        elif name == "ir_extra_keys":
            extra = {"method": "elicitation/create", "params": {**ELICIT["params"], "elicitationId": "e1",
                                                                "_meta": {"x": 1}, "task": {"ttl": 1}}}
            if responses:
                ok(_text(f"answered {responses!r}"))
            else:
                ok({"resultType": "input_required", "inputRequests": {"q": extra}, "requestState": "s"})
        elif name == "ir_roots_undeclared":
            ok({"resultType": "input_required", "inputRequests": {"q": {"method": "roots/list"}}, "requestState": "s"})
        elif name == "ir_forever":
            n = int(state.split("-")[1]) + 1 if isinstance(state, str) else 1
            ok({"resultType": "input_required", "inputRequests": {"q": ELICIT}, "requestState": f"round-{n}"})
        elif name == "legacy_request_on_sse":
            self._sse_start()
            self._sse({"jsonrpc": "2.0", "id": "srv-1", **ELICIT})
            time.sleep(0.3)
            self._sse({"jsonrpc": "2.0", "id": self._rid(), "result": _text("after a server request")})
        elif name == "list_changed_on_post":
            self._sse_start()
            self._sse({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            self._sse({"jsonrpc": "2.0", "id": self._rid(), "result": _text("after list_changed")})
        elif name == "sse_priming":
            self._sse_start()
            self._sse(raw="id: 0\nretry: 1000\ndata: \n\n")
            self._sse({"jsonrpc": "2.0", "id": self._rid(), "result": _text("after priming")}, None)
        elif name == "session_header":
            ok(_text("with a session id"), {"Mcp-Session-Id": "scripted-session"})
        elif name == "error_404":
            err(404, -32601, "Method not found")
        elif name == "error_400_empty":
            self._send_json(400, None)
        elif name == "error_500":
            err(500, -32603, "Internal error")
        elif name == "structured_array":
            ok({**_text("[1,2]"), "structuredContent": [1, 2]})
        else:
            ok(_text(f"ok; headers Mcp-Session-Id={self.headers.get('Mcp-Session-Id')!r}"))

    def _rid(self) -> Any:
        return self._current_id

    def _listen(self, rid: Any, params: dict[str, Any]) -> None:
        filt = params.get("notifications") or {}
        sub = {"io.modelcontextprotocol/subscriptionId": rid}
        self._sse_start()
        if filt.get("toolsListChanged"):
            self._sse({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                       "params": {"notifications": filt}})
        elif filt.get("promptsListChanged"):
            self._sse({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                       "params": {"notifications": filt, "_meta": sub}})
            time.sleep(0.2)
            self._sse({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
            self._sse({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed", "params": {"_meta": sub}})
            self._sse({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": sub}})
        elif filt.get("resourcesListChanged"):
            self._sse({"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", "_meta": sub}})
            return
        try:  # keep the stream open until the client goes away (or 15 s)
            for _ in range(150):
                time.sleep(0.1)
                self._sse(raw=":\n\n")
        except OSError:
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    minimal_discover = False


class ScriptedServer:
    """The scripted server on a free 127.0.0.1 port: .url, .stop(), a context manager."""

    def __init__(self, minimal_discover: bool = False) -> None:
        """``minimal_discover``: answer server/discover with only supportedVersions and capabilities
        (no resultType, ttlMs, cacheScope, _meta), to see what the client's probe needs."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]

        self.httpd = _Server(("127.0.0.1", self.port), _Handler)
        self.httpd.minimal_discover = minimal_discover
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
