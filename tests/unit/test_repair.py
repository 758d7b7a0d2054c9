"""The repair stage (addon/mcpx_core/repair.py): what it repairs, what it leaves as sent, and the
SSE ``id:`` of a message mcpx does not deliver.

Each test gives one message and asserts the exact delivered bytes (or None: forwarded byte for
byte) and the exact change records (pointer, action, rule).
"""
from __future__ import annotations

import orjson
import pytest

from mcpx_core import repair, rewrite
from mcpx_core.framing.sse import SSEParser
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.session import SessionTracker
from schema_check import message_errors

A, B, C, D, E = "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"


def _exchange(server: str, client: str, method: str | None = None, rid=1) -> tuple[Rewriter, Exchange]:
    store = SessionTracker()
    s = store.create("k")
    s.server_rev, s.client_rev = server, client
    rw = Rewriter(store)
    exch = Exchange(flow_id="f", session=s, is_mcp=True, single_request_id=rid)
    if method:
        exch.request_ids[rid] = method
    return rw, exch


def keys(exch: Exchange) -> list[tuple]:
    return [c.key() for c in exch.changes]


def s2c(server: str, client: str, method: str, body: bytes) -> tuple[bytes | None, Exchange]:
    rw, exch = _exchange(server, client, method)
    return rw.response_json(exch, body), exch


# -- defaults ----------------------------------------------------------------------------------
def test_defaults_for():
    assert repair.defaults_for("ListToolsResult") == {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
    assert list(repair.defaults_for("ReadResourceResult")) == ["resultType", "ttlMs", "cacheScope"]
    assert repair.defaults_for("DiscoverResult") == {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
    assert repair.defaults_for("CallToolResult") == {"resultType": "complete"}
    assert repair.defaults_for("Result") == {"resultType": "complete"}
    assert repair.defaults_for("InputRequiredResult") == {}  # absent resultType reads "complete": never given one
    assert repair.defaults_for("Tool") == {} and repair.defaults_for("NoSuchThing") == {}
    for rev in (A, B, C, D):
        assert repair.defaults_for("ListToolsResult", rev) == {}
    assert all(d.source.startswith("schema/2026-07-28/schema.ts:") for d in repair.DEFAULTS)
    # one table: the cross-era upgrade rules (RES-*, synthesize) add the same values
    from mcpx_core.rules import upgrade
    assert upgrade.DEFAULTS == {"resultType": ("complete", "RES-resultType"), "ttlMs": (0, "RES-ttlMs"),
                                "cacheScope": ("private", "RES-cacheScope")}


# -- each kind -------------------------------------------------------------------------------------
def test_required_default_result_type_and_no_cache_fields_for_call_results():
    body = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}'
    out, exch = s2c(E, E, "tools/call", body)
    assert out == b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}}'
    assert keys(exch) == [("/result/resultType", "repair", "REPAIR-required-default")]


def test_input_required_result_gets_no_defaults():
    """An InputRequiredResult is typed by its resultType (the downgrade too: CallToolResultResponse.result
    is InputRequiredResult | CallToolResult); it carries no caching hints
    (docs/specification/2026-07-28/server/utilities/caching.mdx) and is valid as sent."""
    body = (b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"abc",'
            b'"inputRequests":{"r1":{"method":"roots/list","params":{"_meta":null}}}}}')
    for method in ("tools/call", "resources/read", "prompts/get", None):
        out, exch = s2c(E, E, method, body)
        assert out == body.replace(b',"params":{"_meta":null}', b',"params":{}')
        assert keys(exch) == [("/result/inputRequests/r1/params/_meta", "repair", "REPAIR-null-optional")]
        out, exch = s2c(E, E, method, body.replace(b'"_meta":null', b'"_meta":{}'))
        assert out is None and exch.changes == []


def test_another_result_type_leaves_the_method_s_result_type():
    """resultType is an open string (schema/2026-07-28/schema.ts:216): a value other than
    input_required is still the method's result (ListToolsResult), repaired as one."""
    body = b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"x-task","tools":[],"nextCursor":null}}'
    out, exch = s2c(E, E, "tools/list", body)
    assert out == b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"x-task","tools":[],"ttlMs":0,"cacheScope":"private"}}'
    assert keys(exch) == [("/result/ttlMs", "repair", "REPAIR-required-default"),
                          ("/result/cacheScope", "repair", "REPAIR-required-default"),
                          ("/result/nextCursor", "repair", "REPAIR-null-optional")]


