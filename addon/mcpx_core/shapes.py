"""What the schema walk reads of a receiver's JSON Schema, computed once per schema node.

Both walks of :mod:`mcpx_core.downgrade` (the generic :class:`~mcpx_core.downgrade.Walk` and the
compiled walkers of :mod:`mcpx_core.walkers`) read the schema through these: a union's members,
family and ``type`` discriminators (:func:`union_info`), the keys of an object the walk has nothing
to do for (:func:`skips`, :func:`inert`), the shortcuts that return an object untouched
(:func:`leaf_keys`, :func:`quiet_plan`, :func:`shortcut`, :func:`leaf_members`), how well a value
fits a member of a union without discriminator (:func:`fit`), ``allOf`` as one object
(:func:`merged`) and a method's params schema (:func:`params_schema`). The rule tables the walk
reads are here too, so that neither walk imports the other's module at load time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import revisions
from .rules import REGISTRY

if TYPE_CHECKING:
    from .downgrade import Walk

#: the detail of a ``keep`` record: a field the receiver's revision does not define, kept by the
#: lenient policy (the strict one drops it, with the same rule id)
KEPT_LENIENT = "not defined by the receiver's revision; kept (lenient policy)"
#: the detail of a ``keep`` record: a field a delta record names, in an object the receiver's schema leaves open
KEPT_OPEN = "tolerated by the receiver's schema (open object)"

# The rule tables (rules/api.py, registered in rules/__init__.py): read by both walks.
OPEN_FIELDS = REGISTRY.open_fields
TYPE_HOOKS = REGISTRY.type_hooks
UNION_PRE = REGISTRY.union_pre
UNION_MISS = REGISTRY.union_miss
UNION_TAKEN = REGISTRY.union_taken
MESSAGE_HOOKS = REGISTRY.message_hooks
AFTER_HOOKS = REGISTRY.after_hooks


class _Discriminators:
    """``type`` const -> (member schema to walk, its definition name or None, the definition its
    ``$ref`` names or None), first member wins."""

    def __init__(self, model: revisions.SchemaModel, entries: list[tuple[Any, dict, str | None]]):
        self.entries = [(c, (schema, name, model.ref_name(schema["$ref"]) if schema.get("$ref") is not None else None))
                        for c, schema, name in entries]
        try:
            self.table: dict | None = {}
            for c, hit in self.entries:
                self.table.setdefault(c, hit)
        except TypeError:  # an unhashable const: compare one by one
            self.table = None

    def lookup(self, disc: Any) -> tuple[dict, str | None, str | None] | None:
        if self.table is not None:
            try:
                return self.table.get(disc)
            except TypeError:  # an unhashable discriminator value (list, object) equals no string const
                pass
        for c, hit in self.entries:
            if c == disc:
                return hit
        return None


class _UnionInfo:
    """What the walker needs to know about one ``anyOf`` list of one revision's schema, computed once."""

    __slots__ = ("members", "names", "family", "array_member", "_objects")

    def __init__(self, model: revisions.SchemaModel, members: list[dict]):
        self.members = members  # held, so the id() key of the cache stays this list's
        self.names = [model.ref_name(m["$ref"]) if "$ref" in m else None for m in members]
        self.family = union_family(self.names)
        self.array_member = next((m for m in members if m.get("type") == "array" or "items" in m), None)
        self._objects = None

    def objects(self, model: revisions.SchemaModel) -> tuple[list, _Discriminators | None]:
        """(object members as (name, schema), their ``type`` discriminators or None when some lack one)."""
        if self._objects is None:
            names, members = self.names, self.members
            resolved = [(n, model.defs[n] if n else m) for n, m in zip(names, members)]
            objs = [(n, s) for n, s in resolved if s.get("type") == "object" or "properties" in s]
            consts = [((s.get("properties") or {}).get("type") or {}).get("const") for _, s in objs]
            disc = None
            if objs and all(c is not None for c in consts):
                disc = _Discriminators(model, [(c, members[names.index(n)] if n else s, n) for (n, s), c in zip(objs, consts)])
            self._objects = (objs, disc)
        return self._objects


_UNION_INFO: dict[tuple[int, int], _UnionInfo] = {}


def union_info(model: revisions.SchemaModel, members: list[dict]) -> _UnionInfo:
    info = _UNION_INFO.get((id(model), id(members)))
    if info is None or info.members is not members:
        if len(_UNION_INFO) > 4096:
            _UNION_INFO.clear()
        info = _UNION_INFO[(id(model), id(members))] = _UnionInfo(model, members)
    return info


_INERT: dict[int, tuple[dict, bool]] = {}


def inert(schema: dict) -> bool:
    """True when :meth:`Walk.node` returns every value unchanged for ``schema``: no ``$ref``,
    union, ``allOf`` or properties, not ``type: object``, and array items (if any) inert too
    (e.g. ``{"type": "string"}``, ``{"type": "array", "items": {"type": "number"}}``)."""
    hit = _INERT.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    items = schema.get("items")
    out = not ("$ref" in schema or "anyOf" in schema or "allOf" in schema or "properties" in schema
               or schema.get("type") == "object") \
        and (not isinstance(items, dict) or not items or inert(items))
    if len(_INERT) > 8192:
        _INERT.clear()
    _INERT[id(schema)] = (schema, out)
    return out



