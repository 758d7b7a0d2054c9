"""What mcpx keeps per flow is bounded, so a long SSE stream does not grow memory (issue 7).

A stream of 2,500 events, each a progress notification a 2024-11-05 client must get without
``message`` (PROG-message): every event is rewritten and every record reaches the change log
(``on_changes``), but the flow keeps the first 1,000 message entries and records and counts the
rest; the kept copies of the original and delivered bytes stop at ``keep``.
"""
from __future__ import annotations

import orjson

from mcpx_core.framing.sse import SSEParser
from mcpx_core.rewrite import FLOW_KEEP_MAX, Exchange, Rewriter, SSERewriter
from mcpx_core.session import SessionTracker

N = 2500


def event(i: int) -> bytes:
    note = {"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 1, "progress": i, "total": N, "message": f"step {i}"}}
    return b"id: %d\ndata: %s\n\n" % (i, orjson.dumps(note))


def test_long_stream_keeps_bounded_records_and_rewrites_every_event():
    store = SessionTracker()
    s = store.create("s")
    s.client_rev = s.server_rev = "2024-11-05"
    logged = []
    rw = Rewriter(store, on_changes=lambda exch, changes: logged.extend(changes))
    exch = Exchange(flow_id="f", session=s, is_mcp=True)
    keep = 64 << 10
    stream = SSERewriter(rw, exch, keep=keep)
    out = b"".join(stream(event(i)) for i in range(N)) + stream(b"")

    p = SSEParser()
    delivered = [orjson.loads(e.data) for e in p.feed(out) + p.close()[0]]
    assert [m["params"] for m in delivered] == [{"progressToken": 1, "progress": i, "total": N} for i in range(N)]
    assert [(c.pointer, c.action, c.rule) for c in logged] == [("/params/message", "drop", "PROG-message")] * N

    assert FLOW_KEEP_MAX == 1000
    assert len(exch.messages) == 1000 and exch.messages_omitted == N - 1000
    assert exch.messages[0] == {"direction": "s2c", "kind": "notification", "method": "notifications/progress",
                                "id": None, "changes": 1}
    assert len(exch.changes) == 1000 and exch.changes_omitted == N - 1000
    assert exch.changes[:1] == logged[:1] and exch.changes[-1] == logged[999]
    assert s.changes == N  # the session's counters count them all

    assert len(stream.original) == len(stream.delivered) == keep and stream.truncated
    assert bytes(stream.original) == b"".join(event(i) for i in range(N))[:keep]
    assert bytes(stream.delivered) == out[:keep]
