"""Elicitation rules: ``elicitation/create`` requested schemas for older receivers.

The target's PrimitiveSchemaDefinition union decides what a property schema may be
(schema/2025-06-18/schema.ts:1485: string, number, boolean, enum with enumNames).

- ``ELIC-enum-titled-single`` (schema/2025-11-25/schema.ts:2311): ``{type: string, oneOf: [{const, title}]}``
  -> ``{type: string, enum: [consts], enumNames: [titles]}`` (title/description kept, default dropped).
- ``ELIC-enum-multi`` (schema/2025-11-25/schema.ts:2352, 2391): ``type: "array"`` properties cannot be
  expressed: an optional one is removed from ``properties``; a required one makes the whole request
  inexpressible (:class:`~mcpx_core.rules.api.Reject` with -32602 toward the server).
- Defaults, ``mode``, ``$schema`` and other fields the target lacks are dropped by the generic walk
  (ELIC-default-string-number, ELIC-mode-field, ELIC-requestedSchema-$schema).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .api import Reject, TypeHook, escape

if TYPE_CHECKING:
    from ..downgrade import Walk


def _members(walk: Walk) -> list[dict]:
    node = walk.model.defs.get("PrimitiveSchemaDefinition") or {}
    out = []
    for m in node.get("anyOf", []):
        _, d = walk.model.resolve(m["$ref"])
        out.extend([walk.model.resolve(x["$ref"])[1] for x in d["anyOf"]] if "anyOf" in d else [d])
    return out


def _allows(members: list[dict], typ: str, key: str) -> bool:
    for m in members:
        props = m.get("properties") or {}
        t = props.get("type") or {}
        if (t.get("const") == typ or typ in t.get("enum", ())) and key in props:
            return True
    return False


def requested_schema(walk: Walk, params: dict, ptr: str, target: dict) -> dict:
    if params.get("mode") == "url" or "requestedSchema" not in params:
        if "url" not in (target.get("properties") or {}) and "ElicitRequestURLParams" not in walk.model.defs:
            # ELIC-url-mode (schema/2025-11-25/schema.ts:2189): never turned into a form
            raise Reject("ELIC-url-mode", f"{ptr}/mode", -32602,
                         f"mcpx: URL-mode elicitation cannot be expressed for an MCP {walk.to_rev} client")
        return params
    schema = params.get("requestedSchema")
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return params
    members = _members(walk)
    if not members:
        return params
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    props = schema["properties"]
    for name in list(props):
        prop = props[name]
        pptr = f"{ptr}/requestedSchema/properties/{escape(name)}"
        if not isinstance(prop, dict):
            continue
        if prop.get("type") == "array" and not any(((m.get("properties") or {}).get("type") or {}).get("const") == "array" for m in members):
            if name in required:
                raise Reject("ELIC-enum-multi", pptr, -32602,
                             f"mcpx: required multi-select field {name!r} cannot be expressed for a {walk.to_rev} client")
            walk.log(pptr, "drop", "ELIC-enum-multi", prop)
            del props[name]
            continue
        if isinstance(prop.get("oneOf"), list) and not _allows(members, "string", "oneOf"):
            options = [o for o in prop["oneOf"] if isinstance(o, dict) and "const" in o]
            new = {"type": "string"}
            for k in ("title", "description"):
                if k in prop:
                    new[k] = prop[k]
            new["enum"] = [o["const"] for o in options]
            if _allows(members, "string", "enumNames"):
                new["enumNames"] = [str(o.get("title", o["const"])) for o in options]
            walk.log(pptr, "rewrite", "ELIC-enum-titled-single", prop, new)
            props[name] = new
    return params


def array_answers(walk: Walk, value: dict, ptr: str, target: dict) -> dict:
    """ELIC-result-array-values: a multi-select answer (string[]) toward a server whose ElicitResult
    content is primitives only (schema/2025-06-18/schema.ts:1556) is joined with "," and logged."""
    content = value.get("content")
    allowed = ((target.get("properties") or {}).get("content") or {}).get("additionalProperties") or {}
    types = allowed.get("type")
    if not isinstance(content, dict) or not types or "array" in (types if isinstance(types, list) else [types]) \
            or "anyOf" in allowed:
        return value
    for k, v in list(content.items()):
        if isinstance(v, list):
            joined = ",".join(str(x) for x in v)
            walk.log(f"{ptr}/content/{escape(k)}", "rewrite", "ELIC-result-array-values", v, joined)
            content[k] = joined
    return value


RULES = [TypeHook(("ElicitRequest.params",), requested_schema), TypeHook(("ElicitResult",), array_answers)]
