"""The repair stage's checks: JSON Schema compiled into closures per revision (:class:`Checker`),
each returning the :class:`Plan` of what a value needs (the repairs, what fails beyond repair) or
None for a valid value. :mod:`mcpx_core.repair` applies the plans and writes the records."""

from __future__ import annotations

from typing import Any, Callable

from . import revisions
from .changes import summarize
from .defaults import defaults_for
from .shapes import params_schema


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


class _FastChecks:
    """Which nodes objects and arrays check inline (:meth:`fast`), without calling their check."""

    model: revisions.SchemaModel

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


class _UnionChecks:
    """The checks of ``anyOf`` unions: by discriminator, by the member the keys name, or each member."""

    model: revisions.SchemaModel
    compile: Callable[[Any], Any]

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


class Checker(_FastChecks, _UnionChecks):
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
