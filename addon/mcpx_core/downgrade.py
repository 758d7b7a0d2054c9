"""Downgrade one parsed JSON-RPC message to the receiver's revision, guided by its schema.json.

This stage knows nothing of HTTP, SSE or mitmproxy. Input: a JSON-RPC object (dict) that this
stage may mutate, its kind, the method it belongs to (for a result: the method of the request it
answers), the sender's and the receiver's revision, the direction and the policy. Output: a
:class:`Outcome` with the message to deliver (or none) and the :class:`~mcpx_core.changes.Change`
records.

How it works: the message is walked together with the *target* revision's JSON Schema. Every
object property the target definition does not declare is dropped (strict policy) and logged with
the id of the revision-delta record that names it (see :mod:`mcpx_core.rules.ids`); so a field
that a future revision adds is handled without anyone listing it. Union members (content block
``type`` values, elicitation property schemas, sampling content arrays) that the target lacks are
never tolerated: a named rule from :mod:`mcpx_core.rules` rewrites them into a shape the target
defines, and the result is walked again. Open objects (``additionalProperties: {}``: ``_meta``,
``arguments``, ``structuredContent``, ``inputSchema`` bodies) are not entered, except that
reserved ``_meta`` keys a delta record removes for the target are dropped.

Policies: ``strict`` (default) delivers only what the target revision defines; ``lenient`` keeps
unknown properties (schema.json never says ``additionalProperties: false``), each with a ``keep``
record under the rule id strict would drop it with, and still rewrites union members and runs the
named rules (REVISIONS.md section 0).
"""

from __future__ import annotations

from typing import Any, Callable, Literal

from . import revisions, shapes, walkers
from .changes import Change, Rebuilt, Summary, maker, snapshot, summarize
from .framing import json_body
from .rules import ids
from .rules.api import DROP, Outcome, Reject, escape  # noqa: F401  (re-exported: the walk's vocabulary)
from .shapes import AFTER_HOOKS, MESSAGE_HOOKS, OPEN_FIELDS, TYPE_HOOKS, UNION_MISS, UNION_PRE, UNION_TAKEN, union_family  # noqa: F401  (re-exported)
from .shapes import KEPT_LENIENT, KEPT_OPEN

Kind = Literal["request", "notification", "result", "error"]
Direction = Literal["s2c", "c2s"]
Policy = Literal["strict", "lenient"]

RESERVED_META_PREFIXES = ("io.modelcontextprotocol/", "modelcontextprotocol.io/")
#: walk with the compiled walkers (:mod:`mcpx_core.walkers`); False: the generic methods of :class:`Walk`
#: (the reference the compiled ones are tested against, tests/schema/test_walkers.py)
COMPILED = True
#: make the summaries of detached values when a record is read (:meth:`Walk.log`); False: at once
LAZY_SUMMARIES = True


