"""SSE polling toward a 2025-03-26 client (bridge/resume.py ``Relay``) against a server that misbehaves
on the resume path, through the real mitmdump: a ``retry`` field too long for Python's int(), and
event ids that come back (a resume loop). The 2026-07-28 bridge's resume against the same faults:
tests/e2e/test_bridge_resume_loops.py.
"""
from __future__ import annotations


import pytest

import polling_lib
from polling_lib import PROGRESS_EVENT
from proxy_lib import Client, Proxy, serve

OLD = "2025-03-26"
NEW = "2025-11-25"
RULE = "TR-sse-priming-polling"
NOT_DELIVERED = b": mcpx: message not delivered to this client revision\n\n"


class Misbehaving(polling_lib.Misbehaving):
    """:class:`polling_lib.Misbehaving` with event ids ``e1``, ``e2``, ``e3``."""

    ID = "e"


@pytest.fixture
def server():
    yield from serve(Misbehaving, "gets", "calls")


def call(rid, name) -> dict:
    """A call with token "p", the one the server's progress names (polling_lib.PROGRESS)."""
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": {}, "_meta": {"progressToken": "p"}}}


def relay_records(px, session) -> list:
    return [(r["jsonrpc_id"], r["action"], r["detail"]) for r in px.session_changes(session)
            if r["rule"] == RULE and r["action"] != "drop-message"]


def resumed(last) -> str:
    return (f"the server closed the SSE stream after event {last} before the answer: resumed by mcpx with GET and "
            f"Last-Event-ID after 0 ms (retry); the 2025-03-26 client's stream stays open")


def test_a_retry_too_long_for_int_is_a_long_retry(server, tmp_path):
    """Before, int() refused the 5000-digit ``retry`` (ValueError): the relay lost the rest of the chunk
    (the e2 progress notification never reached the client), mitmdump logged "own request stream
    handler failed", and mcpx resumed after ``e1``."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_sse_resume": "always"}) as px:
        c = Client(px.port, timeout=20)
        c.initialize(OLD)
        st, h, body = c.post(call(4, "huge-retry"))
        c.close()
        out = px.output()
        recs = relay_records(px, c.session)
    result = b'{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"polled"}]}}'
    assert (st, h["content-type"]) == (200, "text/event-stream")
    assert body == NOT_DELIVERED + b"id: e2\nretry: 0\n" + PROGRESS_EVENT + b"id: e3\nevent: message\ndata: " + result + b"\n\n"
    assert Misbehaving.gets == ["e2"]
    assert recs == [(4, "rewrite", resumed("e2"))]
    assert "handler failed" not in out and "Traceback" not in out


def test_an_event_id_that_comes_back_ends_the_resumes(server, tmp_path):
    """Resumed after ``e2``, the stream ends after ``e3``; resumed after ``e3``, after ``e2`` again.
    Before, mcpx resumed after e2, e3, e2, ... for ever (``retry: 0``: as fast as the server answered)
    and the client's stream never ended. Now an id mcpx already resumed from is no newer event: the
    client's stream ends, one passthrough record, one warning line."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_sse_resume": "always"}) as px:
        c = Client(px.port, timeout=20)
        c.initialize(OLD)
        st, h, body = c.post(call(5, "cycle"))
        c.close()
        out = px.output()
        recs = relay_records(px, c.session)
    failed = ("the server closed the SSE stream after event e2 before the answer and mcpx could not resume it: the resumed "
              "stream ended after event e2, which mcpx had resumed from before (no newer event); the client's stream ends "
              "without the answer")
    assert (st, h["content-type"]) == (200, "text/event-stream")
    assert body == NOT_DELIVERED + b"id: e2\n" + PROGRESS_EVENT + b"id: e3\n" + PROGRESS_EVENT + b"id: e2\n" + PROGRESS_EVENT
    assert Misbehaving.gets == ["e2", "e3"]
    assert recs == [(5, "rewrite", resumed("e2")), (5, "rewrite", resumed("e3")), (5, "passthrough", failed)]
    assert out.count(f"mcpx: SSE polling: {failed}") == 1
