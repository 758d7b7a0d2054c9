"""Outstanding JSON-RPC requests of a session: answered ids leave the pending map (issue 19).

A result names no method; mcpx types it by the request it answers (``Session.pending``:
(direction, id) -> method; JSON-RPC 2.0 section 5: "id ... MUST be the same as the value of the id
member in the Request Object"). The map is bounded (:data:`MAX_PENDING`, oldest forgotten first)
for requests whose answer never comes. An answered request must leave it at once: if answered ids
stayed until the bound pushed them out, a long session would push out requests still
outstanding, and their results would arrive untyped (walked as a bare ``Result``, not rewritten).
"""
from __future__ import annotations

from collections import OrderedDict

import orjson

from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.session import MAX_PENDING, Session, SessionTracker

HEADERS = {"Mcp-Session-Id": "sess-1"}
#: a tools/call result whose text half lacks a value of its structured half: typed as a tools/call
#: result it gets the dual-result audit record (MCPX-audit-dual, only for tools/call results), and
#: every record names the method; a 2025-03-26 client gets structuredContent as a text block
CALLED = {"jsonrpc": "2.0", "id": "slow", "result": {"content": [{"type": "text", "text": "3 results"}],
                                                   "structuredContent": {"total": 3, "next": "c2"}}}


def test_answer_forgets_the_request():
    s = Session("s")
    s.remember("c2s", 1, "tools/list")
    s.remember("s2c", 1, "sampling/createMessage")  # the server's request with the same id: another entry
    assert s.answer("c2s", 1) == "tools/list"
    assert s.pending == OrderedDict({("s2c", 1): "sampling/createMessage"})
    assert s.answer("c2s", 1) is None  # answered once: a second result with that id is untyped
    assert s.answer("s2c", 1) == "sampling/createMessage"
    assert s.pending == OrderedDict()


def test_pending_is_bounded_oldest_first():
    s = Session("s")
    for i in range(MAX_PENDING + 1):
        s.remember("c2s", i, "ping")
    assert MAX_PENDING == 1024
    assert len(s.pending) == MAX_PENDING and ("c2s", 0) not in s.pending and ("c2s", MAX_PENDING) in s.pending
    assert s.answer("c2s", 0) is None and s.answer("c2s", 1) == "ping"


def session() -> tuple[Rewriter, Session]:
    store = SessionTracker()
    s = store.create("sess-1")
    s.server_rev, s.client_rev = "2025-06-18", "2025-03-26"
    return Rewriter(store), s


def post(rw: Rewriter, message: dict, flow: str) -> Exchange:
    """The client POSTs ``message`` on session sess-1 (its own HTTP exchange)."""
    exch = Exchange(flow_id=flow, is_mcp=True)
    rw.request(exch, "POST", orjson.dumps(message), HEADERS)
    return exch


def test_answered_requests_leave_the_pending_map():
    rw, s = session()
    exch = post(rw, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, "f1")
    assert s.pending == OrderedDict({("c2s", 1): "tools/list"})
    result = {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}
    assert rw.response_json(exch, orjson.dumps(result)) is None
    assert s.pending == OrderedDict()


def test_request_outstanding_while_more_than_the_bound_are_answered_is_still_typed():
    """``slow`` (tools/call) is sent first and answered last, on the session's GET stream (an
    exchange that carried no request), after 1,100 other requests were sent and answered."""
    rw, s = session()
    post(rw, {"jsonrpc": "2.0", "id": "slow", "method": "tools/call", "params": {"name": "search"}}, "f-slow")
    for i in range(MAX_PENDING + 76):
        exch = post(rw, {"jsonrpc": "2.0", "id": i, "method": "ping"}, f"f{i}")
        assert rw.response_json(exch, b'{"jsonrpc":"2.0","id":%d,"result":{}}' % i) is None

    stream = Exchange(flow_id="get", session=s, is_mcp=True)
    out = rw.sse(stream).whole(b"id: 1\ndata: " + orjson.dumps(CALLED) + b"\n\n")
    assert out == b'id: 1\ndata: {"jsonrpc":"2.0","id":"slow","result":{"content":[{"type":"text","text":"3 results"},' \
                  b'{"type":"text","text":"{\\"total\\":3,\\"next\\":\\"c2\\"}"}]}}\n\n'
    context = {"flow": "get", "session": "sess-1", "direction": "s2c", "jsonrpc_id": "slow", "method": "tools/call",
               "from_rev": "2025-06-18", "to_rev": "2025-03-26"}
    assert [{k: v for k, v in c.as_dict().items() if k != "time"} for c in stream.changes] == [
        {"pointer": "/result", "action": "audit", "rule": "MCPX-audit-dual", "before": None, "after": None,
         "detail": 'the text lacks 1 value of structuredContent: /next "c2"'} | context,
        {"pointer": "/result/content/1", "action": "rewrite", "rule": "SC-structuredContent", "before": None,
         "after": "text block with the JSON of /result/structuredContent", "detail": None} | context,
        {"pointer": "/result/structuredContent", "action": "drop", "rule": "SC-structuredContent",
         "before": '{total: 3, next: "c2"}', "after": None, "detail": None} | context]
    assert s.pending == OrderedDict()


def test_a_boolean_id_answers_nothing():
    """JSON-RPC 2.0 ids are strings or numbers: ``true`` (equal to 1 in Python) is no request's id."""
    s = Session("s")
    s.remember("c2s", 1, "tools/list")
    s.remember("c2s", True, "ping")
    assert s.answer("c2s", True) is None
    assert s.pending == OrderedDict({("c2s", 1): "tools/list"})


def test_a_server_request_types_the_clients_result_to_it():
    """sampling/createMessage from a 2025-06-18 server on the GET stream; the 2025-11-25 client's
    result (content as an array) goes back as one block (CT-sampling-content-array)."""
    rw, s = session()
    s.server_rev, s.client_rev = "2025-06-18", "2025-11-25"
    stream = Exchange(flow_id="get", session=s, is_mcp=True)
    ask = (b'data: {"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[{"role":"user",'
           b'"content":{"type":"text","text":"q"}}],"maxTokens":5}}\n\n')
    assert rw.sse(stream).whole(ask) == ask
    assert s.pending == OrderedDict({("s2c", "s1"): "sampling/createMessage"})
    answer = Exchange(flow_id="post", is_mcp=True)
    out = rw.request(answer, "POST", b'{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":[{"type":"text",'
                                     b'"text":"hi"}],"model":"m"}}', HEADERS)
    assert out.body == b'{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}'
    assert [(c.pointer, c.rule, c.direction, c.jsonrpc_id, c.method) for c in answer.changes] == [
        ("header:MCP-Protocol-Version", "TR-protocol-version-header", "c2s", None, None),
        ("/result/content", "CT-sampling-content-array", "c2s", "s1", "sampling/createMessage")]
    assert s.pending == OrderedDict()
