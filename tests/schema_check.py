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
    m = revisions.model(revision)
    p = m.ref_prefix
    if "method" in message:
        table = m.requests if "id" in message else m.notifications
        name = table.get(message["method"])
        if name is None:
            return [f"method {message['method']!r} not defined in {revision}"]
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
    elif "error" in message:
        name = "JSONRPCError" if "JSONRPCError" in m.defs else "JSONRPCErrorResponse"
        root = {"$ref": p + name}
        body = message
    else:
        return ["not a JSON-RPC message"]
    v = _validator(revision, root)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in v.iter_errors(body)]
