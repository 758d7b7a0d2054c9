"""The dual-result audit and the dual-result policies (mcpx_core.audit), value by value."""
from __future__ import annotations

import orjson
import pytest

from mcpx_core import audit
from mcpx_core.audit import Finding, admits, make_structured_visible, make_text_visible

TEXT = "results truncated, use offset=10 MARKER-A"
STRUCTURED = {"items": [f"doc-{i}" for i in range(1, 11)], "total": 42, "next_cursor": "MARKER-B"}


def result(text, structured, *more) -> dict:
    return {"content": [{"type": "text", "text": text}, *more], "structuredContent": structured}


def test_two_marker_result():
    f = audit.audit(result(TEXT, STRUCTURED))
    assert f.text_lacks == [("/total", 42), ("/next_cursor", "MARKER-B"), *((f"/items/{i}", f"doc-{i + 1}") for i in range(10))]
    assert f.structured_lacks == ["offset=10", "MARKER-A"] and not f.partial
    assert f.detail("search") == ('tool search: the text lacks 12 values of structuredContent: /total 42, /next_cursor "MARKER-B", '
                                  '/items/0 "doc-1", /items/1 "doc-2", /items/2 "doc-3", …+7; '
                                  'structuredContent lacks 2 markers of the text: "offset=10", "MARKER-A"')
    assert f.summary("search", 7) == {
        "id": 7, "tool": "search", "text_lacks": 12,
        "text_lacks_shown": ['/total 42', '/next_cursor "MARKER-B"', '/items/0 "doc-1"', '/items/1 "doc-2"', '/items/2 "doc-3"'],
        "structured_lacks": 2, "structured_lacks_shown": ['"offset=10"', '"MARKER-A"']}
    c = audit.audit_change(f, None)
    assert (c.pointer, c.action, c.rule, c.before, c.after, c.profile) == ("/result", "audit", "MCPX-audit-dual", None, None, None)
    assert c.detail.startswith("the text lacks 12 values")


@pytest.mark.parametrize("text,structured", [
    (orjson.dumps(STRUCTURED).decode(), STRUCTURED),  # the SDKs' JSON text
    (orjson.dumps(STRUCTURED, option=orjson.OPT_INDENT_2).decode(), STRUCTURED),
    ("21 C", {"temperature": 21}),
    ("2 + 3 = 5", {"result": "2 + 3 = 5"}),  # numbers inside a string of the structured half
    ("Weather in Oslo: 5.5°C, humidity 80%, windy", {"city": "Oslo", "temperature": 5.5, "humidity": 80, "windy": True, "note": None}),
    ("Items: doc-1, doc-2. Next: MARKER-B; total 2", {"items": ["doc-1", "doc-2"], "next": "MARKER-B", "total": 2}),
    ("Found 3 results, complete", {"results": [[], [], []], "complete": True, "cursor": None}),  # an array's length counts
])
def test_halves_that_agree_give_no_finding(text, structured):
    assert audit.audit(result(text, structured)) is None


def test_what_counts_as_carried():
    f = audit.audit(result("see doc-10 and https://example.com/x?q=1 for #4 (3 of them)", {"id": "doc-1", "ok": False, "n": 3}))
    assert f.text_lacks == [("/id", "doc-1"), ("/ok", False)]  # doc-1 is not the word doc-10; "ok" is not mentioned
    assert f.structured_lacks == ["doc-10", "https://example.com/x?q=1", "4"]
    json_text = audit.audit(result('{"a": 1, "b": "x", "k": {"z": 2}}', {"a": 1, "b": "y", "c": True}))
    assert json_text.text_lacks == [("/b", "y"), ("/c", True)] and json_text.structured_lacks == ["x", "2", "k", "z"]


def test_results_without_both_halves_are_not_audited():
    assert audit.audit({"content": [{"type": "text", "text": "x"}]}) is None
    assert audit.audit({"content": [{"type": "image", "data": "", "mimeType": "image/png"}], "structuredContent": {"a": 1}}) is None
    assert audit.audit({"content": [{"type": "text", "text": "x"}], "structuredContent": None}) is None
    assert audit.audit([]) is None
    embedded = {"content": [{"type": "resource", "resource": {"uri": "u", "text": "a=1"}}], "structuredContent": {"a": 1}}
    assert audit.audit(embedded) is None  # an embedded text resource is text too


def test_bounds(monkeypatch):
    monkeypatch.setattr(audit, "MAX_VALUES", 5)
    f = audit.audit(result("nothing", {"v": [f"x{i}" for i in range(100)]}))
    assert len(f.text_lacks) == 5 and f.partial and f.detail(None).endswith(" (compared in part: result beyond mcpx's audit bounds)")


@pytest.mark.parametrize("schema,ok", [
    (None, True),
    ({"type": "object", "properties": {"items": {"type": "array"}}, "required": ["items"], "title": "Page"}, True),
    ({"type": "object", "additionalProperties": {}}, True),
    ({"type": "object", "additionalProperties": {"type": "string"}}, True),
    ({"type": "object", "additionalProperties": False}, False),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, False),
    ({"type": "object", "properties": {"content_text": {"type": "integer"}}}, False),
    ({"type": "object", "maxProperties": 3}, False),
    ({"type": "object", "patternProperties": {"^c": {"type": "integer"}}}, False),
    ({"allOf": [{"type": "object"}]}, False),
    ({"type": "array"}, False),
    ("not a schema", False),
])
def test_admits(schema, ok):
    assert admits(schema, "content_text") is ok