class WalkRecords:
    """The records of a walk: :meth:`log` and the values a record shows (:meth:`shown`, :meth:`again`),
    and which delta record names a change (:meth:`fires`, :meth:`field_rule`). The attributes it reads
    are :class:`Walk`'s."""

    def log(self, pointer: str, action: str, rule: str, before: Any = None, after: Any = None, detail: str | None = None, *,
            raw: bool = False, detached: bool = False, profile: str | None = None) -> None:
        """Record a change. ``before``/``after`` are values, summarised (:func:`summarize`); ``raw``:
        they are the text itself. ``detached``: nothing changes them after this call (a value the
        walk removed from the message, a :func:`~mcpx_core.changes.snapshot`), so their summaries
        are made when the record is first read (strings, being immutable, always are); otherwise now.
        ``profile``: the host profile whose action this is (the record names it)."""
        if not raw:
            if self.summaries is not None and len(self.changes) >= self.summaries:
                before = after = None  # a record nobody reads (see Rewriter.summarize_all): counted, not described
            else:
                lazy = self.lazy
                if before is not None:
                    before = Summary(before) if lazy and (detached or before.__class__ is str) else summarize(before)
                if after is not None:
                    if lazy and (detached or after.__class__ is str):
                        after = Summary(after)
                    else:
                        after = summarize(after.build() if after.__class__ is Rebuilt else after)
        make = self.make
        if make is None:
            change = Change(pointer, action, rule, before, after, detail, profile=profile)  # type: ignore[arg-type]
        else:  # the record as it is delivered, built once (rewrite.message.rule_pass gives the message's context)
            change = make(pointer, action, rule, before, after, detail, profile)
        if self.split is not None and _SENTINEL_TEXT in f"{change.before}{change.after}":
            # the record would show the split array's stand-in: parse the body whole, for the true summary
            raise json_body.SplitFailed("a record summarises the split array")
        self.changes.append(change)

    def shown(self, value: Any) -> Any:
        """What a record shows of ``value``, which the walk changes after it is logged (e.g. a
        replacement block, walked next): a :func:`~mcpx_core.changes.snapshot` to give
        :meth:`log` as ``detached``; ``value`` itself when the next record will not be described."""
        if self.summaries is not None and len(self.changes) >= self.summaries:
            return value
        return snapshot(value) if self.lazy else value

    def again(self, fn: Callable[..., Any], *args: Any) -> Any:
        """What a record shows of a value the walk changes after it is logged, when ``fn(*args)``
        builds that value again from values nothing changes (the replaced block, detached): a
        :class:`~mcpx_core.changes.Rebuilt`, built when the record is first read, to give
        :meth:`log` as ``detached`` (no copy now, unlike :meth:`shown`); None when the next record
        will not be described."""
        if self.summaries is not None and len(self.changes) >= self.summaries:
            return None
        return Rebuilt(fn, *args)

    def fires(self, rule_id: str) -> bool:
        """Whether delta record ``rule_id`` fires for this receiver and direction."""
        rec = self.rules.records[rule_id]
        return self.to_rev in rec.targets and rec.direction in ("both", self.direction)

    def field_rule(self, typ: str, name: str, ptr: str = "") -> str:
        head = ptr.rpartition("/")[0]
        parent = head.rpartition("/")[2] if "/" in head else ""  # ptr.rsplit("/", 2)[-2] when ptr has two "/"
        if parent.isdigit():
            parent = ""  # an array index names no type (RuleIndex.for_field scores only letters): one cache entry, not one per index
        return self.rules.for_field(typ, name, self.to_rev, self.direction, parent)


