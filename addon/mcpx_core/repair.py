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
from typing import Any, Callable

from . import revisions
from .changes import Change, summarize
from .defaults import BY_MEMBER, DEFAULTS, NO_DEFAULTS, Default, defaults_for  # noqa: F401  (defaults_for: repair's API too)
from .downgrade import classify
from .shapes import params_schema
from .rules.api import escape

RULE_EMPTY_ARRAY = "REPAIR-empty-array-object"
RULE_NULL_OPTIONAL = "REPAIR-null-optional"
RULE_REQUIRED_DEFAULT = "REPAIR-required-default"
RULE_INVALID = "REPAIR-invalid"
#: at most this many ``REPAIR-invalid`` records per message (the first failing pointers)
MAX_INVALID = 5


def _defaults(revision: str, definition: str) -> tuple[tuple[str, Any], ...]:
    return tuple(defaults_for(definition, revision).items())


# -- plans: what a checker found ----------------------------------------------------------------
EMPTY_ARRAY, NULL_OPTIONAL, REQUIRED_DEFAULT = "empty-array", "null", "default"


class Plan:
    """The repairs a value needs (``fixes``) and what fails beyond repair (``errors``); paths are
    tuples of keys and indexes from the checked value. A checker returns None for a valid value."""

    __slots__ = ("fixes", "errors")

    def __init__(self, fixes: list | None = None, errors: list | None = None):
        #: (path, kind, value): kind EMPTY_ARRAY (path: the array), NULL_OPTIONAL (path: the member),
        #: REQUIRED_DEFAULT (path: the missing member, value: its default)
        self.fixes: list[tuple[tuple, str, Any]] = fixes or []
        #: (path, reason)
        self.errors: list[tuple[tuple, str]] = errors or []

    def add(self, key: Any, child: "Plan") -> None:
        self.fixes.extend(((key, *p), k, v) for p, k, v in child.fixes)
        self.errors.extend(((key, *p), r) for p, r in child.errors)

    def key(self) -> tuple:
        return tuple((p, k, repr(v)) for p, k, v in self.fixes)


def _fail(reason: str, path: tuple = ()) -> Plan:
    return Plan(None, [(path, reason)])


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object", list: "array"}.get(
        v.__class__, type(v).__name__)


def _short(v: Any) -> str:
    return summarize(v, 0)


