"""``application/json`` bodies: one JSON-RPC message or a JSON-RPC batch (2025-03-26 only).

:func:`parse` turns body bytes into Python values with orjson, or says why it cannot
(not UTF-8, not JSON, not a JSON object or array). :func:`dumps` serialises a rewritten message.
Untouched bodies are never re-serialised: the caller forwards the original bytes.
This module knows nothing of MCP rules.
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
        value = loads(body) if exact_ints else loads_sliced(body)
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
        out = dumps_sliced(value, len(source)) if len(source) >= SLICED_MIN else orjson.dumps(value, default=_default)
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


# -- large bodies: parsed in slices, freed in slices -------------------------------------------
#: a body this large is parsed in slices of about :data:`SLICE` bytes (:func:`loads_sliced`)
SLICED_MIN = 2 << 20
SLICE = 256 << 10
#: where the long array of a large message is: a tool result's content blocks, a list result's items
SLICED_PATHS = (("result", "content"), ("result", "tools"), ("result", "resources"), ("result", "resourceTemplates"),
                ("result", "prompts"), ("result", "messages"))
#: elements freed per step by :func:`free`
FREE_STEP = 16384
_HELD = threading.local()


def loads_sliced(body: bytes) -> Any:
    """``orjson.loads(body)``, the same value; a body of :data:`SLICED_MIN` bytes or more whose long
    array sits at one of :data:`SLICED_PATHS` is parsed in slices of about :data:`SLICE` bytes (one
    ``orjson.loads`` call each), so that no one call holds the interpreter for long while mcpx's
    worker thread rewrites it (addons/worker.py): a thread switch can happen between two slices.

    The array is found as :func:`split_array` finds it (the body with the array replaced by a
    sentinel parses, with the sentinel at that path). Its bytes are cut after a ``}`` before a
    ``,{`` about every :data:`SLICE` bytes, and each slice parsed as the elements of an array nested
    as deep as the array is in the body (orjson's nesting limit counts the same): every slice parses
    so, and slices joined by commas make the array, so the elements are those of the whole. A cut
    inside a string or a nested value makes that slice fail to parse at its end: the next ``},{`` is
    tried (up to 8). An array whose slices cannot be read so (an error before a slice's end, the last
    slice failing, 8 cuts in a row failing) is parsed whole, as is every other body: errors are
    orjson's own. Under :func:`holding`, the parsed array is also kept in its list."""
    if len(body) < SLICED_MIN:
        return orjson.loads(body)
    for path in SLICED_PATHS:
        split = split_array(body, path)
        if split is None:
            continue
        items = _slices(body, split.start, split.end, len(path))
        if items is None:
            break
        split.sentinel[:] = items
        held = getattr(_HELD, "lists", None)
        if held is not None:
            held.append(split.sentinel)
        return split.skeleton
    return orjson.loads(body)


def _slices(body: bytes, start: int, end: int, depth: int) -> list | None:
    """The elements of the array at ``body[start:end + 1]`` (``[{`` ... ``}]``), slice by slice."""
    head, tail = b'{"a":' * depth + b"[", b"]" + b"}" * depth
    view = memoryview(body)
    out: list = []
    s = start + 1
    while True:
        cut = body.find(b"},{", s + SLICE, end) if s + SLICE < end else -1
        for _ in range(_TRIES):
            stop = end if cut < 0 else cut + 1  # the slice is body[s:stop]
            try:
                value = orjson.loads(b"".join((head, view[s:stop], tail)))
            except orjson.JSONDecodeError as e:
                if cut < 0 or e.pos < len(head) + stop - s:  # the last slice, or an error before the cut: a bad body
                    return None
                cut = body.find(b"},{", cut + 1, end)  # that "}" closed something nested, or sat in a string
                continue
            break
        else:
            return None
        for _ in range(depth):
            value = value["a"]
        out.extend(value)
        if cut < 0:
            return out
        s = stop + 1


@contextmanager
def holding() -> Iterator[list]:
    """Within it, the arrays :func:`loads_sliced` parses in this thread are also kept in the list it
    yields, for :func:`free` to free later, in steps."""
    _HELD.lists = held = []
    try:
        yield held
    finally:
        _HELD.lists = None


def free(held: list) -> None:
    """Empty each list of ``held`` that nothing else refers to any more :data:`FREE_STEP` elements at a
    time: freeing a million parsed content blocks in one go holds the interpreter for its whole
    length. A list something else still holds (a record that reads it when described) is left as it is."""
    while held:
        lst = held.pop()
        if sys.getrefcount(lst) > 2:  # (this name and the call's argument)
            continue
        while lst:
            del lst[-FREE_STEP:]


def dumps_sliced(value: Any, size: int) -> bytes:
    """``orjson.dumps(value)`` (with :func:`dumps`' ``default``), the same bytes; a message of about
    ``size`` bytes whose long array (at one of :data:`SLICED_PATHS`) has two elements or more is
    written in slices of about :data:`SLICE` bytes (by the elements' average size, at most
    :data:`FREE_STEP` elements), one ``orjson.dumps`` call each, as :func:`loads_sliced` reads it.

    orjson writes an array as ``[``, its elements joined by ``,`` and ``]``, so the slices, each
    written as an array nested as deep as the array is in the message (orjson's nesting limit counts
    the same) and stripped of that nesting, joined by commas, are the array's bytes; they stand where
    the message, written with the array replaced by a sentinel, has the sentinel (found once, else the
    message is written whole). Raises ``orjson.JSONEncodeError`` as orjson does."""
    parent, key, lst, depth = _long_array(value)
    if lst is None:
        return orjson.dumps(value, default=_default)
    parent[key] = [SPLIT_SENTINEL]
    try:
        skeleton = orjson.dumps(value, default=_default)
    finally:
        parent[key] = lst
    at = skeleton.find(_SENTINEL_JSON)
    if at < 0 or skeleton.find(_SENTINEL_JSON, at + 1) >= 0:
        return orjson.dumps(value, default=_default)
    head, tail = len(b'{"a":' * depth) + 1, len(b"]" + b"}" * depth)
    out = io.BytesIO()  # (each slice written and freed at once: the peak is about the output, as orjson's own)
    out.write(memoryview(skeleton)[:at])
    out.write(b"[")
    step = max(1, min(FREE_STEP, len(lst) * SLICE // max(size, 1)))
    for i in range(0, len(lst), step):
        wrapped: Any = lst[i:i + step]
        for _ in range(depth):
            wrapped = {"a": wrapped}
        if i:
            out.write(b",")
        out.write(memoryview(orjson.dumps(wrapped, default=_default))[head:-tail])
    out.write(b"]")
    out.write(memoryview(skeleton)[at + len(_SENTINEL_JSON):])
    return out.getvalue()


def _long_array(value: Any) -> tuple[Any, Any, list | None, int]:
    """(its parent, its key, the array, its path's length) of the first array at :data:`SLICED_PATHS`
    in ``value`` of two elements or more; the array None when there is none."""
    if isinstance(value, dict):
        for path in SLICED_PATHS:
            node: Any = value
            for k in path[:-1]:
                node = node.get(k) if isinstance(node, dict) else None
            lst = node.get(path[-1]) if isinstance(node, dict) else None
            if isinstance(lst, list) and len(lst) > 1:
                return node, path[-1], lst, len(path)
    return None, None, None, 0
