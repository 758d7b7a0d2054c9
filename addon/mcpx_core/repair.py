"""Repair: the stage after the downgrade. A value that fails the receiver's schema and can mean one
thing only is rewritten to that thing, and recorded.

Some senders put values on the wire that no revision accepts, and a strict receiver then rejects
the whole message (shared/cases B17, B18, B21, B23). This stage knows nothing of HTTP, SSE or
mitmproxy: input is one JSON-RPC message (a dict, already downgraded to ``to_rev``), its kind, the
method it belongs to (for a result: the method of the request it answers) and the direction;
output is a list of :class:`~mcpx_core.changes.Change` records, and the message mutated in place
when it was repaired. It runs at every revision pair, same-revision sessions included.

Kinds of repair (action ``repair``, one rule id each):

- ``REPAIR-empty-array-object``: ``[]`` where the receiver's schema requires an object and allows no
  array becomes ``{}``. PHP's ``json_encode`` writes an empty map as ``[]``; no other reading
  exists (a non-empty array is never rewritten). E.g. ``Tool.inputSchema.properties``
  (data/2025-06-18/schema.json:2369-2380; shared/cases B17), ``CallToolRequest.params.arguments``
  (data/2025-06-18/schema.json:133-141; B18).
- ``REPAIR-null-optional``: ``null`` for an optional member whose schema does not allow null is
  removed: absent is the only meaning the schema can carry for it (``ElicitResult.content`` on a
  cancel, data/2025-06-18/schema.json:609-642; B23; a 2025-11-25+ error's ``"id": null``,
  JSONRPCErrorResponse.id optional, schema/2025-11-25/schema.ts:161). ``null`` as a map value
  (``additionalProperties``) or an array element is not a member, and is never removed.
- ``REPAIR-required-default``: a required member is missing and the specification says what its
  absence means (:mod:`mcpx_core.defaults`: ``resultType`` "complete", ``ttlMs`` 0, ``cacheScope``
  "private", each with its source; :func:`defaults_for`): that value is added (B21).

All or nothing: the repairs of a message are applied only when the message then validates against
the receiver's schema. Otherwise nothing is repaired, the message is delivered as the downgrade left
it (byte for byte when the downgrade changed nothing), and a ``keep`` record with rule
``REPAIR-invalid`` names each failing pointer (at most :data:`MAX_INVALID`), so the user sees why
the receiver may reject it.

Validation is JSON Schema over the receiver's ``schema.json`` as its revision reads it (objects
open unless ``additionalProperties`` says otherwise), compiled once per revision into closures
(:class:`Checker`): ``$ref``, ``type``, ``const``, ``enum``, ``properties``, ``required``,
``additionalProperties``, ``items``, ``maxItems``, ``minimum``, ``maximum``, ``anyOf`` and
``allOf``, the only keywords the five schemas use besides ``format`` (not checked, as by default
in JSON Schema). ``integer`` in a list of types reads ``number`` (REVISIONS.md 5.26
SCHEMA-number-integer, schema/2025-06-18/schema.ts:1556). A union whose members are told apart by
a ``type`` or ``method`` constant is checked against the member named. Any other union: the member
the value's keys name (as the downgrade walk picks it: its required members present, its constants
met, most keys declared; one such member only) is checked, and the value repaired toward it; when
that member fails beyond repair, the value is valid when any member is, and repaired only when
exactly one member (or several alike) becomes valid. Params that redeclare the base type get the
base ``_meta`` back, as the downgrade reads them (``shapes.params_schema``).

Cost (``bench``, validation alone, against ``orjson.loads`` of the same body): text results
0.1x, image results 0.02x, ``tools/list`` of 1 KB tools 0.6x (about 6 us per tool), a tool result
of many content-block unions (a ``resource_link`` every sixth block) 4x. So every message of less
than :data:`CHECK_MIN` bytes is validated; a larger one only when its bytes hold a ``null`` or an
empty array (:func:`candidate`, two searches, about 2 ms per MB), or it lacks a defaulted member
(:func:`defaults_for`) of its own definition. Nothing else in it could be repaired: a default is
read only at a definition that no :func:`defaults_for` entry reaches below the top
(:func:`_defaults_below`; those are always validated). Such a message is not checked, and so gets
no REPAIR-invalid record (issue 16: it is delivered as the downgrade left it either way). List
results read an element at a time (``rewrite.SPLIT_MIN``, 16 MiB) are checked at the result level
only: their elements are not validated.
"""

