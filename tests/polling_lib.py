"""A scripted 2025-11-25 server that polls and misbehaves on the resume path (SSE polling,
2025-11-25 basic/transports.mdx:107-115), shared by the tests of the 2026-07-28 bridge's resume
(tests/e2e/test_bridge_resume_loops.py) and of the relay toward older clients
(tests/e2e/test_sse_polling_loops.py)."""
from __future__ import annotations

import orjson

from proxy_lib import Client, ScriptedMcpHandler

NEW = "2026-07-28"
#: the ``_meta`` of a raw 2026-07-28 client's request
META = {"io.modelcontextprotocol/protocolVersion": NEW, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"}}

PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1, "total": 2}}
PROGRESS_EVENT = b"event: message\ndata: " + orjson.dumps(PROGRESS) + b"\n\n"
#: a retry field of 5000 ASCII digits: valid (WHATWG: digits only), beyond int()'s 4300-digit limit
HUGE = b"9" * 5000


def polled(rid) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "polled"}]}})


class Misbehaving(ScriptedMcpHandler):
    """A 2025-11-25 server that polls; it stands for a faulty or hostile one (the faults need a server
    that sends them on cue). Session ``mis-1``; event ids ``<ID>1``, ``<ID>2``, ... (``ID``: a class
    attribute). ``tools/call``, by tool name, gets on its SSE answer:

    - ``huge-retry``: in one chunk, a priming event ``1`` with ``retry:`` of 5000 digits, then ``2``
      with ``retry: 0`` and a progress notification; the stream ends. A GET after ``2`` gets the
      result (``3``).
    - ``huge-wait``: ``1`` priming with ``retry:`` of 5000 digits, ``2`` progress; the stream ends
      (mcpx must wait its cap: no GET within a test).
    - ``cycle``: ``1`` priming (retry 0), ``2`` progress, end. A GET after ``2`` gets ``3`` progress,
      end; after ``3``: ``2`` progress again, end (an id that comes back: it loops); the result never
      comes.

    Every GET is kept in ``gets`` as its ``Last-Event-ID``; every call in ``calls`` as (name, id)."""

    REVISION = "2025-11-25"
    SESSION = "mis-1"
    ID = "ev-"
    gets: list = []
    calls: list = []

    def event_id(self, n: int) -> bytes:
        return b"id: " + self.ID.encode() + b"%d\n" % n

    def answer(self, body):
        if "id" not in body:
            self.send_accepted()
            return
        name = body["params"]["name"]
        self.calls.append((name, body["id"]))
        self.start_sse()
        if name == "huge-retry":
            self.chunk(self.event_id(1) + b"retry: " + HUGE + b"\ndata: \n\n" + self.event_id(2) + b"retry: 0\n" + PROGRESS_EVENT)
        elif name == "huge-wait":
            self.chunk(self.event_id(1) + b"retry: " + HUGE + b"\ndata: \n\n" + self.event_id(2) + PROGRESS_EVENT)
        else:
            self.chunk(self.event_id(1) + b"retry: 0\ndata: \n\n")
            self.chunk(self.event_id(2) + PROGRESS_EVENT)
        self.chunk(b"")
        self.close_connection = True

    def do_GET(self):
        last = self.headers.get("last-event-id")
        self.gets.append(last)
        name, rid = self.calls[-1]
        self.close_connection = True
        self.start_sse()
        if name == "cycle":
            self.chunk(self.event_id(3 if last == f"{self.ID}2" else 2) + PROGRESS_EVENT)
        else:
            self.chunk(self.event_id(3) + b"event: message\ndata: " + polled(rid) + b"\n\n")
        self.chunk(b"")


def call_tool(px, rid, name, timeout: float = 15, headers: dict | None = None) -> tuple[int, dict, bytes]:
    """``name`` called through ``px`` by a raw 2026-07-28 client (``timeout`` s at most: mcpx must not
    hang), with ``headers`` too: (status, headers, body)."""
    c = Client(px.port, timeout=timeout)
    call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": {}, "_meta": META}}
    try:
        return c.post(call, {"mcp-protocol-version": NEW, "mcp-method": "tools/call", "mcp-name": name, **(headers or {})})
    finally:
        c.close()
