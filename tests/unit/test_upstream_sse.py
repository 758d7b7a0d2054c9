"""The upstream HTTP+SSE stage, sans-IO (addon/mcpx_core/transport/upstream_sse/): which refusal
makes mcpx probe and which paths it GETs, the ``endpoint`` URL as the SDKs resolve it, the probe's
verdict in any cut, the router's choice of stream for each upstream message and its order, and the
lifecycle table (schema/2024-11-05 transports "HTTP with SSE"; 2025-03-26 "Streamable HTTP")."""
from __future__ import annotations

from urllib.parse import urljoin

import pytest

from mcpx_core.transport.upstream_sse import wire
from mcpx_core.transport.upstream_sse.lifecycle import ENDED, TRANSITIONS, UpstreamEvent as E, UpstreamLifecycle, \
    UpstreamState as S, UpstreamStateError
from mcpx_core.transport.upstream_sse.router import GET, Router


# wire ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("method,status,init,expected", [
    ("POST", 405, True, True), ("POST", 400, True, True), ("POST", 404, True, True),
    ("POST", 200, True, False), ("POST", 401, True, False), ("POST", 405, False, False), ("GET", 405, True, False)])
def test_which_refusal_of_a_post_makes_mcpx_probe(method, status, init, expected):
    assert wire.refused_initialize(method, status, init) is expected


@pytest.mark.parametrize("body,expected", [
    (b"Method Not Allowed", False),  # PyPI mcp 1.8.1 FastMCP (transport="sse"), POST /sse
    (b"Not Found", False),
    (b"<!DOCTYPE html><html><body><pre>Cannot POST /sse</pre></body></html>", False),  # the npm everything server
    (b"", False),
    (b'{"detail": "Not Found"}', False),  # a JSON body that is no JSON-RPC message (FastAPI's 404)
    (b'{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Unsupported protocol version"}}', True),
    (b'{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}', True),
    (b'[{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"x"}}]', True),
])
def test_a_json_rpc_refusal_is_a_streamable_http_server_and_not_probed(body, expected):
    assert wire.jsonrpc_refusal(body) is expected


def test_the_paths_probed_in_order():
    assert wire.probe_paths("/sse", {}) == ["/sse"]
    assert wire.probe_paths("/mcp", {}) == ["/mcp", "/sse"]
    assert wire.probe_paths("/prefix/mcp/", {}) == ["/prefix/mcp/", "/prefix/sse"]
    assert wire.probe_paths("/mcp", {"/mcp": "/legacy/events"}) == ["/legacy/events"]


@pytest.mark.parametrize("stream,data,expected", [
    ("http://s:1/sse", "/messages/?session_id=ab", "http://s:1/messages/?session_id=ab"),
    ("http://s:1/prefix/sse", "messages?sessionId=x", "http://s:1/prefix/messages?sessionId=x"),
    ("http://s:1/prefix/sse", "/prefix/messages?sessionId=x", "http://s:1/prefix/messages?sessionId=x"),
    ("http://s:1/sse", "http://s:1/m?x=1", "http://s:1/m?x=1"),
    ("http://s:1/sse", "http://evil:1/m", None), ("http://s:1/sse", "//evil/m", None), ("http://s:1/sse", "  ", None)])
def test_the_endpoint_url_resolves_as_the_sdks_do(stream, data, expected):
    assert wire.resolve_endpoint(stream, data) == expected
    if expected:
        assert expected == urljoin(stream, data.strip())  # PyPI mcp sse_client's own resolution


@pytest.mark.parametrize("cut", [1, 3, 7, 1000])
def test_the_probe_verdict_in_any_cut(cut):
    body = b": hello\n\nretry: 100\n\nevent: endpoint\r\ndata: /messages/?session_id=9\r\n\r\nevent: message\ndata: {}\n\n"
    probe = wire.Probe("http://s:1/sse")
    verdicts = [probe.feed(body[i:i + cut]) for i in range(0, len(body), cut)]
    assert verdicts[-1] is True and probe.endpoint == "http://s:1/messages/?session_id=9"
    assert None in verdicts or cut == 1000


def test_a_stream_whose_first_event_is_not_endpoint_is_not_http_sse():
    probe = wire.Probe("http://s:1/mcp")
    assert probe.feed(b"event: message\ndata: {\"jsonrpc\":\"2.0\"}\n\n") is False and probe.endpoint is None
    assert probe.feed(b"event: endpoint\ndata: /m\n\n") is False  # the verdict is the first event's
    foreign = wire.Probe("http://s:1/sse")
    assert foreign.feed(b"event: endpoint\ndata: http://other/m\n\n") is False


def test_accepts_sse():
    assert wire.accepts_sse({"accept": "application/json, text/event-stream"})
    assert not wire.accepts_sse({"accept": "application/json"}) and not wire.accepts_sse({})


# router ----------------------------------------------------------------------------------------

def req(i, method="tools/call", token=None):
    params = {"name": "t"} | ({"_meta": {"progressToken": token}} if token is not None else {})
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params}


