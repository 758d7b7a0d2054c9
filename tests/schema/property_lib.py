"""Draw messages of one revision, downgrade them to another, and check the three promises of
issue 3: the output validates against the receiver's schema (unknown properties forbidden),
nothing is lost silently (every input value missing from the output lies under a change record's
pointer), and a second downgrade changes nothing. "Downgrade" here is what mcpx does to a message:
the downgrade stage, then the repair stage (:func:`pipeline`); a valid message needs no repair.

The mutation pass of issue 14 (:func:`mutations`, :func:`check_mutation`): a valid message is
broken in each way the repair stage repairs (an object written ``[]``, an optional member written
``null``, a 2026-07-28 required member with a specified default left out), and mcpx must deliver
exactly what the message means (the unbroken message with ``{}``, without the member, with the
default), valid for the receiver, with a record for every change.
"""
from __future__ import annotations

import copy
import random
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterator

import orjson
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from mcpx_core import repair, revisions
from mcpx_core.downgrade import Outcome, classify, downgrade
from schema_check import declared_member, message_errors
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


#: every (sender, receiver) revision pair mcpx rewrites for: the same revision or an older receiver
PAIRS: list[tuple[str, str]] = [(f, t) for i, f in enumerate(revisions.REVISIONS) for t in revisions.REVISIONS[: i + 1]]


def drawn_differences(frm: str, to: str, examples: int, both) -> tuple[int, list[tuple[str, str, str]]]:
    """Draw ``examples`` messages of each ``frm`` type that reaches a ``to`` receiver, and compare
    the two outcomes ``both(t, msg, policy) -> (a, b)`` under both policies. Returns (messages
    drawn, [(type label, policy, the message's first 300 characters)] where a != b)."""
    diffs: list[tuple[str, str, str]] = []
    n = 0
    for t in types_toward(frm, to):
        def one(msg, t=t):
            nonlocal n
            n += 1
            for policy in ("strict", "lenient"):
                a, b = both(t, msg, policy)
                if a != b:
                    diffs.append((t.label, policy, orjson.dumps(msg).decode()[:300]))

        each_drawn(t, examples, one)
    return n, diffs


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
    #: records of the repair stage (action "repair", or rule REPAIR-invalid)
    repairs: list = field(default_factory=list)
    message: dict | None = None
    changes: list = field(default_factory=list)


def pipeline(msg: dict, method: str | None, frm: str, to: str, direction: str, policy: str = "strict",
             repairs: bool = True) -> Outcome:
    """What ``Rewriter._one`` does to one message: downgrade, then repair (``msg`` is mutated)."""
    kind = classify(msg)
    out = downgrade(msg, kind, method, frm, to, direction, policy, request_id=7)
    if repairs and out.message is not None and out.reply is None:
        out.changes.extend(repair.repair(out.message, kind, method, to, direction))
    return out


def _covered(ptr: str, recorded: list[str]) -> bool:
    return any(ptr == p or ptr.startswith(p + "/") or p == "" for p in recorded)


def check(t: MessageType, msg: dict, to_rev: str, policy: str = "strict") -> Verdict:
    original = copy.deepcopy(msg)
    out = pipeline(msg, t.method, t.revision, to_rev, t.direction, policy)
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
        if _covered(ptr, recorded):
            continue
        unaccounted.append(ptr)
    again = pipeline(copy.deepcopy(res), t.method, to_rev, to_rev, t.direction, policy)
    idempotent = again.message == res and all(c.action == "keep" for c in again.changes)
    repairs = [c for c in out.changes if c.action == "repair" or c.rule == repair.RULE_INVALID]
    return Verdict(not errors, errors, unaccounted, idempotent, True, repairs, res, out.changes)


# -- the mutation pass (issue 14) ---------------------------------------------------------------------
@dataclass
class Mutation:
    """One way ``message`` was broken: ``kind`` (a repair kind of mcpx_core.repair), the JSON Pointer
    of the broken value, the broken message and the message it means."""

    kind: str
    pointer: str
    broken: dict
    meaning: dict


KINDS = (repair.RULE_EMPTY_ARRAY, repair.RULE_NULL_OPTIONAL, repair.RULE_REQUIRED_DEFAULT)


