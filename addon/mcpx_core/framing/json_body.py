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


#: why a body holding an integer orjson cannot keep exactly is forwarded untouched
INEXACT = "holds an integer outside [-2**63, 2**64): re-serialised it would change value; forwarded untouched"


def exact(value: Any, source: bytes | str) -> bool:
    """Whether serialising ``value`` (parsed from ``source``) keeps every number of ``source``.

    orjson reads an integer outside [-2**63, 2**64) as a float (18446744073709551616 becomes
    1.8446744073709552e+19), so a rewritten message holding one would reach a receiver that reads
    integers exactly (Python, big-integer JSON libraries) with another value. Such a float is integral
    and at least 2**63 in magnitude; only when ``value`` holds one is ``source`` re-read with the
    standard library (exact integers) to tell. Cost: one pass over the parsed values; past
    :data:`WALK_BUDGET` values, first one pass over ``source``'s bytes (an integer outside the range
    has at least 19 digits: without such a run of digits ``source`` is exact, whatever it holds).
    """
    stack = [value]
    suspect = False
    budget = WALK_BUDGET
    while stack:
        budget -= 1
        if not budget and not _long_digit_run(source):
            return True
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, float) and abs(v) >= 2.0**63 and v.is_integer():
            suspect = True
            break
    if not suspect:
        return True
    import json
    try:
        stack = [json.loads(source)]
    except (ValueError, RecursionError):
        return True
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**64:
            return False
    return True


#: values :func:`exact` walks before it looks at the source bytes instead
WALK_BUDGET = 20_000
_DIGITS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))  # digits -> "0", the rest -> " "
_RUN = b"0" * 19  # the shortest integer outside [-2**63, 2**64) has 19 digits


def _long_digit_run(source: bytes | str) -> bool:
    """Whether ``source`` holds 19 or more consecutive ASCII digits (anywhere, strings included)."""
    raw = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source
    return _RUN in raw.translate(_DIGITS)


def dumps_exact(value: Any, source: bytes | str) -> bytes | None:
    """``dumps(value)``, or None when that would change a number of ``source`` (see :func:`exact`).

    orjson writes every float of magnitude 1e16 or more with an exponent (``9.3e+18``), and every
    integer it read as a float is at least 2**63 in magnitude; so output without the bytes ``e+``
    holds no such float and needs no further check (one C-speed search instead of a walk over the
    values). Output that has them (a float, or merely text such as "e+") is checked by :func:`exact`.
    """
    out = orjson.dumps(value)
    if b"+" in out and b"e+" in out and not exact(value, source):  # "+" first: one memchr pass
        return None
    return out


def dumps(value: Any) -> bytes:
    """Serialise a message or batch (orjson: compact, UTF-8, non-ASCII kept as is)."""
    return orjson.dumps(value)