def test_null_optional_members_at_every_depth():
    """``null`` for optional members of a tool result, a content block (a union told apart by
    ``type``), its annotations and an embedded resource (a union without a discriminator)."""
    body = (b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a","annotations":null},'
            b'{"type":"text","text":"b","annotations":{"priority":null,"audience":["user"]}},'
            b'{"type":"resource","resource":{"uri":"file:///a","text":"t","mimeType":null}}],"isError":null}}')
    out, exch = s2c(C, C, "tools/call", body)
    assert orjson.loads(out) == {"jsonrpc": "2.0", "id": 1, "result": {"content": [
        {"type": "text", "text": "a"}, {"type": "text", "text": "b", "annotations": {"audience": ["user"]}},
        {"type": "resource", "resource": {"uri": "file:///a", "text": "t"}}]}}
    assert keys(exch) == [("/result/content/0/annotations", "repair", "REPAIR-null-optional"),
                          ("/result/content/1/annotations/priority", "repair", "REPAIR-null-optional"),
                          ("/result/content/2/resource/mimeType", "repair", "REPAIR-null-optional"),
                          ("/result/isError", "repair", "REPAIR-null-optional")]
    assert message_errors(C, orjson.loads(out), "tools/call") == []


def test_null_params_of_a_request_c2s():
    rw, exch = _exchange(B, B)
    got = rw.request(exch, "POST", b'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":null}', {"Mcp-Session-Id": "k"})
    assert got.body == b'{"jsonrpc":"2.0","id":4,"method":"tools/list"}'
    assert keys(exch) == [("/params", "repair", "REPAIR-null-optional")]


def test_empty_array_where_an_object_is_required_with_defaults_inside():
    """[] for a 2026 result's ``_meta``: an object with no required member: {}."""
    body = b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[],"_meta":[]}}'
    out, exch = s2c(E, E, "tools/call", body)
    assert out == b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[],"_meta":{}}}'
    assert keys(exch) == [("/result/_meta", "repair", "REPAIR-empty-array-object")]


def test_padded_empty_array_found_too():
    body = b'{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{"type":"object","properties":[ \n ]}}]}}'
    out, exch = s2c(C, C, "tools/list", body)
    assert out == b'{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{}}}]}}'
    assert keys(exch) == [("/result/tools/0/inputSchema/properties", "repair", "REPAIR-empty-array-object")]


def test_repairs_after_the_downgrade_of_another_revision():
    """A 2025-11-25 server, a 2025-03-26 client: the downgrade drops what the client lacks, then
    the repair removes the null it left."""
    body = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a","annotations":null}],"structuredContent":{"a":1}}}'
    out, exch = s2c(D, B, "tools/call", body)
    assert orjson.loads(out)["result"]["content"][0] == {"type": "text", "text": "a"}
    assert keys(exch)[-1] == ("/result/content/0/annotations", "repair", "REPAIR-null-optional")
    assert message_errors(B, orjson.loads(out), "tools/call") == []


# -- what is never repaired: delivered as sent, with a record naming the failing pointer ----------
def test_non_empty_array_for_an_object_is_left_as_sent():
    """``["a"]`` has no object reading: delivered byte for byte, and the record names the pointer."""
    body = b'{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{"type":"object","properties":["a"]}}]}}'
    out, exch = s2c(C, C, "tools/list", body)
    assert out is None  # byte for byte
    assert keys(exch) == [("/result/tools/0/inputSchema/properties", "keep", "REPAIR-invalid")]
    assert exch.changes[0].detail == ("fails 2025-06-18 ListToolsResult: expected object, got array; nothing repaired, "
                                      "delivered as it was")
    assert exch.changes[0].method == "tools/list" and exch.changes[0].to_rev == C


