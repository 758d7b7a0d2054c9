"""Message-level rules: methods a receiver lacks, result types, error codes and error ids.

- A notification whose method the receiver's revision does not define (its ServerNotification /
  ClientNotification union lacks it) is not delivered (``drop-message``), e.g.
  ``ELIC-complete-notification``, ``TASK-status-notification``, ``SUB-acknowledged``.
- A request whose method the receiver lacks is not delivered; the sender gets -32601, which is
  what the older peer itself would answer (``ELIC-request``, ``TASK-method-*``; REVISIONS.md 7.3).
  Not for a client's request when both legs speak one revision: the server answers it itself
  (with its own HTTP status and error), so mcpx stays invisible.
- A notification that lacks a field the receiver requires is not delivered
  (``CANCEL-requestId-optional``: schema/2025-06-18/schema.ts:167 requires requestId).
- ``RES-resultType`` (schema/2026-07-28/schema.ts:216): a result whose ``resultType`` is not
  "complete" cannot reach a legacy receiver: it becomes a -32603 error
  (input_required needs the cross-era MRTR bridge, which mcpx does not do yet).
- Error codes (REVISIONS.md 5.25): -32022 -> -32602 (``ERR-unsupported-protocol-version``),
  -32021 -> -32602 (``ERR-missing-client-capability``), -32020 -> -32600 (``ERR-header-mismatch``)
  toward revisions that predate them; -32042 (``ELIC-url-required-error``) -> its URLs in the message.
- ``RPC-error-id-optional`` (schema/2025-11-25/schema.ts:161): an error without ``id`` gets the id
  of the request the HTTP exchange carried, for receivers whose schema requires it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import revisions
from .api import MessageHook, Outcome

if TYPE_CHECKING:
    from ..downgrade import Walk

#: code -> (new code, rule, revision that introduced the code)
ERROR_CODES = {
    -32020: (-32600, "ERR-header-mismatch", "2026-07-28"),
    -32021: (-32602, "ERR-missing-client-capability", "2026-07-28"),
    -32022: (-32602, "ERR-unsupported-protocol-version", "2026-07-28"),
}


def undefined_method(walk: Walk, message: dict, kind: str, method: str | None, request_id: Any) -> Outcome | None:
    if kind not in ("request", "notification") or not isinstance(method, str):
        return None
    if walk.direction == "c2s" and walk.from_rev == walk.to_rev:
        return None  # both legs agree: the server answers (or ignores) it itself; mcpx is invisible
    m = walk.model
    if walk.direction == "s2c":
        allowed = m.server_requests if kind == "request" else m.server_notifications
    else:
        allowed = m.client_requests if kind == "request" else m.client_notifications
    if method in allowed:
        return None
    rule = walk.rules.for_method(method, walk.to_rev, walk.direction)
    if kind == "notification":
        walk.log("", "drop-message", rule, {"method": method})
        return Outcome(None, [])
    walk.log("", "drop-message", rule, {"method": method, "id": message.get("id")},
             detail="answered with -32601 Method not found on the receiver's behalf")
    return Outcome(None, [], reply={"code": -32601, "message": f"Method not found: {method} (not defined in MCP {walk.to_rev}; answered by mcpx)"})


def result_type(walk: Walk, message: dict, kind: str, method: str | None, request_id: Any) -> Outcome | None:
    if kind != "result" or not isinstance(message.get("result"), dict):
        return None
    rt = message["result"].get("resultType")
    if rt is None or rt == "complete":
        return None
    base = walk.model.defs.get("Result") or {}
    if "resultType" in (base.get("properties") or {}):
        return None
    walk.log("/result", "rewrite", "RES-resultType", message["result"], {"error": -32603}, detail=f"resultType {rt!r}")
    error = {"code": -32603, "message": f"mcpx: result of type {rt!r} cannot be expressed for an MCP {walk.to_rev} client"}
    message.pop("result")
    message["error"] = error
    return Outcome(message, [])


def error_codes(walk: Walk, message: dict, kind: str, method: str | None, request_id: Any) -> Outcome | None:
    if kind != "error":
        return None
    err = message.get("error")
    if isinstance(err, dict):
        code = err.get("code")
        mapped = ERROR_CODES.get(code) if isinstance(code, int) else None
        if mapped and revisions.older(walk.to_rev, mapped[2]):
            new, rule, _ = mapped
            walk.log("/error/code", "rewrite", rule, code, new)
            err["code"] = new
        elif code == -32042 and revisions.older(walk.to_rev, "2025-11-25"):
            data = err.get("data") if isinstance(err.get("data"), dict) else {}
            urls = [f"{e.get('message', '')} {e.get('url', '')}".strip() for e in data.get("elicitations", []) if isinstance(e, dict)]
            new_msg = f"{err.get('message', 'URL elicitation required')}: " + "; ".join(urls) if urls else err.get("message", "")
            walk.log("/error", "rewrite", "ELIC-url-required-error", err, {"code": -32603, "message": new_msg})
            err["code"] = -32603
            err["message"] = new_msg
    if "id" not in message:
        jerr = walk.model.defs.get("JSONRPCError") or walk.model.defs.get("JSONRPCErrorResponse") or {}
        if "id" in jerr.get("required", ()) and request_id is not None:
            walk.log("/id", "rewrite", "RPC-error-id-optional", None, request_id)
            message["id"] = request_id
    return None


def _sender_optional(walk: Walk, method: str) -> frozenset:
    """The optional members of the params of notification ``method`` in the sender's revision."""
    m = revisions.model(walk.from_rev)
    name = m.notifications.get(method)
    ps = ((m.defs.get(name) or {}).get("properties") or {}).get("params") if name else None
    if isinstance(ps, dict) and "$ref" in ps:
        _, ps = m.resolve(ps["$ref"])
    if not isinstance(ps, dict):
        return frozenset()
    return frozenset(ps.get("properties") or ()) - frozenset(ps.get("required") or ())


