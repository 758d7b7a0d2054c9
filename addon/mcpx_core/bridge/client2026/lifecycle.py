"""A held call's two lifecycles, as tables of states and the events that move between them (the way
h11's ``_state.py`` writes a connection's), checked in one place: :meth:`TolerantLifecycle.fire`. No IO:
:class:`~.held.Held` carries one of each, the bridge fires the events as the call goes, and
``tests/unit/test_client2026_lifecycle.py`` drives the tables by events alone.

Two concerns, one table each:

**The upstream stream** of the call (:class:`StreamState`): the POST's SSE answer, or a resuming
GET's (SSE polling, 2025-11-25 basic/transports.mdx:107-115, ``TR-sse-priming-polling``).

- ``STREAMING``: its events are read (the POST sent, or a resuming GET that streams).
- ``RESPONDED``: the call's JSON-RPC response came; the stream may stay open until the server closes it.
- ``RESUMING``: the server closed it after a newer event id without the response: a resume waits
  the server's ``retry`` or sends its ``GET`` with ``Last-Event-ID``.
- ``ENDED``: nothing more comes (closed after the response or without an event id, the whole answer
  as JSON, a resume that failed, nobody waits any more).
- ``UNDECODABLE``: it stopped decoding (its Content-Encoding): nothing after the fault is read, never resumed.

**The client's round trip** (:class:`TripState`): what the 2026-07-28 client's request is waiting for.

- ``CALLING``: the call is sent upstream and its stream read for the client's request.
- ``HELD``: the client got ``input_required``; the upstream call is held for its retry.
- ``REPLAY``: the client got ``input_required`` with nothing held upstream (URL elicitations,
  server requests sent outside any call): its retry sends the request again.
- ``RETRIED``: the retry came; its ``inputResponses`` answer the server, the call's stream is read again.
- ``ANSWERED``: the client's request got its final answer (the call's result or error, mcpx's -32603,
  the server's body as it came).
- ``RESENT``: the request went upstream again as a new call, a round trip of its own (the retry of a
  ``REPLAY``; an upstream session the server no longer knows).
- ``FORGOTTEN``: nobody waits for the call any more (``HELD_TTL`` after its ``input_required``, or
  no message for ``CALL_IDLE``): its stream is not resumed.
- ``FAILED``: sending the call raised (or was cancelled): the client's flow gets that error.

An event that comes late to an end state (a late event of its table: the close of a stream that already
ended, the -32603 of a call forgotten for ``CALL_IDLE``) changes nothing and :meth:`TolerantLifecycle.fire`
returns False: the caller does nothing more for it. Any other pair is a bug, and a bug must never
lose a message: :meth:`TolerantLifecycle.fire` keeps the state, logs a warning, hands the same line to
``on_refused`` (the bridge makes it a ``passthrough`` record on the client's exchange) and returns
True, so the caller carries on as the event says and the message it carries goes where it would
have. It never raises into a hook.

**The upstream session's GET stream** (:class:`GetState`, :class:`~.get_stream.Inbox`): ``CLOSED``
(none open), ``OPENING`` (sent, no byte yet), ``OPEN`` (streaming); opened only when closed.

Each table is a :class:`~mcpx_core.lifecycle.Table`, checked at import.
"""

from __future__ import annotations

import enum
from typing import Callable

from ...lifecycle import Lifecycle as StrictLifecycle, LifecycleError, Table
from .shared import NAME, logger


class StreamState(enum.Enum):
    STREAMING = "streaming"
    RESPONDED = "responded"
    RESUMING = "resuming"
    ENDED = "ended"
    UNDECODABLE = "undecodable"


class StreamEvent(enum.Enum):
    #: the call's JSON-RPC response came on the stream
    RESPONSE = "response"
    #: nothing more comes: closed after the response or with no event id, the whole answer as JSON,
    #: or closed with nobody waiting
    END = "end"
    #: closed (or broken off) after a newer event id without the response: resumed
    RESUME = "resume"
    #: the resuming GET streams
    RESUMED = "resumed"
    #: a resume failed (the GET not answered with a stream, a resumed stream with no newer event)
    FAIL = "fail"
    #: the stream stopped decoding
    UNDECODABLE = "undecodable"
    #: nobody waits for its messages any more (CALL_IDLE; a resume not made for a forgotten call)
    STOP = "stop"


class TripState(enum.Enum):
    CALLING = "calling"
    HELD = "held"
    REPLAY = "replay"
    RETRIED = "retried"
    ANSWERED = "answered"
    RESENT = "resent"
    FORGOTTEN = "forgotten"
    FAILED = "failed"


class TripEvent(enum.Enum):
    #: input_required to the client, the upstream call held
    ASK = "ask"
    #: input_required to the client, nothing held upstream: the retry sends the request again
    ASK_REPLAY = "ask-replay"
    #: the client's retry, with this round trip's requestState
    RETRY = "retry"
    #: the final answer to the client's request
    ANSWER = "answer"
    #: the request sent upstream again as a new call (the upstream session answered 404)
    RESEND = "resend"
    #: nobody waits any more (HELD_TTL, CALL_IDLE)
    STOP = "stop"
    #: sending the call raised
    FAIL = "fail"


class GetState(enum.Enum):
    CLOSED = "closed"
    OPENING = "opening"
    OPEN = "open"


class GetEvent(enum.Enum):
    #: mcpx sends the GET
    OPEN = "open"
    #: bytes of the stream came
    CHUNK = "chunk"
    #: it ended: the server closed it, it broke off or failed, it was answered without a stream,
    #: or mcpx ended it
    END = "end"


