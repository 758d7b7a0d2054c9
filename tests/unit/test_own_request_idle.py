"""How long a request mcpx sends itself may stream (:meth:`mcpx_core.upstream.Sender.send`).

``timeout`` bounds the whole request by default: a streamed answer whose wait ``stop`` ended is
aborted ``timeout`` seconds later, however busily the server streams. The 2026-07-28 bridge sent a
call's POST and each resuming GET so (600 s): a call whose server streamed its progress on one
stream for longer was cut off at 600 s, silently, and its client waited 600 s more for -32603 "the
server ended the call without an answer". With ``idle=True``, ``timeout`` bounds each wait for the
server instead (no byte for ``timeout`` seconds): a stream the server keeps feeding is never cut, as
on a direct connection; a silent one is.

mitmproxy's replay is stood in for by a handler that streams chunks on a schedule (a 600 s test is
not possible; the times here are scaled down: ``timeout`` 1 s, a chunk every 0.1 s for 3 s)."""
from __future__ import annotations

import asyncio

import pytest
from mitmproxy import ctx
from mitmproxy.addons import clientplayback
from mitmproxy.test import tflow, tutils

from mcpx_core import upstream


def run(monkeypatch, gaps: list[float], idle: bool, timeout: float = 1.0) -> tuple[list[bytes], bool]:
    """Send through a Sender whose replay answers with an SSE stream: a chunk after each of ``gaps``
    (seconds), then its end; returns the chunks ``on_chunk`` got (``b""``: the end) and whether the
    replay was cancelled (mcpx aborted the request)."""
    sender = upstream.Sender()
    got: list[bytes] = []
    cancelled: list[bool] = []

    class Replay:
        def __init__(self, flow, options):
            self.flow, self.transports = flow, {}

        async def replay(self):
            try:
                self.flow.response = tutils.tresp(content=None)
                self.flow.response.headers["content-type"] = "text/event-stream"
                sender.responseheaders(self.flow)
                for i, gap in enumerate(gaps):
                    await asyncio.sleep(gap)
                    self.flow.response.stream(b"data: %d\n\n" % i)
                self.flow.response.stream(b"")
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

    monkeypatch.setattr(clientplayback, "ReplayHandler", Replay)
    monkeypatch.setattr(upstream.Sender, "available", staticmethod(lambda parent, detached=False: True))
    monkeypatch.setattr(ctx, "options", None, raising=False)

    async def main() -> None:
        first = asyncio.get_running_loop().create_future()

        def on_chunk(c: bytes) -> None:
            got.append(c)
            first.done() or first.set_result(True)
        await sender.send(tflow.tflow(), "POST", b"{}", {}, "test", timeout=timeout, on_chunk=on_chunk, stop=first, idle=idle)
        while sender.background:  # the rest streams in the background until its end or its abort
            await asyncio.sleep(0.05)

    asyncio.run(main())
    return got, bool(cancelled)


STREAMING = [0.0] + [0.1] * 30  # 3 s, never quiet for more than 0.1 s


def test_by_default_the_timeout_bounds_the_whole_request(monkeypatch):
    got, cancelled = run(monkeypatch, STREAMING, idle=False)
    assert cancelled and b"" not in got and len(got) < 31


def test_idle_a_stream_the_server_keeps_feeding_is_never_cut(monkeypatch):
    got, cancelled = run(monkeypatch, STREAMING, idle=True)
    assert not cancelled and got == [b"data: %d\n\n" % i for i in range(31)] + [b""]


@pytest.mark.parametrize("gaps", [[0.0, 0.1, 0.1, 3.0, 0.1], [3.0]])
def test_idle_a_stream_quiet_for_longer_than_the_timeout_is_ended(monkeypatch, gaps):
    """Quiet after three chunks, or before the first (the wait for ``stop``): aborted; with no chunk at
    all ``send`` raises, as it always did."""
    if gaps == [3.0]:
        with pytest.raises(upstream.UpstreamError, match="no response within 1 s"):
            run(monkeypatch, gaps, idle=True)
        return
    got, cancelled = run(monkeypatch, gaps, idle=True)
    assert cancelled and got == [b"data: 0\n\n", b"data: 1\n\n", b"data: 2\n\n"]