def res(i):
    return {"jsonrpc": "2.0", "id": i, "result": {"content": []}}


def progress(token, n):
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": n}}


SAMPLING = {"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
LOG = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}


def test_an_sse_post_gets_progress_server_requests_and_its_answer_in_arrival_order():
    r = Router()
    p = r.register(req(7, token="tok"), sse=True)
    for m in (progress("tok", 1), SAMPLING, progress("tok", 2), res(7)):
        assert r.route(m) is p
    assert p.out == [progress("tok", 1), SAMPLING, progress("tok", 2), res(7)] and p.done
    assert r.pending == {} and list(r.queue) == []


def test_a_json_post_gets_its_answer_alone_and_the_companions_go_to_the_get_stream():
    r = Router()
    p = r.register(req(7, token=3), sse=False)
    assert [r.route(m) for m in (progress(3, 1), SAMPLING, res(7))] == [GET, GET, p]
    assert p.out == [res(7)] and list(r.queue) == [progress(3, 1), SAMPLING]
    assert r.open_get() == [progress(3, 1), SAMPLING] and list(r.queue) == []
    assert r.route(LOG) == GET and r.get_out == [LOG]


def test_ids_keep_their_json_type_and_progress_goes_by_token_not_by_order():
    r = Router()
    a, b = r.register(req(1, token="a"), sse=True), r.register(req("1", token=1), sse=True)
    assert r.route(progress(1, 5)) is b and r.route(progress("a", 5)) is a
    assert r.route(res("1")) is b and b.out[-1] == res("1") and not a.done
    assert r.route(res(1)) is a


def test_a_server_request_with_several_pending_or_none_goes_to_the_get_stream():
    r = Router()
    assert r.route(SAMPLING) == GET
    r.register(req(1), sse=True), r.register(req(2), sse=True)
    assert r.route(SAMPLING) == GET and list(r.queue) == [SAMPLING, SAMPLING]


def test_an_answer_nobody_waits_for_and_unrelated_notifications_go_to_the_get_stream():
    r = Router()
    r.register(req(1, token="t"), sse=True)
    assert r.route(res(99)) == GET and r.route(LOG) == GET and r.route(progress("other", 1)) == GET
    assert list(r.queue) == [res(99), LOG, progress("other", 1)]


def test_the_get_queue_is_bounded_and_counts_what_it_dropped():
    r = Router(queue_limit=2)
    for n in range(5):
        r.route(progress("x", n))
    assert list(r.queue) == [progress("x", 3), progress("x", 4)] and r.dropped == 3


def test_a_cancelled_request_is_no_longer_pending():
    r = Router()
    p = r.register(req(4, token="c"), sse=True)
    assert r.cancel(4) is p and r.cancel(4) is None
    assert r.route(res(4)) == GET and r.route(progress("c", 1)) == GET


def test_a_broken_stream_fails_every_pending_request_with_the_reason():
    r = Router()
    r.register(req(1), sse=True), r.register(req("b"), sse=False)
    failed = r.fail_all("upstream HTTP+SSE stream ended")
    assert [p.out for p in failed] == [
        [{"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "upstream HTTP+SSE stream ended"}}],
        [{"jsonrpc": "2.0", "id": "b", "error": {"code": -32603, "message": "upstream HTTP+SSE stream ended"}}]]
    assert all(p.done for p in failed) and r.pending == {}


# lifecycle -------------------------------------------------------------------------------------

def drive(*events):
    life = UpstreamLifecycle()
    for e in events:
        life.fire(e)
    return life


def test_a_session_from_its_stream_to_its_delete():
    life = drive(E.ENDPOINT, E.INITIALIZE, E.INITIALIZED)
    assert life.ready and life.status_for_post() is None
    life.fire(E.CLOSE)
    assert [(a.value, e.value, b.value) for a, e, b in life.history] == [
        ("connecting", "endpoint", "open"), ("open", "initialize", "initializing"),
        ("initializing", "initialized", "ready"), ("ready", "close", "closed")]
    assert life.status_for_post() == 404


def test_a_refused_initialize_may_be_tried_again_and_a_break_ends_the_session_for_good():
    assert drive(E.ENDPOINT, E.INITIALIZE, E.REFUSED, E.INITIALIZE, E.INITIALIZED).ready
    life = drive(E.ENDPOINT, E.INITIALIZE, E.INITIALIZED, E.BREAK)
    assert life.state is S.BROKEN and life.status_for_post() == 404
    for e in E:
        assert life.fire(e) is S.BROKEN


@pytest.mark.parametrize("state", [s for s in S if s not in ENDED])
def test_break_and_close_end_every_live_state(state):
    assert TRANSITIONS[(state, E.BREAK)] is S.BROKEN and TRANSITIONS[(state, E.CLOSE)] is S.CLOSED


def test_a_pair_the_table_lacks_raises():
    with pytest.raises(UpstreamStateError):
        drive(E.INITIALIZE)
    with pytest.raises(UpstreamStateError):
        drive(E.ENDPOINT, E.ENDPOINT)