class Walk(WalkRecords):
    """One downgrade pass over one message toward one target revision."""

    def __init__(self, from_rev: str, to_rev: str, direction: Direction, policy: Policy, options: dict | None = None):
        self.model = revisions.model(to_rev)
        self.from_rev, self.to_rev = from_rev, to_rev
        self.direction = direction
        self.policy = policy
        self.options = options or {}
        self.changes: list[Change] = []
        self.rules = ids.index()
        self.kind: str | None = None
        self.leaf = _LEAF.setdefault(to_rev, {})
        #: a large body's array read one element at a time (see :func:`split_path`), or None
        self.split: json_body.ArraySplit | None = None
        #: what rules learnt about this message for later rules (e.g. rules/tools.py "composition")
        self.memo: dict[str, Any] = {}
        #: the method the message belongs to (a result: of the request it answers)
        self.method: str | None = None
        #: the receiver's host profile (mcpx_core.profiles.Profile) and, for this message's method,
        #: the content block types it takes away (type -> rewrite), or None
        self.profile: Any = None
        self.exclude: dict[str, str] | None = None
        #: how many records (from the first) get before/after summaries; None: all. Set by
        #: :func:`downgrade` from what the change sink reads (Rewriter.summarize_all); a split walk summarises all
        self.summaries: int | None = None
        #: summaries of ``detached`` values made on first read (:meth:`log`); False: always at once
        self.lazy = LAZY_SUMMARIES
        #: builds records with the context of the message (:func:`~mcpx_core.changes.maker`), or None:
        #: records without context (the caller stamps them, :meth:`Change.stamped`)
        self.make: Callable[..., Change] | None = None
        #: the compiled walkers toward the receiver's revision (:mod:`mcpx_core.walkers`), or None: the generic walk
        self.plans = walkers.plans(to_rev) if COMPILED else None

    # -- the walk ------------------------------------------------------------------------
    def named(self, value: Any, name: str, ptr: str) -> Any:
        """Walk ``value`` as the target's definition ``name``."""
        if self.plans is not None:
            return self.plans.named(name)(self, value, ptr)
        short = self.leaf.get(name, _MISSING)
        if short is _MISSING:
            short = self.leaf[name] = shapes.shortcut(self.model, name)
        if short is not None and value.__class__ is dict \
                and (short.issuperset(value) if short.__class__ is frozenset else short.holds(self, value)):
            return value  # nothing for the walk nor the definition's hooks (see shapes.shortcut)
        node = self.model.defs.get(name)
        if node is None:
            return value
        hooks = TYPE_HOOKS.get(name)
        if hooks and isinstance(value, dict):
            for hook in hooks:
                value = hook.fn(self, value, ptr, node)
                if value is DROP:
                    return DROP
        return self.node(value, node, ptr, name)

    def node(self, value: Any, schema: dict, ptr: str, typ: str) -> Any:
        if self.plans is not None:
            return self.plans.node(schema, typ)(self, value, ptr)
        ref = schema.get("$ref")
        if ref is not None:
            name = _REF_NAMES.get(ref)
            if name is None:
                name = _REF_NAMES[ref] = self.model.ref_name(ref)
            return self.named(value, name, ptr)
        if "anyOf" in schema:
            return self.union(value, schema["anyOf"], ptr, typ)
        if "allOf" in schema:
            return self.node(value, shapes.merged(self.model, schema), ptr, typ)
        if isinstance(value, dict):
            props = schema.get("properties")
            if props is None and schema.get("type") != "object":
                return value
            return self.obj(value, schema, props or {}, ptr, typ)
        if isinstance(value, list):
            items = schema.get("items")
            if isinstance(items, dict) and items:
                return self.array(value, items, ptr, typ)
        return value

    def obj(self, value: dict, schema: dict, props: dict, ptr: str, typ: str) -> dict:
        skip = shapes.skips(props, typ)
        if skip.issuperset(value):
            return value  # the loop below would `continue` for every key
        extra = schema.get("additionalProperties")
        for key in list(value):
            if key in skip:
                continue  # open, {} or inert: nothing to do (see shapes.skips)
            sub = props.get(key)
            if sub is not None:  # not skipped: _meta, or a schema that can change the value
                if key == "_meta":
                    self.meta(value[key], sub, f"{ptr}/{escape(key)}", typ)
                    continue
                new = self.node(value[key], sub, f"{ptr}/{escape(key)}", typ)
                if new is DROP:
                    del value[key]
                elif new is not value[key]:
                    value[key] = new
                continue
            kptr = f"{ptr}/{escape(key)}"
            if extra is None or extra is False:
                if self.policy == "strict":
                    self.log(kptr, "drop", self.field_rule(typ, key, kptr), value[key], detached=True)
                    del value[key]
                else:
                    self.log(kptr, "keep", self.field_rule(typ, key, kptr), value[key], detail=KEPT_LENIENT)
                continue
            if extra is True or extra == {}:
                # open object: tolerated; a delta record naming exactly this field is logged as kept
                rule = self.rules.for_field_exact(typ, key, self.to_rev, self.direction)
                if rule is not None:
                    self.log(kptr, "keep", rule, value[key], detail=KEPT_OPEN)
                continue
            if isinstance(extra, dict) and extra:
                new = self.node(value[key], extra, kptr, typ)
                if new is DROP:
                    del value[key]
                elif new is not value[key]:
                    value[key] = new
        return value

    def meta(self, value: Any, schema: dict, ptr: str, typ: str) -> None:
        """``_meta`` is open in every revision; only reserved keys a delta record removes go."""
        if not isinstance(value, dict):
            return
        if "$ref" in schema:
            _, schema = self.model.resolve(schema["$ref"])
        props = schema.get("properties") or {}
        if self.kind == "request" and ptr == "/params/_meta" and self.policy == "strict" and props \
                and self.fires("META-request-open-keys"):
            # META-request-open-keys: 2024-11-05/2025-03-26 request _meta declares only progressToken
            # (schema/2024-11-05/schema.ts:21); strict keeps only what it declares
            for key in [k for k in value if k not in props]:
                self.log(f"{ptr}/{escape(key)}", "drop", "META-request-open-keys", value[key], detached=True)
                del value[key]
            return
        for key in list(value):
            if key in props or not key.startswith(RESERVED_META_PREFIXES):
                continue
            rule = self.rules.for_key(key, self.to_rev, self.direction)
            if rule != ids.UNDEFINED:
                self.log(f"{ptr}/{escape(key)}", "drop", rule, value[key], detached=True)
                del value[key]

    def array(self, value: list, items: dict, ptr: str, typ: str) -> list:
        if self.split is not None and value is self.split.sentinel:
            return self.split_array(value, items, ptr, typ)
        fast = self.leaf.get(id(items), _MISSING)  # type: ignore[call-overload]
        if fast is _MISSING or (fast is not None and fast[0] is not items):
            fast = self.leaf[id(items)] = shapes.leaf_members(self, items)  # type: ignore[index]
        # a host profile that takes content types away sees every block (a leaf member may be one it takes)
        table = fast[1] if fast is not None and self.exclude is None else None
        short = fast[2] if fast is not None else None
        out = None
        for i, el in enumerate(value):
            if table is not None and el.__class__ is dict:
                try:
                    leaf = table.get(el.get("type"))
                except TypeError:  # an unhashable "type" value: the walk decides
                    leaf = None
                if leaf is not None and leaf.issuperset(el):
                    if out is not None:
                        out.append(el)
                    continue  # a union member with nothing to do (what node() would find, in one lookup)
            elif short is not None and el.__class__ is dict \
                    and (short.issuperset(el) if short.__class__ is frozenset else short.holds(self, el)):
                if out is not None:
                    out.append(el)
                continue  # e.g. a Tool with nothing to do: what named() would find
            new = self.node(el, items, f"{ptr}/{i}", typ)
            if new is DROP or new is not el:
                if out is None:
                    out = value[:i]
                if new is not DROP:
                    out.append(new)
            elif out is not None:
                out.append(el)
        if out is None:
            return value
        value[:] = out
        return value

    def split_array(self, value: list, items: dict, ptr: str, typ: str) -> list:
        """:meth:`array` for the elements of :attr:`split`, parsed one at a time: the same walk of
        each element, and what to deliver for it goes to ``split.out`` (its original bytes when
        nothing changed it, else its serialisation; nothing when dropped). Raises
        :class:`json_body.SplitFailed` (the caller parses the body whole and walks again)."""
        split = self.split
        assert split is not None
        split.walked = True
        out = split.out
        for i, (el, raw) in enumerate(split.elements()):
            before = len(self.changes)
            new = self.node(el, items, f"{ptr}/{i}", typ)
            if new is DROP:
                continue
            if new is el and all(c.action == "keep" for c in self.changes[before:]):
                out.append(raw)
                continue
            try:
                out.append(json_body.dumps_exact(new, raw))
            except json_body.Unwritable as e:  # the whole parse meets it again and says so
                raise json_body.SplitFailed(e.reason) from None
        return value

    def union(self, value: Any, members: list[dict], ptr: str, typ: str) -> Any:
        info = shapes.union_info(self.model, members)
        names, family = info.names, info.family
        pre = UNION_PRE.get(family)
        if pre is not None:
            value = pre(self, value, ptr, members, names)
            if value is DROP:
                return DROP
        if isinstance(value, list):
            if info.array_member is not None:
                return self.node(value, info.array_member, ptr, typ)
            miss = UNION_MISS.get(family)
            if miss is None:
                return value
            new = miss(self, value, ptr, members, names)
            return DROP if new is DROP else self.union(new, members, ptr, typ)
        if not isinstance(value, dict):
            return value
        objs, by_const = info.objects(self.model)
        if by_const is not None:
            hit = by_const.lookup(value.get("type"))
            if hit is not None and self.exclude is not None:
                taken = UNION_TAKEN.get(family)
                rewrite = self.exclude.get(value["type"]) if taken is not None and isinstance(value["type"], str) else None
                if rewrite is not None:  # the receiver's revision has it, its host profile takes it away
                    return self.union(taken(self, value, ptr, members, names, rewrite), members, ptr, typ)
            if hit is not None:
                if hit[2] is not None:  # a {"$ref": ...} member: what node() would do with it
                    return self.named(value, hit[2], ptr)
                return self.node(value, hit[0], ptr, hit[1] or typ)
            miss = UNION_MISS.get(family)
            if miss is None:
                return value
            new = miss(self, value, ptr, members, names)
            if new is DROP:
                return DROP
            return self.union(new, members, ptr, typ)
        best, best_score = None, -1
        for n, s in objs:
            score = shapes.fit(self.model, value, s, 3)
            if score > best_score:
                best, best_score = (n, s), score
        if best is None:
            return value
        n, s = best
        return self.node(value, {"$ref": self.model.ref_prefix + n} if n else s, ptr, n or typ)


