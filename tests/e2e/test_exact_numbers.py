"""Integers beyond 64 bits reach the receiver exactly, through the real mitmdump, also in what
mcpx writes itself (found by an adversarial review of issue 7's fast paths).

orjson reads such an integer as a float; written again it would be another number. The upstream is
a scripted loopback server (stdlib HTTP) at 2025-06-18 with one 30-digit integer in its answers.
- A 2025-03-26 batch is split into single POSTs and mcpx re-assembles the answers: each answer is
  joined as its own bytes (one as JSON, one as an SSE event), never re-serialised.
- An answer that needs a change but holds such an integer passes through untouched, with a record.
- A request the server's revision lacks, whose id is such an integer, is not answered by mcpx
  (it could not echo the id): it goes to the server untouched.
"""
from __future__ import annotations

import json

import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

BIG = 123456789012345678901234567890
BIG_BYTES = b"123456789012345678901234567890"


class Handler(ScriptedMcpHandler):
    SERVER_INFO = {"name": "bigint", "version": "1"}
    SESSION = "bigint-1"
    REVISION = "2025-06-18"
    seen: list = []

    def answer(self, body):
        Handler.seen.append(json.dumps(body))
        if "id" not in body:
            self.send_accepted()
            return
        meta = ('"_meta":{"n":%d}' % BIG).encode()
        if body.get("method") == "tasks/get":  # a 2024-11-05 server would not know it
            out = b'{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}' % json.dumps(body["id"]).encode()
        elif body["id"] == 1:  # nothing to change for a 2025-03-26 client
            out = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}],' + meta + b"}}"
        else:  # lastModified is not 2025-03-26: a change, in a message holding BIG
            out = (b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"b","annotations":'
                   b'{"lastModified":"2025-01-12T15:00:58Z"}}],' + meta + b"}}")
        if body["id"] == 2:
            self.start_sse()
            self.chunk(b"event: message\ndata: " + out + b"\n\n")
            self.chunk(b"")
            return
        self.send_json(out)


@pytest.fixture
def server():
    yield from serve(Handler, "seen")


def test_big_integers_survive_batch_reassembly_and_local_answers(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_pin": "bigint-client=2025-03-26"}) as px:
        client = Client(px.port)
        assert client.initialize("2025-06-18", name="bigint-client")["protocolVersion"] == "2025-03-26"
        calls = [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "x", "arguments": {}}} for i in (1, 2)]
        _, _, body = client.post(calls)
        assert body.count(BIG_BYTES) == 2
        answers = json.loads(body)  # stdlib json: exact integers
        assert [a["result"]["_meta"]["n"] for a in answers] == [BIG, BIG]
        assert answers[1]["result"]["content"][0]["annotations"] == {"lastModified": "2025-01-12T15:00:58Z"}  # untouched
        req = b'{"jsonrpc":"2.0","id":%s,"method":"tasks/get","params":{"taskId":"t"}}' % BIG_BYTES
        _, _, answer = client.post(None, raw=req)
        assert json.loads(answer) == {"jsonrpc": "2.0", "id": BIG, "error": {"code": -32601, "message": "Method not found"}}
        client.close()
    assert json.loads(Handler.seen[-1])["id"] == BIG  # the server got the request, id exact
    records = [(c["direction"], c["pointer"], c["action"], c["rule"], c["detail"]) for c in px.changes()]
    inexact = ("holds an integer outside [-2**63, 2**64): re-serialised it would change value; "
               "forwarded untouched: no change recorded before this record for it was applied")
    # the pinned 2025-03-26 client leg sends no MCP-Protocol-Version: each POST gets the server's (2025-06-18)
    header = ("c2s", "header:MCP-Protocol-Version", "synthesize", "TR-protocol-version-header", None)
    assert records == [
        ("s2c", "/result/protocolVersion", "rewrite", "MCPX-pin", "session pinned to an older revision by mcpx.pin"),
        header,  # notifications/initialized
        header,  # the batch (its members go out with it)
        ("c2s", "", "split", "RPC-batch-request", "JSON-RPC batch split: the server revision has no batches"),
        ("s2c", "/result/content/0/annotations/lastModified", "drop", "ANN-lastModified", None),
        ("s2c", "", "passthrough", "PASSTHROUGH-error", "SSE event: " + inexact),
        header,  # tasks/get
        ("c2s", "/id", "passthrough", "PASSTHROUGH-error", f"request id {inexact}; not answered by mcpx"),
    ]
