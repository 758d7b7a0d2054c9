"""The four repair cases (shared/cases B17, B18, B21, B23) through the real mitmdump, in one live
session each, exactly as a client and a server see them (issue 14).

The upstream is a scripted loopback server (stdlib HTTP) that answers with the cases' bodies and
records every body it receives; the client is a raw JSON-RPC client (tests/proxy_lib.Client), so
every byte on both legs is the test's. In the 2025-06-18 session:

- tools/list -> B17's body: the client gets ``"properties": {}``;
- tools/call list_regions with B18's ``"arguments": []``: the server gets ``{}``;
- tools/call book_table: the server's SSE answer carries its elicitation/create (id 1), a
  notifications/elicitation/complete (2025-11-25 only: not delivered, its ``id:`` is) and the
  result; then the client answers the elicitation with B23's body: the server gets it without
  ``"content": null``;
- a body mcpx cannot repair (``"properties": ["a"]``) reaches the client byte for byte.

A 2026-07-28 request (no session) gets B21's list with ``ttlMs`` 0 and ``cacheScope`` "private":
the scripted server speaks both eras (``mcpx_server_era=dual``: mcpx sends it no probe and bridges
nothing), so both legs are 2026-07-28 and the repair is mcpx's only change.
"""
from __future__ import annotations

import json

import orjson
import pytest

from conftest import load_cases
from proxy_lib import Client, Proxy, ScriptedMcpHandler, sse_events, serve

CASES = {c["id"]: c for c in load_cases()}
BAD_LIST = b'{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","inputSchema":{"type":"object","properties":["a"]}}]}}'
ELICIT = {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create",
          "params": {"message": "Cancel the booking?", "requestedSchema": {"type": "object", "properties": {}}}}
COMPLETE = {"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": "el-1"}}


def case_body(cid: str, rid) -> bytes:
    """The case's input body with the JSON-RPC id of the request it answers."""
    msg = orjson.loads(CASES[cid]["input"]["body"])
    return CASES[cid]["input"]["body"].encode().replace(b'"id":%d' % msg["id"], b'"id":' + json.dumps(rid).encode(), 1)


class Handler(ScriptedMcpHandler):
    SERVER_INFO = {"name": "php-ish", "version": "1"}
    SESSION = "php-1"
    REVISION = "2025-06-18"
    received: list[bytes] = []

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["content-length"]))
        Handler.received.append(raw)
        body = json.loads(raw)
        if body.get("method") == "initialize":
            out = orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": self.REVISION, "capabilities": {"tools": {}}, "serverInfo": self.SERVER_INFO}})
            self.send_json(out, {"mcp-session-id": self.SESSION})
            return
        self.answer(body)

    def answer(self, body):
        if "id" not in body or "method" not in body:  # a notification, or the client's answer to a request
            self.send_accepted()
            return
        rid, method = body["id"], body["method"]
        rev26 = (body.get("params") or {}).get("_meta", {}).get("io.modelcontextprotocol/protocolVersion") == "2026-07-28"
        name = (body.get("params") or {}).get("name")
        if method == "tools/list" and rev26:
            out = case_body("B21", rid)
        elif method == "tools/list" and (body.get("params") or {}).get("cursor") == "bad":
            out = BAD_LIST % json.dumps(rid).encode()
        elif method == "tools/list":
            out = case_body("B17", rid)
        elif name == "book_table":
            self.start_sse()
            self.chunk(b"event: message\nid: ev-1\ndata: " + orjson.dumps(ELICIT) + b"\n\n")
            self.chunk(b"event: message\nid: ev-2\ndata: " + orjson.dumps(COMPLETE) + b"\n\n")
            result = {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "cancelled"}]}}
            self.chunk(b"event: message\nid: ev-3\ndata: " + orjson.dumps(result) + b"\n\n")
            self.chunk(b"")
            return
        else:
            out = orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "eu-west"}]}})
        self.send_json(out)


@pytest.fixture
def server():
    yield from serve(Handler, "received")


def test_repair_cases_live(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_server_era": "dual"}) as px:
        client = Client(px.port)
        assert client.initialize("2025-06-18", name="php-client")["protocolVersion"] == "2025-06-18"

        # B17: s2c tools/list, [] for an object
        status, _, body = client.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert status == 200 and orjson.loads(body) == CASES["B17"]["expected"]["body_json"]

        # B18: c2s tools/call with "arguments": []
        status, _, _ = client.post(None, raw=CASES["B18"]["input"]["body"].encode())
        assert status == 200 and Handler.received[-1] == CASES["B18"]["input"]["body"].encode().replace(b"[]", b"{}")
        assert orjson.loads(Handler.received[-1]) == CASES["B18"]["expected"]["body_json"]

        # B23: the server's elicitation/create on the SSE answer of a tools/call, then the client's answer
        status, headers, body = client.post({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "book_table", "arguments": {}}})
        events = sse_events(body)
        assert [(e["id"], e["data"] and json.loads(e["data"]).get("method")) for e in events] == \
            [("ev-1", "elicitation/create"), ("ev-2", None), ("ev-3", None)]
        assert events[1]["data"] is None  # not delivered to a 2025-06-18 client; its id is (the last event id stays exact)
        assert b": mcpx: message not delivered to this client revision\nid: ev-2\n\n" in body
        status, _, _ = client.post(None, raw=CASES["B23"]["input"]["body"].encode())
        assert status == 202 and Handler.received[-1] == b'{"jsonrpc":"2.0","id":1,"result":{"action":"cancel"}}'
        assert orjson.loads(Handler.received[-1]) == CASES["B23"]["expected"]["body_json"]

        # beyond repair: byte for byte, with its record
        status, _, body = client.post({"jsonrpc": "2.0", "id": 11, "method": "tools/list", "params": {"cursor": "bad"}})
        assert body == BAD_LIST % b"11"
        client.close()

        # B21: a 2026-07-28 client (no session), a 2026-07-28 server
        c26 = Client(px.port, headers={"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"})
        status, _, body = c26.post({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}})
        assert status == 200 and orjson.loads(body) == CASES["B21"]["expected"]["body_json"]
        c26.close()
    records = [(c["direction"], c["jsonrpc_id"], c["method"], c["pointer"], c["action"], c["rule"]) for c in px.changes()]
    assert records == [
        ("s2c", 2, "tools/list", "/result/tools/0/inputSchema/properties", "repair", "REPAIR-empty-array-object"),
        ("c2s", 3, "tools/call", "/params/arguments", "repair", "REPAIR-empty-array-object"),
        ("s2c", None, "notifications/elicitation/complete", "", "drop-message", "ELIC-complete-notification"),
        ("c2s", 1, "elicitation/create", "/result/content", "repair", "REPAIR-null-optional"),
        ("s2c", 11, "tools/list", "/result/tools/0/inputSchema/properties", "keep", "REPAIR-invalid"),
        ("s2c", 5, "tools/list", "/result/ttlMs", "repair", "REPAIR-required-default"),
        ("s2c", 5, "tools/list", "/result/cacheScope", "repair", "REPAIR-required-default"),
    ]