_MISSING = object()
#: "$ref" -> definition name (the same in every revision's schema)
_REF_NAMES: dict[str, str] = {}
_SENTINEL_TEXT = json_body.SPLIT_SENTINEL.strip("\x00")
#: revision -> definition name -> :func:`shapes.shortcut` (and id of array items -> :func:`shapes.leaf_members`)
_LEAF: dict[str, dict] = {}



def split_path(method: str | None, to_rev: str) -> tuple[str, str] | None:
    """``("result", key)`` when a large result of ``method`` may be read an element at a time:
    its target definition has exactly one array property (``key``: ``tools`` of ListToolsResult,
    ``resources``, ``resourceTemplates``, ``prompts``...) and no type hook that reads the array (a
    hook may look at the whole array, e.g. CallToolResult's structuredContent rule reads ``content``;
    hooks marked ``split_safe`` do not). The message hooks
    do not look into results' arrays. None otherwise."""
    if not method or not revisions.is_known(to_rev):
        return None
    model = revisions.model(to_rev)
    name = model.result_for(method)
    if name == "Result" or not all(h.split_safe for h in TYPE_HOOKS.get(name, ())):
        return None
    node = model.defs.get(name) or {}
    arrays = [k for k, v in (node.get("properties") or {}).items() if isinstance(v, dict) and v.get("type") == "array"]
    return ("result", arrays[0]) if len(arrays) == 1 and "anyOf" not in node and "allOf" not in node else None


