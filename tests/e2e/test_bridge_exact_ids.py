"""JSON-RPC ids beyond 64 bits cross both bridges exactly, through the real mitmdump (found by an
adversarial review: both bridges parsed with orjson and wrote the id back as 1.844674407370955e+23).

- A 2025-03-26 client in front of a 2026-07-28-only server (bridge/legacy_client.py): the server gets
  the client's id as its digits, and the client gets the answer under it.
- A 2026-07-28 client in front of a 2025-11-25 server (bridge/client2026.py): the server gets mcpx's
  own id, the client its own id back, exact.
The scripted upstreams read bodies with the standard library (exact integers) and keep the raw bytes.
"""
from __future__ import annotations

import json

import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

BIG = 184467440737095516170000
BIG_BYTES = b"184467440737095516170000"
RESULT = b'"result":{"content":[{"type":"text","text":"z"}]'


class Modern(ScriptedMcpHandler):
    """A 2026-07-28-only server: refuses initialize, answers server/discover and tools/call."""

    seen: list = []

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["content-length"]))
        Modern.seen.append(raw)
        m = json.loads(raw)
        rid = json.dumps(m.get("id")).encode()
        if m.get("method") == "server/discover":
            self.send_json(b'{"jsonrpc":"2.0","id":' + rid + b',"result":{"supportedVersions":["2026-07-28"],"capabilities":'
                           b'{"tools":{}},"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":'
                           b'{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"1"}}}}')
        elif m.get("method") == "tools/call":
            self.send_json(b'{"jsonrpc":"2.0","id":' + rid + b',' + RESULT + b',"resultType":"complete"}}')
        else:
            self.send_json(b'{"jsonrpc":"2.0","id":' + rid + b',"error":{"code":-32022,"message":"Unsupported protocol version",'
                           b'"data":{"supported":["2026-07-28"]}}}', status=400)


class Legacy(ScriptedMcpHandler):
    """A 2025-11-25 server (no server/discover)."""

    SESSION = "legacy-1"
    REVISION = "2025-11-25"
    seen: list = []

    def answer(self, body):
        Legacy.seen.append(json.dumps(body))
        if "id" not in body:
            self.send_accepted()
            return
        rid = json.dumps(body["id"]).encode()
        if body.get("method") == "tools/call":
            self.send_json(b'{"jsonrpc":"2.0","id":' + rid + b',' + RESULT + b'}}')
        else:
            self.send_json(b'{"jsonrpc":"2.0","id":' + rid + b',"error":{"code":-32601,"message":"Method not found"}}', status=400)


def exact_changes(px: Proxy) -> list[dict]:
    """The change log read with the standard library: a jsonrpc_id beyond 64 bits stays exact (orjson: a float)."""
    return [json.loads(line) for line in px.log_path.read_bytes().splitlines() if line.strip()]


@pytest.fixture
def modern():
    yield from serve(Modern, "seen")


@pytest.fixture
def legacy():
    yield from serve(Legacy, "seen")


def test_legacy_client_bridge_keeps_a_big_id_exact(modern, tmp_path):
    with Proxy(f"http://127.0.0.1:{modern}", tmp_path) as px:
        client = Client(px.port)
        assert client.initialize("2025-03-26", name="big-legacy")["protocolVersion"] == "2025-03-26"
        req = b'{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"x","arguments":{}}}' % BIG_BYTES
        status, _, body = client.post(None, raw=req)
        client.close()
    assert status == 200
    assert body == b'{"jsonrpc":"2.0","id":' + BIG_BYTES + b',' + RESULT + b'}}'
    sent = Modern.seen[-1]
    assert sent.startswith(b'{"jsonrpc":"2.0","id":' + BIG_BYTES + b',"method":"tools/call"')
    assert json.loads(sent)["id"] == BIG
    records = [(c["direction"], c["pointer"], c["action"], c["rule"], c["jsonrpc_id"]) for c in exact_changes(px)]
    # the records of the bridged call carry its id exactly (they had null: test_bridge_record_details.py)
    assert records == [
        ("s2c", "", "answer-locally", "LC-initialize", 0),
        ("s2c", "header:Mcp-Session-Id", "synthesize", "TR-session-id", 0),
        ("c2s", "", "drop-message", "LC-initialized", None),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1protocolVersion", "synthesize", "META-protocolVersion", BIG),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1clientCapabilities", "synthesize", "META-clientCapabilities", BIG),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1clientInfo", "synthesize", "META-clientInfo", BIG),
        ("c2s", "header:MCP-Protocol-Version", "synthesize", "TR-protocol-version-header", BIG),
        ("c2s", "header:Mcp-Method", "synthesize", "TR-mcp-method-name", BIG),
        ("c2s", "header:Mcp-Name", "synthesize", "TR-mcp-method-name", BIG),
        ("c2s", "header:Mcp-Session-Id", "drop", "TR-session-id", BIG),
        ("s2c", "/result/resultType", "drop", "RES-resultType", BIG),
    ]


def test_client2026_bridge_keeps_a_big_id_exact(legacy, tmp_path):
    with Proxy(f"http://127.0.0.1:{legacy}", tmp_path) as px:
        client = Client(px.port)
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "big26", "version": "1"}}
        req = json.dumps({"jsonrpc": "2.0", "id": BIG, "method": "tools/call",
                          "params": {"name": "x", "arguments": {}, "_meta": meta}}, separators=(",", ":")).encode()
        status, _, body = client.post(None, raw=req, extra={"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
                                                            "mcp-name": "x"})
        client.close()
    assert status == 200
    assert body == b'{"jsonrpc":"2.0","id":' + BIG_BYTES + b',' + RESULT + b',"resultType":"complete"}}'
    call = json.loads(Legacy.seen[-1])
    assert call["method"] == "tools/call" and call["id"].startswith("mcpx-")
    records = [(c["direction"], c["pointer"], c["action"], c["rule"], c["jsonrpc_id"]) for c in exact_changes(px)]
    assert records == [
        ("c2s", "", "bridge", "LC-initialize", None),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1protocolVersion", "drop", "META-protocolVersion", call["id"]),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1clientCapabilities", "drop", "META-clientCapabilities", call["id"]),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1clientInfo", "drop", "META-clientInfo", call["id"]),
        ("s2c", "/result/resultType", "synthesize", "RES-resultType", BIG),  # under the client's id, exact
    ]
