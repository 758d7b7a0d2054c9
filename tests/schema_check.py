"""Validate delivered messages against a revision's schema.json with unknown properties forbidden.

Every object definition that lists ``properties`` and says nothing of ``additionalProperties`` is
closed (``additionalProperties: false``), which is what a strict client (zod/pydantic) enforces.
Left open: objects that are open in schema.ts (``additionalProperties`` present), the members of
``allOf`` (closing them would reject each other's properties), and Tool.inputSchema/outputSchema
(JSON Schemas, open by nature: TOOL-inputSchema-open).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import jsonschema

from mcpx_core import revisions


def _close(node: Any, in_allof: bool = False, path: tuple = ()) -> None:
    if isinstance(node, dict):
        t = node.get("type")
        if isinstance(t, list) and "integer" in t:
            # SCHEMA-number-integer: schema.ts says number where the generated schema.json says integer
            # (ElicitResult.content, 2026 JSONValue; schema/2025-06-18/schema.ts:1556): validate as number
            node["type"] = ["number" if x == "integer" else x for x in t]
        if ("properties" in node and "additionalProperties" not in node and not in_allof
                and path[-1:] not in (("inputSchema",), ("outputSchema",), ("_meta",)) and not str(path[-1:]).endswith("MetaObject',)")):
            node["additionalProperties"] = False
        for k, v in node.items():
            if k == "properties" and isinstance(v, dict):
                for pk, pv in v.items():
                    if pk in ("inputSchema", "outputSchema"):
                        continue
                    _close(pv, False, path + (pk,))
            elif k == "allOf":
                for part in v:
                    _close(part, True, path)
            elif k not in ("const", "enum", "required", "description"):
                _close(v, False, path)
    elif isinstance(node, list):
        for x in node:
            _close(x, in_allof, path)


def _merge_allof(node: Any, defs: dict) -> None:
    """Replace ``allOf`` of object schemas by one closed object (closing the parts would make
    them reject each other's properties; leaving them open would let anything through)."""
    if isinstance(node, dict):
        for v in list(node.values()):
            _merge_allof(v, defs)
        if "allOf" in node:
            props, req, open_ = {}, [], False
            for part in node["allOf"]:
                if "$ref" in part:
                    part = defs[part["$ref"].rsplit("/", 1)[-1]]
                props.update(part.get("properties") or {})
                req += part.get("required", [])
                open_ = open_ or part.get("additionalProperties") not in (None, False)
            del node["allOf"]
            node.update({"type": "object", "properties": props, "required": req})
            if open_:
                node["additionalProperties"] = {}
    elif isinstance(node, list):
        for x in node:
            _merge_allof(x, defs)


@functools.cache
def closed_schema(revision: str) -> dict:
    schema = copy.deepcopy(revisions.model(revision).schema)
    defs = schema.get("definitions") or schema.get("$defs")
    _merge_allof(defs, copy.deepcopy(defs))
    for name, d in defs.items():
        # params that redeclare the base type lose its _meta in schema.json; the prose keeps it
        # (the same reading as mcpx_core.downgrade._params_schema)
        base = "Request" if name.endswith("Request") else "Notification" if name.endswith("Notification") else None
        params = (d.get("properties") or {}).get("params")
        if base and params and "properties" in params and "_meta" not in params["properties"]:
            meta = ((defs.get(base, {}).get("properties") or {}).get("params") or {}).get("properties", {}).get("_meta")
            if meta is not None:
                params["properties"]["_meta"] = copy.deepcopy(meta)
        _close(d, False, (name,))
    return schema


def _validator(revision: str, root: dict):
    schema = dict(closed_schema(revision))
    schema.update(root)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def message_errors(revision: str, message: dict, method: str | None = None) -> list[str]:
    """Schema errors of a JSON-RPC message for ``revision`` (empty list: valid).

    ``method``: for results, the method of the request answered (selects the result definition).
    """
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in _errors(revision, message, method)[1]]


