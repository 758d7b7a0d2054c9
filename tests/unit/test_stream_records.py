"""SSE events mcpx drops, splits or cannot read: what is delivered and the exact records; the
bounded copies of a stream kept for inspection; why a body is not rewritable (issue 19:
survivors of mutation testing in rewrite.py and framing/json_body.py)."""
from __future__ import annotations

import pytest

from mcpx_core.framing import json_body
from mcpx_core.rewrite import Exchange, Rewriter, _Kept
from mcpx_core.session import SessionTracker


def session(server_rev: str, client_rev: str) -> tuple[Rewriter, Exchange]:
    store = SessionTracker()
    s = store.create("sess-1")
    s.server_rev, s.client_rev = server_rev, client_rev
    return Rewriter(store), Exchange(flow_id="f1", session=s, is_mcp=True)


def records(exch: Exchange) -> list[dict]:
    return [{k: v for k, v in c.as_dict().items() if k != "time"} for c in exch.changes]


CONTEXT = {"after": None, "flow": "f1", "session": "sess-1", "direction": "s2c", "jsonrpc_id": None, "method": None}


def test_a_priming_event_is_dropped_and_undecodable_data_passes_through():
    """TR-sse-priming-polling: only 2025-11-25 clients get the empty-data event a server sends
    first (docs/specification/2025-11-25/basic/transports.mdx); data that is not UTF-8 passes as it came."""
    rw, exch = session("2025-11-25", "2025-06-18")
    out = rw.sse(exch).whole(b"id: 0\nretry: 500\ndata:\n\ndata: \xff\n\n")
    assert out == b": mcpx: message not delivered to this client revision\n\ndata: \xff\n\n"
    revs = {"from_rev": "2025-11-25", "to_rev": "2025-06-18"}
    assert records(exch) == [
        {"pointer": "", "action": "drop-message", "rule": "TR-sse-priming-polling", "before": "SSE event id='0' data=''",
         "detail": "empty-data (priming) event: only 2025-11-25 clients get it"} | CONTEXT | revs,
        {"pointer": "", "action": "passthrough", "rule": "PASSTHROUGH-error", "before": None,
         "detail": "SSE event data is not valid UTF-8"} | CONTEXT | revs]


def test_a_batch_in_one_event_is_split_into_one_event_per_message():
    """RPC-batch-response: revisions after 2025-03-26 have no batches."""
    rw, exch = session("2025-03-26", "2025-06-18")
    exch.request_ids.update({1: "ping", 2: "ping"})
    out = rw.sse(exch).whole(b'data: [{"jsonrpc":"2.0","id":1,"result":{}}, {"jsonrpc":"2.0","id":2,"result":{}}]\n\n')
    assert out == b'data: {"jsonrpc":"2.0","id":1,"result":{}}\n\ndata: {"jsonrpc":"2.0","id":2,"result":{}}\n\n'
    assert records(exch) == [{"pointer": "", "action": "split", "rule": "RPC-batch-response", "before": "batch of 2 messages",
                              "detail": None, "from_rev": "2025-03-26", "to_rev": "2025-06-18"} | CONTEXT | {"after": "2 events"}]


def test_kept_copy_stops_at_its_limit():
    kept = _Kept(4)
    kept.add(b"abc")
    assert (kept.value(), kept.truncated) == (b"abc", False)
    kept.add(b"de")
    assert (kept.value(), kept.truncated) == (b"abcd", True)
    exact = _Kept(4)
    exact.add(b"ab")
    exact.add(b"cd")
    exact.add(b"")
    assert (exact.value(), exact.truncated) == (b"abcd", False)


@pytest.mark.parametrize("body", [b"3", b'"text"', b"null"])
def test_a_json_body_that_is_no_object_or_array_is_not_rewritable(body):
    with pytest.raises(json_body.Unparseable, match="^body is JSON but neither an object nor an array$"):
        json_body.parse(body)
