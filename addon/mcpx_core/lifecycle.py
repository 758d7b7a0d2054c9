"""A lifecycle as an explicit table of states and the events that move between them (the way h11's
``_state.py`` writes a connection's): what every lifecycle of mcpx is written with.

A module declares its states and its events as two enums and one :class:`Table`: the moves
(``(state, event) -> next state``), the ended states, and the late events an ended state absorbs
(a late event changes nothing: the close of a stream that already ended, the answer of a call
already cancelled). :attr:`Table.transitions` is the whole table: the moves and the absorbed pairs.
A :class:`Lifecycle` is one state of one table; :meth:`Lifecycle.fire` is the only place it
changes, and a pair the table does not list raises the table's :class:`LifecycleError` (a bug in
mcpx, never a peer's doing) with the state kept.

A table is checked once, when it is made (at import): its states and events are members of its two
enums, every state is reachable from the first, an ended state has no move out (only the late
events it absorbs), and a state that is not ended has one. A table that breaks one of these raises
:class:`TableError`, so mcpx does not load.

No IO, nothing of MCP.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Generic, TypeVar

S = TypeVar("S", bound=enum.Enum)
E = TypeVar("E", bound=enum.Enum)


class LifecycleError(Exception):
    """An event the table has no transition for in the current state; the state is kept."""

    def __init__(self, table: str, state: enum.Enum, event: enum.Enum) -> None:
        super().__init__(f"{table}: {event.value} in state {state.value}")
        self.table, self.state, self.event = table, state, event


class TableError(ValueError):
    """A table that breaks its own rules (found when it is made, at import)."""


class Table(Generic[S, E]):
    """The states ``states`` and events ``events`` of one lifecycle, and what moves between them.

    ``moves``: ``(state, event) -> next state``, without the late events; ``initial``: where a
    lifecycle begins (the first member of ``states`` unless given); ``ended``: the states that end
    it; ``late``: the events every ended state absorbs (it stays as it is); ``error``: the
    :class:`LifecycleError` class :meth:`Lifecycle.fire` raises on a pair the table lacks."""

    __slots__ = ("name", "states", "events", "initial", "moves", "ended", "late", "absorbed", "transitions", "error")

    def __init__(self, name: str, states: type[S], events: type[E], moves: Mapping[tuple[S, E], S], *,
                 initial: S | None = None, ended: Iterable[S] = (), late: Iterable[E] = (),
                 error: type[LifecycleError] = LifecycleError) -> None:
        self.name, self.states, self.events, self.error = name, states, events, error
        self.initial: S = next(iter(states)) if initial is None else initial
        self.moves: dict[tuple[S, E], S] = dict(moves)
        self.ended: frozenset[S] = frozenset(ended)
        self.late: frozenset[E] = frozenset(late)
        #: the (ended state, late event) pairs that change nothing
        self.absorbed: frozenset[tuple[S, E]] = frozenset((s, e) for s in self.ended for e in self.late)
        #: the whole table: every pair :meth:`Lifecycle.fire` takes, and where it goes
        self.transitions: dict[tuple[S, E], S] = {**self.moves, **{pair: pair[0] for pair in self.absorbed}}
        self.check()

    def check(self) -> None:
        """Raise :class:`TableError` naming what breaks the table's rules (see the module's docstring)."""
        states, events = self.states, self.events
        wrong = [repr(x) for pair, nxt in self.moves.items() for x, kind in ((pair[0], states), (pair[1], events), (nxt, states))
                 if not isinstance(x, kind)]
        wrong += [repr(x) for x in (self.initial, *self.ended) if not isinstance(x, states)]
        wrong += [repr(x) for x in self.late if not isinstance(x, events)]
        if wrong:
            raise TableError(f"{self.name}: not of {states.__name__} or {events.__name__}: {', '.join(wrong)}")
        if self.late and not self.ended:
            raise TableError(f"{self.name}: late events but no ended state")
        exits = {s for s, _ in self.moves}
        if bad := sorted(s.name for s in exits & self.ended):
            raise TableError(f"{self.name}: an ended state moves on: {', '.join(bad)}")
        if bad := sorted(s.name for s in states if s not in exits and s not in self.ended):
            raise TableError(f"{self.name}: a state that is not ended has no way out: {', '.join(bad)}")
        seen, todo = {self.initial}, [self.initial]
        while todo:
            at = todo.pop()
            for (s, _), nxt in self.moves.items():
                if s is at and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        if bad := [s.name for s in states if s not in seen]:
            raise TableError(f"{self.name}: unreachable from {self.initial.name}: {', '.join(bad)}")


class Lifecycle(Generic[S, E]):
    """One state of one :class:`Table`; :meth:`fire` is the only place it changes. ``history``:
    keep every move as (before, event, after) in :attr:`history` (else it is None)."""

    __slots__ = ("table", "state", "history")

    def __init__(self, table: Table[S, E], *, history: bool = False) -> None:
        self.table = table
        self.state: S = table.initial
        self.history: list[tuple[S, E, S]] | None = [] if history else None

    def fire(self, event: E) -> S:
        """Move on ``event`` (a late event keeps the ended state); returns the state before.
        Raises the table's :class:`LifecycleError` on a pair the table lacks, the state kept."""
        before = self.state
        nxt = self.table.transitions.get((before, event))
        if nxt is None:
            raise self.table.error(self.table.name, before, event)
        self.state = nxt
        if self.history is not None:
            self.history.append((before, event, nxt))
        return before

    def to(self, event: E) -> S:
        """:meth:`fire`, returning the state after (a subclass whose callers want that: ``fire = Lifecycle.to``)."""
        Lifecycle.fire(self, event)
        return self.state

    def can(self, event: E) -> bool:
        """Whether :meth:`fire` takes ``event`` now."""
        return (self.state, event) in self.table.transitions

    def late(self, event: E) -> bool:
        """Whether ``event`` is a late one the (ended) state absorbs."""
        return (self.state, event) in self.table.absorbed

    @property
    def ended(self) -> bool:
        return self.state in self.table.ended

    @property
    def name(self) -> str:
        return self.table.name
