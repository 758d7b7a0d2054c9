"""Records of the legacy-client bridge (a 2025-03-26 client in front of a scripted 2026-07-28-only
server), through the real mitmdump: exact answers, exact records.

- A JSON-RPC id beyond 64 bits (``18446744073709551616``): the bridges read it exactly
  (json_body.ExactInt), and answer under it; their records had a null ``jsonrpc_id``. Now they carry
  it, written exactly in the JSON Lines log (read here with the standard library: orjson would read
  it as a float) and as an int in the flow's records (``-w`` files, views).
- An empty batch ``[]``: answered 202 by mcpx, nothing sent to the server. Before, its one record was
  a ``passthrough`` ("body holds no JSON-RPC 2.0 message"), as if the body had gone on to the server;
  now ``answer-locally`` / ``RPC-batch-request``, as the bridge records a batch member it answers
  itself. A body that holds no message (``{}``) or does not parse got two records (the held
  ``passthrough`` of the body and the bridge's own "...: answered -32600"): now the bridge's only.
- A JSON-RPC id beyond 64 bits (``18446744073709551616``): the bridges read it exactly
  (json_body.ExactInt), and answer under it; their records had a null ``jsonrpc_id``. Now they carry
  it, written exactly in the JSON Lines log (read here with the standard library: orjson would read
  it as a float).
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


def test_records_of_bridged_answers_carry_an_id_beyond_64_bits(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_server_era": "2026"}) as px:
        c = Client(px.port)
        c.initialize("2025-03-26")
        n, sent = len(px.changes()), len(Only2026.seen)
        call = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x","arguments":{}}}' % BIG
        status, _, answer = c.post(None, raw=call)
        assert (status, answer) == (200, b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"fine"}]}}' % BIG)
        assert json.loads(Only2026.seen[sent])["id"] == BIG  # the server got the id exactly
        status, _, answer = c.post(None, raw=b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % BIG)
        assert (status, answer) == (200, b'{"jsonrpc":"2.0","id":%d,"result":{}}' % BIG)
        recs = exact_changes(px)[n:]
        c.close()
    got = [(r["direction"], r["jsonrpc_id"], r["method"], r["pointer"], r["action"], r["rule"]) for r in recs]
    # every record of the call and of the ping carries the id (the header records name the request too)
    assert {r[1] for r in got} == {BIG}, got
    assert ("s2c", BIG, "tools/call", "/result/resultType", "drop", "RES-resultType") in got
    assert ("c2s", BIG, "ping", "", "answer-locally", "LC-ping") in got
    # orjson reads the log line too (mcpx's own readers, the test helpers): the id as a number, not an error
    assert all(isinstance(r["jsonrpc_id"], float) for r in px.changes()[n:])
    # the flows mitmdump wrote (-w) keep the records with the id as an int, and the message entries too
    kept = [(c["jsonrpc_id"], c["rule"]) for f in px.flows() for c in f.metadata.get("mcpx", {}).get("changes", [])
            if c["rule"] in ("RES-resultType", "LC-ping")]
    assert kept == [(BIG, "RES-resultType"), (BIG, "LC-ping")]
    ids = {m["id"] for f in px.flows() for m in f.metadata.get("mcpx", {}).get("messages", []) if m.get("method") in ("tools/call", "ping")}
    assert ids == {BIG}
