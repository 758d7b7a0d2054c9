"""An HTTP+SSE transport session's lifecycle, driven by events alone
(addon/mcpx_core/transport/http_sse/lifecycle.py): the table's paths, what ends a session, and
that a pair the table lacks raises."""
from __future__ import annotations

import pytest

from mcpx_core.transport.http_sse.lifecycle import TRANSITIONS, TransportEvent as E, TransportLifecycle, TransportState as S, \
    TransportStateError


def drive(*events: E) -> TransportLifecycle:
    life = TransportLifecycle()
    for e in events:
        life.fire(e)
    return life


def test_a_session_from_its_stream_to_its_close():
    life = drive(E.INITIALIZE, E.SESSION, E.LISTEN, E.UNLISTEN, E.CLOSE)
    assert [(a.value, e.value, b.value) for a, e, b in life.history] == [
        ("open", "initialize", "initializing"), ("initializing", "session", "ready"), ("ready", "listen", "listening"),
        ("listening", "unlisten", "ready"), ("ready", "close", "closed")]
    assert life.closed and not life.ready


def test_a_refused_initialize_lets_the_client_try_again():
    life = drive(E.INITIALIZE, E.REFUSED)
    assert life.state is S.OPEN and not life.ready
    assert drive(E.INITIALIZE, E.REFUSED, E.INITIALIZE, E.SESSION).ready


def test_a_client_that_initializes_again_on_its_stream():
    assert drive(E.INITIALIZE, E.SESSION, E.LISTEN, E.INITIALIZE).state is S.INITIALIZING


@pytest.mark.parametrize("state", list(S))
def test_close_ends_every_state_and_nothing_moves_a_closed_session(state):
    assert TRANSITIONS[(state, E.CLOSE)] is S.CLOSED
    life = drive(E.CLOSE)
    for e in E:  # a leg's answer that comes after the client left changes nothing
        assert life.fire(e) is S.CLOSED


@pytest.mark.parametrize("events,bad", [
    ((), E.SESSION),  # a session before any initialize
    ((), E.LISTEN),  # a GET stream before the session
    ((E.INITIALIZE,), E.LISTEN),
    ((E.INITIALIZE, E.SESSION), E.UNLISTEN),
    ((E.INITIALIZE, E.SESSION, E.LISTEN), E.LISTEN),
])
def test_a_pair_the_table_lacks_raises(events, bad):
    life = drive(*events)
    before = life.state
    assert not life.can(bad)
    with pytest.raises(TransportStateError, match=f"{bad.value} in state {before.value}"):
        life.fire(bad)
    assert life.state is before
