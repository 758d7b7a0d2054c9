"""Which stream each message of the upstream HTTP+SSE stream goes to, sans-IO.

An HTTP+SSE server sends every answer and server message on its one GET stream (schema/2024-11-05
transports "HTTP with SSE"); a Streamable HTTP client expects a request's answer on the POST that
carried it, with the messages "related to" that request before it on that POST's SSE answer when
it accepts ``text/event-stream`` (2025-03-26 transports "Streamable HTTP" 2.1.4-2.1.5), and the
server's other messages on its standalone GET stream (2.2). Each client session has its own
upstream stream (one :class:`Router` each), so the JSON-RPC ids are the client's own and never mix.

The routing, for each upstream message in the order it arrived:

- a JSON-RPC response (``result`` or ``error``) goes to the pending POST of the same id (ids keyed
  by JSON type: ``1`` and ``"1"`` are two requests) and ends it;
- ``notifications/progress`` goes to the POST whose request set that ``progressToken``
  (schema/2024-11-05/schema.ts ``ProgressNotification``: "The progress token which was given in
  the initial request");
- a server request (``sampling/createMessage``, ``roots/list``, ``elicitation/create`` after
  the downgrade's inverse) goes to the one pending POST when exactly one is pending: the 2024-11-05
  wire does not say which request a server request belongs to, and with one pending there is only
  one it can be "made during"; with none or several it goes to the GET stream;
- everything else, and every companion of a POST whose client takes JSON only, goes to the GET stream.

A POST whose client takes JSON gets the final answer alone; a POST whose client takes SSE gets
its companions and then the final answer, in the order they arrived. The GET stream's messages
wait in a bounded queue until the client opens it; past the bound the oldest goes and is counted
(:attr:`Router.dropped`), for the adapter's record.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from . import QUEUE_LIMIT

GET = "get"


def id_key(value: Any) -> tuple[str, Any]:
    """A JSON-RPC id as a dict key that keeps ``1`` and ``"1"`` apart (``True`` is no id)."""
    return (type(value).__name__, value)


@dataclass
class Pending:
    """One client POST waiting on its request's answer."""
    id: Any
    sse: bool
    progress_token: Any = None
    #: messages for this POST, in arrival order; the last is the final answer once ``done``
    out: list[dict] = field(default_factory=list)
    done: bool = False


class Router:
    def __init__(self, queue_limit: int | None = None) -> None:
        self.pending: dict[tuple[str, Any], Pending] = {}
        self.get_open = False
        self.queue: deque[dict] = deque()
        self.queue_limit = QUEUE_LIMIT if queue_limit is None else queue_limit
        self.dropped = 0
        #: messages to write on the client's open GET stream (the adapter drains it)
        self.get_out: list[dict] = []

    def register(self, message: dict, sse: bool) -> Pending:
        """A client POST carrying a JSON-RPC request (``method`` and ``id``), before it goes upstream."""
        meta = (message.get("params") or {}).get("_meta") if isinstance(message.get("params"), dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        p = Pending(message["id"], sse, token)
        self.pending[id_key(message["id"])] = p
        return p

    def route(self, message: dict) -> str | Pending:
        """Deliver one upstream message: returns the :class:`Pending` it went to, or :data:`GET`."""
        method = message.get("method")
        if method is None and "id" in message:
            p = self.pending.pop(id_key(message["id"]), None)
            if p is not None:
                p.out.append(message)
                p.done = True
                return p
        elif method == "notifications/progress":
            token = (message.get("params") or {}).get("progressToken")
            if token is not None:
                for p in self.pending.values():
                    if p.progress_token is not None and id_key(p.progress_token) == id_key(token):
                        return self._companion(p, message)
        elif "id" in message and len(self.pending) == 1:
            return self._companion(next(iter(self.pending.values())), message)
        self._to_get(message)
        return GET

    def _companion(self, p: Pending, message: dict) -> str | Pending:
        if p.sse:
            p.out.append(message)
            return p
        self._to_get(message)
        return GET

    def _to_get(self, message: dict) -> None:
        if self.get_open:
            self.get_out.append(message)
            return
        if len(self.queue) >= self.queue_limit:
            self.queue.popleft()
            self.dropped += 1
        self.queue.append(message)

    def open_get(self) -> list[dict]:
        """The client opened its standalone GET stream: the queued messages, to write first."""
        self.get_open = True
        out = list(self.queue)
        self.queue.clear()
        return out

    def close_get(self) -> None:
        self.get_open = False

    def cancel(self, request_id: Any) -> Pending | None:
        """The client cancelled a request (``notifications/cancelled``): its POST gets no answer
        (schema/2024-11-05/schema.ts ``CancelledNotification``: the receiver "SHOULD NOT" answer)."""
        return self.pending.pop(id_key(request_id), None)

    def fail_all(self, why: str) -> list[Pending]:
        """The upstream stream broke: each pending POST ends in a JSON-RPC error -32603 saying why."""
        failed = list(self.pending.values())
        self.pending.clear()
        for p in failed:
            p.out.append({"jsonrpc": "2.0", "id": p.id, "error": {"code": -32603, "message": why}})
            p.done = True
        return failed
