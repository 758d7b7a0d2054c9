"""Large bodies parsed and written in slices (``json_body.loads_sliced``, ``dumps_sliced``, issue 30):
the same value and the same bytes as ``orjson.loads`` / ``orjson.dumps`` of the whole, the same errors,
for bodies whose cuts fall inside strings and nested values, whose elements nest to orjson's limits,
and bodies that cannot be cut (whitespace, another shape); and the repair stage's byte search done a
window at a time (``repair.candidate``). Thresholds are lowered so bodies stay small.
"""
from __future__ import annotations

import orjson
import pytest

from mcpx_core.framing import json_body


@pytest.fixture(autouse=True)
def small_slices(monkeypatch):
    monkeypatch.setattr(json_body, "SLICED_MIN", 200)
    monkeypatch.setattr(json_body, "SLICE", 40)
    monkeypatch.setattr(json_body, "FREE_STEP", 3)
    calls: list[int] = []
    real = orjson.loads

    def counting(data):
        calls.append(len(data))
        return real(data)
    monkeypatch.setattr(json_body.orjson, "loads", counting)
    yield calls
    monkeypatch.setattr(json_body.orjson, "loads", real)


def _result(blocks: list, extra: bytes = b',"isError":false') -> bytes:
    return b'{"jsonrpc":"2.0","id":1,"result":{"content":[' + b",".join(blocks) + b"]" + extra + b"}}"


#: cuts after "}" before ",{" that are not element ends: inside a string, inside a nested value
TRICKY = [b'{"type":"text","text":"a},{b"}', b'{"type":"text","text":"x","_meta":{"a":[{"b":1},{"c":2}]}}',
          b'{"type":"text","text":"caf\xc3\xa9 \\"q\\" },{ \\u2028"}'] * 12


def test_a_large_body_is_parsed_in_slices_to_the_same_value(small_slices):
    body = _result(TRICKY, b',"structuredContent":{"x":[{}]},"isError":false')
    expected = orjson.loads(body)
    small_slices.clear()
    value = json_body.loads_sliced(body)
    assert value == expected
    assert len(small_slices) > 5 and max(small_slices) < len(body) // 3  # many small calls, none of the whole
    assert json_body.parse(body).messages == [orjson.loads(body)]


@pytest.mark.parametrize("path", [("result", "content"), ("result", "tools"), ("result", "resources")])
def test_each_long_array_path(path):
    items = [orjson.dumps({"name": f"n{i}", "v": [i, {"w": "},{"}]}) for i in range(30)]
    body = b'{"jsonrpc":"2.0","id":"a","result":{"' + path[1].encode() + b'":[' + b",".join(items) + b'],"nextCursor":"c"}}'
    assert json_body.loads_sliced(body) == orjson.loads(body)


def test_bodies_that_cannot_be_cut_are_parsed_whole(small_slices):
    spaced = orjson.dumps(orjson.loads(_result(TRICKY)), option=orjson.OPT_INDENT_2)  # ", {" between elements
    for body in (spaced, b"[" + _result(TRICKY) + b"]", b'{"jsonrpc":"2.0","id":1,"result":{"content":"' + b"x" * 300 + b'"}}'):
        expected = orjson.loads(body)
        small_slices.clear()
        assert json_body.loads_sliced(body) == expected
        assert small_slices[-1] == len(body)  # the last call parsed it whole


@pytest.mark.parametrize("bad", [b'{"type":"text","text":"\xff"}', b'{"type":"text","text":1e999999}', b'{"type":"text","text":"a",}'])
def test_an_element_that_does_not_parse_gives_orjsons_own_error(bad):
    body = _result(TRICKY[:6] + [bad] + TRICKY[:6])
    with pytest.raises(orjson.JSONDecodeError) as whole:
        orjson.loads(body)
    with pytest.raises(orjson.JSONDecodeError) as sliced:
        json_body.loads_sliced(body)
    assert str(sliced.value) == str(whole.value)
    with pytest.raises(json_body.Unparseable):
        json_body.parse(body)


def _nested(depth: int) -> bytes:
    return b'{"type":"text","text":"d","_meta":' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"


@pytest.mark.parametrize("depth", [1018, 1019, 1020, 1021])
def test_nesting_limits_are_those_of_the_whole_body(depth):
    """orjson reads 1,024 levels: an element parsed in a slice sits as deep as in the body."""
    body = _result([_nested(depth)] + TRICKY)
    try:
        expected = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        with pytest.raises(orjson.JSONDecodeError) as got:
            json_body.loads_sliced(body)
        assert str(got.value) == str(e)
    else:
        assert json_body.loads_sliced(body) == expected


