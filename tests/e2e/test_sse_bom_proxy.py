"""A UTF-8 BOM at the start of an SSE answer, through the real mitmdump: kept in front of the first
event when mcpx rewrites it (framing/sse.py ``Event.with_data``; tests/unit/test_sse_bom.py). Before,
the client got the rewritten event without it."""
from __future__ import annotations

import time

import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

BOM = b"\xef\xbb\xbf"
AUDIO = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]}}'
TEXT = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"[audio content omitted: audio/wav, 3 bytes]"}]}}'


class Handler(ScriptedMcpHandler):
    SESSION = "bom-1"

    def answer(self, body):
        if "id" not in body:
            self.send_accepted()
            return
        self.start_sse()
        self.chunk(BOM + b"event: message\ndata: " + AUDIO + b"\n\n")
        self.chunk(b"")


@pytest.fixture
def server():
    yield from serve(Handler)


def test_the_bom_of_an_sse_answer_stays_in_front_of_the_rewritten_event(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False) as px:
        c = Client(px.port)
        c.initialize("2024-11-05")
        status, headers, body = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}}})
        c.close()
        deadline = time.monotonic() + 10
        while not px.changes() and time.monotonic() < deadline:
            time.sleep(0.05)
        recs = px.changes()
    assert (status, headers["content-type"]) == (200, "text/event-stream")
    assert body == BOM + b"event: message\ndata: " + TEXT + b"\n\n"
    assert [(r["pointer"], r["action"], r["rule"]) for r in recs] == [("/result/content/0", "rewrite", "CT-audio")]
