"""The dual-result comparison computed once per tools/call result (audit.share_comparisons): the audit
before the walk and the structuredContent rule in it (rules/tools.py ``_text_lacks``) ask the same
question of the same two halves; the answer and the records are those of two separate comparisons."""
from __future__ import annotations

import orjson
import pytest

from mcpx_core import audit
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.session import SessionTracker


@pytest.fixture
def counted(monkeypatch):
    calls = []
    real = audit._text_lacks

    def count(*a):
        calls.append(a[0])
        return real(*a)
    monkeypatch.setattr(audit, "_text_lacks", count)
    return calls


def _deliver(result: dict) -> tuple[dict, list]:
    store = SessionTracker()
    s = store.create("k")
    s.client_rev, s.server_rev = "2025-03-26", "2025-06-18"
    rw = Rewriter(store)
    exch = Exchange(flow_id="f", session=s, is_mcp=True, single_request_id=1)
    exch.request_ids[1] = "tools/call"
    out = rw.response_json(exch, orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": result}))
    return orjson.loads(out), [(c.pointer, c.action, c.rule, c.detail) for c in exch.changes]


def test_a_text_half_that_says_it_all_is_compared_once(counted):
    """fastmcp's plain return value: the 2025-03-26 client gets the one text block the server sent."""
    got, records = _deliver({"content": [{"type": "text", "text": "hi"}], "structuredContent": {"result": "hi"}})
    assert got["result"] == {"content": [{"type": "text", "text": "hi"}]}
    assert records == [("/result/structuredContent", "drop", "SC-structuredContent",
                        "the text half carries every value of structuredContent: no text block of its JSON added")]
    assert counted == [["hi"]]


def test_a_text_half_that_lacks_a_value_is_compared_once_and_gets_the_json(counted):
    got, records = _deliver({"content": [{"type": "text", "text": "total 3"}], "structuredContent": {"total": 3, "page": 2}})
    assert got["result"]["content"] == [{"type": "text", "text": "total 3"}, {"type": "text", "text": '{"total":3,"page":2}'}]
    assert [r[:3] for r in records] == [("/result", "audit", "MCPX-audit-dual"), ("/result/content/1", "rewrite", "SC-structuredContent"),
                                        ("/result/structuredContent", "drop", "SC-structuredContent")]
    assert counted == [["total 3"]]


def test_the_window_shares_only_the_same_object_and_equal_texts(counted):
    sc = {"a": 1}
    audit.text_lacks(["a 1"], sc)
    audit.text_lacks(["a 1"], sc)
    assert len(counted) == 2  # outside the window: each call compares
    audit.share_comparisons(True)
    try:
        first = audit.text_lacks(["a 1"], sc)
        assert audit.text_lacks(["a 1"], sc) is first and len(counted) == 3
        audit.text_lacks(["a 1", "more"], sc)  # other texts
        audit.text_lacks(["a 1", "more"], {"a": 1})  # an equal value, another object
        assert len(counted) == 5
    finally:
        audit.share_comparisons(False)
    sc["b"] = 2  # changed in place after the window: compared afresh
    assert audit.text_lacks(["a 1"], sc) == ([("/b", 2)], False) and len(counted) == 6