_MISSING = object()


def leaf_keys(model: revisions.SchemaModel, name: str) -> frozenset | None:
    """For a definition the walk can enter through :meth:`Walk.named` with no hook and no union
    (a plain object schema, e.g. TextContent, ToolAnnotations): the keys :meth:`Walk.obj` has
    nothing to do for (:func:`skips`). An object holding only such keys is returned as it is,
    without the walk's calls; None for every other definition."""
    node = model.defs.get(name)
    if not isinstance(node, dict) or name in TYPE_HOOKS or "$ref" in node or "anyOf" in node or "allOf" in node:
        return None
    props = node.get("properties")
    if not isinstance(props, dict):
        return None
    return skips(props, name)


class _Quiet:
    """When an object of one definition needs nothing from the walk or the definition's hooks:
    its keys are among ``keys`` (:func:`skips`, plus ``nested`` keys), each ``nested`` key holds
    an object of a definition :func:`leaf_keys` covers, and every hook's ``quiet`` predicate holds."""

    __slots__ = ("keys", "nested", "quiets", "target")

    def __init__(self, keys: frozenset, nested: tuple, quiets: tuple, target: dict):
        self.keys, self.nested, self.quiets, self.target = keys, nested, quiets, target

    def holds(self, walk: "Walk", value: dict) -> bool:
        if not self.keys.issuperset(value):
            return False
        for key, leaf in self.nested:
            v = value.get(key, _MISSING)
            if v is not _MISSING and (v.__class__ is not dict or not leaf.issuperset(v)):
                return False
        for quiet in self.quiets:
            if not quiet(walk, value, self.target):
                return False
        return True


def quiet_plan(model: revisions.SchemaModel, name: str) -> _Quiet | None:
    """For a plain object definition whose hooks each say when they have nothing to do (a
    ``quiet(walk, value, target)`` attribute, e.g. rules/tools.py's Tool hook) and whose other
    properties are :func:`skips` keys or ``{"$ref": ...}`` to a :func:`leaf_keys` definition (e.g.
    Tool.annotations -> ToolAnnotations, TextContent.annotations -> Annotations): the check that an
    object needs nothing, so :meth:`Walk.named` returns it without the walk's calls. None otherwise."""
    node = model.defs.get(name)
    if not isinstance(node, dict) or "$ref" in node or "anyOf" in node or "allOf" in node:
        return None
    props = node.get("properties")
    if not isinstance(props, dict):
        return None
    hooks = TYPE_HOOKS.get(name, ())
    if not all(callable(h.quiet) for h in hooks):
        return None
    skip = skips(props, name)
    nested = []
    for key, sub in props.items():
        if key in skip or key == "_meta" or not isinstance(sub, dict) or "$ref" not in sub:
            continue
        leaf = leaf_keys(model, model.ref_name(sub["$ref"]))
        if leaf is not None:
            nested.append((key, leaf))
    if not nested and not hooks:
        return None
    return _Quiet(skip | {k for k, _ in nested}, tuple(nested), tuple(h.quiet for h in hooks), node)


def shortcut(model: revisions.SchemaModel, name: str) -> frozenset | _Quiet | None:
    """How :meth:`Walk.named` tells that an object of definition ``name`` needs nothing: the
    :func:`leaf_keys` set (no hooks), else a :func:`quiet_plan`, else None (walk it)."""
    leaf = leaf_keys(model, name)
    return leaf if leaf is not None else quiet_plan(model, name)


def leaf_members(walk: "Walk", items: dict) -> tuple[dict, dict | None, frozenset | _Quiet | None] | None:
    """For array ``items`` that are a union discriminated by ``type`` (content blocks): (items,
    {``type`` const: :func:`leaf_keys` of that member}, None) for the members that have them, so
    an element holding only such keys skips the walk; for items ``{"$ref": X}``: (items, None,
    :func:`shortcut` of X); None for other items. The union's named rules (:data:`UNION_PRE`)
    and array members rule the shortcut out."""
    model = walk.model
    schema = items
    if "$ref" in schema:
        name = model.ref_name(schema["$ref"])
        schema = model.defs.get(name) or {}
        if "anyOf" not in schema:
            short = shortcut(model, name)
            return (items, None, short) if short is not None else None
    members = schema.get("anyOf")
    if not isinstance(members, list) or "$ref" in schema or "allOf" in schema:
        return None
    info = union_info(model, members)
    if UNION_PRE.get(info.family) is not None or info.array_member is not None:
        return None
    _, disc = info.objects(model)
    if disc is None or disc.table is None:
        return None
    table = {}
    for const, (_, _, ref) in disc.table.items():
        leaf = leaf_keys(model, ref) if ref is not None else None
        if leaf is not None:
            table[const] = leaf
    return (items, table, None) if table else None


