"""Compiled walkers: the schema walk of :class:`~mcpx_core.downgrade.Walk`, as closures built once per
definition and schema node of a receiver's revision.

The generic walk (``Walk.named``, ``node``, ``obj``, ``array``, ``union``) reads the JSON Schema at
every value it visits: is there a ``$ref``, an ``anyOf``, which keys are inert, which hooks run,
which member a ``type`` names. Here that reading happens once: :class:`Plans` turns each definition
(``named``) and schema node (``node``) into a function that only looks at the value, with its
sub-walkers, skip sets, hooks, shortcuts and discriminator tables bound in. A rewrite-heavy
message (a content block per file to rewrite, a tool list where every tool needs changes) then
costs the rules' work and the records, not the schema's interpretation.

Each function does exactly what the generic method it stands for does, in the same order, calling
the same hooks and rules with the same arguments (``tests/schema/test_walkers.py`` compares both
on messages of every type and revision pair). Functions take ``(walk, value, ptr)``; the walk's
``typ`` (the nearest named definition, used for rule ids) is bound at compile time, as it is
fixed by where the schema node sits.

What stays generic: ``Walk.meta`` (``_meta`` objects), ``Walk.split_array`` (a large list read an
element at a time), the rules themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from . import revisions, shapes
from .rules.api import DROP, escape

if TYPE_CHECKING:
    from .downgrade import Walk

Fn = Callable[["Walk", Any, str], Any]


def _identity(walk: Walk, value: Any, ptr: str) -> Any:
    return value


class Plans:
    """The compiled walkers of one revision's schema (the receiver's), built on first use."""

    def __init__(self, model: revisions.SchemaModel):
        self.model = model
        self._named: dict[str, Fn] = {}
        #: (id(schema node), typ) -> (node, fn): the node is held so its id stays its own
        self._nodes: dict[tuple[int, str], tuple[dict, Fn]] = {}
        #: id(node fn) -> its obj fn, for node fns that only walk objects (see _build_named)
        self._objs: dict[int, Fn] = {}

    # -- entry points ---------------------------------------------------------------------
    def named(self, name: str) -> Fn:
        """``Walk.named(value, name, ptr)`` as ``fn(walk, value, ptr)``."""
        fn = self._named.get(name)
        if fn is None:
            # a stand-in first: a recursive definition (ToolResultContent.content -> ContentBlock ->
            # ToolResultContent) reaches itself while it is being built
            cell: list[Fn] = []
            self._named[name] = lambda walk, value, ptr: cell[0](walk, value, ptr)
            built = self._build_named(name)
            cell.append(built)
            self._named[name] = fn = built
        return fn

    def node(self, schema: dict, typ: str) -> Fn:
        """``Walk.node(value, schema, ptr, typ)`` as ``fn(walk, value, ptr)``."""
        key = (id(schema), typ)
        hit = self._nodes.get(key)
        if hit is not None and hit[0] is schema:
            return hit[1]
        cell: list[Fn] = []
        self._nodes[key] = (schema, lambda walk, value, ptr: cell[0](walk, value, ptr))
        built = self._build_node(schema, typ)
        cell.append(built)
        self._nodes[key] = (schema, built)
        return built

    # -- builders -------------------------------------------------------------------------
    def _build_named(self, name: str) -> Fn:
        model = self.model
        short = shapes.shortcut(model, name)
        node = model.defs.get(name)
        if node is None:
            return _identity
        hooks = tuple(shapes.TYPE_HOOKS.get(name) or ())
        body = self.node(node, name)
        quiet = short.issuperset if short.__class__ is frozenset else None
        holds = short.holds if short is not None and quiet is None else None
        # a plain object definition (no items): its walk is its obj() for a dict, nothing for anything else
        obj = self._objs.get(id(body))

        def named(walk: Walk, value: Any, ptr: str) -> Any:
            if value.__class__ is dict and (quiet is not None and quiet(value) or holds is not None and holds(walk, value)):
                return value  # nothing for the walk nor the definition's hooks (shapes.shortcut)
            if hooks and isinstance(value, dict):
                for hook in hooks:
                    value = hook.fn(walk, value, ptr, node)
                    if value is DROP:
                        return DROP
            if obj is not None:
                return obj(walk, value, ptr) if isinstance(value, dict) else value
            return body(walk, value, ptr)

        return named

    def _build_node(self, schema: dict, typ: str) -> Fn:
        model = self.model
        ref = schema.get("$ref")
        if ref is not None:
            return self.named(model.ref_name(ref))
        if "anyOf" in schema:
            return self._build_union(schema["anyOf"], typ)
        if "allOf" in schema:
            return self.node(shapes.merged(model, schema), typ)
        props = schema.get("properties")
        obj = None if props is None and schema.get("type") != "object" else self._build_obj(schema, props or {}, typ)
        items = schema.get("items")
        arr = self._build_array(items, typ) if isinstance(items, dict) and items else None
        if obj is None and arr is None:
            return _identity

        def node(walk: Walk, value: Any, ptr: str) -> Any:
            if isinstance(value, dict):
                return value if obj is None else obj(walk, value, ptr)
            if arr is not None and isinstance(value, list):
                return arr(walk, value, ptr)
            return value

        if obj is not None and arr is None:
            self._objs[id(node)] = obj  # (node is held by self._nodes: its id stays its own)
        return node

    def _build_obj(self, schema: dict, props: dict, typ: str) -> Fn:
        skip = shapes.skips(props, typ)
        superset = skip.issuperset
        extra = schema.get("additionalProperties")
        subs: dict[str, tuple[Fn, str]] = {}
        metas: dict[str, tuple[dict, str]] = {}
        for key, sub in props.items():
            if key in skip or sub is None:
                continue
            if key == "_meta":
                metas[key] = (sub, escape(key))
            else:
                subs[key] = (self.node(sub, typ), escape(key))
        if extra is None or extra is False:
            mode = "drop"
        elif extra is True or extra == {}:
            mode = "open"
        elif isinstance(extra, dict) and extra:
            mode = "walk"
        else:
            mode = "none"
        extra_fn = self.node(extra, typ) if mode == "walk" else None
        #: (key, parent, direction) -> the rule id Walk.field_rule gives a dropped key here (a pure
        #: function of them for this typ and receiver); bounded: parents can be data (map keys)
        drop_rules: dict[tuple[str, str, str], str] = {}

        def obj(walk: Walk, value: dict, ptr: str) -> dict:
            if superset(value):
                return value  # the loop below would `continue` for every key
            for key in list(value):
                if key in skip:
                    continue  # open, {} or inert: nothing to do (see shapes.skips)
                hit = subs.get(key)
                if hit is not None:
                    v = value[key]
                    new = hit[0](walk, v, f"{ptr}/{hit[1]}")
                    if new is DROP:
                        del value[key]
                    elif new is not value[key]:
                        value[key] = new
                    continue
                meta = metas.get(key)
                if meta is not None:
                    walk.meta(value[key], meta[0], f"{ptr}/{meta[1]}", typ)
                    continue
                kptr = f"{ptr}/{escape(key)}"
                if mode == "drop":
                    parent = ptr.rpartition("/")[2]  # what Walk.field_rule reads of kptr (an index: none)
                    if parent.isdigit():
                        parent = ""
                    memo = (key, parent, walk.direction)
                    rule = drop_rules.get(memo)
                    if rule is None:
                        if len(drop_rules) >= 4096:
                            drop_rules.clear()
                        rule = drop_rules[memo] = walk.field_rule(typ, key, kptr)
                    if walk.policy == "strict":
                        walk.log(kptr, "drop", rule, value[key], detached=True)
                        del value[key]
                    else:
                        walk.log(kptr, "keep", rule, value[key], detail=shapes.KEPT_LENIENT)
                elif mode == "open":
                    # open object: tolerated; a delta record naming exactly this field is logged as kept
                    rule = walk.rules.for_field_exact(typ, key, walk.to_rev, walk.direction)
                    if rule is not None:
                        walk.log(kptr, "keep", rule, value[key], detail=shapes.KEPT_OPEN)
                elif mode == "walk":
                    new = extra_fn(walk, value[key], kptr)  # type: ignore[misc]
                    if new is DROP:
                        del value[key]
                    elif new is not value[key]:
                        value[key] = new
            return value

        return obj

    def _build_array(self, items: dict, typ: str) -> Fn:
        element = self.node(items, typ)
        cache: dict[str, Any] = {}

        def leaf(walk: Walk) -> tuple[dict | None, Any]:
            # shapes.leaf_members needs a walk (its model); computed on the first array walked
            fast = shapes.leaf_members(walk, items)
            cache["fast"] = out = (fast[1], fast[2]) if fast is not None else (None, None)
            return out

        def array(walk: Walk, value: list, ptr: str) -> list:
            split = walk.split
            if split is not None and value is split.sentinel:
                return walk.split_array(value, items, ptr, typ)
            table, short = cache.get("fast") or leaf(walk)
            dropped = False
            for i, el in enumerate(value):
                if table is not None and el.__class__ is dict:
                    try:
                        keys = table.get(el.get("type"))
                    except TypeError:  # an unhashable "type" value: the walk decides
                        keys = None
                    if keys is not None and keys.issuperset(el):
                        continue  # a union member with nothing to do
                elif short is not None and el.__class__ is dict \
                        and (short.issuperset(el) if short.__class__ is frozenset else short.holds(walk, el)):
                    continue  # e.g. a Tool with nothing to do
                new = element(walk, el, f"{ptr}/{i}")
                if new is DROP:
                    dropped = True
                    value[i] = DROP  # removed below, once
                elif new is not el:
                    value[i] = new  # (the generic walk builds a new list; the same elements end up in place)
            if dropped:
                value[:] = [el for el in value if el is not DROP]
            return value

        return array

    def _build_union(self, members: list[dict], typ: str) -> Fn:
        model = self.model
        info = shapes.union_info(model, members)
        names, family = info.names, info.family
        pre = shapes.UNION_PRE.get(family)
        miss = shapes.UNION_MISS.get(family)
        array_fn = self.node(info.array_member, typ) if info.array_member is not None else None
        objs, by_const = info.objects(model)
        table: dict | None = None
        linear: list[tuple[Any, Fn]] = []
        if by_const is not None:
            for const, (schema, name, ref) in by_const.entries:
                linear.append((const, self.named(ref) if ref is not None else self.node(schema, name or typ)))
            if by_const.table is not None:
                table = {}
                for const, fn in linear:
                    table.setdefault(const, fn)
        picks = [_Pick(model, s, self.named(n) if n else self.node(s, typ)) for n, s in objs] if by_const is None else []

        def union(walk: Walk, value: Any, ptr: str) -> Any:
            if pre is not None:
                value = pre(walk, value, ptr, members, names)
                if value is DROP:
                    return DROP
            if value.__class__ is not dict:  # (an object, the common case, goes straight on)
                if isinstance(value, list):
                    if array_fn is not None:
                        return array_fn(walk, value, ptr)
                    if miss is None:
                        return value
                    new = miss(walk, value, ptr, members, names)
                    return DROP if new is DROP else union(walk, new, ptr)
                if not isinstance(value, dict):
                    return value
            if by_const is not None:
                disc = value.get("type")
                fn = None
                if table is not None:
                    try:
                        fn = table.get(disc)
                    except TypeError:  # an unhashable discriminator value equals no const
                        fn = _linear(linear, disc)
                else:
                    fn = _linear(linear, disc)
                if fn is not None:
                    return fn(walk, value, ptr)
                if miss is None:
                    return value
                new = miss(walk, value, ptr, members, names)
                if new is DROP:
                    return DROP
                return union(walk, new, ptr)
            # a member whose required keys are missing, or whose "type" const/enum the value's "type"
            # fails, fits with -1 (shapes.fit) and cannot win: only the others are tried
            keys = value.keys()
            disc = value.get("type", _NONE)
            left = [pick for pick in picks if pick.required <= keys and (disc is _NONE or not pick.rules_out(disc)
                                                                         or (disc is None and "type" not in pick.required))]
            if len(left) == 1 and left[0].sure:
                return left[0].fn(walk, value, ptr)  # the only one that can fit, and it fits (score >= 0)
            best, best_score = None, -1
            for pick in left:
                score = shapes.fit(model, value, pick.schema, 3)
                if score > best_score:
                    best, best_score = pick.fn, score
            if best is None:
                return value
            return best(walk, value, ptr)

        return union


_NONE = object()


class _Pick:
    """A member of a union without a ``type`` discriminator (elicitation property schemas,
    resource contents): what :func:`shapes.fit` would reject it for, checked first."""

    __slots__ = ("schema", "fn", "required", "const", "enum", "sure")

    def __init__(self, model: revisions.SchemaModel, schema: dict, fn: Fn):
        self.schema, self.fn = schema, fn
        s = model.resolve(schema["$ref"])[1] if "$ref" in schema else schema
        self.required = frozenset(s.get("required", ()))
        props = s.get("properties") or {}
        subs = [model.resolve(x["$ref"])[1] if isinstance(x, dict) and "$ref" in x else x for x in props.values()]
        #: _fit can give -1 only for a required key missing: no property has a const, an enum or
        #: properties of its own (the checks _fit makes on the value's keys)
        self.sure = all(isinstance(x, dict) and not ("const" in x or "enum" in x or "properties" in x) for x in subs)
        sub = props.get("type")
        if isinstance(sub, dict) and "$ref" in sub:
            sub = model.resolve(sub["$ref"])[1]
        self.const = sub["const"] if isinstance(sub, dict) and "const" in sub else _NONE
        self.enum = sub["enum"] if isinstance(sub, dict) and "enum" in sub else _NONE

    def rules_out(self, disc: Any) -> bool:
        """Whether _fit returns -1 for a value whose "type" is ``disc`` (the checks it makes for that key)."""
        if self.const is not _NONE and disc != self.const:
            return True
        return self.enum is not _NONE and isinstance(disc, (str, int)) and disc not in self.enum


def _linear(entries: list[tuple[Any, Fn]], disc: Any) -> Fn | None:
    for const, fn in entries:
        if const == disc:
            return fn
    return None


_PLANS: dict[str, Plans] = {}


def plans(revision: str) -> Plans:
    """The compiled walkers toward ``revision`` (one set per revision, kept for the process)."""
    p = _PLANS.get(revision)
    if p is None:
        p = _PLANS[revision] = Plans(revisions.model(revision))
    return p
