"""A recording tap: stream event-stream responses through unchanged and keep a copy of every chunk
on the flow, so ``mitmdump -w`` saves what the server sent (recorded without mcpx, for the pytest
plugin, ``python -m mcpx check`` and mcpx's own flows/).

    mitmdump --mode reverse:http://127.0.0.1:3001 -s "$(python -m mcpx tap)" -w session.mitm

Why not plain ``mitmdump -w``: a buffering proxy holds an SSE response back until it ends, so a
server's sampling or elicitation request would reach the client only after the tool call it
belongs to has timed out. mitmproxy's own ``stream_large_bodies`` + ``store_streamed_bodies``
stream without that problem, but keep a streamed body only when the response ends normally; SDK
clients often close an SSE response as soon as its last event is read, and the body is lost.

The tap changes nothing that is sent: each chunk goes through as it came. It is a script of its own
(``mitmdump -s`` loads it by path): it imports nothing of mcpx.
"""

from __future__ import annotations

from mitmproxy import http


class RecordTap:
    def __init__(self) -> None:
        self.bodies: dict[str, bytearray] = {}

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if flow.response is None:
            return
        if not flow.response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            return
        buf = self.bodies.setdefault(flow.id, bytearray())

        def tap(chunk: bytes) -> bytes:
            buf.extend(chunk)
            return chunk

        flow.response.stream = tap

    def _keep(self, flow: http.HTTPFlow) -> None:
        buf = self.bodies.pop(flow.id, None)
        if buf is not None and flow.response is not None:
            flow.response.raw_content = bytes(buf)  # raw: still content-encoded, as on the wire

    def response(self, flow: http.HTTPFlow) -> None:
        self._keep(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._keep(flow)


addons = [RecordTap()]