from __future__ import annotations

import re
from typing import Any

from . import revisions
from .changes import Change, summarize
from .checks import EMPTY_ARRAY, NULL_OPTIONAL, REQUIRED_DEFAULT, Checker, Plan, _defaults  # noqa: F401  (Checker, Plan: repair's API too)
from .defaults import BY_MEMBER, DEFAULTS, NO_DEFAULTS, Default, defaults_for  # noqa: F401  (defaults_for: repair's API too)
from .downgrade import classify
from .rules.api import escape

RULE_EMPTY_ARRAY = "REPAIR-empty-array-object"
RULE_NULL_OPTIONAL = "REPAIR-null-optional"
RULE_REQUIRED_DEFAULT = "REPAIR-required-default"
RULE_INVALID = "REPAIR-invalid"
#: at most this many ``REPAIR-invalid`` records per message (the first failing pointers)
MAX_INVALID = 5


# -- which definition a message is checked against ----------------------------------------------
def target(message: dict, kind: str, method: str | None, to_rev: str, direction: str) -> tuple[str, str] | None:
    """(definition name, "" for the whole message or "result" for its result) the message is
    checked against, or None when the receiver's schema names none (an undefined method).

    A result is typed by the request it answers (``method``, :meth:`SchemaModel.result_def`: a
    2026-07-28 result whose ``resultType`` is "input_required" as ``InputRequiredResult``).
    Without ``method``, by its shape: the member of the ServerResult (s2c) / ClientResult (c2s)
    union whose required members it has (those :func:`defaults_for` gives aside) and whose
    properties name most of its keys (the first on a tie; the bare ``Result`` last).
    """
    model = revisions.model(to_rev)
    if kind in ("request", "notification"):
        name = (model.requests if kind == "request" else model.notifications).get(method or "")
        return (name, "") if name else None
    if kind == "error":
        name = "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in model.defs else "JSONRPCError"
        return (name, "") if name in model.defs else None
    result = message.get("result")
    if kind != "result":
        return None
    if not isinstance(result, dict):
        return model.result_def(method, result), "result"
    if method:
        return model.result_def(method, result), "result"
    if result.get("resultType") == "input_required" and "InputRequiredResult" in model.defs:
        return "InputRequiredResult", "result"
    return _by_shape(model, result, "ServerResult" if direction == "s2c" else "ClientResult"), "result"


def _by_shape(model: revisions.SchemaModel, result: dict, union: str) -> str:
    node = model.defs.get(union) or {}
    members = node.get("anyOf") or ([node] if "$ref" in node else [])
    best, best_score = "Result", -1
    for m in members:
        name = model.ref_name(m.get("$ref", "")) if isinstance(m, dict) else ""
        d = model.defs.get(name)
        if not isinstance(d, dict) or name == "Result":
            continue
        if "allOf" in d:
            props, req = {}, []
            for part in d["allOf"]:
                part = model.defs.get(model.ref_name(part["$ref"])) if "$ref" in part else part
                props.update((part or {}).get("properties") or {})
                req += (part or {}).get("required") or []
        else:
            props, req = d.get("properties") or {}, d.get("required") or []
        defaults = dict(_defaults(model.revision, name))
        if any(r not in result and r not in defaults for r in req):
            continue
        score = sum(1 for k in result if k in props and k != "_meta")
        if score > best_score:
            best, best_score = name, score
    return best if best_score > 0 else "Result"


# -- the stage ---------------------------------------------------------------------------------
#: messages of at least this many bytes (their source: a body, an SSE event's data) are validated
#: only when :func:`candidate` finds a repairable value in their bytes, or they lack a member
#: :func:`defaults_for` gives
CHECK_MIN = 64 << 10
LIST_CHECK_MIN = CHECK_MIN  # the name of rounds before issue 16, when only list results were spared
_EMPTY_ARRAY = re.compile(rb"\[[ \t\r\n]*\]")
#: (a compiled literal: about 0.35 ms per MB, where ``b"null" in`` takes 0.55 on prose)
_NULL = re.compile(rb"null")


