"""JSON-RPC ids that answer no request (found by the adversarial run of this stop).

JSON-RPC 2.0 ids are strings, numbers or null; MCP's RequestId is a string or an integer
(schema/2025-06-18/schema.ts:113). ``true`` equals ``1`` in Python and an object id is unhashable:
neither may type a result, and neither may stop mcpx from forwarding the body.
"""
from __future__ import annotations

from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.session import SessionTracker

LINK = b'{"type":"resource_link","uri":"file:///a","name":"a"}'


def _exchange() -> tuple[Rewriter, Exchange]:
    store = SessionTracker()
    s = store.create("k")
    s.server_rev, s.client_rev = "2025-06-18", "2025-03-26"
    return Rewriter(store), Exchange(flow_id="f", session=s, is_mcp=True)


def test_a_request_with_id_true_types_no_answer_with_id_1():
    rw, exch = _exchange()
    request = b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}'
    assert rw.request(exch, "POST", request, {"content-type": "application/json", "mcp-session-id": "k"}) is not None  # a disposition
    assert exch.request_ids == {} and exch.session.pending == {}
    # a tools/call result with id 1: not read as the tools/list result of the request with id true
    # (that would drop /result/content): typed by its shape, its link becomes an embedded resource
    body = b'{"jsonrpc":"2.0","id":1,"result":{"content":[' + LINK + b']}}'
    assert rw.response_json(exch, body) == (
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"resource","resource":{"uri":"file:///a",'
        b'"mimeType":"text/plain","text":"Resource link (content not embedded): file:///a\\nname: a"}}]}}')
    assert [c.key() for c in exch.changes] == [
        ("header:MCP-Protocol-Version", "synthesize", "TR-protocol-version-header"),  # on the request: the server leg's
        ("/result/content/0", "rewrite", "CT-resource_link")]


def test_an_object_id_is_forwarded_with_no_internal_error():
    rw, exch = _exchange()
    request = b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"x","arguments":{}}}'
    rw.request(exch, "POST", request, {"content-type": "application/json", "mcp-session-id": "k"})
    assert exch.request_ids == {} and exch.tool_calls == {}
    assert [c.detail for c in exch.changes if c.action == "passthrough" and "internal" in (c.detail or "")] == []
