"""No client waits for another client's big result (issue 30): while mcpx rewrites a large JSON body
for one client (in its worker thread, addons/worker.py), another client's small call goes through.

Upstream: a scripted loopback server (stdlib HTTP) at 2025-06-18, for what the test is about: the
timing of two calls. Its ``big`` tool answers with a 9 MB result of 300,000 text blocks and a
``structuredContent``, and tells the test when it has written it; its ``small`` tool answers at
once. Two 2025-03-26 clients, each in its own session: the first calls ``big``; once the server has
written that answer, the second calls ``small``, and gets its answer before the first gets the
headers of its own (mcpx is still rewriting it: through main before this change, the small call
waited for the whole rewrite). Both answers are exact: the big one as rewritten for 2025-03-26
(``structuredContent`` becomes a text block, schema/2025-03-26 has no ``structuredContent``), with
its three records.
"""
from __future__ import annotations

import http.client
import threading
import time

import orjson
import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

BLOCKS = 300_000
CONTENT = b",".join(b'{"type":"text","text":"%06d"}' % i for i in range(BLOCKS))
BIG = b'{"jsonrpc":"2.0","id":1,"result":{"content":[' + CONTENT + b'],"structuredContent":{"hits":300000},"isError":false}}'
SMALL = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "small"}], "isError": False}}


class Handler(ScriptedMcpHandler):
    SERVER_INFO = {"name": "big-and-small", "version": "1"}
    REVISION = "2025-06-18"
    seen: list = []
    written = threading.Event()

    def answer(self, body):
        Handler.seen.append((self.headers.get("mcp-session-id"), body.get("method"), (body.get("params") or {}).get("name")))
        if body.get("method") != "tools/call":
            self.send_accepted()
        elif body["params"]["name"] == "big":
            self.send_json(BIG, {"mcp-session-id": "big-1"})
            Handler.written.set()
        else:
            self.send_json(orjson.dumps(SMALL))


@pytest.fixture
def server():
    Handler.written.clear()
    yield from serve(Handler, "seen")


def test_a_small_call_is_answered_while_a_big_result_is_rewritten(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False) as px:
        first, second = Client(px.port, timeout=120), Client(px.port)
        assert first.initialize("2025-03-26", name="big")["protocolVersion"] == "2025-03-26"
        assert second.initialize("2025-03-26", name="small")["protocolVersion"] == "2025-03-26"
        got: dict = {}

        def call_big():
            conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=120)
            conn.request("POST", "/mcp", orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                       "params": {"name": "big", "arguments": {}}}), first.headers())
            r = conn.getresponse()
            got["big headers"] = time.perf_counter()
            got["big"] = (r.status, r.read())
            conn.close()
        t = threading.Thread(target=call_big)
        t.start()
        assert Handler.written.wait(60)
        status, _, msgs = second.rpc({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "small", "arguments": {}}})
        small_done = time.perf_counter()
        t.join(120)
        first.close()
        second.close()
    assert (status, msgs) == (200, [SMALL])
    assert small_done < got["big headers"], "the small call waited for the big result's rewrite"
    expected = (b'{"jsonrpc":"2.0","id":1,"result":{"content":[' + CONTENT +
                b',{"type":"text","text":"{\\"hits\\":300000}"}],"isError":false}}')
    assert got["big"] == (200, expected)
    big_session = px.handle(first.session)
    records = [(c["session"], c["direction"], c["pointer"], c["action"], c["rule"]) for c in px.changes()
               if c["method"] == "tools/call"]
    assert records == [(big_session, "s2c", "/result", "audit", "MCPX-audit-dual"),
                       (big_session, "s2c", "/result/content/300000", "rewrite", "SC-structuredContent"),
                       (big_session, "s2c", "/result/structuredContent", "drop", "SC-structuredContent")]
    assert [(m, n) for _, m, n in Handler.seen if m == "tools/call"] == [("tools/call", "big"), ("tools/call", "small")]
