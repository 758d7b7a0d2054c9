"""The walk's shortcuts (issue 7) change no output and no record.

:func:`shapes.leaf_keys` lets :meth:`Walk.named` return an object whose keys need no work, and
:func:`shapes.leaf_members` lets :meth:`Walk.array` skip such union members (content blocks).
Here every message type of every revision is drawn from its schema.json (plus the 2026-07-28
examples and recorded flows' messages) and downgraded to every revision twice: with the shortcuts
and with them switched off. The delivered message, the reply and every change record must be equal.
"""
from __future__ import annotations

import copy
import os

import orjson
import pytest

from mcpx_core import downgrade as dg
from mcpx_core import revisions, shapes
from mcpx_core.downgrade import classify, downgrade
from examples_lib import example_messages
from property_lib import PAIRS, applicable, drawn_differences, message_types

EXAMPLES = int(os.environ.get("MCPX_PROPERTY_EXAMPLES", "8"))


def _both(monkeypatch, t, msg, to, policy="strict"):
    """(outcome with shortcuts, outcome without), each on its own copy of ``msg``."""
    def run():
        out = downgrade(copy.deepcopy(msg), classify(msg), t.method, t.revision, to, t.direction, policy, request_id=7)
        return out.message, out.reply, [c.as_dict() for c in out.changes]

    fast = run()
    with monkeypatch.context() as m:
        m.setattr(shapes, "leaf_keys", lambda model, name: None)
        m.setattr(shapes, "leaf_members", lambda walk, items: None)
        m.setattr(shapes, "quiet_plan", lambda model, name: None)
        m.setattr(dg, "_LEAF", {})
        m.setattr(dg, "COMPILED", False)  # the compiled walkers hold their shortcuts: the generic walk without them
        slow = run()
    return fast, slow


@pytest.mark.parametrize("frm,to", PAIRS, ids=[f"{f}->{t}" for f, t in PAIRS])
def test_shortcuts_change_nothing(frm, to, monkeypatch):
    n, diffs = drawn_differences(frm, to, EXAMPLES, lambda t, msg, policy: _both(monkeypatch, t, msg, to, policy))
    assert n > 0 and diffs == []


def test_shortcuts_on_examples_and_content_blocks(monkeypatch):
    """The 2026-07-28 spec examples toward every revision, and a result whose blocks take both
    paths (plain blocks skip the walk, one with a field the receiver lacks does not)."""
    diffs = []
    for name, t, msg in example_messages():
        for to in revisions.REVISIONS:
            if applicable(t, to):
                fast, slow = _both(monkeypatch, t, msg, to)
                if fast != slow:
                    diffs.append((name, to))
    assert diffs == []
    t = next(t for t in message_types("2025-06-18") if t.kind == "result" and t.method == "tools/call")
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"content": [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b", "annotations": {"audience": ["user"], "lastModified": "2025-01-12T15:00:58Z"}},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "text", "text": "c", "extra": 1}]}}
    fast, slow = _both(monkeypatch, t, msg, "2025-03-26")
    assert fast == slow
    assert fast[0]["result"]["content"] == [
        {"type": "text", "text": "a"}, {"type": "text", "text": "b", "annotations": {"audience": ["user"]}},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"}, {"type": "text", "text": "c"}]
    assert [(c["pointer"], c["action"], c["rule"]) for c in fast[2]] == [
        ("/result/content/1/annotations/lastModified", "drop", "ANN-lastModified"),
        ("/result/content/3/extra", "drop", "SCHEMA-undefined")]


def test_composition_search_over_the_whole_tools_list():
    """rules/tools.py searches all inputSchemas of a tools/list result at once; only when a
    composition key is there is each tool checked, so exactly the tools that use one are logged."""
    plain = {"name": "a", "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "description": 'says "anyOf": no'}}}}
    nested = {"name": "b", "inputSchema": {"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}, {"type": "null"}]}}}}
    for tools, expected in (([plain, plain], []),
                            ([plain, nested, plain], [("/result/tools/1/inputSchema", "keep", "TOOL-inputSchema-open")])):
        msg = {"jsonrpc": "2.0", "id": 1, "result": {"tools": copy.deepcopy(tools)}}
        out = downgrade(msg, "result", "tools/list", "2025-06-18", "2025-03-26", "s2c")
        assert [c.key() for c in out.changes] == expected
        assert out.message["result"]["tools"] == tools
    assert [c.detail for c in out.changes] == ["JSON Schema keywords kept: oneOf"]


def test_tool_shortcut_only_for_tools_the_hook_leaves_alone(monkeypatch):
    """A Tool skips the walk only when rules/tools.py's hook says it has nothing to do
    (``tool_definition.quiet``); each tool below but the first needs the hook or the walk. The
    composition case is a list of its own: one such key makes every tool of its list checked."""
    t = next(t for t in message_types("2025-11-25") if t.kind == "result" and t.method == "tools/list")
    base = {"name": "a", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}
    lists = {
        "without composition": ([
            base,
            {**base, "title": "T"},
            {**base, "outputSchema": {"type": "object"}},
            {**base, "inputSchema": {"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema"}},
            {**base, "annotations": {"readOnlyHint": True, "extra": 1}},
        ], [
            ("/result/tools/1/title", "rewrite", "TOOL-title"),
            ("/result/tools/2/outputSchema", "drop", "TOOL-outputSchema"),
            ("/result/tools/3/inputSchema/$schema", "keep", "TOOL-inputSchema-$schema"),
            ("/result/tools/4/annotations/extra", "drop", "SCHEMA-undefined"),
        ]),
        "with composition": ([
            base,
            {**base, "inputSchema": {"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}]}}}},
        ], [
            ("/result/tools/1/inputSchema", "keep", "TOOL-inputSchema-open"),
        ]),
        "outputSchema the receiver declares": ([  # toward 2025-06-18: the key is allowed, the hook still logs
            base,
            {**base, "outputSchema": {"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema"}},
        ], [
            ("/result/tools/1/outputSchema/$schema", "keep", "TOOL-inputSchema-$schema"),
        ]),
    }
    for name, (tools, expected) in lists.items():
        msg = orjson.loads(orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}))  # as parsed: nothing shared
        fast, slow = _both(monkeypatch, t, msg, "2025-06-18" if name.startswith("outputSchema") else "2025-03-26")
        assert fast == slow, name
        assert [(c["pointer"], c["action"], c["rule"]) for c in fast[2]] == expected, name
        assert fast[0]["result"]["tools"][0] == base, name
