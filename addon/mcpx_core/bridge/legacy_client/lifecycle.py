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

from ...lifecycle import Lifecycle, LifecycleError, Table


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


class CallStateError(LifecycleError):
    """An event the table has no transition for in the call's state."""


#: the call's table: ``ANSWERED``, ``FINISHED`` and ``CANCELLED`` end it and absorb a late
#: ``ANSWER``, ``FINAL`` or ``CANCEL``
TABLE: Table[CallState, CallEvent] = Table("call", CallState, CallEvent, {
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
}, ended=(S.ANSWERED, S.FINISHED, S.CANCELLED), late=(E.ANSWER, E.FINAL, E.CANCEL), error=CallStateError)
#: (state, event) -> next state, the late events included
TRANSITIONS = TABLE.transitions


class CallLifecycle(Lifecycle[CallState, CallEvent]):
    """One call's state; :meth:`fire` (returns the state before) is the only place it changes."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(TABLE)
