"""Capability and sampling-result rules that need more than a field drop.

- ``CAP-client-elicitation-modes`` (schema/2025-11-25/schema.ts ClientCapabilities.elicitation):
  toward a 2025-06-18 server, ``elicitation: {form, url}`` becomes ``elicitation: {}`` when ``form``
  is present or the object is empty; a client that only declares ``url`` cannot do form-style
  elicitation, so ``elicitation`` is removed.
- ``SAMP-stopReason-toolUse`` (schema/2025-11-25/schema.ts:1673): toward a server older than
  2025-11-25, ``stopReason: "toolUse"`` becomes ``"endTurn"`` (the tool_use blocks have been turned
  into text by CT-tool_use).
The other capability fields a revision lacks (completions, tasks, extensions, sampling.context,
sampling.tools, ...) are dropped by the generic schema walk with their own record ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .api import TypeHook

if TYPE_CHECKING:
    from ..downgrade import Walk


def elicitation_modes(walk: Walk, value: dict, ptr: str, target: dict) -> dict:
    elic = value.get("elicitation")
    sub = (target.get("properties") or {}).get("elicitation")
    if not isinstance(elic, dict) or sub is None or "form" in (sub.get("properties") or {}) or not ({"form", "url"} & set(elic)):
        return value
    if "form" in elic or not elic:
        walk.log(f"{ptr}/elicitation", "rewrite", "CAP-client-elicitation-modes", elic, {})
        value["elicitation"] = {}
    else:
        walk.log(f"{ptr}/elicitation", "drop", "CAP-client-elicitation-modes", elic, detail="URL mode only: no form elicitation in this revision")
        del value["elicitation"]
    return value


def stop_reason(walk: Walk, value: dict, ptr: str, target: dict) -> dict:
    if value.get("stopReason") == "toolUse" and walk.fires("SAMP-stopReason-toolUse"):
        walk.log(f"{ptr}/stopReason", "rewrite", "SAMP-stopReason-toolUse", "toolUse", "endTurn")
        value["stopReason"] = "endTurn"
    return value


RULES = [TypeHook(("ClientCapabilities",), elicitation_modes), TypeHook(("CreateMessageResult",), stop_reason)]
