"""The generic lifecycle table (addon/mcpx_core/lifecycle.py) that every lifecycle of mcpx is
written with: a small table driven by events alone, the typed error of a pair it lacks, the
checks a table passes when it is made, and mcpx's own tables."""
from __future__ import annotations

import enum

import pytest

from mcpx_core.bridge.client2026 import lifecycle as client2026
from mcpx_core.bridge.legacy_client import lifecycle as legacy
from mcpx_core.lifecycle import Lifecycle, LifecycleError, Table, TableError
from mcpx_core.transport.http_sse import lifecycle as http_sse
from mcpx_core.transport.upstream_sse import lifecycle as upstream_sse


class Door(enum.Enum):
    SHUT = "shut"
    OPEN = "open"
    GONE = "gone"


class Act(enum.Enum):
    PUSH = "push"
    PULL = "pull"
    BURN = "burn"


class DoorError(LifecycleError):
    pass


D, A = Door, Act
MOVES = {(D.SHUT, A.PUSH): D.OPEN, (D.OPEN, A.PULL): D.SHUT, (D.SHUT, A.BURN): D.GONE, (D.OPEN, A.BURN): D.GONE}


def door(**kw) -> Table[Door, Act]:
    return Table("the door", Door, Act, MOVES, ended=(D.GONE,), late=(A.PUSH, A.BURN), error=DoorError, **kw)


def test_fire_moves_by_the_table_and_returns_the_state_before():
    life = Lifecycle(door(), history=True)
    assert life.state is D.SHUT and life.name == "the door" and not life.ended
    assert life.fire(A.PUSH) is D.SHUT and life.state is D.OPEN
    assert life.to(A.PULL) is D.SHUT and life.state is D.SHUT  # (to: the state after)
    assert life.fire(A.BURN) is D.SHUT and life.state is D.GONE and life.ended
    assert life.history == [(D.SHUT, A.PUSH, D.OPEN), (D.OPEN, A.PULL, D.SHUT), (D.SHUT, A.BURN, D.GONE)]


def test_an_ended_state_absorbs_its_late_events_only():
    life = Lifecycle(door())
    life.fire(A.BURN)
    assert life.history is None
    assert life.late(A.PUSH) and life.late(A.BURN) and not life.late(A.PULL)
    assert life.can(A.PUSH) and not life.can(A.PULL)
    assert life.fire(A.PUSH) is D.GONE and life.fire(A.BURN) is D.GONE and life.state is D.GONE
    with pytest.raises(DoorError, match="^the door: pull in state gone$"):
        life.fire(A.PULL)


def test_a_pair_the_table_lacks_raises_its_typed_error_and_keeps_the_state():
    life = Lifecycle(door(), history=True)
    assert not life.can(A.PULL) and not life.late(A.PULL)
    with pytest.raises(DoorError) as e:
        life.fire(A.PULL)
    assert isinstance(e.value, LifecycleError)
    assert (str(e.value), e.value.table, e.value.state, e.value.event) == ("the door: pull in state shut", "the door", D.SHUT, A.PULL)
    assert life.state is D.SHUT and life.history == []


def test_the_whole_table_is_the_moves_and_the_absorbed_pairs():
    t = door(initial=D.OPEN)
    assert t.initial is D.OPEN and Lifecycle(t).state is D.OPEN and door().initial is D.SHUT
    assert t.absorbed == {(D.GONE, A.PUSH), (D.GONE, A.BURN)}
    assert t.transitions == {**MOVES, (D.GONE, A.PUSH): D.GONE, (D.GONE, A.BURN): D.GONE}
    assert t.moves == MOVES and t.moves is not MOVES


@pytest.mark.parametrize("moves,kw,message", [
    ({(D.SHUT, A.PUSH): D.OPEN, (D.OPEN, A.PULL): D.SHUT}, {"ended": (D.GONE,)},
     "the door: unreachable from SHUT: GONE"),
    ({**MOVES, (D.GONE, A.PULL): D.SHUT}, {"ended": (D.GONE,)},
     "the door: an ended state moves on: GONE"),
    ({(D.SHUT, A.PUSH): D.OPEN, (D.SHUT, A.BURN): D.GONE}, {"ended": (D.GONE,)},
     "the door: a state that is not ended has no way out: OPEN"),
    (MOVES, {}, "the door: a state that is not ended has no way out: GONE"),
    ({**MOVES, (D.OPEN, "slam"): D.SHUT}, {"ended": (D.GONE,)},
     "the door: not of Door or Act: 'slam'"),
    (MOVES, {"ended": (D.GONE,), "late": (A.PUSH, D.SHUT)},
     "the door: not of Door or Act: <Door.SHUT: 'shut'>"),
    ({(D.SHUT, A.PUSH): D.OPEN, (D.OPEN, A.PULL): D.SHUT}, {"late": (A.PUSH,)},
     "the door: late events but no ended state"),
])
def test_a_table_that_breaks_its_rules_is_refused_when_made(moves, kw, message):
    with pytest.raises(TableError) as e:
        Table("the door", Door, Act, moves, **kw)
    assert str(e.value) == message


@pytest.mark.parametrize("table,ended,late", [
    (client2026.STREAM_TABLE, {"ended", "undecodable"}, {"response", "end", "fail", "stop", "undecodable"}),
    (client2026.TRIP_TABLE, {"answered", "resent", "forgotten", "failed"}, {"answer", "stop"}),
    (client2026.GET_TABLE, set(), set()),
    (legacy.TABLE, {"answered", "finished", "cancelled"}, {"answer", "final", "cancel"}),
    (http_sse.TABLE, {"closed"}, {e.value for e in http_sse.TransportEvent}),
    (upstream_sse.TABLE, {"broken", "closed"}, {e.value for e in upstream_sse.UpstreamEvent}),
])
def test_mcpxs_tables(table, ended, late):
    assert isinstance(table, Table)
    assert {s.value for s in table.ended} == ended and {e.value for e in table.late} == late
    assert not {s for s, _ in table.moves} & table.ended
    assert table.transitions == {**table.moves, **{p: p[0] for p in table.absorbed}}
