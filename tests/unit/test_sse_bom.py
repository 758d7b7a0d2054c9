"""A UTF-8 BOM that opens an SSE stream (WHATWG HTML 9.2.6: the parser strips one at the stream's
start) is delivered as it came when mcpx rewrites the first event: mcpx delivers what it did not
need to change. Before, the rewritten first event was written without it (framing/sse.py
``Event.with_data`` rebuilt the event from its lines, which start after the BOM)."""
from __future__ import annotations

from mcpx_core.framing.sse import BOM, NOT_DELIVERED, SSEParser
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.session import SessionTracker

AUDIO = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]}}'


def session(server_rev: str, client_rev: str) -> tuple[Rewriter, Exchange]:
    store = SessionTracker()
    s = store.create("sess-1")
    s.server_rev, s.client_rev = server_rev, client_rev
    exch = Exchange(flow_id="f1", session=s, is_mcp=True)
    exch.request_ids[1] = "tools/call"
    return Rewriter(store), exch


def test_the_bom_stays_in_front_of_a_rewritten_first_event():
    rw, exch = session("2025-03-26", "2024-11-05")  # audio is not a 2024-11-05 content block: rewritten
    out = rw.sse(exch).whole(BOM + b"event: message\ndata: " + AUDIO + b"\n\n")
    assert out.startswith(BOM + b"event: message\ndata: {")
    assert b'"type":"text"' in out and b"audio" not in out.split(b"data: ", 1)[1].split(b'"text":', 1)[0]
    assert [c.rule for c in exch.changes] == ["CT-audio"]


def test_the_bom_stays_when_the_first_event_is_not_delivered_or_split():
    rw, exch = session("2025-11-25", "2025-06-18")  # a priming event: not delivered to a 2025-06-18 client
    out = rw.sse(exch).whole(BOM + b"id: 0\nretry: 500\ndata:\n\n")
    assert out == BOM + NOT_DELIVERED + b"\n\n"
    rw, exch = session("2025-03-26", "2025-06-18")  # a batch: one event per message
    exch.request_ids.update({1: "ping", 2: "ping"})
    out = rw.sse(exch).whole(BOM + b'data: [{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]\r\n\r\n')
    assert out == BOM + b'data: {"jsonrpc":"2.0","id":1,"result":{}}\r\n\r\ndata: {"jsonrpc":"2.0","id":2,"result":{}}\r\n\r\n'


def test_an_untouched_stream_and_a_bom_later_in_the_stream_are_left_as_they_are():
    """(Passes before the fix too: the guard that the BOM is only the stream's first bytes.)"""
    rw, exch = session("2024-11-05", "2024-11-05")
    body = BOM + b'data: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}\n\n'
    assert rw.sse(exch).whole(body) == body
    # bytes EF BB BF at the start of a later event are no BOM: a field name the parser ignores
    ev = SSEParser().feed(b"data: {}\n\n" + BOM + b"data: {}\n\n")[1]
    assert ev.spans[0][0] == 0 and ev.payload is None  # the line is "\ufeffdata: {}": not a data field
    assert ev.with_data([b'{"a":1}']) == BOM + b'data: {}\ndata: {"a":1}\n\n'  # kept as a line, no BOM added
