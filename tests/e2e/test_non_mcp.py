"""Non-MCP traffic gets no record and no summary line; a body that says it is JSON-RPC but does not
parse gets its ``passthrough`` record in both directions (issue 15), through the real mitmdump."""
from __future__ import annotations

import http.client
import re
import time

import orjson

from proxy_lib import Client, LoopbackServer, Proxy, ScriptedMcpHandler, initialize_msg

HTML_404 = b"<html><body><h1>404 Not Found</h1></body></html>"
TRUNCATED = b'{"jsonrpc":"2.0","id":1,"meth'
PARSE_ERROR = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'


class Server(ScriptedMcpHandler):
    """/mcp: an MCP server (tools/call is answered with bytes that are not JSON, declared JSON);
    a body that is not JSON gets a JSON-RPC parse error; any other path: an HTML 404 page."""

    received: list[bytes] = []

    def _send(self, status: int, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send(200, "text/html", b"<html>home</html>")

    def do_POST(self):
        if self.path != "/mcp":
            self.rfile.read(int(self.headers["content-length"]))
            return self._send(404, "text/html", HTML_404)
        raw = self.rfile.read(int(self.headers["content-length"]))
        Server.received.append(raw)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return self._send(400, "application/json", PARSE_ERROR)
        if body.get("method") == "initialize":
            return self._initialize(body)
        if "id" not in body:
            return self._send(202, "application/json", b"")
        self._send(200, "application/json", b"{not json")

    def _initialize(self, body: dict) -> None:
        out = orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
            "protocolVersion": body["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": self.SERVER_INFO}})
        self.send_json(out, {"mcp-session-id": self.SESSION})


def mcpx_lines(px: Proxy) -> list[str]:
    """mitmdump's summary lines (time stamps removed)."""
    return [re.sub(r"^\[[\d:.]+\] ", "", line) for line in px.output().splitlines() if "] mcpx: " in line]


def test_non_mcp_answers_and_bodies_that_do_not_parse(tmp_path):
    srv = LoopbackServer(Server)
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False) as px:
            conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
            # 1. non-MCP traffic: a page, and an MCP client pointed at a wrong path (an HTML 404)
            conn.request("GET", "/")
            r = conn.getresponse()
            assert (r.status, r.read()) == (200, b"<html>home</html>")
            conn.request("POST", "/wrong", orjson.dumps(initialize_msg("2025-03-26")),
                         {"content-type": "application/json", "accept": "application/json, text/event-stream"})
            r = conn.getresponse()
            assert (r.status, r.getheader("content-type"), r.read()) == (404, "text/html", HTML_404)
            assert r.getheader("mcp-session-id") is None
            non_mcp_records = px.changes()
            non_mcp_lines = mcpx_lines(px)
            # 2. a JSON-RPC POST whose body does not parse (no session id): forwarded as is, one c2s record;
            # it names no session: the initialize sent to the wrong path (an HTML 404) started none on this
            # connection (a failed initialize is abandoned: SessionTracker.abandon)
            conn.request("POST", "/mcp", TRUNCATED, {"content-type": "application/json", "accept": "application/json, text/event-stream"})
            r = conn.getresponse()
            assert (r.status, r.read()) == (400, PARSE_ERROR)
            conn.close()
            # 3. an answer declared JSON that does not parse: delivered as is, one s2c record
            c = Client(px.port)
            c.initialize("2025-03-26")
            status, _, got = c.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t", "arguments": {}}})
            assert (status, got) == (200, b"{not json")
            c.close()
    finally:
        srv.stop()
    assert non_mcp_records == [] and non_mcp_lines == []
    assert TRUNCATED in Server.received
    recs = [(r["direction"], r["action"], r["session"] and r["session"][:2], r["from_rev"], r["to_rev"], r["detail"]) for r in px.changes()]
    assert recs == [
        ("c2s", "passthrough", None, None, None, "body is not valid JSON: unexpected end of data: line 1 column 30 (char 29)"),
        ("s2c", "passthrough", "s-", "2025-03-26", "2025-03-26",
         "body is not valid JSON: unexpected character, expected a string key: line 1 column 2 (char 1)"),
    ]
    assert px.changes()[0]["session"] != px.changes()[1]["session"]
    assert mcpx_lines(px) == [
        "mcpx: c2s (no session): 1 passed through (passthrough: PASSTHROUGH-error)",
        "mcpx: s2c 2025-03-26->2025-03-26: 1 passed through (passthrough: PASSTHROUGH-error)",
    ]


def test_a_client_body_that_does_not_parse_names_its_session(tmp_path):
    """The record of a client POST in a session whose body does not parse (or holds no JSON-RPC
    message) names that session and its revisions, as every other record of the session does.
    Before, it was written before mcpx looked the session up: session null, revisions unknown."""
    Server.received = []
    srv = LoopbackServer(Server)
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False) as px:
            c = Client(px.port)
            c.initialize("2025-03-26")
            before = len(px.changes())
            assert c.post(None, raw=TRUNCATED)[:3:2] == (400, PARSE_ERROR)
            assert c.post(None, raw=b"{}")[0] == 202
            assert Server.received[-2:] == [TRUNCATED, b"{}"]
            c.close()
            time.sleep(0.3)
            assert [(r["direction"], r["action"], r["session"], r["from_rev"], r["to_rev"], r["detail"])
                    for r in px.changes()[before:] if r["direction"] == "c2s"] == [
                ("c2s", "passthrough", px.handle(c.session), "2025-03-26", "2025-03-26",
                 "body is not valid JSON: unexpected end of data: line 1 column 30 (char 29)"),
                ("c2s", "passthrough", px.handle(c.session), "2025-03-26", "2025-03-26", "body holds no JSON-RPC 2.0 message"),
            ]
    finally:
        srv.stop()
