"""A 2025-03-26 client's batch through the legacy-client bridge (a 2026-07-28-only server): every
request member gets an answer in the batch response, also one whose upstream answer holds no
JSON-RPC response (an empty HTTP 400, an HTML 500). Before, such a member was left out of the
array: the client never got an answer to it, while its record said the server's answer was
passed through.

Through the real mitmdump, against a scripted 2026-07-28-only server; exact bytes on both legs,
exact records."""
from __future__ import annotations

import json

import orjson
import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, orjson_error, serve

NEW = "2026-07-28"
INFO = {"name": "scripted-2026", "version": "1"}


class Only2026(ScriptedMcpHandler):
    """server/discover; tools/call ``ok`` (a result), ``empty400`` (HTTP 400, no body), ``html500``
    (HTTP 500, an HTML page). Every POST body it gets is kept in ``seen``."""

    seen: list = []

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["content-length"]))
        body = json.loads(raw)
        self.seen.append((raw, self.headers.get("mcp-method"), self.headers.get("mcp-name")))
        rid = body.get("id")
        if body.get("method") == "server/discover":
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {
                "supportedVersions": [NEW], "capabilities": {"tools": {}}, "resultType": "complete", "ttlMs": 0,
                "cacheScope": "private", "_meta": {"io.modelcontextprotocol/serverInfo": INFO}}}))
            return
        name = (body.get("params") or {}).get("name")
        if name == "ok":
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": "fine"}], "resultType": "complete"}}))
        elif name == "empty400":
            self.send_response(400)
            self.send_header("content-length", "0")
            self.end_headers()
        else:
            page = b"<html><body>boom</body></html>"
            self.send_response(500)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)


@pytest.fixture
def server():
    yield from serve(Only2026, "seen")


def call(rid, name):
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": {}}}


def test_every_batch_member_gets_an_answer(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_server_era": "2026"}) as px:
        c = Client(px.port)
        c.initialize("2025-03-26")
        n = len(px.changes())
        Only2026.seen.clear()
        st, h, body = c.post([call(1, "ok"), call("two", "empty400"), call(3, "html500"),
                              {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}])
        recs = px.changes()[n:]
    assert st == 200 and h["content-type"] == "application/json"
    why = f"body is not valid JSON: {orjson_error(b'<html><body>boom</body></html>')}"
    assert body == (
        b'[{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"fine"}]}},'
        b'{"jsonrpc":"2.0","id":"two","error":{"code":-32603,"message":"mcpx: the server answered this batch member with HTTP 400, '
        b'which mcpx could not read as its answer: an empty body"}},'
        b'{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"mcpx: the server answered this batch member with HTTP 500, '
        b'which mcpx could not read as its answer: ' + why.encode() + b'"}}]')
    caps = {"io.modelcontextprotocol/protocolVersion": NEW, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "reliability", "version": "1"}}
    # the server leg: each request member alone, as a 2026-07-28 request (the notification is consumed)
    assert [(json.loads(raw), m, nm) for raw, m, nm in Only2026.seen] == [
        ({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": {}, "_meta": caps}},
         "tools/call", name) for i, name in ((1, "ok"), ("two", "empty400"), (3, "html500"))]
    got = [(r["direction"], r["jsonrpc_id"], r["pointer"], r["action"], r["rule"], r["detail"]) for r in recs
           if r["rule"] in ("PASSTHROUGH-error", "RPC-batch-request", "PROG-direction", "RES-resultType")]
    assert got == [
        ("s2c", 1, "/result/resultType", "drop", "RES-resultType", None),
        ("s2c", None, "", "passthrough", "PASSTHROUGH-error", "HTTP 400 without a JSON-RPC response to the request"),
        ("s2c", "two", "", "answer-locally", "RPC-batch-request",
         'batch member id="two": HTTP 400, an empty body: answered -32603 in the batch response'),
        ("s2c", None, "", "passthrough", "PASSTHROUGH-error", "HTTP 500 without a JSON-RPC response to the request"),
        ("s2c", 3, "", "answer-locally", "RPC-batch-request",
         f"batch member id=3: HTTP 500, {why}: answered -32603 in the batch response"),
        ("c2s", None, "", "drop-message", "PROG-direction", "consumed by mcpx (202): not defined in 2026-07-28"),
    ]
