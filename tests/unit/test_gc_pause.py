"""Large bodies and SSE events are rewritten with the cyclic garbage collector paused (issue 16),
and it runs again afterwards, also when the rewrite fails; small ones leave it alone.
"""
from __future__ import annotations

import gc

import pytest

from mcpx_core import rewrite
from mcpx_core.framing.sse import SSEParser
from mcpx_core.rewrite import GC_PAUSE_MIN, Exchange, Rewriter
from mcpx_core.session import SessionTracker


def _exchange() -> tuple[Rewriter, Exchange]:
    store = SessionTracker()
    s = store.create("k")
    s.server_rev, s.client_rev = "2025-06-18", "2025-03-26"
    exch = Exchange(flow_id="f", session=s, is_mcp=True, single_request_id=1)
    exch.request_ids[1] = "tools/call"
    return Rewriter(store), exch


def _body(size: int) -> bytes:
    text = b"x" * max(size - 160, 1)
    return (b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"' + text +
            b'","annotations":{"lastModified":"2025-01-12T15:00:58Z"}}]}}')


@pytest.fixture
def seen(monkeypatch):
    """gc.isenabled() as each message's downgrade sees it."""
    out: list[bool] = []
    real = rewrite.message.downgrade

    def spy(*a, **k):
        out.append(gc.isenabled())
        return real(*a, **k)

    monkeypatch.setattr(rewrite.message, "downgrade", spy)
    assert gc.isenabled()
    return out


@pytest.mark.parametrize("size, paused", [(2_000, False), (GC_PAUSE_MIN - 1_000, False), (GC_PAUSE_MIN + 1_000, True)])
def test_json_body(seen, size, paused):
    rw, exch = _exchange()
    body = _body(size)
    assert (len(body) >= GC_PAUSE_MIN) == paused
    out = rw.response_json(exch, body)
    assert out == body.replace(b',"annotations":{"lastModified":"2025-01-12T15:00:58Z"}', b',"annotations":{}')
    assert seen == [not paused] and gc.isenabled()


@pytest.mark.parametrize("size, paused", [(2_000, False), (GC_PAUSE_MIN + 1_000, True)])
def test_sse_event(seen, size, paused):
    rw, exch = _exchange()
    body = _body(size)
    (event,) = SSEParser(64 << 20).feed(b"event: message\ndata: " + body + b"\n\n")
    out = rw.sse_event(exch, event)
    assert out == b"event: message\ndata: " + body.replace(b',"annotations":{"lastModified":"2025-01-12T15:00:58Z"}',
                                                           b',"annotations":{}') + b"\n\n"
    assert seen == [not paused] and gc.isenabled()


def test_collector_runs_again_after_a_failure(monkeypatch):
    rw, exch = _exchange()

    def boom(*a, **k):
        assert not gc.isenabled()
        raise RuntimeError("boom")

    monkeypatch.setattr(rw, "_response_json", boom)
    with pytest.raises(RuntimeError):
        rw.response_json(exch, _body(GC_PAUSE_MIN + 1_000))
    assert gc.isenabled()


def test_collector_left_off_when_it_was_off(seen):
    """A host process that turned the collector off keeps it off."""
    rw, exch = _exchange()
    gc.disable()
    try:
        rw.response_json(exch, _body(GC_PAUSE_MIN + 1_000))
        assert not gc.isenabled() and seen == [False]
    finally:
        gc.enable()
