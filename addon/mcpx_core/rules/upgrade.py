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
- Retired error codes (:data:`RETIRED`, the table of revision-delta.json's ``error-code`` records
  whose code a revision replaced; ``ERR-resource-not-found``, docs/specification/2026-07-28/server/resources.mdx:405):
  ``-32002`` becomes ``-32602`` for a 2026-07-28 receiver, from a legacy sender and from a 2026-07-28
  sender that still sends it alike (the only rule here that runs within one era too).

The defaults (and their sources) are the table of :mod:`mcpx_core.defaults`, which the repair stage
uses too: a member is added only where the 2026-07-28 definition of that result lists it in
``required`` (``defaults.defaults_for``). Records: action ``synthesize``, the ``RES-*`` ids.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import defaults, revisions
from .api import MessageHook, Outcome

if TYPE_CHECKING:
    from ..downgrade import Walk

#: member -> (value a legacy result means, rule id); the order is the records' order
DEFAULTS: dict[str, tuple[Any, str]] = {d.member: (d.value, d.rule) for d in defaults.DEFAULTS}


def cross_era(walk: "Walk") -> bool:
    return walk.to_rev == revisions.LATEST and walk.from_rev in revisions.LEGACY


def required_defaults(walk: "Walk", method: str | None) -> list[tuple[str, Any, str]]:
    """(member, value, rule) the receiver's result definition for ``method`` requires from :data:`DEFAULTS`."""
    name = walk.model.result_for(method) if method else "Result"
    return [(k, v, DEFAULTS[k][1]) for k, v in defaults.defaults_for(name, walk.to_rev).items()]


def result_members(walk: "Walk", message: dict, kind: str, method: str | None, request_id: Any) -> Outcome | None:
    if kind != "result" or not cross_era(walk) or not isinstance(message.get("result"), dict):
        return None
    result = message["result"]
    for key, value, rule in required_defaults(walk, method):
        if key not in result:
            result[key] = value
            walk.log(f"/result/{key}", "synthesize", rule, None, value, detail="required by 2026-07-28; a legacy result means this")
    return None


class Retired(NamedTuple):
    """An error code a revision retired: ``revision`` replaced ``code`` by ``replacement`` (revision-delta record ``rule``)."""

    code: int
    revision: str
    replacement: int
    rule: str


_REPLACED = re.compile(r"^\s*(-?\d+) replaced by (-?\d+)\s*$")


def retired_codes(delta: dict) -> dict[int, Retired]:
    """The table of retired error codes: every ``error-code`` record of ``revision-delta.json`` whose
    ``changed`` says ``"<code> replaced by <code>"`` in a revision (ERR-resource-not-found: -32002 ->
    -32602 in 2026-07-28, docs/specification/2026-07-28/server/resources.mdx:405, changelog.mdx:37)."""
    out: dict[int, Retired] = {}
    for r in delta.get("records", ()):
        if r.get("kind") != "error-code":
            continue
        for ch in r.get("changed") or ():
            m = _REPLACED.match(str(ch.get("change", "")))
            if m and revisions.is_known(ch.get("rev")):
                out[int(m.group(1))] = Retired(int(m.group(1)), ch["rev"], int(m.group(2)), r["id"])
    return out


#: code -> :class:`Retired`, from the shipped revision-delta.json
RETIRED: dict[int, Retired] = retired_codes(revisions.load_json("revision-delta.json"))


def error_codes(walk: "Walk", message: dict, kind: str, method: str | None, request_id: Any) -> Outcome | None:
    """A code the receiver's revision retired reaches it as the code that revision uses instead
    (:data:`RETIRED`), whoever sent it: a legacy server (across eras), or a server of that revision
    that still sends the old code (a 2026-07-28-only server answering a missing resource -32002).
    Toward a receiver older than the retiring revision the code is its own, and kept."""
    err = message.get("error") if kind == "error" else None
    code = err.get("code") if isinstance(err, dict) else None
    hit = RETIRED.get(code) if code.__class__ is int else None
    if hit is not None and not revisions.older(walk.to_rev, hit.revision):
        detail = None if cross_era(walk) else f"{code} was retired in {hit.revision} (replaced by {hit.replacement}); a {walk.from_rev} sender still sent it"
        walk.log("/error/code", "rewrite", hit.rule, code, hit.replacement, detail=detail)
        err["code"] = hit.replacement
    return None


RULES = [MessageHook(error_codes), MessageHook(result_members, after=True)]
