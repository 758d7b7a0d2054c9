"""Large list results read an element at a time (issue 7) deliver what parsing them whole does.

``Rewriter.response_json`` / ``sse_event`` split a list result of at least ``SPLIT_MIN`` bytes into
a skeleton and its array's elements (``json_body.split_array``). Here ``SPLIT_MIN`` is 0, and every
body is rewritten twice, split and whole: the delivered JSON, the change records and the flow's
message entries must be equal. Bodies: list results drawn from each revision's schema.json toward
every revision, and hand-made ones that try to fool the splitter.
"""
from __future__ import annotations

import copy
import os

import orjson
import pytest

from mcpx_core import revisions, rewrite
from mcpx_core.framing import json_body
from mcpx_core.framing.sse import SSEParser
from mcpx_core.rewrite import Exchange, Rewriter, SSERewriter
from mcpx_core.session import SessionTracker
from property_lib import each_drawn, types_toward

EXAMPLES = int(os.environ.get("MCPX_PROPERTY_EXAMPLES", "8"))
LISTS = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")
PAIRS = [(f, t) for i, f in enumerate(revisions.REVISIONS) for t in revisions.REVISIONS[: i + 1]]


def rewrite_body(monkeypatch, body: bytes, method: str, frm: str, to: str, split: bool, policy="strict", sse=False):
    """(delivered JSON or None, records without time/flow, message entries, whether it split)."""
    store = SessionTracker()
    s = store.create("k")
    s.server_rev, s.client_rev = frm, to
    rw = Rewriter(store, policy=policy)
    exch = Exchange(flow_id="f", session=s, is_mcp=True, single_request_id=7)
    exch.request_ids[7] = method
    seen = []
    real = json_body.split_array
    monkeypatch.setattr(json_body, "split_array", lambda *a: seen.append(real(*a)) or seen[-1])
    monkeypatch.setattr(rewrite.body, "SPLIT_MIN", 0 if split else 1 << 40)
    if sse:
        raw = b"event: message\ndata: " + body.replace(b"\n", b"\ndata: ") + b"\n\n"  # a line break: another data line
        got = SSERewriter(rw, exch).whole(raw)
        evs = SSEParser().feed(got)
        out = None if got == raw else [orjson.loads(e.payload) for e in evs if e.payload]
    else:
        new = rw.response_json(exch, body)
        out = None if new is None else (orjson.loads(new) if new else b"")
    records = [{k: v for k, v in c.as_dict().items() if k not in ("time", "flow")} for c in exch.changes]
    split_used = bool(seen and seen[-1] is not None and not seen[-1].failed)
    return out, records, exch.messages, split_used


def both(monkeypatch, body, method, frm, to, policy="strict", sse=False):
    a = rewrite_body(monkeypatch, body, method, frm, to, True, policy, sse)
    b = rewrite_body(monkeypatch, body, method, frm, to, False, policy, sse)
    return a, b


@pytest.mark.parametrize("frm,to", PAIRS, ids=[f"{f}->{t}" for f, t in PAIRS])
def test_split_equals_whole_for_drawn_list_results(frm, to, monkeypatch):
    diffs, split_n = [], 0
    for t in types_toward(frm, to):
        if t.kind != "result" or t.method not in LISTS:
            continue

        def run(msg):
            variants = [msg]
            if "resultType" in msg["result"]:  # drawn values are rarely "complete", which keeps the result
                variants.append({**msg, "result": {**msg["result"], "resultType": "complete"}})
            for m in variants:
                check(m)

        def check(msg, t=t):
            nonlocal split_n
            try:
                body = orjson.dumps(msg)
            except orjson.JSONEncodeError:  # an integer beyond 64 bits: see test_big_integer_in_an_element
                return
            for policy, sse in (("strict", False), ("lenient", False), ("strict", True)):
                (o1, r1, m1, used), (o2, r2, m2, _) = both(monkeypatch, copy.deepcopy(body), t.method, frm, to, policy, sse)
                split_n += used
                if (o1, r1, m1) != (o2, r2, m2):
                    diffs.append((t.method, policy, sse, body[:300], o1 == o2, r1 == r2, m1 == m2, str(r1)[:600], str(r2)[:600]))

        each_drawn(t, EXAMPLES * 2, run)
    assert diffs == [] and split_n > 0


TOOL = {"name": "t", "description": "d", "inputSchema": {"type": "object"}}


def tools_body(tools, extra=b"", result_extra=b"") -> bytes:
    arr = b"[" + b",".join(orjson.dumps(t) for t in tools) + b"]"
    return b'{"jsonrpc":"2.0","id":7,"result":{"tools":' + arr + result_extra + b"}" + extra + b"}"


