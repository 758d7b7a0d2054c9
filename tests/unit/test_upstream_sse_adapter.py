"""The upstream HTTP+SSE stage's adapter decisions, sans-IO: the probe's verdict cache
(addon/mcpx_core/transport/upstream_sse/verdicts.py: per origin and path, bounded, least recently used
first out; a server that is not HTTP+SSE costs one probe per path, 2025-03-26 transports "Backwards
compatibility") and the answer to a client POST (wire.answer, 2025-03-26 "Streamable HTTP" 2.1.5)."""
from __future__ import annotations

import pytest

from mcpx_core.transport.upstream_sse import wire
from mcpx_core.transport.upstream_sse.verdicts import VERDICT_LIMIT, Verdicts, key

O = "http://127.0.0.1:8000"


def test_the_key_is_origin_and_path_without_query():
    assert key("HTTP://Example.com:81/sse?a=1") == ("http", "example.com:81", "/sse")
    assert key("http://h") == ("http", "h", "/")


def test_a_server_that_is_not_http_sse_costs_one_probe_per_path():
    v = Verdicts()
    paths = wire.probe_paths("/mcp", {})
    assert v.to_probe(O, paths) == (None, ["/mcp", "/sse"])
    v.put(O + "/mcp", False)
    v.put(O + "/sse", False)
    assert v.to_probe(O, paths) == (None, [])
    assert v.to_probe("http://127.0.0.1:8001", paths) == (None, ["/mcp", "/sse"])


def test_a_known_http_sse_path_is_used_without_a_probe():
    v = Verdicts()
    v.put(O + "/mcp", False)
    v.put(O + "/sse", True)
    assert v.to_probe(O, ["/mcp", "/sse"]) == ("/sse", [])
    assert v.to_probe(O, ["/sse"]) == ("/sse", [])


def test_the_cache_is_bounded_least_recently_used_out():
    v = Verdicts(limit=2)
    v.put(O + "/a", False)
    v.put(O + "/b", True)
    assert v.get(O + "/a") is False  # /a is now the most recent
    v.put(O + "/c", False)
    assert len(v) == 2
    assert (v.get(O + "/a"), v.get(O + "/b"), v.get(O + "/c")) == (False, None, False)
    assert VERDICT_LIMIT == 1024
    with pytest.raises(ValueError, match="limit must be at least 1"):
        Verdicts(limit=0)


def test_the_answer_to_a_client_post_json_or_sse():
    from mcpx_core.transport.upstream_sse.router import Router
    r = Router()
    p = r.register({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "t", "_meta": {"progressToken": "k"}}}, sse=True)
    r.route({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "k", "progress": 1}})
    r.route({"jsonrpc": "2.0", "id": 1, "result": {"content": []}})
    assert wire.answer(p.out, True) == ("text/event-stream",
        b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"k",'
        b'"progress":1}}\n\nevent: message\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n\n')
    assert wire.answer(p.out, False) == ("application/json", b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}')
