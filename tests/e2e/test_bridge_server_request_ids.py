"""A legacy server that sends, during one call, two requests whose ids are 1 and "1" (distinct
JSON-RPC ids): a 2026-07-28 client gets both as inputRequests entries under distinct keys, and its
retry answers each under its own id. Before, both got the key ``mcpx:1``: the second replaced the
first, which was never answered, and the server waited for it.

Through the real mitmdump, against a scripted legacy server; exact bytes on both legs, exact records."""
from __future__ import annotations

import json
import threading

import orjson
import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

NEW = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": NEW, "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "roots": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"}}
SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}


class Legacy(ScriptedMcpHandler):
    """A 2025-11-25 server: tools/call sends sampling/createMessage id 1 and roots/list id "1", waits
    (up to 10 s) for both answers, then the result naming what it got."""

    REVISION = "2025-11-25"
    seen: list = []
    answers: dict = {}
    both = threading.Event()

    def answer(self, body):
        self.seen.append(body)
        if "method" not in body:  # an answer to one of the server's requests
            self.answers[json.dumps(body["id"])] = body.get("result")
            if len(self.answers) == 2:
                self.both.set()
            self.send_accepted()
            return
        if "id" not in body:
            self.send_accepted()
            return
        self.start_sse()
        self.chunk(b'event: message\ndata: ' + orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": SAMPLE}) + b'\n\n')
        self.chunk(b'event: message\ndata: {"jsonrpc":"2.0","id":"1","method":"roots/list"}\n\n')
        self.both.wait(10)
        text = "got " + " and ".join(sorted(self.answers))
        self.chunk(b'event: message\ndata: ' + orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
            "content": [{"type": "text", "text": text}]}}) + b'\n\n')
        self.chunk(b"")
        self.close_connection = True


@pytest.fixture
def server():
    Legacy.both.clear()
    Legacy.answers.clear()
    yield from serve(Legacy, "seen")


def test_server_request_ids_1_and_string_1_both_reach_the_client(server, tmp_path):
    hdrs = {"mcp-protocol-version": NEW, "mcp-method": "tools/call", "mcp-name": "t"}
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        c = Client(px.port)
        st, _, body = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}, "_meta": META}}, hdrs)
        first = orjson.loads(body)
        state = first["result"]["requestState"]
        assert st == 200 and first == {"jsonrpc": "2.0", "id": 1, "result": {
            "resultType": "input_required",
            "inputRequests": {"mcpx:1": {"method": "sampling/createMessage", "params": SAMPLE}, "mcpx:1'": {"method": "roots/list"}},
            "requestState": state, "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}}}}
        sampled = {"role": "assistant", "content": {"type": "text", "text": "yo"}, "model": "m"}
        st, _, body = c.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "t", "arguments": {}, "_meta": META, "requestState": state,
            "inputResponses": {"mcpx:1": sampled, "mcpx:1'": {"roots": []}}}}, hdrs)
        recs = [(r["direction"], r["pointer"], r["action"], r["rule"]) for r in px.changes() if r["rule"].startswith("MRTR")]
    assert (st, body) == (200, b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"got \\"1\\" and 1"}],'
                                b'"resultType":"complete"}}')
    assert [m for m in Legacy.seen if "method" not in m] == [
        {"jsonrpc": "2.0", "id": 1, "result": sampled}, {"jsonrpc": "2.0", "id": "1", "result": {"roots": []}}]
    assert recs == [
        ("s2c", "", "rewrite", "MRTR-embedded-requests"),
        ("s2c", "", "rewrite", "MRTR-embedded-requests"),
        ("s2c", "/result", "bridge", "MRTR-bridge-legacy-server"),
        ("c2s", "/params/inputResponses/mcpx:1", "bridge", "MRTR-bridge-legacy-server"),
        ("c2s", "/params/inputResponses/mcpx:1'", "bridge", "MRTR-bridge-legacy-server"),
    ]
