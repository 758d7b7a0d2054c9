"""Whether a delivered message is valid for the revision that receives it, under ``strict``, with
mcpx's own schema knowledge (no jsonschema needed): the message walked again toward its receiver's
own revision must come out unchanged (nothing its schema.json lacks: every drop or rewrite the walk
would make names a field or member the revision does not define, :mod:`mcpx_core.downgrade`), and
the receiver's compiled schema checks (:mod:`mcpx_core.checks`, through :func:`mcpx_core.repair.repair`)
must find nothing to repair and nothing beyond repair."""

from __future__ import annotations

import copy
from typing import Any

from .. import revisions
from ..downgrade import classify, downgrade
from ..repair import repair

#: actions of the second walk that mean the message holds what its receiver's revision does not define
UNDEFINED = frozenset({"drop", "rewrite", "drop-message"})


def problems(message: Any, method: str | None, revision: str | None, direction: str) -> list[str]:
    """What makes ``message`` invalid for a ``revision`` receiver ([] when valid or not checkable:
    an unknown revision, not a JSON-RPC message). ``method``: its own, or for a result or error the
    method of the request it answers. Each problem reads ``POINTER [RULE] what``."""
    kind = classify(message)
    if kind is None or not revisions.is_known(revision or ""):
        return []
    out: list[str] = []
    walked = downgrade(copy.deepcopy(message), kind, method, revision, revision, direction, "strict")  # type: ignore[arg-type]
    for c in walked.changes:
        if c.action in UNDEFINED:
            out.append(f"{c.pointer or '/'} [{c.rule}] not defined in {revision}: {c.before or ''}".rstrip(": "))
    for c in repair(copy.deepcopy(message), kind, method, revision, direction):  # type: ignore[arg-type]
        out.append(f"{c.pointer or '/'} [{c.rule}] {c.detail or c.action}")
    return out
