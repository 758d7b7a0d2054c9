"""The compiled walkers (issue 16) and the records built for delivery change no output and no record.

:mod:`mcpx_core.walkers` compiles the schema walk of :class:`downgrade.Walk` into closures per
definition; :meth:`Walk.log` makes the summaries of removed values (and of snapshots of
replacement blocks) when a record is first read, and builds records with the message's context
(``downgrade(stamp=...)``). Here every message type of every revision is drawn from its
schema.json (plus the 2026-07-28 examples and rewrite-heavy results) and downgraded to every
revision, strict and lenient, once as the addon does it and once with the generic walk, summaries
made at once and records stamped afterwards (:meth:`Change.stamped`). The delivered message, the
reply and every change record (its text included) must be equal.
"""
from __future__ import annotations

import copy
import os

import orjson
import pytest

from mcpx_core import downgrade as dg
from mcpx_core import revisions
from mcpx_core.changes import Change, Summary
from mcpx_core.downgrade import classify, downgrade
from examples_lib import example_messages
from property_lib import PAIRS, applicable, drawn_differences, message_types

EXAMPLES = int(os.environ.get("MCPX_PROPERTY_EXAMPLES", "8"))
STAMP = ("flow-1", "session-1", None, 7, None, None, None)  # direction, method, revisions filled per message


def _record(c: Change) -> dict:
    d = c.as_dict()
    d.pop("time")
    return d


def _both(monkeypatch, t, msg, to, policy="strict"):
    """(as the addon walks, generic reference), each on its own copy of ``msg``."""
    stamp = (STAMP[0], STAMP[1], t.direction, STAMP[3], t.method, t.revision, to)

    def fast():
        out = downgrade(copy.deepcopy(msg), classify(msg), t.method, t.revision, to, t.direction, policy, request_id=7,
                        stamp=stamp)
        return out.message, out.reply, [_record(c) for c in out.changes]

    def slow():
        out = downgrade(copy.deepcopy(msg), classify(msg), t.method, t.revision, to, t.direction, policy, request_id=7)
        assert not any(isinstance(c.__dict__["before"], Summary) or isinstance(c.__dict__["after"], Summary)
                       for c in out.changes)
        return out.message, out.reply, [_record(c.stamped(0.0, *stamp)) for c in out.changes]

    got = fast()
    with monkeypatch.context() as m:
        m.setattr(dg, "COMPILED", False)
        m.setattr(dg, "LAZY_SUMMARIES", False)
        want = slow()
    return got, want


@pytest.mark.parametrize("frm,to", PAIRS, ids=[f"{f}->{t}" for f, t in PAIRS])
def test_compiled_walk_changes_nothing(frm, to, monkeypatch):
    n, diffs = drawn_differences(frm, to, EXAMPLES, lambda t, msg, policy: _both(monkeypatch, t, msg, to, policy))
    assert n > 0 and diffs == []


def _result_type(revision: str, method: str):
    return next(t for t in message_types(revision) if t.kind == "result" and t.method == method and t.direction == "s2c")


LINK = {"type": "resource_link", "uri": "file:///a.py", "name": "a.py", "mimeType": "text/x-python",
        "annotations": {"audience": ["user"], "priority": 0.5, "lastModified": "2025-01-12T15:00:58Z"},
        "_meta": {"io.modelcontextprotocol/x": 1, "example.com/y": {"deep": [1, 2]}}}


def test_compiled_walk_on_examples_and_rewrite_heavy_results(monkeypatch):
    """The 2026-07-28 spec examples toward every revision, and results where many union members
    need a rewrite (links with annotations and _meta the walk trims after the rewrite, audio,
    tool_use, unknown types, blocks nested in tool results), tool lists where every tool needs changes."""
    diffs = []
    for name, t, msg in example_messages():
        for to in revisions.REVISIONS:
            if applicable(t, to):
                got, want = _both(monkeypatch, t, msg, to)
                if got != want:
                    diffs.append((name, to))
    assert diffs == []
    blocks = [LINK, {"type": "text", "text": "x" * 100, "annotations": {"lastModified": "z", "audience": ["user"]}},
              {"type": "audio", "data": "QUJD" * 40, "mimeType": "audio/wav", "annotations": {"priority": 1}},
              {"type": "tool_use", "id": "u", "name": "n", "input": {"a": [1, {"b": 2}]}},
              {"type": "tool_result", "toolUseId": "u", "content": [LINK, {"type": "text", "text": "t"}]},
              {"type": "made_up", "x": {"y": {"z": 1}}}, {"type": ["unhashable"]}, "not a block", 7]
    call = {"jsonrpc": "2.0", "id": 1, "result": {"content": blocks * 3, "structuredContent": {"n": 1}, "isError": False}}
    tool = {"name": "t", "title": "T", "icons": [{"src": "https://x/i.png", "sizes": ["48x48"]}],
            "inputSchema": {"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema"},
            "outputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "annotations": {"readOnlyHint": True, "title": "A"}}
    tools = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [tool, {**tool, "annotations": {"x": 1}}, {**tool, "title": {"odd": 1}}] * 3}}
    for revision, method, msg in (("2026-07-28", "tools/call", call), ("2025-11-25", "tools/call", call),
                                  ("2026-07-28", "tools/list", tools), ("2025-11-25", "tools/list", tools)):
        t = _result_type(revision, method)
        msg = orjson.loads(orjson.dumps(msg))  # as parsed: nothing shared
        for to in revisions.REVISIONS:
            for policy in ("strict", "lenient"):
                got, want = _both(monkeypatch, t, msg, to, policy)
                assert got == want, (revision, method, to, policy)


def test_records_nobody_reads_are_only_counted():
    """``summaries``: records past the flow's kept ones have no before/after (nobody reads them),
    the others the same text as always."""
    t = _result_type("2025-06-18", "tools/call")
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"content": [LINK] * 4}}
    full = downgrade(copy.deepcopy(msg), "result", t.method, t.revision, "2025-03-26", "s2c")
    part = downgrade(copy.deepcopy(msg), "result", t.method, t.revision, "2025-03-26", "s2c", summaries=3)
    assert full.message == part.message and [c.key() for c in full.changes] == [c.key() for c in part.changes]
    assert [c.as_dict() for c in part.changes[:3]] == [c.as_dict() for c in full.changes[:3]]
    assert all(c.before is None and c.after is None for c in part.changes[3:])
    assert all(c.before is not None for c in full.changes)
