"""Bodies of an MCP exchange that hold no JSON-RPC message mcpx could rewrite: each is forwarded byte
for byte (as before) and now gets one ``passthrough`` record naming why, as a client POST that
parses but holds no JSON-RPC 2.0 message already did ("body holds no JSON-RPC 2.0 message").
Before, a server answer of ``{}``, ``[]``, a ``"jsonrpc":"1.0"`` object or an empty JSON body to a
request, and an SSE answer that ends inside an event, passed with no record at all."""
from __future__ import annotations

import pytest

from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.session import SessionTracker

REQUEST = {1: "tools/call"}  # the exchange's request, as Rewriter.request records it


def exchange(request_ids: dict | None = None) -> tuple[Rewriter, Exchange]:
    store = SessionTracker()
    s = store.create("sess-1")
    s.server_rev = s.client_rev = "2025-06-18"
    exch = Exchange(flow_id="f1", session=s, is_mcp=True, request_ids=dict(request_ids if request_ids is not None else REQUEST),
                    single_request_id=1)
    return Rewriter(store), exch


def records(exch: Exchange) -> list[tuple]:
    return [(c.action, c.rule, c.direction, c.session, c.pointer, c.detail) for c in exch.changes]


def passthrough(detail: str, direction: str = "s2c") -> tuple:
    return ("passthrough", "PASSTHROUGH-error", direction, "sess-1", "", detail)


@pytest.mark.parametrize("body", [b"{}", b"[]", b' [ ] ', b'{"jsonrpc":"1.0","id":1,"result":{}}', b'{"jsonrpc":"2.0","id":1}',
                                  b'[{"jsonrpc":"1.0","id":1,"result":{}}]', b'{"error":"rate limited","retry_after":3}'])
@pytest.mark.parametrize("ctype", ["application/json", "application/json; charset=utf-8", None])
def test_a_json_answer_without_a_jsonrpc_message_gets_a_record(body, ctype):
    rw, exch = exchange()
    assert rw.response_json(exch, body, ctype) is None  # forwarded byte for byte
    assert records(exch) == [passthrough("body holds no JSON-RPC 2.0 message")]


def test_an_empty_json_answer_to_a_request_gets_a_record():
    rw, exch = exchange()
    assert rw.response_json(exch, b"", "application/json") is None
    assert records(exch) == [passthrough("body is empty: holds no JSON-RPC 2.0 message")]


@pytest.mark.parametrize("request_ids,ctype", [({}, "application/json"), (REQUEST, ""), (REQUEST, "text/plain")])
def test_an_empty_answer_to_notifications_or_not_declared_json_gets_none(request_ids, ctype):
    """202 to a notification or a response (nothing was asked), or an empty body that does not say it
    is JSON (mitmproxy hands "" for a missing Content-Type): nothing to say."""
    rw, exch = exchange(request_ids)
    assert rw.response_json(exch, b"", ctype) is None
    assert records(exch) == []


@pytest.mark.parametrize("ctype", ["text/html", "text/plain"])
def test_a_json_text_not_declared_json_gets_none(ctype):
    """As for a body that does not parse: only a body that says it is JSON is taken for JSON-RPC."""
    rw, exch = exchange()
    assert rw.response_json(exch, b"{}", ctype) is None
    assert records(exch) == []


def test_a_jsonrpc_answer_gets_no_record():
    rw, exch = exchange()
    assert rw.response_json(exch, b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}', "application/json") is None
    assert rw.response_json(exch, b'[{},{"jsonrpc":"2.0","id":1,"result":{"content":[]}}]', "application/json") is None
    assert records(exch) == []


def test_not_mcp_gets_no_record():
    rw, exch = exchange()
    exch.is_mcp, exch.session = False, None
    assert rw.response_json(exch, b"{}", "application/json") is None
    assert rw.response_json(exch, b"", "application/json") is None
    assert records(exch) == []


def test_the_same_client_bodies_already_get_it():
    """The wording the server-side record follows: a client POST of the same bodies."""
    for body in (b"{}", b"[]", b'{"jsonrpc":"1.0","id":1,"method":"ping"}'):
        rw, exch = exchange({})
        rw.request(exch, "POST", body, {"content-type": "application/json", "mcp-session-id": "sess-1"})
        assert records(exch) == [passthrough("body holds no JSON-RPC 2.0 message", "c2s")]


UNFINISHED = b'id: 7\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}'


@pytest.mark.parametrize("head,tail", [
    (b"", UNFINISHED),
    (b"", UNFINISHED + b"\n"),
    (b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n\n', UNFINISHED + b"\r\n"),
    (b"", b": keep-alive"),
])
def test_an_sse_answer_that_ends_inside_an_event_gets_a_record(head, tail):
    """No blank line after the last event: an SSE client never dispatches it (WHATWG HTML 9.2.6:
    an unfinished event is discarded at the end of the stream). Forwarded as it came, and said."""
    rw, exch = exchange()
    assert rw.sse(exch).whole(head + tail) == head + tail
    assert records(exch) == [passthrough(f"SSE stream ends inside an event (no blank line after it): its {len(tail)} bytes "
                                         "forwarded untouched")]


def test_an_sse_answer_that_ends_after_its_event_gets_none():
    rw, exch = exchange()
    body = b'data: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n\n'
    assert rw.sse(exch).whole(body) == body
    assert rw.sse(exch).whole(b"") == b""
    assert records(exch) == []


@pytest.mark.parametrize("data", [b"{}", b'{"jsonrpc":"1.0","id":1,"result":{}}', b"5", b'"text"',
                                  b"[]", b"[5]", b'[{"jsonrpc":"1.0","id":1,"result":{}}]'])
def test_an_sse_event_without_a_jsonrpc_message_gets_a_record(data):
    """The same for one event of an SSE answer (one record per event, as for data that is not JSON).
    An array of no JSON-RPC message is not split into one event per element for a revision without
    batches (RPC-batch-response): before, ``[]`` became a comment in place of the event, and ``[5]``
    the event ``5`` (found by tests/reliability/test_fuzz_sse.py)."""
    rw, exch = exchange()
    body = b"id: 1\ndata: " + data + b"\n\n"
    assert rw.sse(exch).whole(body) == body
    assert records(exch) == [passthrough("SSE event data holds no JSON-RPC 2.0 message")]
