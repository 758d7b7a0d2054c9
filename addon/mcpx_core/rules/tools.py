"""Tool rules: definitions in tools/list results and tools/call results.

- ``SC-structuredContent`` (schema/2025-06-18/schema.ts:828; docs/specification/2025-06-18/server/tools.mdx:301):
  a receiver whose CallToolResult has no ``structuredContent`` gets its JSON appended to ``content``
  as a TextContent only when the text half lacks values of it (the dual-result audit's comparison,
  :func:`mcpx_core.audit.text_lacks`; not when a text block is that JSON or already says every
  value: fastmcp's ``"hi"`` with ``{"result": "hi"}``), and the field is removed (strict) or kept
  (lenient); the records say which.
- ``SC-structuredContent-any`` (schema/2026-07-28/schema.ts:1821): a non-object value for a
  receiver whose structuredContent must be an object: same text fallback, field removed.
  Not for ``null`` or ``[]`` from a sender whose own revision requires an object there
  (schema/2025-06-18/schema.ts:828): those are wire-format values with one meaning each (absent,
  ``{}``) that the repair stage gives them (mcpx_core/repair.py); ``[]`` reaches a receiver without
  the field as the text block of ``{}``.
- ``TOOL-title`` (schema/2025-06-18/schema.ts:930): for a receiver without ``Tool.title`` whose
  ToolAnnotations have ``title``, the title moves to ``annotations.title`` when that is absent
  (``annotations`` sent as ``[]`` or ``null`` is read as ``{}`` / absent first, with the repair
  stage's records, REPAIR-empty-array-object / REPAIR-null-optional).
- ``TOOL-outputSchema-any`` (schema/2026-07-28/schema.ts:2005): an outputSchema whose root is not
  ``type: "object"`` is removed for receivers that pin that literal.
- ``TOOL-inputSchema-$schema`` / ``TOOL-inputSchema-open``: inputSchema and outputSchema are JSON
  Schemas; their keywords are kept (the walker does not enter them), ``$schema`` is logged as kept.
- ``COMP-values-max`` (schema/2026-07-28/schema.ts:2651): more than 100 completion values are
  truncated to 100 with ``hasMore: true``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import orjson


from .. import revisions
from ..framing import json_body
from .api import OpenField, TypeHook

if TYPE_CHECKING:
    from ..downgrade import Walk


def _starts(value) -> str:
    """The characters a JSON text of ``value`` can begin with (no leading whitespace)."""
    if isinstance(value, dict):
        return "{"
    if isinstance(value, list):
        return "["
    if isinstance(value, str):
        return '"'
    if isinstance(value, bool) or value is None:
        return {True: "t", False: "f", None: "n"}[value]
    return "-0123456789"


def _carries_json(content: list, value) -> bool:
    """Whether a text block of ``content`` is the JSON of ``value`` (no leading whitespace). Runs
    over every block of a result with structuredContent: a block's first character is tested
    before anything is parsed."""
    starts = _starts(value)
    for block in content:
        if block.__class__ is dict or isinstance(block, dict):
            text = block.get("text")
            if text.__class__ is str and text[:1] in starts and text and block.get("type") == "text":
                try:
                    if orjson.loads(text) == value:
                        return True
                except orjson.JSONDecodeError:
                    continue
    return False


def _text_lacks(content: list, sc) -> str | None:
    """None when the text half of ``content`` lacks values of ``sc`` (or has no text, or the audit's
    bounds cut the comparison): its JSON is added as a text block. Else the detail that says the
    text carries them all (:func:`mcpx_core.audit.text_lacks`, the dual-result audit's comparison):
    the model of a host that shows the text reads what the server meant, once."""
    from .. import audit
    both = audit.halves({"content": content, "structuredContent": sc})
    if both is None:
        return None
    lacks, partial = audit.text_lacks(*both)
    if lacks or partial:
        return None
    return "the text half carries every value of structuredContent: no text block of its JSON added"


def _object_in(revision: str) -> bool:
    """Whether ``revision``'s CallToolResult.structuredContent must be an object."""
    node = ((revisions.model(revision).defs.get("CallToolResult") or {}).get("properties") or {}).get("structuredContent")
    return isinstance(node, dict) and node.get("type") == "object"


def structured_content(walk: Walk, value: dict, ptr: str, target: dict) -> dict:
    if "structuredContent" not in value:
        return value
    sc = sent = value["structuredContent"]
    props = target.get("properties") or {}
    if (sc is None or sc == []) and _object_in(walk.from_rev):
        if sc is None or "structuredContent" in props:
            return value  # absent / {}: the repair stage's (the walk drops a field the receiver lacks)
        sc = {}
    if "structuredContent" in props:
        if not (props["structuredContent"].get("type") == "object" and not isinstance(sc, dict)):
            return value
        rule = "SC-structuredContent-any"
    else:
        rule = "SC-structuredContent"
    content = value.get("content")
    if not isinstance(content, list):
        content = value["content"] = []
    carried = None  # the drop record's detail when the text half already carries every value
    if not _carries_json(content, sc):
        lacks = _text_lacks(content, sc)
        if lacks is None:
            if json_body.holds_inexact(sc):  # its text would show another number: the message passes through
                raise ValueError(f"{ptr}/structuredContent {json_body.INEXACT}")
            block = {"type": "text", "text": orjson.dumps(sc).decode()}
            content.append(block)
            walk.log(f"{ptr}/content/{len(content) - 1}", "rewrite", rule, None, f"text block with the JSON of {ptr}/structuredContent", raw=True)
        else:
            carried = lacks
    if walk.policy == "strict" or rule == "SC-structuredContent-any":
        walk.log(f"{ptr}/structuredContent", "drop", rule, sent, detail=carried)
        del value["structuredContent"]
    elif carried is not None:
        walk.log(f"{ptr}/content", "keep", rule, detail=carried)
    # (lenient: kept; the walk of the result logs its keep record, as for any field the receiver lacks)
    return value


class _ToolTarget:
    """What :func:`tool_definition` reads of the receiver's Tool schema, read once per schema (it
    runs once per tool of every list: issue 16)."""

    __slots__ = ("props", "title_moves", "pinned")

    def __init__(self, walk: Walk, target: dict):
        props = self.props = target.get("properties") or {}
        self.title_moves = False  # a title the target lacks moves into annotations.title
        if "title" not in props and "annotations" in props:
            ann = walk.model.resolve(props["annotations"]["$ref"])[1] if "$ref" in props["annotations"] else props["annotations"]
            self.title_moves = "title" in (ann.get("properties") or {})
        osch = props.get("outputSchema")
        self.pinned = ((osch.get("properties") or {}).get("type") or {}).get("const") if osch is not None else None


_TOOL_TARGETS: dict[int, tuple[dict, _ToolTarget]] = {}


def _tool_target(walk: Walk, target: dict) -> _ToolTarget:
    hit = _TOOL_TARGETS.get(id(target))
    if hit is None or hit[0] is not target:  # (the schema is held, so its id stays its own)
        hit = _TOOL_TARGETS[id(target)] = (target, _ToolTarget(walk, target))
    return hit[1]


def tool_definition(walk: Walk, value: dict, ptr: str, target: dict) -> dict:
    tt = _tool_target(walk, target)
    props = tt.props
    if tt.title_moves and value.get("title") is not None:  # (a null title: absent)
        annotations = value.get("annotations")
        if annotations is None or annotations == [] or isinstance(annotations, dict):
            if annotations == [] or (annotations is None and "annotations" in value):
                # wire-format values with one meaning (mcpx_core/repair.py): [] is {}, null is absent;
                # read so here, where the title moves into them
                if annotations is None:
                    walk.log(f"{ptr}/annotations", "repair", "REPAIR-null-optional", "null", raw=True)
                    del value["annotations"]
                else:
                    walk.log(f"{ptr}/annotations", "repair", "REPAIR-empty-array-object", "[]", "{}", raw=True)
                    value["annotations"] = {}
            title = value.pop("title")
            annotations = value.setdefault("annotations", {})
            if "title" in annotations and annotations["title"] is None:  # null: absent (mcpx_core/repair.py)
                walk.log(f"{ptr}/annotations/title", "repair", "REPAIR-null-optional", "null", raw=True)
                del annotations["title"]
            if "title" in annotations:
                walk.log(f"{ptr}/title", "drop", "TOOL-title", title, detail="annotations.title already set")
            else:
                annotations["title"] = title
                walk.log(f"{ptr}/title", "rewrite", "TOOL-title", title, f"{ptr}/annotations/title", raw=False)
    out = value.get("outputSchema")
    if out is not None:
        pinned = tt.pinned
        if pinned is not None and (not isinstance(out, dict) or out.get("type") != pinned):
            walk.log(f"{ptr}/outputSchema", "drop", "TOOL-outputSchema-any", out)
            del value["outputSchema"]
    for key in ("inputSchema", "outputSchema"):
        sch = value.get(key)
        sub = props.get(key)
        if not isinstance(sch, dict) or walk.policy != "strict" or sub is None:
            continue  # (a schema the receiver does not define is dropped whole by the walk)
        if "$schema" in sch and "$schema" not in (sub.get("properties") or {}):
            walk.log(f"{ptr}/{key}/$schema", "keep", "TOOL-inputSchema-$schema", sch["$schema"])
        if key == "inputSchema" and walk.memo.get("composition", True) and walk.fires("TOOL-inputSchema-open"):
            used = _composition_used(sch)
            if used:
                walk.log(f"{ptr}/inputSchema", "keep", "TOOL-inputSchema-open", None, None, detail="JSON Schema keywords kept: " + ", ".join(used))
    return value


def tools_composition(walk: Walk, value: dict, ptr: str, target: dict) -> dict:
    """TOOL-inputSchema-open for the whole list at once: one serialisation of every tool's
    inputSchema and a search for the keys of :data:`COMPOSITION`. orjson writes every key as
    ``"key":``, so without those bytes no schema uses one, and :func:`tool_definition` skips its
    per-tool check (``walk.memo["composition"]``); with them (or a value that only looks like one),
    each tool is checked. Not for the stand-in of a list read an element at a time."""
    tools = value.get("tools")
    if walk.policy != "strict" or not isinstance(tools, list) or (walk.split is not None and tools is walk.split.sentinel) \
            or not walk.fires("TOOL-inputSchema-open"):
        return value
    try:
        data = orjson.dumps([t.get("inputSchema") for t in tools if isinstance(t, dict)])
    except orjson.JSONEncodeError:
        return value
    walk.memo["composition"] = any(n in data for n in _COMPOSITION_NEEDLES)
    return value



def _tool_quiet(walk: Walk, value: dict, target: dict) -> bool:
    """True only when :func:`tool_definition` would change and log nothing for ``value``: no title
    the target lacks, no outputSchema, and an inputSchema without ``$schema`` (where the target does
    not declare it) and without composition keys (``walk.memo``, set for the whole list)."""
    props = target.get("properties") or {}
    if ("title" in value and "title" not in props) or "outputSchema" in value:
        return False
    sch = value.get("inputSchema")
    sub = props.get("inputSchema")
    if walk.policy != "strict" or sub is None or not isinstance(sch, dict):
        return True
    if "$schema" in sch and "$schema" not in (sub.get("properties") or {}):
        return False
    return walk.memo.get("composition", True) is False or not walk.fires("TOOL-inputSchema-open")



#: JSON Schema keywords a legacy client's TS types do not list (TOOL-inputSchema-open: log when they reach one)
COMPOSITION = {"$ref", "$defs", "definitions", "oneOf", "anyOf", "allOf", "not", "if", "then", "else", "dependentSchemas"}


def _keywords(schema, depth: int = 0) -> set[str]:
    found: set[str] = set()
    if depth > 32:
        return found
    if isinstance(schema, dict):
        found |= set(schema)
        for v in schema.values():
            found |= _keywords(v, depth + 1)
    elif isinstance(schema, list):
        for v in schema:
            found |= _keywords(v, depth + 1)
    return found


_COMPOSITION_NEEDLES = tuple(sorted({b'Of":' if k.endswith("Of") else b'"' + k.encode() + b'":' for k in COMPOSITION}))
_COMPOSITION_KEY = re.compile(b'"(?:' + b"|".join(re.escape(k).encode() for k in sorted(COMPOSITION)) + b')":')


def _composition_used(schema: dict) -> list[str]:
    """``sorted(COMPOSITION & _keywords(schema))``. Most input schemas use none of these keywords,
    which one serialisation proves: every key ``_keywords`` collects appears as ``"key":`` in it."""
    try:
        if _COMPOSITION_KEY.search(orjson.dumps(schema)) is None:
            return []
    except orjson.JSONEncodeError:  # nesting orjson does not serialise: walk it
        pass
    return sorted(COMPOSITION & _keywords(schema))




def completion_values(walk: Walk, value: dict, ptr: str, target: dict) -> dict:
    comp = value.get("completion")
    if isinstance(comp, dict) and isinstance(comp.get("values"), list) and len(comp["values"]) > 100:
        walk.log(f"{ptr}/completion/values", "rewrite", "COMP-values-max", f"{len(comp['values'])} values", "100 values, hasMore: true", raw=True)
        del comp["values"][100:]
        comp["hasMore"] = True
    return value


RULES = [
    TypeHook(("CallToolResult",), structured_content),
    TypeHook(("Tool",), tool_definition, quiet=_tool_quiet),  # quiet: used by downgrade._quiet_plan
    TypeHook(("ListToolsResult",), tools_composition, split_safe=True),  # it reads no element of a split list
    TypeHook(("CompleteResult",), completion_values),
    OpenField("Tool", "inputSchema"),
    OpenField("Tool", "outputSchema"),
]