def test_all_or_nothing():
    """One tool repairable, another beyond repair: nothing is repaired (the receiver rejects the list
    either way), the body goes byte for byte, and the failing pointer is named."""
    body = (b'{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object","properties":[]}},'
            b'{"inputSchema":{"type":"object"}}]}}')
    out, exch = s2c(C, C, "tools/list", body)
    assert out is None
    assert keys(exch) == [("/result/tools/1/name", "keep", "REPAIR-invalid")]
    assert "required member missing" in exch.changes[0].detail


def test_null_as_a_map_value_or_a_required_member_is_not_removed():
    rw, exch = _exchange(C, C)
    exch.session.remember("s2c", 1, "elicitation/create")
    body = b'{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"date":null}}}'
    got = rw.request(exch, "POST", body, {"Mcp-Session-Id": "k"})
    assert got.body is None
    assert keys(exch) == [("/result/content/date", "keep", "REPAIR-invalid")]
    out, exch = s2c(C, C, "tools/call", b'{"jsonrpc":"2.0","id":1,"result":{"content":null}}')
    assert out is None and keys(exch) == [("/result/content", "keep", "REPAIR-invalid")]


def test_invalid_records_are_bounded():
    tools = b",".join(b'{"inputSchema":{"type":"object"},"description":null}' for _ in range(9))
    out, exch = s2c(C, C, "tools/list", b'{"jsonrpc":"2.0","id":1,"result":{"tools":[' + tools + b']}}')
    assert out is None
    assert keys(exch) == [(f"/result/tools/{i}/name", "keep", "REPAIR-invalid") for i in range(repair.MAX_INVALID)]
    assert exch.changes[-1].detail.endswith("(and 4 more failing pointers)")


def test_schema_number_integer_is_read_as_schema_ts_says():
    """ElicitResult.content numbers may be fractional (schema/2025-06-18/schema.ts:1556, REVISIONS.md 5.26)."""
    rw, exch = _exchange(C, C)
    exch.session.remember("s2c", 1, "elicitation/create")
    body = b'{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"n":1.5}},"x":null}'
    assert rw.request(exch, "POST", body, {"Mcp-Session-Id": "k"}).body is None and exch.changes == []


def test_a_valid_message_holding_null_costs_no_record():
    body = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"null"}],"structuredContent":{"a":null}}}'
    out, exch = s2c(C, C, "tools/call", body)
    assert out is None and exch.changes == []


# -- the cheap test ---------------------------------------------------------------------------------
@pytest.mark.parametrize("source,expected", [
    (b'{"a":1}', False), (b'{"a":[1]}', False), (b'{"a":[\n  1\n]}', False), (b'{"a":null}', True),
    (b'{"a":[]}', True), (b'{"a":[ ]}', True), (b'{"a":[\r\n\t]}', True), (None, True)])
def test_candidate(source, expected):
    assert repair.candidate(source) is expected


def _tools(n: int, tail: bytes = b"") -> bytes:
    tool = b'{"name":"t","description":"' + b"d" * 1000 + b'","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}'
    return b'{"jsonrpc":"2.0","id":1,"result":{"tools":[' + b",".join([tool] * n) + tail + b"]}}"