def _nodes(v: Any, ptr: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(v, dict):
        yield ptr, v
        for k, x in v.items():
            yield from _nodes(x, f"{ptr}/{k.replace('~', '~0').replace('/', '~1')}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _nodes(x, f"{ptr}/{i}")


def _set(msg: dict, ptr: str, value: Any) -> dict:
    """A copy of ``msg`` with the value at ``ptr`` replaced (``_MISSING``: removed)."""
    out = copy.deepcopy(msg)
    toks = [t.replace("~1", "/").replace("~0", "~") for t in ptr.split("/")[1:]]
    node = out
    for tok in toks[:-1]:
        node = node[int(tok)] if isinstance(node, list) else node[tok]
    last = toks[-1]
    if isinstance(node, list):
        node[int(last)] = value
    elif value is _MISSING:
        del node[last]
    else:
        node[last] = value
    return out


def mutations(t: MessageType, msg: dict, tries: int = 6) -> list[Mutation]:
    """At most one :class:`Mutation` per repair kind for ``msg`` (valid for ``t.revision``), at a
    site drawn from the message's own bytes (deterministic). A site qualifies when the message
    with the meant value is valid for ``t.revision`` and the broken one is not (so the break is
    one a strict receiver rejects, and what it means is a valid message); a ``null`` only for a
    member an object schema declares (a map value or an array item is no member)."""
    method = t.method if t.kind == "result" else None
    rng = random.Random(zlib.crc32(orjson.dumps(msg, option=orjson.OPT_SORT_KEYS)))
    valid = lambda m: not message_errors(t.revision, m, method)  # noqa: E731
    objects = [p for p, v in _nodes(msg) if p]
    members = [(p, k) for p, v in _nodes(msg) for k in v if p or k not in ("jsonrpc", "id", "method")]
    out = []
    rng.shuffle(objects)
    for ptr in objects[:tries]:
        meaning = _set(msg, ptr, {})
        broken = _set(msg, ptr, [])
        if valid(meaning) and not valid(broken):
            out.append(Mutation(repair.RULE_EMPTY_ARRAY, ptr, broken, meaning))
            break
    rng.shuffle(members)
    for p, k in members[:tries]:
        ptr = f"{p}/{k.replace('~', '~0').replace('/', '~1')}"
        meaning = _set(msg, ptr, _MISSING)
        broken = _set(msg, ptr, None)
        if valid(meaning) and not valid(broken) and declared_member(t.revision, broken, method, ptr):
            out.append(Mutation(repair.RULE_NULL_OPTIONAL, ptr, broken, meaning))
            break
    result = msg.get("result")
    if t.kind == "result" and isinstance(result, dict):
        model = revisions.model(t.revision)
        present = [(m, v) for m, v in repair.defaults_for(model.result_def(t.method, result), t.revision).items() if m in result]
        if present:
            m, v = present[rng.randrange(len(present))]
            broken = _set(msg, f"/result/{m}", _MISSING)
            meaning = _set(msg, f"/result/{m}", v)
            if not valid(broken):
                out.append(Mutation(repair.RULE_REQUIRED_DEFAULT, f"/result/{m}", broken, meaning))
    return out


@dataclass
class MutationVerdict:
    """``outcome``: "repaired" (valid for the receiver, exactly what the message means, every change
    recorded, stable), "accepted" (valid for the receiver as sent: the broken value sits where the
    receiver's schema allows it, e.g. in a capability object its revision leaves open; nothing to
    repair), "not repaired" (delivered as the downgrade left it, with a REPAIR-invalid record),
    "worse" (anything else: a wrong repair, a change without record, an invalid message without
    record) or "crash" (a stage raised: the Rewriter would forward the original bytes)."""

    outcome: str
    detail: Any = None


def check_mutation(t: MessageType, mut: Mutation, to_rev: str, policy: str = "strict") -> MutationVerdict:
    try:
        want = pipeline(copy.deepcopy(mut.meaning), t.method, t.revision, to_rev, t.direction, policy)
        v = check(t, copy.deepcopy(mut.broken), to_rev, policy)
    except Exception as e:  # noqa: BLE001  (reported, never hidden)
        return MutationVerdict("crash", f"{type(e).__name__}: {e}")
    if not v.delivered:
        return MutationVerdict("repaired" if want.message is None else "worse", "not delivered")
    if get(v.message, mut.pointer) != get(mut.broken, mut.pointer) and not _covered(mut.pointer, [c.pointer for c in v.changes]):
        v.unaccounted.append(mut.pointer)  # e.g. an added default without its record
    if v.valid and not v.unaccounted and v.idempotent and v.message == want.message:
        return MutationVerdict("repaired")
    if v.valid and not v.unaccounted and v.idempotent and not v.repairs \
            and v.message == pipeline(copy.deepcopy(mut.broken), t.method, t.revision, to_rev, t.direction, policy, False).message:
        return MutationVerdict("accepted")
    if not v.valid and any(c.rule == repair.RULE_INVALID for c in v.repairs) \
            and not any(c.action == "repair" for c in v.repairs):
        return MutationVerdict("not repaired", v.errors[:2])
    return MutationVerdict("worse", {"errors": v.errors[:2], "unaccounted": v.unaccounted[:3], "idempotent": v.idempotent,
                                     "got": v.message, "want": want.message})