def required_params(walk: Walk, message: dict, kind: str, method: str | None, request_id: Any) -> Outcome | None:
    """A notification missing a field the receiver requires cannot be delivered."""
    if kind != "notification" or not isinstance(method, str):
        return None
    name = walk.model.notifications.get(method)
    pschema = ((walk.model.defs.get(name) or {}).get("properties") or {}).get("params") if name else None
    if not pschema:
        return None
    if "$ref" in pschema:
        _, pschema = walk.model.resolve(pschema["$ref"])
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    optional = _sender_optional(walk, method)
    # null for a member the sender's revision makes optional means absent (mcpx_core/repair.py)
    missing = [r for r in pschema.get("required", ()) if r not in params or (params[r] is None and r in optional)]
    if not missing:
        return None
    rule = walk.rules.for_field(name, missing[0], walk.to_rev, walk.direction)
    walk.log(f"/params/{missing[0]}", "drop-message", rule, {"method": method}, detail=f"required by {walk.to_rev}, absent")
    return Outcome(None, [])


def task_result(walk: Walk, message: dict, kind: str, method: str | None, request_id: Any) -> Outcome | None:
    """TASK-create-result: a CreateTaskResult (schema/2025-11-25/schema.ts) toward a receiver without
    tasks cannot be expressed: the requestor gets -32603 instead."""
    result = message.get("result") if kind == "result" else None
    if not isinstance(result, dict) or not isinstance(result.get("task"), dict) or "CreateTaskResult" in walk.model.defs:
        return None
    walk.log("/result", "rewrite", "TASK-create-result", result, {"error": -32603})
    message.pop("result")
    message["error"] = {"code": -32603, "message": f"mcpx: a task result cannot be expressed for an MCP {walk.to_rev} peer"}
    return Outcome(message, [])


RULES = [MessageHook(undefined_method), MessageHook(result_type), MessageHook(task_result), MessageHook(error_codes),
         MessageHook(required_params, after=True)]
