"""A client session's upstream HTTP+SSE stream as a table of states and events, checked in one
place (:meth:`UpstreamLifecycle.fire`), no IO; tests drive it by events alone
(``tests/unit/test_upstream_sse_lifecycle.py``).

States, for one client session (mcpx mints its ``Mcp-Session-Id``):

- ``CONNECTING``: mcpx's GET of the server's SSE path is open; no ``endpoint`` event yet.
- ``OPEN``: the ``endpoint`` event came (schema/2024-11-05 "HTTP with SSE": the first event); the
  client's ``initialize`` goes there next.
- ``INITIALIZING``: the ``initialize`` was POSTed; its answer comes on the stream.
- ``READY``: the server answered it; every client message goes to the endpoint.
- ``BROKEN``: the upstream stream ended or failed: the pending requests got -32603, every later
  POST of the session gets 404 (2025-03-26 Streamable HTTP 2.5.3: the client re-initializes).
- ``CLOSED``: the client's ``DELETE``, idle expiry or mcpx's shutdown ended the upstream stream.

``BROKEN`` and ``CLOSED`` end the session: late events change nothing. Any other pair the table
lacks is a bug and raises :class:`UpstreamStateError`. The table is a
:class:`~mcpx_core.lifecycle.Table`, checked at import.
"""

from __future__ import annotations

import enum

from ...lifecycle import Lifecycle, LifecycleError, Table


class UpstreamState(enum.Enum):
    CONNECTING = "connecting"
    OPEN = "open"
    INITIALIZING = "initializing"
    READY = "ready"
    BROKEN = "broken"
    CLOSED = "closed"


class UpstreamEvent(enum.Enum):
    #: the stream's first event was ``endpoint``
    ENDPOINT = "endpoint"
    #: the client's ``initialize`` went to the endpoint
    INITIALIZE = "initialize"
    #: the server answered it with a result
    INITIALIZED = "initialized"
    #: the server answered it with an error: the client may try again on the same stream
    REFUSED = "refused"
    #: the upstream stream ended, failed, or its first event was not ``endpoint``
    BREAK = "break"
    #: the client's DELETE, idle expiry, or mcpx's shutdown
    CLOSE = "close"


S, E = UpstreamState, UpstreamEvent
ENDED = (S.BROKEN, S.CLOSED)


class UpstreamStateError(LifecycleError, RuntimeError):
    """An event the current state cannot take (a bug in the IO adapter, never a peer's doing)."""


#: the session's table: ``BREAK`` and ``CLOSE`` end every live state; an ended one absorbs every event
TABLE: Table[UpstreamState, UpstreamEvent] = Table("upstream HTTP+SSE", UpstreamState, UpstreamEvent, {
    (S.CONNECTING, E.ENDPOINT): S.OPEN,
    (S.OPEN, E.INITIALIZE): S.INITIALIZING,
    (S.INITIALIZING, E.INITIALIZED): S.READY,
    (S.INITIALIZING, E.REFUSED): S.OPEN,
    **{(s, E.BREAK): S.BROKEN for s in S if s not in ENDED},
    **{(s, E.CLOSE): S.CLOSED for s in S if s not in ENDED},
}, ended=ENDED, late=E, error=UpstreamStateError)
#: (state, event) -> next state, the late events included
TRANSITIONS = TABLE.transitions


class UpstreamLifecycle(Lifecycle[UpstreamState, UpstreamEvent]):
    """The state of one upstream HTTP+SSE session; :meth:`fire` moves it by the table (returns the
    state after), :attr:`history` keeps every move."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(TABLE, history=True)

    fire = Lifecycle.to

    @property
    def ready(self) -> bool:
        return self.state is S.READY

    def status_for_post(self) -> int | None:
        """The HTTP status a client POST gets without going upstream: 404 once the session ended
        (2025-03-26 Streamable HTTP 2.5.3), else None (it goes to the endpoint)."""
        return 404 if self.state in ENDED else None