def test_large_messages_are_validated_only_with_a_candidate(monkeypatch):
    """A message of CHECK_MIN bytes or more is validated only when its bytes hold null or an empty
    array (or it lacks a defaulted member); every smaller message always is (issue 16: a 1 MB tool
    result of content-block unions cost 4x its parse to validate)."""
    calls = []
    real = repair.Checker.named
    monkeypatch.setattr(repair.Checker, "named", lambda self, name: calls.append(name) or real(self, name))
    bad = b',{"inputSchema":{"type":"object"}}'  # no name: invalid, nothing to repair
    big = _tools(70, bad)
    assert len(big) >= repair.CHECK_MIN == repair.LIST_CHECK_MIN
    out, exch = s2c(C, C, "tools/list", big)
    assert out is None and exch.changes == [] and calls == []  # not validated
    out, exch = s2c(C, C, "tools/list", big.replace(b'"description":"d', b'"title":null,"description":"d', 1))
    assert out is None and keys(exch) == [("/result/tools/70/name", "keep", "REPAIR-invalid")] and calls[:1] == ["ListToolsResult"]  # (then its definitions, the first time in this process)
    out, exch = s2c(E, E, "tools/list", big.replace(b'"result":{', b'"result":{"resultType":"complete",'))
    assert keys(exch) == [("/result/tools/70/name", "keep", "REPAIR-invalid")]  # lacks ttlMs: validated
    calls.clear()
    out, exch = s2c(C, C, "tools/list", _tools(2, bad))  # small: always validated
    assert out is None and keys(exch) == [("/result/tools/2/name", "keep", "REPAIR-invalid")] and calls[:1] == ["ListToolsResult"]  # (then its definitions, the first time in this process)
    calls.clear()
    text = b'{"type":"text","text":"' + b"x" * 100000 + b'"}'
    call = b'{"jsonrpc":"2.0","id":1,"result":{"content":[' + text + b'],"isError":1}}'
    out, exch = s2c(C, C, "tools/call", call)  # not a list result: the same rule
    assert out is None and exch.changes == [] and calls == []
    out, exch = s2c(C, C, "tools/call", call.replace(b'"isError"', b'"structuredContent":null,"isError"'))
    assert out is None and keys(exch) == [("/result/isError", "keep", "REPAIR-invalid")]  # a null: validated
    call = b'{"jsonrpc":"2.0","id":1,"result":{"content":[' + text + b'],"isError":false}}'
    out, exch = s2c(E, E, "tools/call", call)  # 2026-07-28 CallToolResult lacks resultType: validated and repaired
    assert out == call[:-2] + b',"resultType":"complete"}}'
    assert keys(exch) == [("/result/resultType", "repair", "REPAIR-required-default")]


def test_defaults_below_the_top():
    """A definition that reaches a defaulted member below its top is always validated: its bytes
    cannot tell a missing member (2026-07-28 unions of results); none before 2026-07-28."""
    assert not repair._defaults_below(E, "CallToolResult") and not repair._defaults_below(E, "ListToolsResult")
    assert repair._defaults_below(E, "ServerResult") and repair._defaults_below(E, "JSONRPCResultResponse")
    assert not any(repair._defaults_below(C, n) for n in ("ServerResult", "JSONRPCResponse", "CallToolResult"))


# -- split large lists: the result level only ---------------------------------------------------------
def test_split_list_repairs_the_skeleton_only(monkeypatch):
    monkeypatch.setattr(rewrite.body, "SPLIT_MIN", 0)
    body = (b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","tools":[{"name":"a","inputSchema":{"type":"object"}},'
            b'{"name":"b","inputSchema":{"type":"object"},"annotations":null}]}}')
    out, exch = s2c(E, E, "tools/list", body)
    assert out == body[:-2] + b',"ttlMs":0,"cacheScope":"private"}}'  # the elements as they were
    assert keys(exch) == [("/result/ttlMs", "repair", "REPAIR-required-default"),
                          ("/result/cacheScope", "repair", "REPAIR-required-default")]


# -- the option ------------------------------------------------------------------------------------------
def test_repair_off():
    rw, exch = _exchange(E, E, "tools/list")
    rw.repair = False
    assert rw.response_json(exch, b'{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}') is None and exch.changes == []


# -- SSE: the id of an event whose message is not delivered -------------------------------------------
def test_dropped_message_keeps_its_event_id():
    """A 2025-11-25 server's notifications/elicitation/complete is not delivered to a 2025-06-18
    client (ELIC-complete-notification); the event's id: and retry: lines still are, without data:
    the client's last event ID moves on and nothing is dispatched."""
    rw, exch = _exchange(D, C)
    note = b'{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"e1"}}'
    body = (b"event: message\r\nid: 41\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\r\n\r\n"
            b"event: message\r\nid: 42\r\nretry: 500\r\ndata: " + note + b"\r\n\r\n")
    out = rw.sse(exch).whole(body)
    assert out == body[:body.index(b"event: message\r\nid: 42")] + \
        b": mcpx: message not delivered to this client revision\r\nid: 42\r\nretry: 500\r\n\r\n"
    assert keys(exch) == [("", "drop-message", "ELIC-complete-notification")]
    events = SSEParser().feed(out)
    assert [(e.last_id, e.payload is None) for e in events] == [("41", False), ("42", True)]


