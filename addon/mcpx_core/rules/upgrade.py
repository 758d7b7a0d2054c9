"""Upgrade direction: what a 2026-07-28 receiver requires and a legacy sender never sends.

Only across eras (sender legacy, receiver 2026-07-28: a bridged session). Each record's **Upgrade
direction** paragraph in REVISIONS.md is the rule:

- ``RES-resultType`` (schema/2026-07-28/schema.ts:234): every result gets ``"resultType": "complete"``
  (a legacy result is always complete).
- ``RES-ttlMs`` (schema/2026-07-28/schema.ts:1094; docs/specification/2026-07-28/server/utilities/caching.mdx:56):
  ``"ttlMs": 0`` (what a client assumes when it is absent) where the result's definition requires it
  (list results, ``resources/read``, ``server/discover``).
- ``RES-cacheScope`` (schema/2026-07-28/schema.ts:1109): ``"cacheScope": "private"`` (never wrongly
  shareable) where required.
- ``ERR-resource-not-found`` (docs/specification/2026-07-28/server/resources.mdx:405): a legacy
  ``-32002`` error becomes ``-32602``.

The defaults are read from the receiver's schema: a member is added only where the 2026-07-28
definition of that result lists it in ``required``. Records: action ``synthesize``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import revisions
from .api import MessageHook, Outcome

if TYPE_CHECKING:
    from ..downgrade import Walk

#: member -> (value a legacy result means, rule id); the order is the records' order
DEFAULTS: dict[str, tuple[Any, str]] = {"resultType": ("complete", "RES-resultType"),
                                        "ttlMs": (0, "RES-ttlMs"), "cacheScope": ("private", "RES-cacheScope")}


def cross_era(walk: "Walk") -> bool:
    return walk.to_rev == revisions.LATEST and walk.from_rev in revisions.LEGACY


def required_defaults(walk: "Walk", method: str | None) -> list[tuple[str, Any, str]]:
    """(member, value, rule) the receiver's result definition for ``method`` requires from :data:`DEFAULTS`."""
    name = walk.model.result_for(method) if method else "Result"
    required = (walk.model.defs.get(name) or {}).get("required") or ()
    return [(k, v, rule) for k, (v, rule) in DEFAULTS.items() if k in required]


def result_members(walk: "Walk", message: dict, kind: str, method: str | None, request_id: Any) -> Outcome | None:
    if kind != "result" or not cross_era(walk) or not isinstance(message.get("result"), dict):
        return None
    result = message["result"]
    for key, value, rule in required_defaults(walk, method):
        if key not in result:
            result[key] = value
            walk.log(f"/result/{key}", "synthesize", rule, None, value, detail="required by 2026-07-28; a legacy result means this")
    return None


def error_codes(walk: "Walk", message: dict, kind: str, method: str | None, request_id: Any) -> Outcome | None:
    err = message.get("error") if kind == "error" else None
    if isinstance(err, dict) and err.get("code") == -32002 and cross_era(walk):
        walk.log("/error/code", "rewrite", "ERR-resource-not-found", -32002, -32602)
        err["code"] = -32602
    return None


RULES = [MessageHook(error_codes), MessageHook(result_members, after=True)]
