"""Hypothesis strategies that draw instances of a revision's schema.json definitions.

A small generator of our own (hypothesis-jsonschema 0.23 does not run on current hypothesis):
it follows ``$ref``, ``anyOf``, ``allOf``, ``const``, ``enum``, object ``properties``/``required``,
``items`` and scalar ``type``s, with a depth bound for recursive definitions. Optional properties
are drawn or left out independently; open objects (``_meta``, ``additionalProperties: {}``) get a
few extra keys, including reserved ``io.modelcontextprotocol/*`` ones, so rules about them run.
"""
from __future__ import annotations

import functools

from hypothesis import strategies as st

from mcpx_core import revisions

_json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=8))
JSON = st.recursive(_json_scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                          st.dictionaries(st.text(max_size=6), inner, max_size=3)), max_leaves=6)
META = st.dictionaries(st.sampled_from(["trace", "io.modelcontextprotocol/related-task", "io.modelcontextprotocol/serverInfo", "x"]),
                       st.one_of(st.text(max_size=5), st.fixed_dictionaries({"taskId": st.text(max_size=4)})), max_size=2)


def _string(node: dict):
    fmt = node.get("format")
    if fmt == "uri":
        return st.sampled_from(["https://example.com/a", "file:///tmp/x.txt", "demo://resource/1"])
    if fmt == "byte":
        return st.sampled_from(["", "AAEC", "UklGRigAAABXQVZF"])
    if fmt == "date-time":
        return st.just("2026-11-29T10:00:00Z")
    return st.text(max_size=10)


@functools.cache
def strategy(revision: str, name: str, depth: int = 4):
    """Instances of definition ``name`` of ``revision``."""
    m = revisions.model(revision)
    return _node(revision, m.defs[name], depth)


def _node(rev: str, node: dict, depth: int, key: str = ""):
    m = revisions.model(rev)
    if "$ref" in node:
        name = m.ref_name(node["$ref"])
        if depth <= 0:
            return _minimal(rev, m.defs[name])
        return st.deferred(lambda: strategy(rev, name, depth - 1))
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if "anyOf" in node:
        return st.one_of([_node(rev, x, depth, key) for x in node["anyOf"]])
    if "allOf" in node:
        props, req = {}, []
        for part in node["allOf"]:
            if "$ref" in part:
                part = m.defs[m.ref_name(part["$ref"])]
            props.update(part.get("properties") or {})
            req += part.get("required", [])
        return _object(rev, {"properties": props, "required": req}, depth, key)
    t = node.get("type")
    if isinstance(t, list):
        return st.one_of([_node(rev, {**node, "type": x}, depth, key) for x in t])
    if t == "object" or "properties" in node:
        return _object(rev, node, depth, key)
    if t == "array":
        items = node.get("items") or {}
        return st.lists(_node(rev, items, depth - 1, key) if items else JSON, max_size=3 if depth > 0 else 1)
    if t == "string":
        return _string(node)
    if t == "integer":
        return st.integers(node.get("minimum", 0), 1000)
    if t == "number":
        lo, hi = node.get("minimum", -100), node.get("maximum", 100)
        return st.one_of(st.integers(int(lo), int(hi)), st.floats(lo, hi, allow_nan=False, allow_infinity=False))
    if t == "boolean":
        return st.booleans()
    if t == "null":
        return st.none()
    return JSON


def _object(rev: str, node: dict, depth: int, key: str):
    props = node.get("properties") or {}
    required = set(node.get("required", ()))
    if key == "_meta" or ("properties" not in node and node.get("additionalProperties") in ({}, True, None)):
        return META if key == "_meta" else st.dictionaries(st.text(max_size=6), JSON, max_size=2)
    req = {k: _node(rev, v, depth, k) for k, v in props.items() if k in required}
    opt = {k: _node(rev, v, depth, k) for k, v in props.items() if k not in required}
    base = st.fixed_dictionaries(req, optional=opt)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        more = st.dictionaries(st.text(min_size=1, max_size=5).filter(lambda k: k not in props), _node(rev, extra, depth - 1), max_size=2)
        return st.tuples(base, more).map(lambda ab: {**ab[1], **ab[0]})
    return base


def _minimal(rev: str, node: dict):
    """The smallest instance: required properties only, first union member."""
    m = revisions.model(rev)
    if "$ref" in node:
        return _minimal(rev, m.defs[m.ref_name(node["$ref"])])
    if "anyOf" in node:
        return _minimal(rev, node["anyOf"][0])
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.just(node["enum"][0])
    t = node.get("type")
    if t == "object" or "properties" in node:
        props = node.get("properties") or {}
        return st.fixed_dictionaries({k: _minimal(rev, props[k]) for k in node.get("required", ()) if k in props})
    return {"array": st.just([]), "string": st.just("x"), "integer": st.just(0), "number": st.just(0),
            "boolean": st.just(False)}.get(t if isinstance(t, str) else "", st.just(None))