def test_a_long_array_is_written_in_slices_to_the_same_bytes(monkeypatch):
    value = orjson.loads(_result(TRICKY, b',"structuredContent":{"x":[{}]},"isError":false'))
    calls: list = []
    real = orjson.dumps
    monkeypatch.setattr(json_body.orjson, "dumps", lambda v, **k: calls.append(v) or real(v, **k))
    out = json_body.dumps_sliced(value, 300)
    assert out == real(value)
    assert len(calls) == 1 + 12  # the skeleton, then 36 blocks 3 at a time (FREE_STEP; a 40-byte slice holds more)
    calls.clear()
    assert json_body.dumps_sliced(value, 36 * 40 * 4) == out and len(calls) == 1 + 36  # slices of about 40 bytes: 1 block
    assert json_body.dumps_exact(value, b"x" * 300) == out
    assert value["result"]["content"] == orjson.loads(_result(TRICKY))["result"]["content"]  # put back


@pytest.mark.parametrize("depth", [250, 251, 252, 253])
def test_writing_limits_are_those_of_the_whole_message(depth):
    """orjson writes 255 levels: a slice is written as deep as the array is in the message."""
    value = orjson.loads(_result([_nested(depth)] + TRICKY))
    try:
        expected = orjson.dumps(value)
    except orjson.JSONEncodeError as e:
        with pytest.raises(orjson.JSONEncodeError) as got:
            json_body.dumps_sliced(value, 300)
        assert str(got.value) == str(e)
        with pytest.raises(json_body.Unwritable):
            json_body.dumps_exact(value, b"x" * 300)
    else:
        assert json_body.dumps_sliced(value, 300) == expected


def test_a_sentinel_look_alike_writes_the_message_whole():
    value = orjson.loads(_result(TRICKY))
    value["result"]["structuredContent"] = {"s": [json_body.SPLIT_SENTINEL]}
    assert json_body.dumps_sliced(value, 300) == orjson.dumps(value)


def test_held_arrays_are_freed_in_steps_unless_still_referenced():
    body = _result(TRICKY)
    with json_body.holding() as held:
        value = json_body.loads_sliced(body)
    assert held == [value["result"]["content"]]
    json_body.free(held)  # ``value`` still holds the array: left alone
    assert held == [] and len(value["result"]["content"]) == 36
    with json_body.holding() as held:
        json_body.loads_sliced(body)
    (lst,) = held
    blocks = list(lst)
    del lst
    json_body.free(held)
    assert held == [] and len(blocks) == 36
    assert json_body.loads_sliced(body) is not None and getattr(json_body._HELD, "lists", None) is None


def test_a_bad_element_or_a_string_full_of_cuts_gives_up_at_once(small_slices):
    """No slice is tried again and again: an error inside a slice, or 8 cuts in a row that fail, and
    the body is parsed whole (a string of 300 "},{" would otherwise be tried at each)."""
    for body in (_result(TRICKY[:3] + [b'{"type":"text","text":"a",}'] + TRICKY),
                 _result(TRICKY[:3] + [b'{"type":"text","text":"' + b"},{" * 300 + b'"}'] + TRICKY)):
        try:
            expected = orjson.loads(body)
        except orjson.JSONDecodeError:
            expected = None
        small_slices.clear()
        try:
            got = json_body.loads_sliced(body)
        except orjson.JSONDecodeError:
            got = None
        assert got == expected
        # the skeleton, the slices before that element (3 at most), 8 tries at most, the whole body
        assert len(small_slices) <= 1 + 3 + 8 + 1 and small_slices[-1] == len(body)


@pytest.mark.parametrize("where", range(0, 48))
def test_the_repair_candidate_search_in_windows_finds_what_the_whole_search_finds(monkeypatch, where):
    """repair.candidate searches large bytes a window at a time: ``null`` or an empty array across a
    window's end, or after a run of whitespace longer than a window, is found as in the whole."""
    from mcpx_core import repair
    monkeypatch.setattr(repair, "SCAN", 8)
    fill = b'{"a":"x"}' * 6  # 54 bytes, nothing to find
    for needle in (b"null", b"[]", b"[ \t\r\n ]", b"[" + b" " * 20 + b"]", b"[" + b" " * 20 + b"x]", b"nul", b"[ x]"):
        body = fill[:where] + needle + fill[where:]
        whole = b"null" in body or repair._EMPTY_ARRAY.search(body) is not None
        assert repair.candidate(body) == whole == (needle in (b"null", b"[]", b"[ \t\r\n ]", b"[" + b" " * 20 + b"]"))
        assert repair.candidate(memoryview(body)) == whole
