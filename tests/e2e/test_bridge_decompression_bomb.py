"""A bridge's upstream answer that inflates past ``mcpx_max_body``, through the real mitmdump.

Scripted 127.0.0.1 servers (no real MCP server sends a decompression bomb): a 2025-11-25 server in
front of a 2026-07-28 client (bridge/client2026.py), a 2026-07-28-only server in front of a
2025-03-26 client (bridge/legacy_client.py). Each answers a tools/call with gzip JSON that decodes
to 4 MiB (4 KiB compressed). ``upstream.Sender`` stops decoding it at 64 KiB and gives it as
received; before, the bridges handed those gzip bytes to the client as ``application/json`` with no
``Content-Encoding`` (the client could not read them), under a record that said the answer held no
JSON-RPC response. Now the client gets the server's bytes with their ``Content-Encoding: gzip``,
and the record says why mcpx did not read them.
"""
from __future__ import annotations

import gzip
import json

import orjson
import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

PAD = 4 << 20
RECORD = "content-encoding: body decodes to more than mcpx_max_body (65536 bytes); forwarded untouched"
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bomb26", "version": "1"}}


def bomb(rid) -> bytes:
    return gzip.compress(orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {
        "content": [{"type": "text", "text": "x" * PAD}]}}), mtime=0)


class Legacy(ScriptedMcpHandler):
    """A 2025-11-25 server answering tools/call with a gzip bomb."""
    SESSION = "legacy-bomb"
    REVISION = "2025-11-25"
    sent: list = []

    def answer(self, body):
        if "id" not in body:
            self.send_accepted()
            return
        out = bomb(body["id"])
        Legacy.sent.append(out)
        self.send_json(out, {"content-encoding": "gzip"})


class Modern(ScriptedMcpHandler):
    """A 2026-07-28-only server answering tools/call with a gzip bomb."""
    sent: list = []

    def do_POST(self):
        m = json.loads(self.rfile.read(int(self.headers["content-length"])))
        rid = json.dumps(m.get("id")).encode()
        if m.get("method") == "server/discover":
            self.send_json(b'{"jsonrpc":"2.0","id":' + rid + b',"result":{"supportedVersions":["2026-07-28"],"capabilities":'
                           b'{"tools":{}},"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":'
                           b'{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"1"}}}}')
        elif m.get("method") == "tools/call":
            out = bomb(m["id"])
            Modern.sent.append(out)
            self.send_json(out, {"content-encoding": "gzip"})
        else:
            self.send_json(b'{"jsonrpc":"2.0","id":' + rid + b',"error":{"code":-32022,"message":"Unsupported protocol version",'
                           b'"data":{"supported":["2026-07-28"]}}}', status=400)


@pytest.fixture
def legacy():
    yield from serve(Legacy, "sent")


@pytest.fixture
def modern():
    yield from serve(Modern, "sent")


def test_client2026_bridge_hands_on_a_bomb_with_its_encoding(legacy, tmp_path):
    with Proxy(f"http://127.0.0.1:{legacy}", tmp_path, options={"mcpx_max_body": "64KiB"}) as px:
        c = Client(px.port)
        msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}, "_meta": META}}
        status, headers, body = c.post(msg, extra={"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "x"})
        c.close()
        records = [(r["direction"], r["action"], r["detail"]) for r in px.changes()]
    assert (status, headers["content-type"], headers.get("content-encoding"), body) == (200, "application/json", "gzip", Legacy.sent[-1])
    assert records[-1] == ("s2c", "passthrough", RECORD)
    assert [r for r in records if r[1] == "passthrough"] == [("s2c", "passthrough", RECORD)]


def test_legacy_client_bridge_hands_on_a_bomb_with_its_encoding(modern, tmp_path):
    with Proxy(f"http://127.0.0.1:{modern}", tmp_path, options={"mcpx_max_body": "64KiB"}) as px:
        c = Client(px.port)
        c.initialize("2025-03-26", name="bomb-legacy")
        status, headers, body = c.post({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "x", "arguments": {}}})
        c.close()
        records = [(r["direction"], r["action"], r["detail"]) for r in px.changes()]
    assert (status, headers["content-type"], headers.get("content-encoding"), body) == (200, "application/json", "gzip", Modern.sent[-1])
    assert [r for r in records if r[1] == "passthrough"] == [("s2c", "passthrough", RECORD)]