def test_priming_event_still_dropped_whole():
    """TR-sse-priming-polling keeps even the id from older clients (an id-only event reads as an
    empty-data event to httpx-sse, what the rule prevents)."""
    rw, exch = _exchange(C, C)
    assert rw.sse(exch).whole(b"id: p1\nretry: 100\ndata:\n\n") == b": mcpx: message not delivered to this client revision\n\n"


# -- downgrade rules that read a value before the repair stage: they read it as it means ---------------
def test_tool_title_moves_into_wire_format_annotations():
    """TOOL-title (a 2025-06-18 server, a 2025-03-26 client): annotations sent as null, [] or with a
    null title are read as absent / {} / without title, so the title still moves into them (a null
    annotations made the rule raise before: the body passed through untouched)."""
    body = (b'{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","title":"A","inputSchema":{"type":"object"},"annotations":null},'
            b'{"name":"b","title":"B","inputSchema":{"type":"object"},"annotations":[]},'
            b'{"name":"c","title":"C","inputSchema":{"type":"object"},"annotations":{"title":null}},'
            b'{"name":"d","title":null,"inputSchema":{"type":"object"}}]}}')
    out, exch = s2c(C, B, "tools/list", body)
    assert out == (b'{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"},"annotations":{"title":"A"}},'
                   b'{"name":"b","inputSchema":{"type":"object"},"annotations":{"title":"B"}},'
                   b'{"name":"c","inputSchema":{"type":"object"},"annotations":{"title":"C"}},{"name":"d","inputSchema":{"type":"object"}}]}}')
    assert keys(exch) == [("/result/tools/0/annotations", "repair", "REPAIR-null-optional"),
                          ("/result/tools/0/title", "rewrite", "TOOL-title"),
                          ("/result/tools/1/annotations", "repair", "REPAIR-empty-array-object"),
                          ("/result/tools/1/title", "rewrite", "TOOL-title"),
                          ("/result/tools/2/annotations/title", "repair", "REPAIR-null-optional"),
                          ("/result/tools/2/title", "rewrite", "TOOL-title"),
                          ("/result/tools/3/title", "drop", "TOOL-title")]


def test_structured_content_wire_values_from_a_2025_sender():
    """structuredContent [] / null from a sender whose revision requires an object: {} / absent, not
    a text block of "[]" / "null" (SC-structuredContent-any is for 2026 values of any type)."""
    out, exch = s2c(C, C, "tools/call", b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":[]}}')
    assert out == b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{}}}'
    assert keys(exch) == [("/result/structuredContent", "repair", "REPAIR-empty-array-object")]
    out, exch = s2c(C, C, "tools/call", b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":null}}')
    assert out == b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'
    assert keys(exch) == [("/result/structuredContent", "repair", "REPAIR-null-optional")]
    out, exch = s2c(C, B, "tools/call", b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":[]}}')
    assert out == b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{}"}]}}'
    assert keys(exch) == [("/result/content/0", "rewrite", "SC-structuredContent"), ("/result/structuredContent", "drop", "SC-structuredContent")]
    out, exch = s2c(E, D, "tools/call", b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[],"structuredContent":[]}}')
    assert out == b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"[]"}]}}'  # a 2026 array: a value
    assert [k[2] for k in keys(exch)] == ["SC-structuredContent-any", "SC-structuredContent-any", "RES-resultType"]


def test_null_union_discriminator_is_read_as_absent():
    """An elicitation/create whose optional ``mode`` is null (found by the property test's mutation
    pass): the walk picks the form member as it does for no ``mode`` (downgrade._fit reads null as
    absent), so the message is walked, and the repair removes the null: the same delivery as
    without ``mode`` (here: the 2026-07-28 ``_meta`` key a 2025-11-25 client lacks is dropped)."""
    meta = b'"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}}'
    params = b'"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}},'
    absent, exch_a = s2c(D, D, None, b'{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{' + params + meta + b'}}')
    null, exch_n = s2c(D, D, None, b'{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"mode":null,' + params + meta + b'}}')
    assert null == absent
    assert keys(exch_n) == keys(exch_a) + [("/params/mode", "repair", "REPAIR-null-optional")]