_SKIPS: dict[tuple[int, str], tuple[dict, frozenset]] = {}


def skips(props: dict, typ: str) -> frozenset:
    """The keys of ``props`` :meth:`Walk.obj` has nothing to do for in definition ``typ``: open
    fields (:data:`OPEN_FIELDS`) and, ``_meta`` aside, properties whose schema is ``{}`` or inert."""
    hit = _SKIPS.get((id(props), typ))
    if hit is not None and hit[0] is props:
        return hit[1]
    skip = frozenset(k for k, sub in props.items() if sub is not None and (
        (typ, k) in OPEN_FIELDS or (k != "_meta" and isinstance(sub, dict) and (not sub or inert(sub)))))
    if len(_SKIPS) > 8192:
        _SKIPS.clear()
    _SKIPS[(id(props), typ)] = (props, skip)
    return skip


def fit(model: revisions.SchemaModel, value: Any, schema: dict, depth: int) -> int:
    """How well ``value`` fits object ``schema``: -1 when it cannot be that member (a required
    property missing, a const or enum not met), else the number of its keys the schema names,
    counted ``depth`` levels down. Picks members of unions without a ``type`` discriminator
    (e.g. elicitation property schemas, schema/2025-11-25/schema.ts:2463)."""
    if "$ref" in schema:
        schema = model.resolve(schema["$ref"])[1]
    if not isinstance(value, dict):
        return 0
    props = schema.get("properties") or {}
    required = schema.get("required", ())
    if any(r not in value for r in required):
        return -1
    score = 0
    for k, v in value.items():
        sub = props.get(k)
        if sub is None or (v is None and k not in required):
            continue  # null for an optional member means it is absent (the repair stage removes it: REPAIR-null-optional)
        score += 1
        if "$ref" in sub:
            sub = model.resolve(sub["$ref"])[1]
        if "const" in sub and v != sub["const"]:
            return -1
        if "enum" in sub and isinstance(v, (str, int)) and v not in sub["enum"]:
            return -1
        if depth > 0 and isinstance(v, dict) and "properties" in sub:
            inner = fit(model, v, sub, depth - 1)
            if inner < 0:
                return -1
            score += inner
    return score


_MERGED: dict[tuple[int, int], tuple[dict, dict]] = {}


def merged(model: revisions.SchemaModel, schema: dict) -> dict:
    """:func:`merge`, once per schema node (the result is only read)."""
    hit = _MERGED.get((id(model), id(schema)))
    if hit is not None and hit[0] is schema:
        return hit[1]
    out = merge(model, schema)
    if len(_MERGED) > 1024:
        _MERGED.clear()
    _MERGED[(id(model), id(schema))] = (schema, out)
    return out


def merge(model: revisions.SchemaModel, schema: dict) -> dict:
    """allOf of object schemas as one object schema (used by a few 2025-11-25+ definitions)."""
    props: dict = {}
    required: list = []
    extra = None
    for part in schema["allOf"]:
        if "$ref" in part:
            _, part = model.resolve(part["$ref"])
        props.update(part.get("properties") or {})
        required += part.get("required", [])
        if "additionalProperties" in part:
            extra = part["additionalProperties"]
    out = {"type": "object", "properties": props, "required": required}
    if extra is not None:
        out["additionalProperties"] = extra
    return out


def params_schema(model: revisions.SchemaModel, name: str, base: str) -> dict | None:
    """The params schema of request/notification ``name``, with the base type's ``_meta``.

    Every revision's ``Request``/``Notification`` base declares ``params._meta`` (progressToken
    etc., schema/2024-11-05/schema.ts:21), but definitions that redeclare ``params`` (e.g.
    CallToolRequest in schema/2024-11-05/schema.json) lose it in the generated JSON Schema, while
    the prose keeps it (progress tokens ride in request ``_meta``). The base's ``_meta`` is used.
    """
    pschema = (model.defs[name].get("properties") or {}).get("params")
    if not pschema or "$ref" in pschema or "properties" not in pschema or "_meta" in pschema["properties"]:
        return pschema
    base_meta = ((((model.defs.get(base) or {}).get("properties") or {}).get("params") or {}).get("properties") or {}).get("_meta")
    if base_meta is None:
        return pschema
    return with_meta(id(pschema), pschema, base_meta)


_META_CACHE: dict[int, dict] = {}


def with_meta(key: int, pschema: dict, meta: dict) -> dict:
    out = _META_CACHE.get(key)
    if out is None:
        out = dict(pschema)
        out["properties"] = {**pschema["properties"], "_meta": meta}
        _META_CACHE[key] = out
    return out


def union_family(names: list[str | None]) -> str:
    """Which named rules apply to a union, from its members' definition names."""
    s = set(n for n in names if n)
    if "TextContent" in s:
        return "content"
    if "StringSchema" in s or "NumberSchema" in s:
        return "elicitation-property"
    return "other"
