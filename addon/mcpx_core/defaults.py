"""Required members whose absence the specification gives a meaning to (2026-07-28 results).

One table for the two places that add them: the repair stage (:mod:`mcpx_core.repair`,
``REPAIR-required-default``: a 2026-07-28 sender that left one out) and the upgrade rules
(:mod:`mcpx_core.rules.upgrade`, ``RES-*`` records, action ``synthesize``: a legacy server's
result for a 2026-07-28 client). Knows nothing of messages: :func:`defaults_for` answers from the
receiver's ``schema.json`` which of them a definition requires.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import revisions


@dataclass(frozen=True)
class Default:
    """What the specification says a missing required ``member`` means: ``value``; ``rule``: the
    revision-delta record of its upgrade direction; ``source``: where the specification says so."""

    member: str
    value: Any
    rule: str
    source: str


#: in the order they are added
DEFAULTS: tuple[Default, ...] = (
    # Result.resultType, required (schema/2026-07-28/schema.ts:234, open string :216): "when a client
    # receives a result ... which does not include resultType, the client MUST treat the absent field
    # as 'complete'" (docs/specification/2026-07-28/basic/index.mdx:85; the schema's own description)
    Default("resultType", "complete", "RES-resultType",
            "schema/2026-07-28/schema.ts:234; docs/specification/2026-07-28/basic/index.mdx:85"),
    # CacheableResult.ttlMs, required integer >= 0 (schema/2026-07-28/schema.ts:1094): "If ttlMs is
    # absent, clients SHOULD assume a default of 0 (immediately stale)"
    # (docs/specification/2026-07-28/server/utilities/caching.mdx:56)
    Default("ttlMs", 0, "RES-ttlMs",
            "schema/2026-07-28/schema.ts:1094; docs/specification/2026-07-28/server/utilities/caching.mdx:56"),
    # CacheableResult.cacheScope, required "public" | "private" (schema/2026-07-28/schema.ts:1109).
    # The specification gives no reading of its absence; "private" is the only value that is never
    # wrong (a private response is cached per authorization context; "public" could share user data):
    # REVISIONS.md RES-cacheScope (upgrade direction)
    Default("cacheScope", "private", "RES-cacheScope", "schema/2026-07-28/schema.ts:1109; REVISIONS.md RES-cacheScope"),
)
BY_MEMBER: dict[str, Default] = {d.member: d for d in DEFAULTS}
#: definitions whose required members get no default: an InputRequiredResult without resultType
#: would read as "complete" (docs/specification/2026-07-28/basic/index.mdx:85), which it is not
NO_DEFAULTS = frozenset({"InputRequiredResult"})


def defaults_for(definition: str, revision: str = revisions.LATEST) -> dict[str, Any]:
    """{member: value} for the required members of ``definition`` (a definition name of
    ``revision``'s schema, e.g. "ListToolsResult") that :data:`DEFAULTS` gives a value for and
    whose schema accepts that value, in :data:`DEFAULTS` order; ``{}`` for an unknown definition.

    E.g. ``defaults_for("ListToolsResult")`` -> ``{"resultType": "complete", "ttlMs": 0,
    "cacheScope": "private"}``; ``defaults_for("CallToolResult")`` -> ``{"resultType": "complete"}``;
    ``defaults_for("InputRequiredResult")`` and every definition of 2024-11-05..2025-11-25 -> ``{}``."""
    key = (revision, definition)
    hit = _CACHE.get(key)
    if hit is None:
        hit = _CACHE[key] = _compute(revision, definition)
    return dict(hit)


_CACHE: dict[tuple[str, str], tuple[tuple[str, Any], ...]] = {}


def _compute(revision: str, definition: str) -> tuple[tuple[str, Any], ...]:
    if not revisions.is_known(revision) or definition in NO_DEFAULTS:
        return ()
    node = revisions.model(revision).defs.get(definition)
    if not isinstance(node, dict):
        return ()
    required = set(node.get("required") or ())
    props = node.get("properties") or {}
    return tuple((d.member, d.value) for d in DEFAULTS if d.member in required and _accepts(props.get(d.member), d.value))


def _accepts(schema: Any, value: Any) -> bool:
    """Whether a member schema (a plain string/integer one, as these are) accepts ``value``."""
    if not isinstance(schema, dict):
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    t = schema.get("type")
    if t == "string":
        return isinstance(value, str)
    if t in ("integer", "number"):
        return isinstance(value, int) and not isinstance(value, bool) and value >= schema.get("minimum", value)
    return True
