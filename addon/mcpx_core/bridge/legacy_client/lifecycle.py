"""A call's lifecycle as a table of states and the events that move between them (the way h11's
``_state.py`` writes a connection's), checked in one place: :meth:`CallLifecycle.fire`. No IO:
:class:`~.call.Call` fires the events as its rounds go, and tests drive the table by events alone.

States, from the client's side of one bridged request:

- ``NEW``: made, not begun.
- ``WAITING``: begun, the upstream rounds run; the client's flow waits for what it gets.
- ``STREAMING``: the client's flow got mcpx's answer stream (a notification or an input request
  came before the result); the rounds go on, each message an SSE event.
- ``INPUT``: streaming, and input requests of this call await the client's answers.
- ``ANSWERED``: the client got the whole answer as one body (JSON, or the server's own answer).
- ``FINISHED``: the final answer was the stream's last event; the stream is closed.
- ``CANCELLED``: the client cancelled, went away, ended the session, or mcpx shut down.

``ANSWERED``, ``FINISHED`` and ``CANCELLED`` end the call: an event that comes late to them (the
task's own cancellation after :meth:`~.call.Call.cancel`, a final answer of a call cancelled
meanwhile) changes nothing, as the table says. Any other pair is a bug and raises
:class:`CallStateError`.
"""

from __future__ import annotations

import enum


class CallState(enum.Enum):
    NEW = "new"
    WAITING = "waiting"
    STREAMING = "streaming"
    INPUT = "input"
    ANSWERED = "answered"
    FINISHED = "finished"
    CANCELLED = "cancelled"


class CallEvent(enum.Enum):
    #: the call starts its rounds
    BEGIN = "begin"
    #: the answer becomes an SSE stream (the first message before the result)
    STREAM = "stream"
    #: input requests were sent to the client
    ASK = "ask"
    #: the client answered every input request of the round
    ANSWERS = "answers"
    #: the whole answer, as one body, goes to a client that has no stream yet
    ANSWER = "answer"
    #: the final answer, the last event on the stream
    FINAL = "final"
    #: cancelled (client cancel, client gone, DELETE, shutdown, the task cancelled)
    CANCEL = "cancel"


S, E = CallState, CallEvent
_ENDED = (S.ANSWERED, S.FINISHED, S.CANCELLED)

#: (state, event) -> next state
TRANSITIONS: dict[tuple[CallState, CallEvent], CallState] = {
    (S.NEW, E.BEGIN): S.WAITING,
    (S.WAITING, E.STREAM): S.STREAMING,
    (S.WAITING, E.ANSWER): S.ANSWERED,
    (S.WAITING, E.CANCEL): S.CANCELLED,
    (S.STREAMING, E.ASK): S.INPUT,
    (S.STREAMING, E.FINAL): S.FINISHED,
    (S.STREAMING, E.CANCEL): S.CANCELLED,
    (S.INPUT, E.ANSWERS): S.STREAMING,
    (S.INPUT, E.FINAL): S.FINISHED,
    (S.INPUT, E.CANCEL): S.CANCELLED,
    # late events: an ended call stays ended
    **{(end, ev): end for end in _ENDED for ev in (E.ANSWER, E.FINAL, E.CANCEL)},
}


class CallStateError(Exception):
    """An event the table has no transition for in the call's state."""


class CallLifecycle:
    """One call's state; :meth:`fire` is the only place it changes."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = CallState.NEW

    def fire(self, event: CallEvent) -> CallState:
        """Move on ``event``; returns the state it was in before."""
        before = self.state
        nxt = TRANSITIONS.get((before, event))
        if nxt is None:
            raise CallStateError(f"call in state {before.value}: no transition on {event.value}")
        self.state = nxt
        return before

    @property
    def ended(self) -> bool:
        return self.state in _ENDED
