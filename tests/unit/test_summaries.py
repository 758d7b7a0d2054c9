"""Record summaries (issue 16): the faster :func:`changes.summarize` writes the same text as the one
before it, and a :class:`changes.Summary` made when read is what an immediate summary was.

``_reference`` is the summariser as it was (round 2), kept here verbatim as the oracle.
"""
from __future__ import annotations

import hashlib
from itertools import islice
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpx_core.changes import RECORD, Change, Summary, maker, snapshot, summarize


def _reference(v: Any, depth: int = 2) -> str:
    t = type(v)
    if t is str:
        if len(v) > 80:
            h = hashlib.sha256(v.encode("utf-8", "surrogatepass")).hexdigest()[:12]
            return f"<str len={len(v)} sha256={h}>"
        return orjson.dumps(v).decode()
    if t is dict:
        if depth <= 0:
            return f"{{…{len(v)} keys}}"
        items = [f"{k if len(k) <= 80 else _reference(k, 0)}: {_reference(x, depth - 1)}"
                 for k, x in (v.items() if len(v) <= 8 else islice(v.items(), 8))]
        if len(v) > 8:
            items.append(f"…+{len(v) - 8}")
        return "{" + ", ".join(items) + "}"
    if t is list:
        if depth <= 0:
            return f"[…{len(v)} items]"
        items = [_reference(x, depth - 1) for x in v[:5]]
        if len(v) > 5:
            items.append(f"…+{len(v) - 5}")
        return "[" + ", ".join(items) + "]"
    if isinstance(v, str):
        return _reference(str(v), depth)
    if isinstance(v, (dict, list)):
        return _reference(dict(v) if isinstance(v, dict) else list(v), depth)
    try:
        return orjson.dumps(v).decode()
    except TypeError:
        return repr(v)[:80]


def _outcome(fn, v):
    try:
        return fn(v)
    except Exception as e:  # the same exception type, where the reference raises
        return type(e)


_text = st.text(st.characters(codec="utf-8"), max_size=90) | st.sampled_from(
    ['a"b', "a\\b", "tab\there", "line\nbreak", "\x7f", "\u2028", "café", "\U0001f600", "", " ", "x" * 80, "x" * 81, "\ud800"])
_scalar = (st.none() | st.booleans() | st.integers(min_value=-(1 << 70), max_value=1 << 70)
           | st.floats(allow_nan=True, allow_infinity=True) | _text)
_json = st.recursive(_scalar, lambda c: st.lists(c, max_size=9) | st.dictionaries(_text, c, max_size=10), max_leaves=40)


@settings(max_examples=600, suppress_health_check=list(HealthCheck), deadline=None, database=None)
@given(_json)
def test_summarize_writes_what_it_wrote(value):
    for depth in (0, 1, 2, 3):
        assert _outcome(lambda v: summarize(v, depth), value) == _outcome(lambda v: _reference(v, depth), value)


@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None, database=None)
@given(_json, _json)
def test_a_summary_of_a_snapshot_is_the_summary_then(value, other):
    """What a lazy record shows of a value that changes later: the value's text when logged."""
    want = _outcome(summarize, value)
    shown = snapshot(value)

    def change(v, depth=0):  # the walk's kinds of change, every level down
        if isinstance(v, dict):
            for k in list(v)[:2]:
                change(v[k], depth + 1)
            if v:
                del v[next(iter(v))]
            v["new"] = other
        elif isinstance(v, list):
            for x in v[:2]:
                change(x, depth + 1)
            if v:
                v.pop()
            v.append(other)

    change(value)
    assert _outcome(lambda v: Summary(v).text(), shown) == want


def test_records_built_and_read_as_before():
    make = maker("f", "s", "s2c", 3, "tools/call", "2025-06-18", "2025-03-26")
    c = make("/a", "drop", "R", Summary({"x": [1, 2]}), Summary("y" * 100), None)
    ref = Change("/a", "drop", "R", summarize({"x": [1, 2]}), summarize("y" * 100), None, c.time, "f", "s", "s2c", 3,
                 "tools/call", "2025-06-18", "2025-03-26")
    assert c == ref and c.as_dict() == ref.as_dict() and RECORD.validate_python(c.as_dict()) == ref
    assert orjson.loads(orjson.dumps(c, default=lambda s: s.text())) == ref.as_dict()
    assert isinstance(make("/b", "drop", "R", Summary(1), None, None).__dict__["before"], Summary)