# -- message level --------------------------------------------------------------------------
def classify(message: Any) -> Kind | None:
    """The JSON-RPC kind of a parsed message, or None when it is not a JSON-RPC 2.0 object."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    if "method" in message:
        return "request" if "id" in message else "notification"
    if "result" in message:
        return "result"
    if "error" in message:
        return "error"
    return None


def downgrade(message: dict, kind: Kind, method: str | None, from_rev: str, to_rev: str,
              direction: Direction, policy: Policy = "strict", options: dict | None = None,
              request_id: Any = None, split: json_body.ArraySplit | None = None, profile: Any = None,
              summaries: int | None = None, stamp: tuple | None = None) -> Outcome:
    """Rewrite ``message`` (mutated in place) so a ``to_rev`` receiver can parse it.

    ``method``: for requests/notifications their own method; for results and errors the method of
    the request they answer (None when unknown: the result is then walked as a bare ``Result``).
    ``request_id``: the id of the request the HTTP exchange carried, used to fill a missing error
    id (RPC-error-id-optional). ``split``: ``message`` is the skeleton of a large body whose array
    is read an element at a time (:func:`split_path`); may raise :class:`json_body.SplitFailed`.
    ``profile``: the receiver's host profile (:class:`mcpx_core.profiles.Profile`), whose content
    rules apply to what the server sends (``s2c``); its records name it.
    ``summaries``: only the first ``summaries`` records get before/after summaries (the rest have
    none: nobody reads them); None: all.
    ``stamp``: the context of every record, (flow, session, direction, jsonrpc_id, method, from_rev,
    to_rev), so that records are built once as they are delivered (:attr:`Walk.stamp`).
    Raises nothing else for data problems: unknown shapes are left alone.
    """
    walk = Walk(from_rev, to_rev, direction, policy, options)
    walk.kind = kind
    walk.split = split
    walk.summaries = summaries if split is None else None
    walk.make = maker(*stamp) if stamp is not None else None
    walk.method = method
    if profile is not None and direction == "s2c":
        walk.profile = profile
        walk.exclude = profile.content_for(method)
        if walk.exclude is not None:  # the compiled walkers know no profile: the generic walk takes content away
            walk.plans = None
    model = walk.model
    try:
        for hook in MESSAGE_HOOKS:
            out = hook(walk, message, kind, method, request_id)
            if out is not None:
                out.changes[:0] = walk.changes
                return out
        if kind in ("request", "notification"):
            table = model.requests if kind == "request" else model.notifications
            name = table.get(method or "")
            if name is None:
                return Outcome(None, walk.changes)  # message hooks decide what an undefined method becomes
            params = message.get("params")
            pschema = shapes.params_schema(model, name, "Request" if kind == "request" else "Notification")
            if isinstance(params, dict) and pschema:
                for hook in TYPE_HOOKS.get(name + ".params", ()):
                    params = hook.fn(walk, params, "/params", pschema)
                new = walk.node(params, pschema, "/params", name)
                message["params"] = new
        elif kind == "result":
            result = message.get("result")
            if isinstance(result, dict):
                if method:
                    message["result"] = walk.named(result, model.result_def(method, result), "/result")
                else:
                    # the request it answers is unknown (e.g. a result on a stream mcpx did not see the
                    # request of): typed by the best-fitting member of the ServerResult/ClientResult union
                    union = model.defs.get("ServerResult" if direction == "s2c" else "ClientResult")
                    message["result"] = walk.node(result, union, "/result", "Result") if union else result
    except Reject as r:
        walk.log(r.pointer, "drop-message", r.rule, detail=r.message)
        return Outcome(None, walk.changes, reply={"code": r.code, "message": r.message})
    for hook in AFTER_HOOKS:
        out = hook(walk, message, kind, method, request_id)
        if out is not None:
            out.changes[:0] = walk.changes
            return out
    return Outcome(message, walk.changes)


def downgrade_params(params: dict, method: str, from_rev: str, to_rev: str, direction: Direction,
                     policy: Policy = "strict", options: dict | None = None) -> tuple[dict, list[Change]]:
    """The ``params`` of a ``method`` request walked as ``to_rev`` defines them, without the
    message-level rules (for a request carried inside another message: the embedded requests of a
    2026-07-28 InputRequiredResult, schema/2026-07-28/schema.ts:2185). Returns (params, records);
    unknown methods are returned as they are."""
    walk = Walk(from_rev, to_rev, direction, policy, options)
    walk.kind = "request"
    name = walk.model.requests.get(method)
    pschema = shapes.params_schema(walk.model, name, "Request") if name else None
    if not pschema or not isinstance(params, dict):
        return params, []
    try:
        for hook in TYPE_HOOKS.get(name + ".params", ()):
            params = hook.fn(walk, params, "/params", pschema)
        out = walk.node(params, pschema, "/params", name)
    except Reject as r:
        walk.log(r.pointer, "drop-message", r.rule, detail=r.message)
        raise
    return out, walk.changes

