"""``application/json`` bodies: one JSON-RPC message or a JSON-RPC batch (2025-03-26 only).

:func:`parse` turns body bytes into Python values with orjson, or says why it cannot
(not UTF-8, not JSON, not a JSON object or array). :func:`dumps` serialises a rewritten message.
Untouched bodies are never re-serialised: the caller forwards the original bytes.
This module knows nothing of MCP rules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
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


def parse(body: bytes, exact_ints: bool = False) -> Parsed:
    """Parse a JSON body. Raises :class:`Unparseable` (never anything else). ``exact_ints``: integers
    outside [-2**63, 2**64) come out as :class:`ExactInt` (see :func:`loads`), as the bridges need."""
    try:
        value = loads(body) if exact_ints else orjson.loads(body)
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


class ExactInt:
    """An integer outside [-2**63, 2**64) read exactly (orjson reads one as a float, which written
    again is another number, e.g. a JSON-RPC id of 24 digits): equal to and hashed as that integer,
    never equal to a float; :func:`dumps` and :func:`dumps_exact` write its digits. Not an ``int``
    subclass, so code that writes values without this module's ``default`` fails loudly instead of
    writing another number (a record's ``jsonrpc_id`` keeps it: the change log writes its digits)."""

    __slots__ = ("value",)

    def __init__(self, value: int):
        self.value = value

    def __eq__(self, other: Any) -> bool:
        if other.__class__ is ExactInt:
            return self.value == other.value
        return isinstance(other, int) and not isinstance(other, bool) and self.value == other

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return str(self.value)

    def __copy__(self) -> "ExactInt":
        return self

    def __deepcopy__(self, memo: Any) -> "ExactInt":
        return self


def plain_id(v: Any) -> int | str | None:
    """A JSON-RPC id as plain data (flow metadata, views): an int or a str as it is, an
    :class:`ExactInt` as its int (exact, beyond 64 bits), anything else (null, a float, a bool) None."""
    if v.__class__ is ExactInt:
        return v.value
    return v if isinstance(v, (int, str)) and not isinstance(v, bool) else None


def _default(v: Any) -> Any:
    """orjson's ``default``: an :class:`ExactInt` as its digits."""
    if v.__class__ is ExactInt:
        return orjson.Fragment(str(v.value).encode())
    raise TypeError(f"Type is not JSON serializable: {type(v).__name__}")


def loads(data: bytes | memoryview | str) -> Any:
    """``orjson.loads(data)``, but every integer outside [-2**63, 2**64) an :class:`ExactInt` of its
    exact value (re-read with the standard library, only when ``data`` holds a run of 19 or more
    digits and the parsed value an :func:`inexact_number`). Raises ``orjson.JSONDecodeError``. For
    messages mcpx must write again whole (the bridges map ids and answer under the client's id)."""
    value = orjson.loads(data)
    raw = data.tobytes() if isinstance(data, memoryview) else data
    if _long_digit_run(raw) and _any_leaf(value, inexact_number):
        import json
        value = _exact_ints(json.loads(raw))
    return value


def _exact_ints(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _exact_ints(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_exact_ints(x) for x in v]
    return ExactInt(v) if _beyond_64_bits(v) else v


#: why a body holding an integer orjson cannot keep exactly is forwarded untouched
#: what a passthrough record says of a body left as sent; the change records made for it before
#: (the walk ran first) describe changes that were not delivered
UNAPPLIED = "forwarded untouched: no change recorded before this record for it was applied"
INEXACT = "holds an integer outside [-2**63, 2**64): re-serialised it would change value; " + UNAPPLIED


def exact(value: Any, source: bytes | str | memoryview) -> bool:
    """Whether serialising ``value`` (parsed from ``source``) keeps every number of ``source``.

    orjson reads an integer outside [-2**63, 2**64) as a float (18446744073709551616 becomes
    1.8446744073709552e+19), so a rewritten message holding one would reach a receiver that reads
    integers exactly (Python, big-integer JSON libraries) with another value. Such a float is integral
    and at least 2**63 in magnitude; only when ``value`` holds one is ``source`` re-read with the
    standard library (exact integers) to tell. Cost: one pass over the parsed values; past
    :data:`WALK_BUDGET` values, first one pass over ``source``'s bytes (an integer outside the range
    has at least 19 digits: without such a run of digits ``source`` is exact, whatever it holds).
    """
    if isinstance(source, memoryview):
        source = source.tobytes()
    suspect = _any_leaf(value, inexact_number, WALK_BUDGET)
    if suspect is None:  # a large value: the bytes first, the rest of the walk only when they hold a long number
        suspect = _long_digit_run(source) and _any_leaf(value, inexact_number)
    if not suspect:
        return True
    import json
    try:
        reread = json.loads(source)
    except (ValueError, RecursionError):
        return True
    return not _any_leaf(reread, _beyond_64_bits)


def _any_leaf(value: Any, test: Callable[[Any], bool], budget: int = 0) -> bool | None:
    """Whether ``test`` holds for a scalar anywhere in ``value`` (a parsed JSON value); None when
    ``budget`` values (if not 0) were looked at without finding one."""
    stack = [value]
    while stack:
        budget -= 1
        if not budget:
            return None
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif test(v):
            return True
    return False


def _beyond_64_bits(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**64


def response_texts(data: bytes | memoryview) -> list[bytes]:
    """The JSON texts of the JSON-RPC responses (``result`` or ``error``) in ``data``, one message or
    a batch, for re-assembly into another batch without changing a number: a single response is its
    own bytes; batch members are serialised again when that keeps every number, else the batch's
    inner text is kept whole. Raises :class:`Unparseable`."""
    raw = bytes(data).strip()
    parsed = parse(raw)
    if not parsed.batch:
        m = parsed.messages[0]
        return [raw] if "result" in m or "error" in m else []
    responses = [m for m in parsed.messages if isinstance(m, dict) and ("result" in m or "error" in m)]
    try:
        return [dumps_exact(m, raw) for m in responses]
    except Unwritable:
        return [raw[1:-1].strip()] if raw[1:-1].strip() and len(responses) == len(parsed.messages) else []


def inexact_number(value: Any) -> bool:
    """Whether ``value`` is a float orjson made of an integer outside [-2**63, 2**64) (so
    serialising it would write another number), e.g. a JSON-RPC id of 30 digits."""
    return isinstance(value, float) and abs(value) >= 2.0**63 and value.is_integer()


def holds_inexact(value: Any) -> bool:
    """Whether ``value`` (a parsed JSON value) holds an :func:`inexact_number` anywhere."""
    return bool(_any_leaf(value, inexact_number))


#: values :func:`exact` walks before it looks at the source bytes instead
WALK_BUDGET = 20_000
_DIGITS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))  # digits -> "0", the rest -> " "
_RUN = b"0" * 19  # the shortest integer outside [-2**63, 2**64) has 19 digits


def _long_digit_run(source: bytes | str) -> bool:
    """Whether ``source`` holds 19 or more consecutive ASCII digits (anywhere, strings included)."""
    raw = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source
    return _RUN in raw.translate(_DIGITS)


class Unwritable(ValueError):
    """A rewritten message cannot be written back exactly; ``reason`` says why (the caller
    forwards the original bytes)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def dumps_exact(value: Any, source: bytes | str | memoryview) -> bytes:
    """``dumps(value)``, checked to keep every number of ``source`` (see :func:`exact`).

    Raises :class:`Unwritable` when it would not (:data:`INEXACT`), or when orjson cannot write
    ``value`` (it reads 1,024 levels of nesting but writes 255).

    orjson writes every float of magnitude 1e16 or more with an exponent (``9.3e+18``), and every
    integer it read as a float is at least 2**63 in magnitude; so output without the bytes ``e+``
    holds no such float and needs no further check (one C-speed search instead of a walk over the
    values). Output that has them (a float, or merely text such as "e+") is checked by :func:`exact`.
    """
    try:
        out = orjson.dumps(value, default=_default)
    except orjson.JSONEncodeError as e:
        raise Unwritable(f"re-serialised it cannot be written ({e}); {UNAPPLIED}") from None
    if b"+" in out and b"e+" in out and not exact(value, source):  # "+" first: one memchr pass
        raise Unwritable(INEXACT)
    return out


def dumps(value: Any) -> bytes:
    """Serialise a message or batch (orjson: compact, UTF-8, non-ASCII kept as is; an
    :class:`ExactInt` as its digits)."""
    return orjson.dumps(value, default=_default)


# -- large bodies: one array parsed an element at a time ---------------------------------------
#: stands in the skeleton for the array an :class:`ArraySplit` parses element by element
SPLIT_SENTINEL = "\x00mcpx: array parsed one element at a time\x00"
_SENTINEL_JSON = orjson.dumps([SPLIT_SENTINEL])
#: how many candidate array starts and ends :func:`split_array` tries before it gives up
_TRIES = 8


class SplitFailed(ValueError):
    """The body is not the shape :func:`split_array` assumed (found while reading its elements):
    the caller parses it whole instead."""


@dataclass
class ArraySplit:
    """A JSON body seen as a skeleton plus the elements of one array, read one at a time.

    ``skeleton``: the body parsed with the array replaced by ``[SPLIT_SENTINEL]``; ``sentinel``:
    that list object inside it; ``start``/``end``: offsets of the array's ``[`` and ``]`` in
    ``body``. :meth:`elements` parses the elements lazily, so a rewrite holds one element's Python
    objects at a time instead of the whole array's (orjson needs about 7 bytes of memory per byte
    of a list of small objects). ``out``: what a consumer delivers for each element (bytes, or a
    view of ``body`` for one it left alone); ``walked``: whether a consumer read the elements.
    """

    body: bytes
    skeleton: dict
    sentinel: list
    start: int
    end: int
    out: list = field(default_factory=list)
    walked: bool = False
    #: set when reading the elements failed and the body was parsed whole instead
    failed: bool = False

    def elements(self) -> Iterator[tuple[Any, memoryview]]:
        """(value, its bytes) of each element in order. Raises :class:`SplitFailed` when the
        bytes between ``[`` and ``]`` are not objects joined by single commas (e.g. whitespace
        between elements, or invalid UTF-8 in one)."""
        body, end = self.body, self.end
        view = memoryview(body)
        s = self.start + 1
        while True:
            if body[s:s + 1] != b"{":
                raise SplitFailed(f"no object at offset {s}")
            e = body.find(b"},{", s, end)
            while True:
                last = e < 0
                stop = end - 1 if last else e  # the "}" that may close this element
                if body[stop:stop + 1] != b"}":
                    raise SplitFailed(f"no object end before offset {end}")
                try:
                    value = orjson.loads(view[s:stop + 1])
                except orjson.JSONDecodeError:
                    if last:
                        raise SplitFailed(f"no element parses from offset {s}") from None
                    e = body.find(b"},{", e + 1, end)  # that "}" closed something nested, or sat in a string
                    continue
                yield value, view[s:stop + 1]
                if last:
                    return
                s = stop + 2
                break

    def assemble(self, skeleton_bytes: bytes) -> bytes:
        """The delivered body: ``skeleton_bytes`` (the serialised, rewritten skeleton) with the
        sentinel replaced by the elements in :attr:`out` (or by the original elements when no
        consumer read them); as is when the sentinel was dropped with its parent."""
        at = skeleton_bytes.find(_SENTINEL_JSON)
        if at < 0:
            return skeleton_bytes
        if skeleton_bytes.find(_SENTINEL_JSON, at + 1) >= 0:
            raise SplitFailed("sentinel found twice")
        parts: list = [skeleton_bytes[:at], b"["]
        if self.walked:
            for i, piece in enumerate(self.out):
                if i:
                    parts.append(b",")
                parts.append(piece)
        else:
            parts.append(memoryview(self.body)[self.start + 1:self.end])
        parts += [b"]", skeleton_bytes[at + len(_SENTINEL_JSON):]]
        return b"".join(parts)


def split_array(body: bytes, path: tuple[str, ...]) -> ArraySplit | None:
    """Split ``body`` at the array found at ``path`` (keys from the top, e.g. ``("result",
    "tools")``), written compactly (``"tools":[{...},{...}]``), without parsing that array.

    Finds the array's ``[`` from the bytes ``"<last key>":[{`` and its ``]`` from the ends of the
    body, and accepts them when the body with the array replaced by a sentinel parses and has the
    sentinel at ``path``. Together with :meth:`ArraySplit.elements` (each element a complete
    JSON object, joined by commas, ending at that ``]``) this proves the split equal to parsing
    the whole body. None when no such split is found (the caller parses the body whole).
    """
    key = b'"' + path[-1].encode() + b'":[{'
    a = -1
    for _ in range(_TRIES):
        a = body.find(key, a + 1)
        if a < 0:
            return None
        start = a + len(key) - 2
        prefix = body[:start]
        e = len(body)
        for _ in range(_TRIES):
            e = body.rfind(b"}]", start, e)
            if e < 0:
                break
            try:
                skeleton = orjson.loads(prefix + _SENTINEL_JSON + body[e + 2:])
            except orjson.JSONDecodeError:
                continue
            node: Any = skeleton
            for k in path:
                node = node.get(k) if isinstance(node, dict) else None
            if isinstance(node, list) and node == [SPLIT_SENTINEL] and isinstance(skeleton, dict) \
                    and orjson.dumps(skeleton).count(_SENTINEL_JSON) == 1:  # the body holds no look-alike
                return ArraySplit(body, skeleton, node, start, e + 1)
    return None
