"""A split batch whose members' answers are not all plain JSON responses (found by an adversarial
review of addons/actions.py split_batch), through the real mitmdump: a 2025-03-26 client (pinned)
in front of a 2025-06-18 server, which has no batches, so mcpx POSTs each member alone.

- id 1: a JSON result, delivered as its own bytes;
- id 2: ``500 <html>``: the client gets a JSON-RPC error -32603 naming HTTP 500 and why, one record;
- id 3: an SSE answer with a notifications/message before the result: the result is delivered, the
  notification cannot be (a batch response holds only responses): a drop-message record;
- id 4: truncated JSON: as id 2.
"""
from __future__ import annotations

import json

import pytest

from proxy_lib import Client, orjson_error, Proxy, ScriptedMcpHandler, serve

NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"p"}}'


class Handler(ScriptedMcpHandler):
    SERVER_INFO = {"name": "splitter", "version": "1"}
    SESSION = "split-1"
    REVISION = "2025-06-18"

    def answer(self, body):
        if "id" not in body:
            self.send_accepted()
            return
        rid = body["id"]
        if rid == 1:
            self.send_json(b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}]}}')
        elif rid == 2:
            out = b"<html>oops</html>"
            self.send_response(500)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
        elif rid == 3:
            self.start_sse()
            self.chunk(b"event: message\ndata: " + NOTE + b"\n\n")
            self.chunk(b'event: message\ndata: {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"c"}]}}\n\n')
            self.chunk(b"")
        else:
            self.send_json(b'{"jsonrpc":"2.0","id":4,"result":{"content":[{"ty')


@pytest.fixture
def server():
    yield from serve(Handler)


def test_split_batch_answers_every_member(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_pin": "split-client=2025-03-26"}) as px:
        client = Client(px.port)
        assert client.initialize("2025-06-18", name="split-client")["protocolVersion"] == "2025-03-26"
        calls = [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "x", "arguments": {}}} for i in (1, 2, 3, 4)]
        status, _, body = client.post(calls)
        client.close()
    assert status == 200
    truncated = "body is not valid JSON: " + orjson_error(b'{"jsonrpc":"2.0","id":4,"result":{"content":[{"ty')
    html = "body is not valid JSON: " + orjson_error(b"<html>oops</html>")
    assert json.loads(body) == [
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "a"}]}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "mcpx: the server answered this batch member with "
                                              f"HTTP 500 (text/html), which mcpx could not read as its answer: {html}"}},
        {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "c"}]}},
        {"jsonrpc": "2.0", "id": 4, "error": {"code": -32603, "message": "mcpx: the server answered this batch member with "
                                              f"HTTP 200 (application/json), which mcpx could not read as its answer: {truncated}"}},
    ]
    assert body.startswith(b'[{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}]}},')
    records = [(c["direction"], c["pointer"], c["action"], c["rule"], c["before"], c["detail"]) for c in px.changes()]
    header = ("c2s", "header:MCP-Protocol-Version", "synthesize", "TR-protocol-version-header", None, None)
    batch_only = ("sent on the SSE answer of a split batch's member: a batch response array holds only responses "
                  "(JSON-RPC 2.0; 2025-03-26 JSONRPCBatchResponse)")
    assert [(c["jsonrpc_id"], c["method"]) for c in px.changes() if c["rule"].startswith("RPC-batch-re")] == [
        (None, None), (2, "tools/call"), (None, "notifications/message"), (4, "tools/call")]
    assert records == [
        ("s2c", "/result/protocolVersion", "rewrite", "MCPX-pin", '"2025-06-18"', "session pinned to an older revision by mcpx.pin"),
        header,  # notifications/initialized
        header,  # the batch
        ("c2s", "", "split", "RPC-batch-request", "batch of 4 messages", "JSON-RPC batch split: the server revision has no batches"),
        ("s2c", "", "answer-locally", "RPC-batch-request", None, f"batch member id=2: HTTP 500 (text/html), {html}: "
         "answered -32603 in the batch response"),
        ("s2c", "", "drop-message", "RPC-batch-response", "notifications/message", batch_only),
        ("s2c", "", "answer-locally", "RPC-batch-request", None, f"batch member id=4: HTTP 200 (application/json), {truncated}: "
         "answered -32603 in the batch response"),
    ]
