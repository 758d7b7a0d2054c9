"""``json_body.ArraySplit`` by itself: a list result seen as a skeleton and its array's elements.

tests/schema/test_split.py checks that a split body is delivered as the whole body would be,
through the rewriter; these tests pin the pieces (issue 19, survivors of mutation testing):
each element's value and exact bytes (a ``},{`` inside a string or a nested object does not end
an element), the body put back together when no consumer read the elements, and a skeleton whose
array was dropped with its parent.
"""
from __future__ import annotations

import orjson
import pytest

from mcpx_core.framing import json_body

#: a tools/list result whose first tool has "},{" in a string and whose second nests objects
BODY = (b'{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a","d":"x},{y"},{"name":"b","s":{"t":{}}},'
        b'{"name":"c"}],"nextCursor":"n"}}')
PATH = ("result", "tools")


def test_elements_are_read_one_at_a_time_with_their_exact_bytes():
    split = json_body.split_array(BODY, PATH)
    assert (split.start, split.end) == (BODY.index(b"[{"), BODY.index(b"]"))
    assert split.skeleton == {"jsonrpc": "2.0", "id": 7, "result": {"tools": [json_body.SPLIT_SENTINEL], "nextCursor": "n"}}
    assert split.sentinel is split.skeleton["result"]["tools"]
    assert [(v, bytes(b)) for v, b in split.elements()] == [
        ({"name": "a", "d": "x},{y"}, b'{"name":"a","d":"x},{y"}'),
        ({"name": "b", "s": {"t": {}}}, b'{"name":"b","s":{"t":{}}}'),
        ({"name": "c"}, b'{"name":"c"}')]


def test_elements_no_consumer_read_are_put_back_as_they_came():
    split = json_body.split_array(BODY, PATH)
    assert split.assemble(orjson.dumps(split.skeleton)) == BODY
    split.skeleton["result"]["nextCursor"] = "m"  # a rewritten skeleton, elements untouched
    assert split.assemble(orjson.dumps(split.skeleton)) == BODY.replace(b'"n"}}', b'"m"}}')


def test_walked_elements_are_joined_with_commas():
    split = json_body.split_array(BODY, PATH)
    split.walked, split.out = True, [b'{"name":"a"}', memoryview(b'{"name":"b"}')]
    assert split.assemble(orjson.dumps(split.skeleton)) == \
        b'{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a"},{"name":"b"}],"nextCursor":"n"}}'


def test_a_skeleton_without_the_array_is_delivered_as_it_is():
    split = json_body.split_array(BODY, PATH)
    assert split.assemble(b'{"jsonrpc":"2.0","id":7,"result":{}}') == b'{"jsonrpc":"2.0","id":7,"result":{}}'
    with pytest.raises(json_body.SplitFailed, match="^sentinel found twice$"):
        split.assemble(orjson.dumps([split.skeleton, split.skeleton]))


def test_elements_not_joined_by_single_commas_fail_the_split():
    body = b'{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a"}, {"name":"b"}]}}'
    split = json_body.split_array(body, PATH)
    with pytest.raises(json_body.SplitFailed, match=f"^no element parses from offset {body.index(b'[{') + 1}$"):
        list(split.elements())
