"""What the Python test clients (py_client.py, tp_client.py) share: an answer for an elicitation
form field and the JSON view of an exception. Plain Python: it runs in every client venv (each
script's folder is on sys.path when it runs)."""
from __future__ import annotations

from typing import Any


def error_info(exc: BaseException) -> dict[str, Any]:
    """{"error", "errorType"[, "code"][, "cause"]} for an exception; a one-member exception group is
    unwrapped; "code" is the JSON-RPC error code an SDK's McpError carries; "cause" (at most 2000
    characters) only when it says more than the message."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    info: dict[str, Any] = {"error": str(exc) or type(exc).__name__, "errorType": type(exc).__name__}
    err = getattr(exc, "error", None)
    if err is not None and getattr(err, "code", None) is not None:
        info["code"] = err.code
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause) and str(cause) not in info["error"]:
        info["cause"] = f"{type(cause).__name__}: {cause}"[:2000]
    return info


def sample_value(name: str, prop: dict[str, Any]) -> Any:
    """A valid answer for elicitation form field `name` with schema `prop` (a
    PrimitiveSchemaDefinition, schema/2025-11-25/schema.ts): its default, else its first choice, else a
    value of its type and format."""
    if "default" in prop:
        return prop["default"]
    if prop.get("enum"):
        return prop["enum"][0]
    if prop.get("oneOf"):
        return prop["oneOf"][0].get("const")
    kind = prop.get("type")
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return prop.get("minimum", 1)
    if kind == "array":
        items = prop.get("items") or {}
        opts = items.get("enum") or [o.get("const") for o in items.get("anyOf") or items.get("oneOf") or []]
        return opts[:1]
    fmt = {"email": "test@example.com", "uri": "https://example.com/", "date": "2000-01-01"}
    return fmt.get(prop.get("format"), "Test User" if name == "name" else "test")