#: :func:`candidate` searches this many bytes per call (a thread switch can happen between two)
SCAN = 1 << 20


def candidate(source: bytes | memoryview | None) -> bool:
    """Whether bytes may hold a value REPAIR-empty-array-object or REPAIR-null-optional repairs:
    ``null``, or an empty array (whitespace inside allowed). True without ``source``. About 2 ms
    per MB (two searches), a third of the validation of a tools/list of 1 KB tools.

    Searched :data:`SCAN` bytes at a time, so that a body rewritten in mcpx's worker thread
    (addons/worker.py) does not hold the interpreter for the whole search: ``null`` in windows
    that overlap by 3 bytes; an empty array in windows the next of which starts at the window's last
    ``[`` when only whitespace follows it to the window's end (a match that starts in a window and
    ends past it is whitespace to that end), the rest of the body at once when that ``[`` opens the
    window itself. Every match of the whole is found."""
    if source is None:
        return True
    if isinstance(source, memoryview):
        source = source.tobytes()
    n = len(source)
    if n <= SCAN:
        return _NULL.search(source) is not None or _EMPTY_ARRAY.search(source) is not None
    for i in range(0, n, SCAN):
        if _NULL.search(source, i, i + SCAN + 3) is not None:
            return True
    pos = 0
    while pos < n:
        end = min(n, pos + SCAN)
        if _EMPTY_ARRAY.search(source, pos, end) is not None:
            return True
        if end == n:
            return False
        k = source.rfind(b"[", pos, end)
        nxt = k if k >= 0 and not source[k + 1:end].strip(b" \t\r\n") else end
        if nxt == pos:  # the window is "[" and whitespace: the match, if any, ends further on
            return _EMPTY_ARRAY.search(source, pos) is not None
        pos = nxt
    return False


def is_list_result(definition: str) -> bool:
    """ListToolsResult, ListResourcesResult, ListResourceTemplatesResult, ListPromptsResult,
    ListRootsResult, ListTasksResult: results made of many small objects, whose validation costs
    most per byte (about 6 us per 1 KB tool, 0.6x ``orjson.loads``; a text or image result 0.01-0.15x)."""
    return definition.startswith("List") and definition.endswith("Result")


_BELOW: dict[tuple[str, str], bool] = {}


def _defaults_below(revision: str, definition: str) -> bool:
    """Whether a definition reachable from ``definition`` (through ``$ref``, not itself) has a
    member :func:`defaults_for` gives: then a REPAIR-required-default may be needed below the top,
    and its bytes cannot tell. False for every definition of 2024-11-05..2025-11-25 (no defaults)."""
    key = (revision, definition)
    hit = _BELOW.get(key)
    if hit is None:
        model = revisions.model(revision)
        seen, todo, hit = {definition}, [model.defs.get(definition)], False
        while todo and not hit:
            node = todo.pop()
            if isinstance(node, dict):
                ref = node.get("$ref")
                if isinstance(ref, str):
                    name = model.ref_name(ref)
                    if name not in seen:
                        seen.add(name)
                        hit = bool(defaults_for(name, revision))
                        todo.append(model.defs.get(name))
                todo.extend(v for k, v in node.items() if k != "$ref" and isinstance(v, (dict, list)))
            elif isinstance(node, list):
                todo.extend(v for v in node if isinstance(v, (dict, list)))
        _BELOW[key] = hit
    return hit


