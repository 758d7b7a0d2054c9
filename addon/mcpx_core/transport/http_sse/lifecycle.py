"""An HTTP+SSE transport session's lifecycle as a table of states and the events that move between
them, checked in one place (:meth:`TransportLifecycle.fire`). No IO: :class:`~.serve.HttpSseTransport`
fires the events as the client's stream and the upstream legs go, and tests drive the table by
events alone (``tests/unit/test_http_sse_lifecycle.py``).

States, for one client stream (``GET <sse url>`` that mcpx serves):

- ``OPEN``: the ``endpoint`` event went out; no upstream session yet. The client POSTs its
  ``initialize`` next (schema/2024-11-05 lifecycle: nothing else before it). A client that reconnects
  with the id of its ``initialize`` answer (:mod:`.resume`) moves on to ``READY`` at once (``RESUME``).
- ``INITIALIZING``: the ``initialize`` is on its way to the server's Streamable HTTP endpoint.
- ``READY``: the server's answer gave the session (``Mcp-Session-Id``, sealed by mcpx as for any
  session); each POST goes upstream with it.
- ``LISTENING``: ready, and the upstream GET stream (server messages outside any request,
  2025-03-26 Streamable HTTP 2.2) is open and relayed to the client's stream.
- ``CLOSED``: the client's stream went away (or mcpx shut down): the upstream GET stream is ended,
  the upstream session deleted; POSTs to its endpoint get 404.

``CLOSED`` ends the session: an event that comes late to it (a leg's answer after the client
left) changes nothing. Any other pair the table lacks is a bug and raises :class:`TransportStateError`.
The table is a :class:`~mcpx_core.lifecycle.Table`, checked at import.
"""

from __future__ import annotations

import enum

from ...lifecycle import Lifecycle, LifecycleError, Table


class TransportState(enum.Enum):
    OPEN = "open"
    INITIALIZING = "initializing"
    READY = "ready"
    LISTENING = "listening"
    CLOSED = "closed"


class TransportEvent(enum.Enum):
    #: the client POSTed ``initialize``
    INITIALIZE = "initialize"
    #: the client reconnected with a ``Last-Event-ID`` that seals a ready session (:mod:`.resume`)
    RESUME = "resume"
    #: the server's answer to it carried a session (or the server keeps none: stateless)
    SESSION = "session"
    #: the server refused the ``initialize`` (an error answer): the client may try again
    REFUSED = "refused"
    #: the upstream GET stream opened
    LISTEN = "listen"
    #: the upstream GET stream ended (the server closed it, or refused it: 405)
    UNLISTEN = "unlisten"
    #: the client's stream went away, or mcpx shut down
    CLOSE = "close"


S, E = TransportState, TransportEvent


class TransportStateError(LifecycleError, RuntimeError):
    """An event the current state cannot take (a bug in the IO adapter, never a peer's doing)."""


#: the session's table: ``CLOSE`` ends every state, and ``CLOSED`` absorbs every event
TABLE: Table[TransportState, TransportEvent] = Table("HTTP+SSE transport", TransportState, TransportEvent, {
    (S.OPEN, E.INITIALIZE): S.INITIALIZING,
    (S.OPEN, E.RESUME): S.READY,
    (S.INITIALIZING, E.SESSION): S.READY,
    (S.INITIALIZING, E.REFUSED): S.OPEN,
    (S.READY, E.INITIALIZE): S.INITIALIZING,  # a client that initializes again on the same stream
    (S.READY, E.LISTEN): S.LISTENING,
    (S.LISTENING, E.UNLISTEN): S.READY,
    (S.LISTENING, E.INITIALIZE): S.INITIALIZING,
    **{(s, E.CLOSE): S.CLOSED for s in S if s is not S.CLOSED},
}, ended=(S.CLOSED,), late=E, error=TransportStateError)
#: (state, event) -> next state, the late events included
TRANSITIONS = TABLE.transitions


class TransportLifecycle(Lifecycle[TransportState, TransportEvent]):
    """The state of one transport session; :meth:`fire` moves it by the table (returns the state
    after), :attr:`history` keeps every move."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(TABLE, history=True)

    fire = Lifecycle.to

    @property
    def ready(self) -> bool:
        """Whether POSTs go upstream with the session."""
        return self.state in (S.READY, S.LISTENING)

    @property
    def closed(self) -> bool:
        return self.state is S.CLOSED