Check = Callable[[Any], "Plan | None"]
_NO = object()
#: keywords that do not constrain a value (or that mcpx does not check: format)
_ANNOTATIONS = frozenset({"description", "title", "format", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"})
#: the keywords a node checked by :meth:`Checker.fast` may have
_FAST_KEYS = _ANNOTATIONS | {"type", "const", "enum", "additionalProperties", "properties", "items"}
_CLASSES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "null": (type(None),),
            "object": (dict,), "array": (list,)}


class Checker:
    """Compiled checks of one revision's definitions: ``checker.named(name)(value) -> Plan | None``.

    One per revision (:meth:`of`); closures are built once per schema node and kept."""

    _BY_REV: dict[str, "Checker"] = {}

    @classmethod
    def of(cls, revision: str) -> "Checker":
        c = cls._BY_REV.get(revision)
        if c is None:
            c = cls._BY_REV[revision] = cls(revisions.model(revision))
        return c

    def __init__(self, model: revisions.SchemaModel):
        self.model = model
        self._cells: dict[str, list] = {}
        self._nodes: dict[int, tuple[dict, Check | None]] = {}
        self._def_names = {id(v): k for k, v in model.defs.items()}
        self._requests = frozenset(model.requests.values())
        self._notifications = frozenset(model.notifications.values())
        self._keep: list = []  # nodes made here, kept alive (their ids key the caches)

    def named(self, name: str) -> Check | None:
        """The check of definition ``name`` (None: it accepts every value)."""
        cell = self._cells.get(name)
        if cell is None:
            cell = self._cells[name] = [None, True]  # [check, compiling]
            cell[0] = self.compile(self._definition(name))
            cell[1] = False
        if cell[1]:  # a definition that refers to itself: resolved when called
            def deferred(v: Any, cell: list = cell) -> Plan | None:
                fn = cell[0]
                return fn(v) if fn is not None else None
            return deferred
        return cell[0]

    def _definition(self, name: str) -> dict:
        """Definition ``name``; a request or notification whose ``params`` redeclare the base
        type's get the base ``_meta`` back, as the downgrade reads them (``shapes.params_schema``:
        schema.json loses it, schema/2024-11-05/schema.ts:21 keeps it)."""
        node = self.model.defs.get(name) or {}
        base = "Request" if name in self._requests else "Notification" if name in self._notifications else None
        props = node.get("properties")
        if base is None or not isinstance(props, dict) or "params" not in props:
            return node
        params = params_schema(self.model, name, base)
        if params is props["params"]:
            return node
        out = dict(node)
        out["properties"] = {**props, "params": params}
        self._def_names[id(out)] = name
        self._keep.append(out)
        return out

    def compile(self, node: Any) -> Check | None:
        """The check of one schema node (None: it accepts every value)."""
        if not isinstance(node, dict):
            return None
        hit = self._nodes.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        fn = self._compile(node)
        self._nodes[id(node)] = (node, fn)
        return fn

    # -- compilation ------------------------------------------------------------------------
    def _compile(self, node: dict) -> Check | None:
        ref = node.get("$ref")
        if ref is not None:
            return self.named(self.model.ref_name(ref))
        parts: list[Check] = []
        if "allOf" in node:
            subs = [f for f in (self.compile(p) for p in node["allOf"]) if f is not None]
            if subs:
                parts.append(_all_of(subs))
        if "anyOf" in node:
            parts.append(self._any_of(node["anyOf"]))
        own = self._own(node)
        if own is not None:
            parts.insert(0, own)
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return _all_of(parts)

    def _own(self, node: dict) -> Check | None:
        """type, const, enum, bounds, object and array keywords of ``node`` itself."""
        t = node.get("type")
        types = [t] if isinstance(t, str) else list(t) if isinstance(t, list) else None
        if types is not None and isinstance(t, list):
            # SCHEMA-number-integer: schema.ts says number where schema.json lists integer (REVISIONS.md 5.26)
            types = ["number" if x == "integer" else x for x in types]
        props = node.get("properties")
        is_object = types is not None and "object" in types or (types is None and isinstance(props, dict))
        other: list = [None]  # what the object check does with a value that is not a dict
        obj = self._object(node, other) if is_object else None
        arr = self._array(node) if types is not None and "array" in types else None
        const = node.get("const", _NO)
        enum = node.get("enum")
        lo, hi = node.get("minimum"), node.get("maximum")
        if types is None and const is _NO and enum is None and obj is None:
            return None
        classes = None
        integral = False
        if types is not None:
            classes = tuple(c for x in types for c in _CLASSES.get(x, ()))
            integral = "integer" in types and "number" not in types
        empty_fix = is_object and not (types is not None and "array" in types)
        expected = "/".join(types) if types else "object"
        enum_set = None
        if enum is not None:
            try:
                enum_set = frozenset((v.__class__, v) for v in enum)
            except TypeError:
                enum_set = None

        def check(v: Any) -> Plan | None:
            cls = v.__class__
            if classes is not None and cls not in classes:
                if not (integral and cls is float and v.is_integer()):
                    if empty_fix and cls is list and not v:
                        inner = obj({}) if obj is not None else None
                        if inner is None:
                            return Plan([((), EMPTY_ARRAY, None)])
                        if inner.errors:
                            return _fail("[] where an object is required, and {} would not be valid either")
                        return Plan([((), EMPTY_ARRAY, None), *inner.fixes])
                    return _fail(f"expected {expected}, got {_json_type(v)}")
            if const is not _NO and not (cls is const.__class__ and v == const):
                return _fail(f"expected {_short(const)}, got {_short(v)}")
            if enum is not None:
                if enum_set is not None:
                    try:
                        ok = (cls, v) in enum_set
                    except TypeError:
                        ok = False
                else:
                    ok = v in enum
                if not ok:
                    return _fail(f"{_short(v)} is not one of {_short(enum)}")
            if cls is dict:
                return obj(v) if obj is not None else None
            if cls is list:
                return arr(v) if arr is not None else None
            if (lo is not None or hi is not None) and cls in (int, float):
                if lo is not None and v < lo:
                    return _fail(f"{v} is below the minimum {lo}")
                if hi is not None and v > hi:
                    return _fail(f"{v} is above the maximum {hi}")
            return None

        if obj is not None and const is _NO and enum is None and (types is None or types == ["object"]):
            # the object check itself is the node's check (one call per object); it hands any other
            # value to `check` ("properties" without "type": every other value is accepted)
            other[0] = check if types is not None else (lambda v: None)
            return obj
        other[0] = check
        return check

    def fast(self, node: Any) -> tuple[tuple[type, ...], frozenset | None] | None:
        """For a node that only names types (and maybe constant values), e.g. ``{"type": "string"}``,
        ``{"type": "object"}`` with no constraint on its members, ``{"type": "string", "enum": [...]}``
        (through ``$ref`` too): (the Python classes a value may have, the values allowed or None),
        checked inline by objects and arrays without calling the node's check. A value that fails
        it goes to the full check (integral floats, repairs, the reason). None for other nodes."""
        if not isinstance(node, dict):
            return None
        if "$ref" in node:
            if len(node) > 1 and any(k not in _ANNOTATIONS for k in node if k != "$ref"):
                return None
            target = self.model.defs.get(self.model.ref_name(node["$ref"]))
            return None if target is None or "$ref" in target else self.fast(target)
        t = node.get("type")
        if not isinstance(t, (str, list)) or any(k not in _FAST_KEYS for k in node):
            return None
        types = [t] if isinstance(t, str) else ["number" if x == "integer" else x for x in t]
        if "object" in types and (node.get("properties") or node.get("required")
                                  or node.get("additionalProperties") not in (None, True, {})):
            return None
        if "array" in types and node.get("items") not in (None, {}):
            return None
        values = None
        if "const" in node or "enum" in node:
            vals = [node["const"]] if "const" in node else node["enum"]
            if not isinstance(vals, list) or not all(isinstance(v, str) for v in vals):
                return None
            values = frozenset(vals)
        return tuple(c for x in types for c in _CLASSES.get(x, ())), values

    def _object(self, node: dict, other: list) -> Callable[[Any], Plan | None]:
        """The check of an object node; a value that is not a dict goes to ``other[0]`` (filled
        by the caller: the node's type check, with the empty-array repair)."""
        props_schema = node.get("properties") or {}
        declared = frozenset(props_schema)
        extra_schema = node.get("additionalProperties")
        closed = extra_schema is False
        extra = self.compile(extra_schema) if isinstance(extra_schema, dict) else None
        extra_fast = self.fast(extra_schema) if extra is not None else None
        defaults = dict(_defaults(self.model.revision, self._name_of(node))) if node.get("required") else {}
        # missing members with a default are added in DEFAULTS order (resultType, ttlMs, cacheScope)
        order = list(defaults)  # defaults_for gives DEFAULTS order
        required = tuple(sorted(node.get("required") or (), key=lambda r: order.index(r) if r in defaults else len(order)))
        req_set = frozenset(required)
        #: member -> (classes or None, values or None, check, optional): one lookup per member
        table = {}
        for k, sub in props_schema.items():
            fn = self.compile(sub)
            if fn is not None:
                f = self.fast(sub)
                table[k] = (f[0] if f else None, f[1] if f else None, fn, k not in req_set)
        e_classes, e_values = extra_fast if extra_fast is not None else (None, None)

        def missing(v: dict) -> Plan:
            plan = Plan()
            for r in required:
                if r not in v:
                    if r in defaults:
                        plan.fixes.append(((r,), REQUIRED_DEFAULT, defaults[r]))
                    else:
                        plan.errors.append(((r,), "required member missing"))
            return plan

        if not table and extra is None and not closed:
            def plain(v: Any) -> Plan | None:
                if v.__class__ is not dict:
                    return other[0](v)
                if req_set and not req_set <= v.keys():
                    return missing(v)
                return None
            return plain

        if not table and extra is not None:
            def mapping(v: Any) -> Plan | None:  # a map: additionalProperties only (e.g. ElicitResult.content)
                if v.__class__ is not dict:
                    return other[0](v)
                plan = missing(v) if req_set and not req_set <= v.keys() else None
                for k, x in v.items():
                    if e_classes is not None and x.__class__ in e_classes and (e_values is None or x in e_values):
                        continue
                    p = extra(x)
                    if p is not None:
                        plan = plan or Plan()
                        plan.add(k, p)
                return plan
            return mapping

        def check(v: Any) -> Plan | None:
            if v.__class__ is not dict:
                return other[0](v)
            plan = missing(v) if req_set and not req_set <= v.keys() else None
            for k, x in v.items():
                e = table.get(k)
                if e is not None:
                    c = e[0]
                    if c is not None and x.__class__ in c and (e[1] is None or x in e[1]):
                        continue
                    p = e[2](x)
                    if p is None:
                        continue
                    plan = plan or Plan()
                    if x is None and e[3] and p.errors:
                        plan.fixes.append(((k,), NULL_OPTIONAL, None))
                    else:
                        plan.add(k, p)
                    continue
                if k in declared:
                    continue  # a declared member whose schema accepts anything
                if closed:
                    plan = plan or Plan()
                    plan.errors.append(((k,), "member not allowed (additionalProperties: false)"))
                    continue
                if extra is None or (e_classes is not None and x.__class__ in e_classes and (e_values is None or x in e_values)):
                    continue
                p = extra(x)
                if p is not None:
                    plan = plan or Plan()
                    plan.add(k, p)
            return plan

        return check

    def _name_of(self, node: dict) -> str:
        """The definition name of ``node`` when it is one (for :func:`defaults_for`), else ""."""
        return self._def_names.get(id(node), "")

    def _array(self, node: dict) -> Callable[[list], Plan | None] | None:
        items_schema = node.get("items")
        items = self.compile(items_schema) if isinstance(items_schema, dict) else None
        fast = self.fast(items_schema) if items is not None else None
        most = node.get("maxItems")
        if items is None and most is None:
            return None

        def check(v: list) -> Plan | None:
            if most is not None and len(v) > most:
                return _fail(f"{len(v)} items, at most {most} allowed")
            if items is None:
                return None
            plan = None
            if fast is not None:
                classes, values = fast
                for x in v:
                    if x.__class__ not in classes or (values is not None and x not in values):
                        break
                else:
                    return None
            for i, x in enumerate(v):
                p = items(x)
                if p is not None:
                    plan = plan or Plan()
                    plan.add(i, p)
            return plan

        return check

    def _any_of(self, members: list) -> Check:
        fns = [self.compile(m) for m in members]
        if any(f is None for f in fns):
            return lambda v: None  # a member that accepts everything
        disc = self._discriminator(members)
        names = [self.model.ref_name(m["$ref"]) if isinstance(m, dict) and "$ref" in m else None for m in members]
        shapes = [self._shape(m) for m in members]

        def check(v: Any) -> Plan | None:
            if v.__class__ is dict:
                if disc is not None:
                    key, table = disc
                    try:
                        fn = table.get(v.get(key), _NO)
                    except TypeError:  # an unhashable discriminator value
                        fn = _NO
                    if fn is _NO:
                        return _fail(f"{key} {_short(v.get(key))} names no member of the union")
                    return fn(v)
                # the member the value's keys name (as the downgrade walk picks it): repaired toward it
                scores = [_score(shape, v) for shape in shapes]
                best = max(scores)
                if best > 0 and scores.count(best) == 1:
                    p = fns[scores.index(best)](v)
                    if p is None or not p.errors:
                        return p
            plans = []
            for fn in fns:
                p = fn(v)
                if p is None:
                    return None
                plans.append(p)
            ok = [p for p in plans if not p.errors]
            if ok:
                if len({p.key() for p in ok}) == 1:
                    return ok[0]
                return _fail("fits several members of the union only after different repairs")
            best_plan = min(range(len(plans)), key=lambda i: len(plans[i].errors))
            if names[best_plan] is None and len(plans) > 1:
                return _fail("fits no member of the union")
            return plans[best_plan]

        return check

    def _shape(self, member: Any) -> tuple[frozenset, frozenset, dict] | None:
        """(declared members, required members without a default, {member: allowed constants}) of
        an object member of a union, for :func:`_score`; None for other members."""
        node = member
        name = ""
        if isinstance(member, dict) and "$ref" in member:
            name = self.model.ref_name(member["$ref"])
            node = self.model.defs.get(name)
        if not isinstance(node, dict) or not isinstance(node.get("properties"), dict):
            return None
        props = node["properties"]
        defaults = dict(_defaults(self.model.revision, name)) if name else {}
        consts = {}
        for k, sub in props.items():
            if isinstance(sub, dict) and "$ref" in sub:
                sub = self.model.defs.get(self.model.ref_name(sub["$ref"])) or {}
            if isinstance(sub, dict) and ("const" in sub or "enum" in sub):
                vals = [sub["const"]] if "const" in sub else sub["enum"]
                if all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in vals):
                    consts[k] = frozenset(vals)
        required = frozenset(r for r in node.get("required") or () if r not in defaults)
        return frozenset(props), required, consts

    def _discriminator(self, members: list) -> tuple[str, dict] | None:
        """(key, {constant: check}) when every member is an object definition with a distinct
        constant ``type`` (content blocks) or ``method`` (embedded requests), else None."""
        for key in ("type", "method"):
            table = {}
            for m in members:
                node = m
                if isinstance(m, dict) and "$ref" in m:
                    node = self.model.defs.get(self.model.ref_name(m["$ref"])) or {}
                c = ((node.get("properties") or {}).get(key) or {}).get("const", _NO) if isinstance(node, dict) else _NO
                if c is _NO or not isinstance(c, str) or c in table:
                    break
                table[c] = self.compile(m)
            else:
                if table:
                    return key, table
        return None