def declared_member(revision: str, message: dict, method: str | None, pointer: str) -> bool:
    """Whether the value at JSON Pointer ``pointer`` fails as an optional property an object schema
    declares (``properties``, not ``required``), not as a map value (``additionalProperties``), an
    array item or a member of another union member: some error, unions' sub-errors included, is at
    that path and comes from ``properties/<its key>`` of an object schema that does not require it."""
    prefix, errors = _errors(revision, message, method)
    root = _root(revision, message, method)
    toks = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    if toks[:len(prefix)] != prefix:
        return False
    path = toks[len(prefix):]
    stack = list(errors)
    while stack:
        e = stack.pop()
        stack.extend(e.context or ())
        if [str(x) for x in e.absolute_path] == path:
            sp = list(e.absolute_schema_path)
            last = max((i for i, x in enumerate(sp) if x == "properties"), default=-1)
            if last >= 0 and last + 1 < len(sp) and sp[last + 1] == path[-1]:
                parent = _follow(revision, root, sp[:last])
                if isinstance(parent, dict) and path[-1] not in parent.get("required", ()):
                    return True
    return False


def _root(revision: str, message: dict, method: str | None) -> dict:
    """The root schema :func:`_errors` validates ``message`` (or its result) against."""
    m = revisions.model(revision)
    if "method" in message:
        name = (m.requests if "id" in message else m.notifications).get(message["method"])
    elif "result" in message:
        name = m.result_for(method) if method else "Result"
    else:
        name = "JSONRPCError" if "JSONRPCError" in m.defs else "JSONRPCErrorResponse"
    return {"$ref": m.ref_prefix + name}


def _follow(revision: str, node: dict, path: list) -> object:
    """The schema node at ``path`` (an error's ``absolute_schema_path``) from ``node``, through ``$ref``s."""
    defs = closed_schema(revision).get("definitions") or closed_schema(revision).get("$defs")

    def deref(n):
        while isinstance(n, dict) and "$ref" in n:
            n = defs[n["$ref"].rsplit("/", 1)[-1]]
        return n

    node = deref(node)
    for tok in path:  # jsonschema's paths go through "$ref"s without naming them
        if tok == "$ref":
            continue
        node = deref(node[tok])
    return node


def _errors(revision: str, message: dict, method: str | None) -> tuple[list[str], list]:
    """(the pointer tokens of what is validated, the validation errors)."""
    m = revisions.model(revision)
    p = m.ref_prefix
    if "method" in message:
        table = m.requests if "id" in message else m.notifications
        name = table.get(message["method"])
        if name is None:
            return [], [_Error(f"method {message['method']!r} not defined in {revision}")]
        root = {"$ref": p + name}
        declared = m.defs[name].get("properties") or {}
        body = {k: v for k, v in message.items() if k in declared or k not in ("jsonrpc", "id")}
    elif "result" in message:
        name = m.result_for(method) if method else "Result"
        if isinstance(message["result"], dict) and message["result"].get("resultType") == "input_required" \
                and "InputRequiredResult" in m.defs:
            # 2026-07-28: tools/call, prompts/get and resources/read may be answered by an InputRequiredResult
            # (schema/2026-07-28/schema.ts:584, basic/patterns/mrtr.mdx:186)
            name = "InputRequiredResult"
        root = {"$ref": p + name}
        body = message["result"]
        v = _validator(revision, root)
        return ["result"], list(v.iter_errors(body))
    elif "error" in message:
        name = "JSONRPCError" if "JSONRPCError" in m.defs else "JSONRPCErrorResponse"
        root = {"$ref": p + name}
        body = message
    else:
        return [], [_Error("not a JSON-RPC message")]
    v = _validator(revision, root)
    return [], list(v.iter_errors(body))


class _Error:
    def __init__(self, message: str):
        self.message, self.absolute_path, self.absolute_schema_path, self.context = message, (), (), ()