def repair(message: dict, kind: str, method: str | None, to_rev: str, direction: str,
           source: bytes | memoryview | None = None, skip: list | None = None) -> list[Change]:
    """Repair ``message`` (mutated in place) for a ``to_rev`` receiver; returns the records:
    ``repair`` records when it was repaired, ``keep``/REPAIR-invalid records (at most
    :data:`MAX_INVALID`) when it fails the receiver's schema beyond repair, nothing when it is
    valid.

    ``kind``: "request" | "notification" | "result" | "error"; ``method``: see :func:`target`;
    ``source``: the bytes the message was parsed from (a body, an SSE event's data); a message
    of :data:`CHECK_MIN` bytes or more is validated only when they hold a :func:`candidate`
    (None: always validated); ``skip``: a list inside the message (the split array of a large
    body) that is validated as empty. Raises nothing for data problems."""
    if not revisions.is_known(to_rev):
        return []
    kind = classify(message) or kind  # the downgrade may have made a result an error (RES-resultType)
    tgt = target(message, kind, method, to_rev, direction)
    if tgt is None:
        return []
    name, where = tgt
    value = message.get(where) if where else message
    if source is not None and len(source) >= CHECK_MIN and not _defaults_below(to_rev, name) \
            and not (isinstance(value, dict) and _lacks_default(value, to_rev, name)) and not candidate(source):
        return []
    fn = Checker.of(to_rev).named(name)
    if fn is None:
        return []
    saved = None
    if skip is not None and skip:
        saved, skip[:] = skip[:], []
    try:
        plan = fn(value)
    finally:
        if saved is not None:
            skip[:] = saved  # type: ignore[index]
    if plan is None:
        return []
    prefix = f"/{where}" if where else ""
    if plan.errors:
        return _invalid(plan, prefix, to_rev, name)
    return _apply(value, plan, prefix, to_rev, name, message)


def _lacks_default(result: dict, to_rev: str, name: str) -> bool:
    return any(m not in result for m, _ in _defaults(to_rev, name))


def _pointer(prefix: str, path: tuple) -> str:
    return prefix + "".join("/" + (escape(p) if isinstance(p, str) else str(p)) for p in path)


def _invalid(plan: Plan, prefix: str, to_rev: str, name: str) -> list[Change]:
    seen: dict[str, str] = {}
    for path, reason in plan.errors:
        seen.setdefault(_pointer(prefix, path), reason)
    out = []
    for i, (ptr, reason) in enumerate(seen.items()):
        if i == MAX_INVALID:
            break
        more = f" (and {len(seen) - MAX_INVALID} more failing pointers)" if i == MAX_INVALID - 1 and len(seen) > MAX_INVALID else ""
        out.append(Change(pointer=ptr, action="keep", rule=RULE_INVALID,
                          detail=f"fails {to_rev} {name}: {reason}; nothing repaired, delivered as it was{more}"))
    return out


def _apply(value: Any, plan: Plan, prefix: str, to_rev: str, name: str, holder: Any = None) -> list[Change]:
    """Carry out ``plan`` on ``value`` (``holder``: the container of ``value`` under ``prefix``'s
    last token, for a fix of ``value`` itself: ``"result": []``)."""
    out = []
    for path, kind, default in plan.fixes:
        ptr = _pointer(prefix, path)
        parent, key = (holder, prefix[1:]) if not path else _parent(value, path)
        if kind == EMPTY_ARRAY:
            parent[key] = {}
            if not path:
                value = parent[key]  # the fixes that follow are inside the new object
            out.append(Change(pointer=ptr, action="repair", rule=RULE_EMPTY_ARRAY, before="[]", after="{}",
                              detail=f"[] where {to_rev} {name} requires an object (an empty map written as an array): the empty object"))
        elif kind == NULL_OPTIONAL:
            del parent[key]
            out.append(Change(pointer=ptr, action="repair", rule=RULE_NULL_OPTIONAL, before="null",
                              detail=f"null is no value of this optional member in {to_rev} {name}: removed (absent)"))
        else:
            parent[key] = default
            d = BY_MEMBER.get(key)
            out.append(Change(pointer=ptr, action="repair", rule=RULE_REQUIRED_DEFAULT, after=summarize(default),
                              detail=f"required by {to_rev} {name if len(path) == 1 else 'its definition'} and absent: the value the "
                                     f"specification gives its absence ({d.source if d else 'DEFAULTS'})"))
    return out


def _parent(value: Any, path: tuple) -> tuple[Any, Any]:
    node = value
    for p in path[:-1]:
        node = node[p]
    return node, path[-1]
