"""``application/json`` bodies: one JSON-RPC message or a JSON-RPC batch (2025-03-26 only).

:func:`parse` turns body bytes into Python values with orjson, or says why it cannot
(not UTF-8, not JSON, not a JSON object or array). :func:`dumps` serialises a rewritten message.
Untouched bodies are never re-serialised: the caller forwards the original bytes.
This module knows nothing of MCP rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass
class Parsed:
    """``messages``: the parsed messages; ``batch``: the body was a JSON array."""

    messages: list[Any]
    batch: bool


class Unparseable(ValueError):
    """The body is not a JSON text mcpx can rewrite; ``reason`` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def parse(body: bytes) -> Parsed:
    """Parse a JSON body. Raises :class:`Unparseable` (never anything else)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            raise Unparseable("body is not valid UTF-8") from None
        raise Unparseable(f"body is not valid JSON: {e}") from None
    except RecursionError:
        raise Unparseable("body nests too deeply") from None
    if isinstance(value, list):
        return Parsed(value, True)
    if isinstance(value, dict):
        return Parsed([value], False)
    raise Unparseable("body is JSON but neither an object nor an array")


def dumps(value: Any) -> bytes:
    """Serialise a message or batch (orjson: compact, UTF-8, non-ASCII kept as is)."""
    return orjson.dumps(value)
