"""``json_body.exact`` on large values: the path past :data:`json_body.WALK_BUDGET` values (issue 19).

orjson reads an integer outside [-2**63, 2**64) as a float, so a rewritten message holding one
would reach its receiver with another value (json_body.exact). Past WALK_BUDGET values mcpx
looks at the source bytes first (such an integer has at least 19 digits) and walks the rest of
the value only when they hold a run of 19 digits. These tests give that path a value of more
than WALK_BUDGET values, as bytes, as str and as a memoryview (the elements of a list read an
element at a time are memoryviews of the body).
"""
from __future__ import annotations

import json

import orjson
import pytest

from mcpx_core.framing import json_body

BIG = 2**64  # 20 digits: orjson reads it as 1.8446744073709552e+19
SOURCES = [bytes, bytes.decode, memoryview]


def large(extra: str) -> bytes:
    """A JSON-RPC result of ``extra`` (a JSON value) and WALK_BUDGET + 1 numbers, in that order:
    the walk (last value first) meets ``extra`` only after the budget."""
    numbers = ",".join(str(i % 1000) for i in range(json_body.WALK_BUDGET + 1))
    return b'{"jsonrpc":"2.0","id":1,"result":{"extra":%s,"numbers":[%s]}}' % (extra.encode(), numbers.encode())


@pytest.mark.parametrize("kind", SOURCES, ids=["bytes", "str", "memoryview"])
def test_a_large_value_with_an_integer_beyond_64_bits_is_not_exact(kind):
    source = large(str(BIG))
    value = orjson.loads(source)
    assert value["result"]["extra"] == float(BIG)
    assert json_body.exact(value, kind(source)) is False
    with pytest.raises(json_body.Unwritable) as e:
        json_body.dumps_exact(value, kind(source))
    assert e.value.reason == json_body.INEXACT


@pytest.mark.parametrize("kind", SOURCES, ids=["bytes", "str", "memoryview"])
def test_a_large_value_whose_long_digit_run_is_a_string_or_a_float_is_exact(kind):
    """19 digits in a string, and a float orjson writes as it read it: nothing to lose."""
    source = large('["12345678901234567890",1.8446744073709552e+19]')
    value = orjson.loads(source)
    assert json_body.exact(value, kind(source)) is True
    assert json_body.dumps_exact(value, kind(source)) == source


def test_a_small_value_with_an_integer_beyond_64_bits_as_a_memoryview_is_not_exact():
    source = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"n": BIG}}).encode()
    assert json_body.exact(orjson.loads(source), memoryview(source)) is False


@pytest.mark.parametrize("n,exact", [(-(2**63), True), (2**64 - 1, True), (-127, True), (-(2**63) - 1, False), (2**64, False)])
def test_integers_are_exact_from_minus_2_to_the_63_to_below_2_to_the_64(n, exact):
    """A float written as such (``1e19``, integral and >= 2**63) makes the body suspect; the
    source re-read with exact integers then decides, by the range orjson keeps (int64 and uint64)."""
    source = b'{"f":1e19,"n":%d}' % n
    assert json_body.exact(orjson.loads(source), source) is exact