def test_text_visible():
    r = result(TEXT, STRUCTURED)
    [c] = make_text_visible(r, "opencode")
    assert r["content"][1] == {"type": "text", "text": orjson.dumps(STRUCTURED).decode()}
    assert (c.pointer, c.action, c.rule, c.after, c.profile, c.detail) == (
        "/result/content/1", "synthesize", "MCPX-dual-text-visible", "text block with the JSON of /result/structuredContent", "opencode",
        "profile opencode: the host shows its model only the text; structuredContent carried 12 values the text lacks")
    assert make_text_visible(r, "opencode") == []  # the text now carries it: nothing more
    agree = result("21 C", {"temperature": 21})
    assert make_text_visible(agree, "opencode") == [] and len(agree["content"]) == 1


def test_text_visible_never_writes_a_number_it_cannot_keep_exactly():
    from mcpx_core.framing import json_body
    big = json_body.parse(b'{"content":[{"type":"text","text":"x"}],"structuredContent":{"n":123456789012345678901234567890}}').messages[0]
    with pytest.raises(ValueError, match="structuredContent"):
        make_text_visible(big, "opencode")


def test_structured_visible():
    r = result(TEXT, dict(STRUCTURED))
    [c] = make_structured_visible(r, "claude-code", "content_text", True, None)
    assert r["structuredContent"] == {**STRUCTURED, "content_text": TEXT} and len(r["content"]) == 1
    assert (c.pointer, c.action, c.rule, c.after, c.profile, c.detail) == (
        "/result/structuredContent/content_text", "synthesize", "MCPX-dual-structured-visible", f'"{TEXT}"', "claude-code",
        "profile claude-code: the host shows its model only structuredContent; the text carried 2 markers it lacks")
    assert make_structured_visible(r, "claude-code", "content_text", True, None) == []  # it carries them now


@pytest.mark.parametrize("structured,known,schema,why", [
    (dict(STRUCTURED), False, None, "the tool's outputSchema is unknown (no tools/list listed it in this session)"),
    (dict(STRUCTURED), True, {"type": "object", "additionalProperties": False}, "the tool's outputSchema may not admit a key 'content_text'"),
    ({**STRUCTURED, "content_text": 1}, True, None, "structuredContent already has a key 'content_text'"),
    ([1, 2], True, None, "structuredContent is not an object"),
])
def test_structured_visible_leaves_what_it_cannot_change(structured, known, schema, why):
    r = result(TEXT, structured)
    before = orjson.dumps(r)
    [c] = make_structured_visible(r, "claude-code", "content_text", known, schema)
    assert orjson.dumps(r) == before
    assert (c.pointer, c.action, c.rule, c.detail) == (
        "/result/structuredContent", "keep", "MCPX-dual-structured-visible",
        f"profile claude-code: left as sent: {why}; the text carried 2 markers it lacks")


def test_finding_is_falsy_when_empty():
    assert not Finding() and Finding(structured_lacks=["x"])


# -- issue 16: the prose scanned in O(window) -------------------------------------------------------
def _prose_whole(texts, parsed, joined):
    """The reference: every text that is prose (not JSON, not found whole in ``joined``)."""
    out = []
    for text, value in zip(texts, parsed):
        stripped = text.strip()
        if value is audit._NOT_JSON and not (stripped and len(stripped) <= len(joined) and stripped in joined):
            out.append(text)
    return out


from hypothesis import given, settings, strategies as st  # noqa: E402

_TEXTS = st.lists(st.one_of(st.text(alphabet="ab \n\u2003=1X", max_size=40), st.text(alphabet="ab =", max_size=6),
                            st.text(alphabet="ab =1X", min_size=300, max_size=2500),
                            st.sampled_from(['{"a": 1}', " [1]", "ab", " ab ", "x=1"])), max_size=60)


@settings(max_examples=600, deadline=None)
@given(texts=_TEXTS, joined=st.sampled_from(["", "ab", "ab x=1 ab", "a" * 3000]), window=st.sampled_from([8, 40, 200, None]))
def test_prose_window_reads_what_the_whole_prose_gives(texts, joined, window):
    """_prose keeps only the texts _window reads (its head and tail) of a long text half: the window,
    and whether it was cut, are those of the whole prose (small windows: every edge is crossed)."""
    parsed = [audit._as_json(t) for t in texts]
    with pytest.MonkeyPatch.context() as mp:
        if window is not None:
            mp.setattr(audit, "MARKER_WINDOW", window)
        assert audit._window(audit._prose(texts, parsed, joined)) == audit._window(_prose_whole(texts, parsed, joined))


def test_as_json_first_characters():
    """The fast test of a text's first character lets through what lstrip would (any whitespace);
    orjson then decides (JSON whitespace only: an em space before ``[`` is not JSON)."""
    for text, is_json in (('{"a":1}', True), ("\u2003[1]", False), ("\r\n[1]", True), ("\n\t {}", True), ("x{}", False), ("", False), (" x", False)):
        assert (audit._as_json(text) is not audit._NOT_JSON) == is_json


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("aZ9 _=\n\t/@#.-é\u00a0\u2003\x1c\x85xq"), max_size=60))
def test_marker_tokens_are_the_candidate_pattern(text):
    """_markers splits on whitespace and searches each token: the tokens _CANDIDATE finds (every kind of whitespace)."""
    has = audit._CANDIDATE_CHAR.search
    assert [t for t in text.split() if has(t)] == audit._CANDIDATE.findall(text)