def _score(shape: tuple[frozenset, frozenset, dict] | None, value: dict) -> int:
    """How well an object fits a union member (the downgrade's ``_fit`` at depth 0): -1 when a
    required member is missing or a constant is not met, else how many of its keys the member
    declares (``_meta`` aside)."""
    if shape is None:
        return -1
    props, required, consts = shape
    if not required <= value.keys():
        return -1
    score = 0
    for k, x in value.items():
        if k in props:
            allowed = consts.get(k)
            if allowed is not None:
                try:
                    if x not in allowed or x.__class__ is bool:
                        return -1
                except TypeError:
                    return -1
            if k != "_meta":
                score += 1
    return score


def _all_of(parts: list[Check]) -> Check:
    def check(v: Any) -> Plan | None:
        plan = None
        for fn in parts:
            p = fn(v)
            if p is not None:
                if plan is None:
                    plan = Plan(list(p.fixes), list(p.errors))
                else:
                    seen = set(plan.key())
                    plan.fixes.extend(f for f in p.fixes if (f[0], f[1], repr(f[2])) not in seen)
                    plan.errors.extend(p.errors)
        return plan
    return check


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


def candidate(source: bytes | memoryview | None) -> bool:
    """Whether bytes may hold a value REPAIR-empty-array-object or REPAIR-null-optional repairs:
    ``null``, or an empty array (whitespace inside allowed). True without ``source``. About 2 ms
    per MB (two searches), a third of the validation of a tools/list of 1 KB tools."""
    if source is None:
        return True
    if isinstance(source, memoryview):
        source = source.tobytes()
    return b"null" in source or _EMPTY_ARRAY.search(source) is not None


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
