"""Records of the legacy-client bridge (a 2025-03-26 client in front of a scripted 2026-07-28-only
server), through the real mitmdump: exact answers, exact records.

- An empty batch ``[]``: answered 202 by mcpx, nothing sent to the server. Before, its one record was
  a ``passthrough`` ("body holds no JSON-RPC 2.0 message"), as if the body had gone on to the server;
  now ``answer-locally`` / ``RPC-batch-request``, as the bridge records a batch member it answers
  itself. A body that holds no message (``{}``) or does not parse got two records (the held
  ``passthrough`` of the body and the bridge's own "...: answered -32600"): now the bridge's only.
"""
from __future__ import annotations

import json

import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

NEW = "2026-07-28"
INFO = {"name": "scripted-2026", "version": "1"}
BIG = 18446744073709551616  # 2**64: orjson refuses it, the standard library reads it exactly


class Only2026(ScriptedMcpHandler):
    """server/discover; tools/call answered with one text block (ids echoed exactly: stdlib json)."""

    seen: list = []

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["content-length"]))
        body = json.loads(raw)
        self.seen.append(raw)
        rid = body.get("id")
        if body.get("method") == "server/discover":
            out = {"jsonrpc": "2.0", "id": rid, "result": {
                "supportedVersions": [NEW], "capabilities": {"tools": {}}, "resultType": "complete", "ttlMs": 0,
                "cacheScope": "private", "_meta": {"io.modelcontextprotocol/serverInfo": INFO}}}
        else:
            out = {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "fine"}], "resultType": "complete"}}
        self.send_json(json.dumps(out, separators=(",", ":")).encode())


@pytest.fixture
def server():
    yield from serve(Only2026, "seen")


def exact_changes(px: Proxy) -> list[dict]:
    """The JSON Lines log read with the standard library (integers exact)."""
    return [json.loads(line) for line in px.log_path.read_bytes().splitlines() if line.strip()] if px.log_path.exists() else []


@pytest.mark.parametrize("body", [b"[]", b"[ ]"])
def test_an_empty_batch_is_recorded_as_answered_by_mcpx(server, tmp_path, body):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False, options={"mcpx_server_era": "2026"}) as px:
        c = Client(px.port)
        c.initialize("2025-03-26")
        n, sent = len(px.changes()), len(Only2026.seen)
        status, headers, answer = c.post(None, raw=body)
        assert (status, answer, headers["mcp-session-id"]) == (202, b"", c.session)
        assert Only2026.seen[sent:] == []  # nothing reaches the server
        recs = px.changes()[n:]
        c.close()
    assert [(r["direction"], r["session"], r["jsonrpc_id"], r["pointer"], r["action"], r["rule"], r["detail"], r["from_rev"], r["to_rev"])
            for r in recs] == [
        ("c2s", px.handle(c.session), None, "", "answer-locally", "RPC-batch-request",
         "empty batch: no message to send to the server; answered 202 by mcpx", "2025-03-26", NEW)]


@pytest.mark.parametrize("body,why", [
    (b"{}", "body holds no JSON-RPC 2.0 message: answered -32600"),
    (b"[5]", "body holds no JSON-RPC 2.0 message: answered -32600"),
])
def test_a_body_without_a_message_gets_the_bridges_record_only(server, tmp_path, body, why):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False, options={"mcpx_server_era": "2026"}) as px:
        c = Client(px.port)
        c.initialize("2025-03-26")
        n = len(px.changes())
        status, _, answer = c.post(None, raw=body)
        invalid = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}'
        assert (status, answer) == ((400, invalid) if body == b"{}" else (200, b"[" + invalid + b"]"))
        recs = px.changes()[n:]
        c.close()
    assert [(r["direction"], r["action"], r["rule"], r["detail"]) for r in recs] == [
        ("c2s", "passthrough", "PASSTHROUGH-error", why)]

