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
    # a pair of mcpx_upstream_sse names the one path to probe for that POST path; others keep the conventions
    routes = {"/api/mcp": "/events/stream"}
    assert (wire.probe_paths("/api/mcp", routes), wire.probe_paths("/x/mcp/", routes)) == (["/events/stream"], ["/x/mcp/", "/x/sse"])


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


def test_keepalive_comments_on_the_clients_get_stream_until_it_is_replaced_or_closed(monkeypatch):
    """serve._keepalive: a comment every KEEPALIVE seconds on the session's GET stream,
    nothing else; it stops once the client opened another GET stream (the old one gets no more) or it closed."""
    import asyncio
    import types

    import mcpx_core.transport.upstream_sse as pkg
    from mcpx_core.bridge.stream import AnswerStream
    from mcpx_core.transport.upstream_sse.serve import _keepalive
    monkeypatch.setattr(pkg, "KEEPALIVE", 0.01)

    async def go():
        first = AnswerStream("a", [], None)
        us = types.SimpleNamespace(get_stream=first)
        task = asyncio.get_running_loop().create_task(_keepalive(us, first))
        await asyncio.sleep(0.055)
        us.get_stream = second = AnswerStream("b", [], None)  # the client opened another GET stream
        await asyncio.wait_for(task, 1)
        sent = first.delivered
        task = asyncio.get_running_loop().create_task(_keepalive(us, second))
        await asyncio.sleep(0.025)
        second.close()
        await asyncio.wait_for(task, 1)
        return sent, first.delivered, second.delivered
    sent, later, second = asyncio.run(go())
    assert sent == later == wire.KEEPALIVE_COMMENT * sent.count(wire.KEEPALIVE_COMMENT) and sent.count(b":") >= 2
    assert second.count(wire.KEEPALIVE_COMMENT) >= 1 and second == wire.KEEPALIVE_COMMENT * second.count(b":")
    assert wire.KEEPALIVE_COMMENT == b": keepalive\n\n" and pkg.KEEPALIVE == 0.01


def test_a_second_get_stream_ends_the_first_and_loses_no_message(monkeypatch):
    """serve.UpstreamSseTransport._get: one GET stream per session. The server's message that arrives while the
    new stream is being opened is queued for it, not put on the closed one (2025-03-26 transports 2.2: each
    message on one stream only); the old stream ends, the new one gets the message first."""
    import asyncio
    import types

    import mcpx_core.transport.upstream_sse as pkg
    from mcpx_core.bridge.stream import AnswerStream
    from mcpx_core.transport.upstream_sse.serve import UpstreamSession, UpstreamSseTransport
    monkeypatch.setattr(pkg, "KEEPALIVE", 3600)
    changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}

    async def go():
        t = UpstreamSseTransport(state=None)
        us = UpstreamSession(sid="mcpx-sse-x", stream_url="http://h/sse", host="h")
        arrives: list = []

        async def open_(on_close=None):
            for m in arrives:  # the server's message comes while the client's new GET is being served
                us.router.route(m)
                t._flush_get(us)
            return AnswerStream(f"s{len(opened)}", [], on_close)
        opened: list = []

        async def tracked(on_close=None):
            s = await open_(on_close)
            opened.append(s)
            return s
        t.state = types.SimpleNamespace(answers=types.SimpleNamespace(open=tracked))
        first = (await t._get(us)).stream
        arrives.append(changed)
        second = (await t._get(us)).stream
        for task in list(t._tasks):
            task.cancel()
        return first, second, us
    first, second, us = asyncio.run(go())
    assert first.closed and first.delivered == b""
    assert not second.closed and us.get_stream is second
    assert second.delivered == b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n'


def test_the_404_of_a_session_this_process_does_not_hold_answers_the_request_by_its_id():
    """serve._single_request_id: the error carries the id of the one request the POST held (schema/2024-11-05
    JSONRPCError: a string or number id), else null (a notification, a batch, no JSON)."""
    from mcpx_core.transport.upstream_sse.serve import _single_request_id
    assert _single_request_id(b'{"jsonrpc":"2.0","id":3,"method":"tools/list"}') == 3
    assert _single_request_id(b'{"jsonrpc":"2.0","id":"a","method":"ping"}') == "a"
    assert _single_request_id(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') is None
    assert _single_request_id(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]') is None
    assert _single_request_id(b'{"jsonrpc":"2.0","id":1,"result":{}}') is None
    assert _single_request_id(b"not json") is None


def test_a_request_whose_answer_the_stream_could_not_bring_back_is_refused_before_it_is_sent():
    """serve._unmatchable (found by attacking the transport: each of these POSTs waited for ever): an id that is no
    string or integer of at most 64 bits (null, true, 1.0, 1.5, an object, 2**70, which orjson reads as a float),
    or one another POST of the session still waits on, is answered -32600 by mcpx and never registered or sent."""
    from mcpx_core.transport.upstream_sse.router import id_key
    from mcpx_core.transport.upstream_sse.serve import _unmatchable
    bad = "is no string or 64-bit integer"
    for rid, shown in ((None, "null"), (True, "true"), (1.0, "1.0"), (1.5, "1.5"), ({"x": 1}, '{"x":1}'),
                       (1 << 70, "1180591620717411303424"), (-(1 << 63) - 1, "-9223372036854775809")):
        assert _unmatchable([{"id": rid}], {}) == (None, f"request id {shown} {bad}")
    assert _unmatchable([{"id": 1}], {id_key(1): object()}) == (1, "request id 1 is already pending in this session")
    assert _unmatchable([{"id": 2}, {"id": "x"}], {id_key(1): object()}) is None
    for ok in (0, -(1 << 63), (1 << 64) - 1, "1", "a" * 100_000):
        assert _unmatchable([{"id": ok}], {id_key(1): object()}) is None
    assert _unmatchable([{"id": "1"}], {id_key(1): object()}) is None  # "1" and 1 are two ids
