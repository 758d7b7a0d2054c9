"""The interface between the schema walk (:mod:`mcpx_core.downgrade`) and the named rules.

This module imports no rule and no walker. Each ``rules/*.py`` module exports ``RULES``, a list of
the values below; :mod:`mcpx_core.rules` (the package) joins those lists into one
:class:`Registry`, the way mitmproxy's ``contentviews`` package registers its views, and the walk
reads its tables. Adding a rule is adding a value to a ``RULES`` list.

Kinds of rule (``walk`` is the :class:`~mcpx_core.downgrade.Walk` running, ``ptr`` the JSON
Pointer of ``value``, ``target`` the receiver's schema node for it):

- :class:`TypeHook` ``fn(walk, value, ptr, target) -> value | DROP``: runs on every object walked
  as one of ``types`` (definition names of the receiver's schema, or ``"<Request>.params"``)
  before the generic walk. ``quiet(walk, value, target) -> bool``, if given, says when the hook
  would do nothing (the walk may then skip the object); ``split_safe`` says the hook reads no
  element of a list result read an element at a time.
- :class:`UnionPre` / :class:`UnionMiss` ``fn(walk, value, ptr, members, names) -> value | DROP``:
  for an ``anyOf`` of ``family`` (see ``downgrade.union_family``): run before member selection /
  for a value whose discriminator no member of the receiver's union has.
- :class:`UnionTaken` ``fn(walk, value, ptr, members, names, rewrite) -> value``: for a value whose
  discriminator the receiver's union has, but the session's host profile takes away
  (``walk.exclude``: ``type -> rewrite``, :mod:`mcpx_core.profiles`); the value returned is walked again.
- :class:`MessageHook` ``fn(walk, message, kind, method, request_id) -> Outcome | None``: before
  (``after=False``) or after the walk of a whole JSON-RPC message; an :class:`Outcome` ends it.
- :class:`OpenField` ``(type, property)``: a property whose value is an open JSON document (a
  JSON Schema, say): the walk does not enter it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # annotations only: the walk imports this module, never the reverse
    from ..changes import Change
    from ..downgrade import Walk  # noqa: F401

#: returned by a rule or the walk: remove this value from its parent
DROP = object()


def escape(token: str) -> str:
    """RFC 6901 escaping of one JSON Pointer reference token."""
    return token.replace("~", "~0").replace("/", "~1") if ("~" in token or "/" in token) else token


class Reject(Exception):
    """A named rule found that the message cannot be expressed for the receiver.

    ``code``/``message`` are the JSON-RPC error the *sender* should get instead (REVISIONS.md 7.3).
    """

    def __init__(self, rule: str, pointer: str, code: int, message: str):
        super().__init__(message)
        self.rule, self.pointer, self.code, self.message = rule, pointer, code, message


@dataclass
class Outcome:
    """What to deliver for one message.

    ``message`` is the (possibly mutated) message, or None when it must not be delivered;
    ``changes`` lists every change; ``reply`` is a JSON-RPC error object to send back to the
    sender instead (reject rules), or None.
    """

    message: dict | None
    changes: list[Change] = field(default_factory=list)
    reply: dict | None = None

    @property
    def changed(self) -> bool:
        return bool(self.changes)


@dataclass(frozen=True)
class TypeHook:
    types: tuple[str, ...]
    fn: Callable[..., Any]
    quiet: Callable[..., bool] | None = None
    split_safe: bool = False


@dataclass(frozen=True)
class UnionPre:
    family: str
    fn: Callable[..., Any]


@dataclass(frozen=True)
class UnionMiss:
    family: str
    fn: Callable[..., Any]


@dataclass(frozen=True)
class UnionTaken:
    family: str
    fn: Callable[..., Any]


@dataclass(frozen=True)
class MessageHook:
    fn: Callable[..., Any]
    after: bool = False


@dataclass(frozen=True)
class OpenField:
    type: str
    prop: str


Rule = TypeHook | UnionPre | UnionMiss | UnionTaken | MessageHook | OpenField


class Registry:
    """The rule tables the walk reads, built from one list of rules (order kept)."""

    def __init__(self, rules: list[Rule]):
        self.rules = list(rules)
        #: definition name -> hooks run before the generic walk of an object of that type
        self.type_hooks: dict[str, list[TypeHook]] = {}
        #: union family -> rule run before member selection
        self.union_pre: dict[str, Callable] = {}
        #: union family -> rule for a value whose discriminator no receiver member has
        self.union_miss: dict[str, Callable] = {}
        #: union family -> rule for a member the receiver has but its host profile takes away
        self.union_taken: dict[str, Callable] = {}
        #: message hooks run before / after the walk
        self.message_hooks: list[Callable] = []
        self.after_hooks: list[Callable] = []
        #: (definition, property) pairs whose value the walk does not enter
        self.open_fields: set[tuple[str, str]] = set()
        for r in self.rules:
            match r:
                case TypeHook():
                    for t in r.types:
                        self.type_hooks.setdefault(t, []).append(r)
                case UnionPre():
                    self.union_pre[r.family] = r.fn
                case UnionMiss():
                    self.union_miss[r.family] = r.fn
                case UnionTaken():
                    self.union_taken[r.family] = r.fn
                case MessageHook(after=True):
                    self.after_hooks.append(r.fn)
                case MessageHook():
                    self.message_hooks.append(r.fn)
                case OpenField():
                    self.open_fields.add((r.type, r.prop))
                case _:
                    raise TypeError(f"not a rule: {r!r}")
