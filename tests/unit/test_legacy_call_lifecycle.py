"""The legacy-client bridge's call lifecycle (bridge/legacy_client/lifecycle.py), driven by events
alone: no socket, no task, no bridge."""
from __future__ import annotations

import pytest

from mcpx_core.bridge.legacy_client import CallEvent as E, CallLifecycle, CallState as S, CallStateError
from mcpx_core.bridge.legacy_client.lifecycle import TRANSITIONS


def drive(*events: E) -> S:
    life = CallLifecycle()
    for ev in events:
        life.fire(ev)
    return life.state


@pytest.mark.parametrize("events,end", [
    ((E.BEGIN, E.ANSWER), S.ANSWERED),                                   # one JSON body
    ((E.BEGIN, E.STREAM, E.FINAL), S.FINISHED),                          # a notification, then the result
    ((E.BEGIN, E.STREAM, E.ASK, E.ANSWERS, E.ASK, E.ANSWERS, E.FINAL), S.FINISHED),  # two input rounds
    ((E.BEGIN, E.STREAM, E.ASK, E.FINAL), S.FINISHED),                   # input timeout: -32603 on the stream
    ((E.BEGIN, E.CANCEL, E.CANCEL), S.CANCELLED),                        # cancel(), then the task's CancelledError
    ((E.BEGIN, E.STREAM, E.ASK, E.CANCEL, E.CANCEL), S.CANCELLED),       # client gone while asked
    ((E.BEGIN, E.CANCEL, E.FINAL), S.CANCELLED),                         # a late final answer changes nothing
])
def test_sequences(events, end):
    assert drive(*events) is end


def test_fire_returns_the_state_before():
    life = CallLifecycle()
    assert life.fire(E.BEGIN) is S.NEW and life.fire(E.ANSWER) is S.WAITING and life.ended
    assert life.fire(E.CANCEL) is S.ANSWERED and life.state is S.ANSWERED


@pytest.mark.parametrize("events", [
    (E.ANSWER,),                      # not begun
    (E.BEGIN, E.BEGIN),
    (E.BEGIN, E.ASK),                 # input requests need the stream
    (E.BEGIN, E.FINAL),               # a final event needs the stream
    (E.BEGIN, E.STREAM, E.ANSWER),    # a streamed call ends on the stream
    (E.BEGIN, E.STREAM, E.ANSWERS),
    (E.BEGIN, E.ANSWER, E.STREAM),    # answered: no stream after
])
def test_other_pairs_are_refused(events):
    with pytest.raises(CallStateError):
        drive(*events)


def test_ended_states_absorb_only_late_events():
    for end in (S.ANSWERED, S.FINISHED, S.CANCELLED):
        assert {ev for (st, ev) in TRANSITIONS if st is end} == {E.ANSWER, E.FINAL, E.CANCEL}
        assert all(TRANSITIONS[(end, ev)] is end for ev in (E.ANSWER, E.FINAL, E.CANCEL))