SS, SE, TS, TE, GS, GE = StreamState, StreamEvent, TripState, TripEvent, GetState, GetEvent
STREAM_ENDS = (SS.ENDED, SS.UNDECODABLE)
TRIP_ENDS = (TS.ANSWERED, TS.RESENT, TS.FORGOTTEN, TS.FAILED)

#: the upstream stream's table
STREAM_TABLE: Table[StreamState, StreamEvent] = Table("the call's upstream stream", StreamState, StreamEvent, {
    (SS.STREAMING, SE.RESPONSE): SS.RESPONDED,
    (SS.RESPONDED, SE.RESPONSE): SS.RESPONDED,  # (a server that sends it twice: both read)
    (SS.STREAMING, SE.END): SS.ENDED,
    (SS.RESPONDED, SE.END): SS.ENDED,
    (SS.STREAMING, SE.RESUME): SS.RESUMING,
    (SS.RESUMING, SE.RESUMED): SS.STREAMING,
    (SS.STREAMING, SE.FAIL): SS.ENDED,  # a resumed stream that closed with no newer event
    (SS.RESUMING, SE.FAIL): SS.ENDED,  # the GET failed, or was answered without a stream
    (SS.STREAMING, SE.UNDECODABLE): SS.UNDECODABLE,
    (SS.RESPONDED, SE.UNDECODABLE): SS.UNDECODABLE,
    (SS.RESUMING, SE.UNDECODABLE): SS.UNDECODABLE,
    (SS.STREAMING, SE.STOP): SS.ENDED,
    (SS.RESUMING, SE.STOP): SS.ENDED,
}, ended=STREAM_ENDS, late=(SE.RESPONSE, SE.END, SE.FAIL, SE.STOP, SE.UNDECODABLE))
#: (state, event) -> next state, of the upstream stream; and the events that come late to an ended
#: stream (they change nothing)
STREAM, STREAM_LATE = STREAM_TABLE.moves, STREAM_TABLE.absorbed

#: the client round trip's table; the -32603 of a call that idled for CALL_IDLE is the late ANSWER
#: of a FORGOTTEN one
TRIP_TABLE: Table[TripState, TripEvent] = Table("the client's round trip", TripState, TripEvent, {
    (TS.CALLING, TE.ASK): TS.HELD,
    (TS.RETRIED, TE.ASK): TS.HELD,
    (TS.CALLING, TE.ASK_REPLAY): TS.REPLAY,
    (TS.RETRIED, TE.ASK_REPLAY): TS.REPLAY,
    (TS.HELD, TE.RETRY): TS.RETRIED,
    (TS.REPLAY, TE.RETRY): TS.RESENT,
    (TS.CALLING, TE.ANSWER): TS.ANSWERED,
    (TS.RETRIED, TE.ANSWER): TS.ANSWERED,
    (TS.CALLING, TE.RESEND): TS.RESENT,
    (TS.CALLING, TE.FAIL): TS.FAILED,
    (TS.CALLING, TE.STOP): TS.FORGOTTEN,  # CALL_IDLE
    (TS.RETRIED, TE.STOP): TS.FORGOTTEN,  # CALL_IDLE
    (TS.HELD, TE.STOP): TS.FORGOTTEN,  # HELD_TTL
    (TS.REPLAY, TE.STOP): TS.FORGOTTEN,  # HELD_TTL
}, ended=TRIP_ENDS, late=(TE.ANSWER, TE.STOP))
TRIP, TRIP_LATE = TRIP_TABLE.moves, TRIP_TABLE.absorbed

#: the upstream session's GET stream (:class:`~.get_stream.Inbox`): opened only when closed; a
#: chunk or its end may come in any state (a chunk already on its way when mcpx ended it)
GET_TABLE: Table[GetState, GetEvent] = Table("the upstream session's GET stream", GetState, GetEvent, {
    (GS.CLOSED, GE.OPEN): GS.OPENING,
    **{(s, GE.CHUNK): GS.OPEN for s in GS},
    **{(s, GE.END): GS.CLOSED for s in GS},
})


class TolerantLifecycle(StrictLifecycle):
    """A lifecycle whose :meth:`fire` never raises: a pair the table lacks keeps the state and says so."""

    __slots__ = ("on_refused",)

    def __init__(self, table: Table, on_refused: Callable[[str], None] | None = None) -> None:
        super().__init__(table)
        self.on_refused = on_refused

    def fire(self, event: enum.Enum) -> bool:  # type: ignore[override]
        """Move on ``event``. False: a late event (nothing changes, nothing more to do); True: the
        state moved, or the pair is not in the table (a bug: the state kept, one warning line and
        ``on_refused``), and the caller carries on as the event says."""
        if self.late(event):
            return False
        try:
            super().fire(event)
        except LifecycleError:
            detail = (f"{self.name} in state {self.state.value}: no transition on {event.value} (a bug in mcpx): "
                      "the state is kept and the message goes on")
            logger.warning(f"mcpx: {NAME}: {detail}")
            if self.on_refused is not None:
                try:
                    self.on_refused(detail)
                except Exception as e:  # (a record that fails never stops the message)
                    logger.warning(f"mcpx: {NAME}: recording a refused transition failed: {type(e).__name__}: {e}")
        return True

    @property
    def over(self) -> bool:
        """Whether the state is an end state (one the table's late events go to)."""
        return self.ended


def stream_lifecycle(on_refused: Callable[[str], None] | None = None) -> TolerantLifecycle:
    return TolerantLifecycle(STREAM_TABLE, on_refused)


def trip_lifecycle(on_refused: Callable[[str], None] | None = None) -> TolerantLifecycle:
    return TolerantLifecycle(TRIP_TABLE, on_refused)


def get_lifecycle() -> StrictLifecycle:
    """The GET stream's lifecycle: every pair it is fired with is in its table."""
    return StrictLifecycle(GET_TABLE)