def test_tricky_bodies_split_or_fall_back_to_the_same_result(monkeypatch):
    tricky = [
        {**TOOL, "description": 'text with "tools":[{ and },{ and }] inside'},
        {**TOOL, "inputSchema": {"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}},
        {**TOOL, "title": "T", "annotations": {"readOnlyHint": True}},
        {**TOOL, "name": "}]"},
    ]
    cases = {
        "compact": tools_body(tricky),
        "cursor with }] after the list": tools_body(tricky, result_extra=b',"nextCursor":"a}]b"'),
        "_meta holding a tools list": tools_body(tricky, extra=b',"_meta":{"x":{"tools":[{"a":1}]}}'),
        "spaces between elements": tools_body(tricky).replace(b"},{", b"}, {"),
        "one element": tools_body(tricky[:1]),
    }
    for name, body in cases.items():
        (o1, r1, m1, used), (o2, r2, m2, _) = both(monkeypatch, body, "tools/list", "2025-06-18", "2025-03-26")
        assert (o1, r1, m1) == (o2, r2, m2), name
        assert used == (name != "spaces between elements"), name
    out = rewrite_body(monkeypatch, cases["compact"], "tools/list", "2025-06-18", "2025-03-26", True)[0]
    assert out["result"]["tools"][2] == {**TOOL, "annotations": {"readOnlyHint": True, "title": "T"}}
    assert out["result"]["tools"][3]["name"] == "}]"


def test_invalid_utf8_in_an_element_passes_through(monkeypatch):
    """The same record either way; split, the flow also lists the message (its skeleton was read,
    and the session counts it as the answer to its request). Any element that does not parse
    (invalid UTF-8 or JSON) is found only while the elements are read."""
    body = tools_body([TOOL, {**TOOL, "title": "x"}]).replace(b'"d"', b'"\xff"', 1)
    (o1, r1, m1, _), (o2, r2, m2, _) = both(monkeypatch, body, "tools/list", "2025-06-18", "2025-03-26")
    assert o1 is None and o2 is None and r1 == r2
    assert [(r["action"], r["rule"], r["detail"]) for r in r1] == [("passthrough", "PASSTHROUGH-error", "body is not valid UTF-8")]
    assert m2 == [] and m1 == [{"direction": "s2c", "kind": "result", "method": "tools/list", "id": 7}]


def test_result_dropped_with_its_array(monkeypatch):
    """2026-07-28 resultType "input_required" toward a legacy client: the result becomes an error.
    Its record summarises the whole result, array included, so the split gives way to a whole parse
    (a record never shows the stand-in)."""
    body = tools_body([TOOL], result_extra=b',"resultType":"input_required","ttlMs":0,"cacheScope":"private"')
    (o1, r1, m1, used), (o2, r2, m2, _) = both(monkeypatch, body, "tools/list", "2026-07-28", "2025-06-18")
    assert not used and (o1, r1, m1) == (o2, r2, m2) and "error" in o1
    assert r1[0]["before"].startswith('{tools: [{…3 keys}], resultType: "input_required"')


def test_big_integer_in_an_element(monkeypatch):
    """An element that keeps an integer orjson cannot hold exactly: split, it is delivered as its own
    bytes while another element changes; whole, the body holds a value the rewrite would alter, so
    it is forwarded untouched (json_body.INEXACT)."""
    big = b'{"name":"big","description":"d","inputSchema":{"type":"object","maximum":123456789012345678901234567890}}'
    body = b'{"jsonrpc":"2.0","id":7,"result":{"tools":[' + big + b"," + orjson.dumps({**TOOL, "title": "T"}) + b"]}}"
    store = SessionTracker()
    s = store.create("k")
    s.server_rev, s.client_rev = "2025-06-18", "2025-03-26"
    exch = Exchange(flow_id="f", session=s, is_mcp=True, single_request_id=7)
    exch.request_ids[7] = "tools/list"
    monkeypatch.setattr(rewrite.body, "SPLIT_MIN", 0)
    new = Rewriter(store).response_json(exch, body)
    assert new == (b'{"jsonrpc":"2.0","id":7,"result":{"tools":[' + big + b","
                   + orjson.dumps({**TOOL, "annotations": {"title": "T"}}) + b"]}}")
    out, records, _, _ = rewrite_body(monkeypatch, body, "tools/list", "2025-06-18", "2025-03-26", False)
    assert out is None and records[-1]["detail"] == json_body.INEXACT


def test_sse_event_with_several_data_lines_is_not_split(monkeypatch):
    """An unchanged element would keep its line break, and the event is re-emitted as one data
    line: an event whose data has a break is parsed whole (found by an adversarial review)."""
    body = tools_body([TOOL, {**TOOL, "title": "T"}]).replace(b'"description":"d",', b'"description":"d",\n', 1)
    (o1, r1, m1, used), (o2, r2, m2, _) = both(monkeypatch, body, "tools/list", "2025-06-18", "2025-03-26", sse=True)
    assert not used and (o1, r1, m1) == (o2, r2, m2)
    assert o1[0]["result"]["tools"][1]["annotations"] == {"title": "T"}


def test_a_look_alike_of_the_stand_in_elsewhere_in_the_body(monkeypatch):
    """A body that holds ["<the stand-in's text>"] outside the array is parsed whole."""
    look_alike = b',"_meta":{"x":' + orjson.dumps([json_body.SPLIT_SENTINEL]) + b"}"
    body = tools_body([TOOL, {**TOOL, "title": "T"}], result_extra=look_alike)
    (o1, r1, m1, used), (o2, r2, m2, _) = both(monkeypatch, body, "tools/list", "2025-06-18", "2025-03-26")
    assert not used and (o1, r1, m1) == (o2, r2, m2)
    assert o1["result"]["_meta"] == {"x": [json_body.SPLIT_SENTINEL]} and [r["rule"] for r in r1] == ["TOOL-title"]
