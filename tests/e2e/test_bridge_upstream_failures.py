"""A 2026-07-28 client in front of a legacy server whose answer to a call fails (found by an
adversarial review of bridge/client2026.py), through the real mitmdump:

- the server closes the connection: the client gets 502 with a JSON-RPC error under its id, one
  passthrough record, and mitmdump prints one warning line, not a traceback;
- the server answers truncated JSON: the client gets those bytes with its own id where the body named
  mcpx's (``mcpx-<n>``), and a passthrough record says so;
- the server answers an HTML error page (a gateway in front of it): the client gets it as it came, its
  status and Content-Type, and a passthrough record says so.
"""
from __future__ import annotations

import json

import pytest

from proxy_lib import Client, orjson_error, Proxy, ScriptedMcpHandler, serve

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "fail26", "version": "1"}}
HEADERS = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "x"}


class Legacy(ScriptedMcpHandler):
    """A 2025-11-25 server: tools/call "close" closes the connection, "html" answers an HTML error page
    (502), "cut" answers truncated JSON."""

    SESSION = "legacy-f"
    REVISION = "2025-11-25"
    seen: list = []

    def answer(self, body):
        Legacy.seen.append(body)
        if "id" not in body:
            self.send_accepted()
            return
        rid = json.dumps(body["id"]).encode()
        if body.get("method") == "tools/list":  # forwarded on the client's own flow (not a call mcpx holds)
            self.send_json(b'{"jsonrpc":"2.0","id":' + rid + b',"result":{"tools":[{"na')
        elif body.get("method") != "tools/call":
            self.send_json(b'{"jsonrpc":"2.0","id":' + rid + b',"error":{"code":-32601,"message":"Method not found"}}', status=400)
        elif body["params"]["name"] == "html":
            page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
            self.send_response(502)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
        elif body["params"]["name"] == "close":
            self.close_connection = True
            self.connection.shutdown(2)
        else:
            self.send_json(b'{"jsonrpc":"2.0","id":' + rid + b',"result":{"content":[{"ty')


@pytest.fixture
def server():
    yield from serve(Legacy, "seen")


def _call(client, rid, name):
    msg = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": {}, "_meta": META}}
    return client.post(msg, extra={**HEADERS, "mcp-name": name})


def test_upstream_close_and_truncated_answer(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path) as px:
        client = Client(px.port)
        status, headers, body = _call(client, 1, "close")
        assert status == 502
        answer = json.loads(body)
        assert answer["id"] == 1 and answer["error"]["code"] == -32603
        assert answer["error"]["message"].startswith("mcpx could not reach the server: ")
        closed_id = Legacy.seen[-1]["id"]
        status, headers, body = _call(client, 7, "cut")
        cut_id = Legacy.seen[-1]["id"]
        listed = client.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"_meta": META}},
                             extra={"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"})
        list_id = Legacy.seen[-1]["id"]
        client.close()
        out = px.output()
    assert status == 200 and headers["content-type"] == "application/json"
    assert body == b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"ty'
    assert closed_id.startswith("mcpx-") and cut_id.startswith("mcpx-") and list_id.startswith("mcpx-")
    assert listed[0] == 200 and listed[2] == b'{"jsonrpc":"2.0","id":9,"result":{"tools":[{"na'
    assert "Traceback" not in out
    warnings = [line for line in out.splitlines() if "bridge client2026: the server did not answer" in line]
    assert len(warnings) == 1, out
    records = [(c["direction"], c["pointer"], c["action"], c["rule"], c["detail"]) for c in px.changes()]
    reason = answer["error"]["message"].removeprefix("mcpx could not reach the server: ")
    assert records == [
        ("c2s", "", "bridge", "LC-initialize", "initialize and notifications/initialized sent upstream for a 2026-07-28 client"),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1protocolVersion", "drop", "META-protocolVersion", None),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1clientCapabilities", "drop", "META-clientCapabilities", None),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1clientInfo", "drop", "META-clientInfo", None),
        ("c2s", "", "passthrough", "PASSTHROUGH-error", f"bridge client2026: upstream request failed: {reason}"),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1protocolVersion", "drop", "META-protocolVersion", None),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1clientCapabilities", "drop", "META-clientCapabilities", None),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1clientInfo", "drop", "META-clientInfo", None),
        ("s2c", "", "passthrough", "PASSTHROUGH-error", "the server's answer (HTTP 200) holds no JSON-RPC response mcpx can read: "
         "forwarded as it came; mcpx's id in it mapped back to the client's"),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1protocolVersion", "drop", "META-protocolVersion", None),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1clientCapabilities", "drop", "META-clientCapabilities", None),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1clientInfo", "drop", "META-clientInfo", None),
        ("c2s", "header:MCP-Protocol-Version", "rewrite", "TR-protocol-version-header", None),  # the client's flow goes on
        ("c2s", "header:mcp-method", "drop", "TR-mcp-method-name", None),
        ("s2c", "", "passthrough", "PASSTHROUGH-error", "body is not valid JSON: " + orjson_error(b'{"jsonrpc":"2.0","id":'
         + json.dumps(list_id).encode() + b',"result":{"tools":[{"na')),
        ("s2c", "/id", "rewrite", "RPC-request-id-reuse", "the id mcpx gave the server, mapped back in a body mcpx cannot parse"),
    ]


def test_an_html_error_page_reaches_the_client_as_it_came(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path) as px:
        client = Client(px.port)
        status, headers, body = _call(client, 3, "html")
        client.close()
        records = [(c["direction"], c["action"], c["rule"], c["detail"]) for c in px.changes() if c["action"] == "passthrough"]
    assert (status, headers["content-type"], body) == (502, "text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>")
    assert Legacy.seen[-1]["id"].startswith("mcpx-")  # (the call went upstream under mcpx's own id)
    assert records == [("s2c", "passthrough", "PASSTHROUGH-error",
                        "the server's answer (HTTP 502) holds no JSON-RPC response mcpx can read: forwarded as it came")]
