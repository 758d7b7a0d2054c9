"""Draw messages of one revision, downgrade them to another, and check the three promises of
issue 3: the output validates against the receiver's schema (unknown properties forbidden),
nothing is lost silently (every input value missing from the output lies under a change record's
pointer), and a second downgrade changes nothing."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Iterator

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from mcpx_core import revisions
from mcpx_core.downgrade import classify, downgrade
from schema_check import message_errors
from schema_strategies import strategy


@dataclass(frozen=True)
class MessageType:
    revision: str
    direction: str  # s2c / c2s
    kind: str  # request / notification / result
    method: str
    definition: str

    @property
    def label(self) -> str:
        return f"{self.direction} {self.kind} {self.method}"


def message_types(revision: str) -> list[MessageType]:
    m = revisions.model(revision)
    out = []
    for method in sorted(m.client_requests):
        res = m.result_for(method)
        out.append(MessageType(revision, "s2c", "result", method, res))
        out.append(MessageType(revision, "c2s", "request", method, m.requests[method]))
    for method in sorted(m.server_requests):
        out.append(MessageType(revision, "s2c", "request", method, m.requests[method]))
        out.append(MessageType(revision, "c2s", "result", method, m.result_for(method)))
    for method in sorted(m.server_notifications):
        out.append(MessageType(revision, "s2c", "notification", method, m.notifications[method]))
    for method in sorted(m.client_notifications):
        out.append(MessageType(revision, "c2s", "notification", method, m.notifications[method]))
    return out


def applicable(t: MessageType, to_rev: str) -> bool:
    """A result can only reach a receiver whose revision has the request it answers."""
    m = revisions.model(to_rev)
    if t.kind == "result":
        return t.method in (m.client_requests if t.direction == "s2c" else m.server_requests)
    return True


def types_toward(frm: str, to: str) -> list[MessageType]:
    """The message types of revision ``frm`` that can reach a ``to`` receiver (:func:`applicable`)."""
    return [t for t in message_types(frm) if applicable(t, to)]


def each_drawn(t: MessageType, examples: int, fn) -> None:
    """Call ``fn(message)`` for ``examples`` messages of type ``t`` drawn from its schema
    (generation only: no shrinking, no example database, no deadline)."""
    @settings(max_examples=examples, suppress_health_check=list(HealthCheck), deadline=None, database=None,
              phases=[Phase.generate])
    @given(messages(t))
    def run(msg):
        fn(msg)

    run()


def messages(t: MessageType):
    body = strategy(t.revision, t.definition)
    if t.kind == "result":
        return body.map(lambda r: {"jsonrpc": "2.0", "id": 7, "result": r})
    if t.kind == "request":
        return body.map(lambda r: {**r, "jsonrpc": "2.0", "id": 7})
    return body.map(lambda r: {**r, "jsonrpc": "2.0"})


def leaves(v: Any, ptr: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(v, dict) and v:
        for k, x in v.items():
            yield from leaves(x, f"{ptr}/{k.replace('~', '~0').replace('/', '~1')}")
    elif isinstance(v, list) and v:
        for i, x in enumerate(v):
            yield from leaves(x, f"{ptr}/{i}")
    else:
        yield ptr, v


def get(v: Any, ptr: str) -> Any:
    for tok in ptr.split("/")[1:]:
        tok = tok.replace("~1", "/").replace("~0", "~")
        if isinstance(v, dict) and tok in v:
            v = v[tok]
        elif isinstance(v, list) and tok.isdigit() and int(tok) < len(v):
            v = v[int(tok)]
        else:
            return _MISSING
    return v


_MISSING = object()


@dataclass
class Verdict:
    valid: bool
    errors: list
    unaccounted: list
    idempotent: bool
    delivered: bool


def check(t: MessageType, msg: dict, to_rev: str, policy: str = "strict") -> Verdict:
    original = copy.deepcopy(msg)
    kind = classify(msg)
    out = downgrade(msg, kind, t.method, t.revision, to_rev, t.direction, policy, request_id=7)
    if out.message is None:
        return Verdict(True, [], [], True, False)
    res = out.message
    errors = message_errors(to_rev, res, t.method if "result" in res else None)
    if "error" in res and "result" in original:
        errors = message_errors(to_rev, res)
    recorded = [c.pointer for c in out.changes]
    unaccounted = []
    for ptr, val in leaves(original):
        got = get(res, ptr)
        if got == val or (val in ([], {}) and type(got) is type(val)):
            continue
        if any(ptr == p or ptr.startswith(p + "/") or p == "" for p in recorded):
            continue
        unaccounted.append(ptr)
    again = downgrade(copy.deepcopy(res), classify(res), t.method, to_rev, to_rev, t.direction, policy, request_id=7)
    idempotent = again.message == res and all(c.action == "keep" for c in again.changes)
    return Verdict(not errors, errors, unaccounted, idempotent, True)
