"""The shipped failing inputs (tests/cases/*.json, copied from shared/cases) through the rewriter.

Each case gives the negotiated revisions, the input body and the expected delivered messages;
these tests also pin the exact change records (pointer, action, rule) each case must produce.
"""
from __future__ import annotations

import base64
import copy

import orjson
import pytest

from conftest import load_cases
from mcpx_core.framing.sse import SSEParser
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.disposition import Forward, SplitBatch
from mcpx_core.session import SessionTracker
from schema_check import message_errors

CASES = {c["id"]: c for c in load_cases()}

#: the request each s2c case answers (the cases give the body only)
METHOD = {"B01": "tools/call", "B02": "tools/call", "B04": "tools/call", "B05": "tools/call", "B06": "tools/call",
          "B08": "tools/call", "B10": "tools/call", "B13": "tools/list"}

#: the exact change records each case must log: (pointer, action, rule)
RECORDS = {
    "B01": [("/result/content/1", "rewrite", "CT-resource_link"),
            ("/result/content/1/annotations/lastModified", "drop", "ANN-lastModified")],
    "B02": [("/result/content/0", "rewrite", "SC-structuredContent"),
            ("/result/structuredContent", "drop", "SC-structuredContent")],
    "B04": [("/result/content/1", "rewrite", "CT-audio")],
    "B05": [("/params/message", "drop", "PROG-message"),
            ("/result/structuredContent", "drop", "SC-structuredContent"),
            ("/result/content/0/_meta", "drop", "META-on-content-blocks")],
    "B06": [("/result/content/0/icons", "drop", "RESOURCE-icons")],
    "B08": [("/result/content/1/annotations/lastModified", "drop", "ANN-lastModified"),
            ("/result/content/1/_meta", "drop", "META-on-content-blocks")],
    "B10": [("", "passthrough", "PASSTHROUGH-error")],
    # the 2025-03-26 client leg sends no MCP-Protocol-Version; its 2025-06-18 server gets one (upgrade direction)
    "B11": [("header:MCP-Protocol-Version", "synthesize", "TR-protocol-version-header"), ("", "split", "RPC-batch-request")],
    "B13": [],
    # repair stage (mcpx_core/repair.py): the same revision on both legs, values no revision accepts
    "B17": [("/result/tools/0/inputSchema/properties", "repair", "REPAIR-empty-array-object")],
    "B18": [("/params/arguments", "repair", "REPAIR-empty-array-object")],
    "B21": [("/result/ttlMs", "repair", "REPAIR-required-default"), ("/result/cacheScope", "repair", "REPAIR-required-default")],
    "B23": [("/result/content", "repair", "REPAIR-null-optional")],
}


def session_rewriter(case: dict) -> tuple[Rewriter, Exchange]:
    store = SessionTracker()
    s = store.create("sess-1")
    s.client_rev = case["negotiated"]["client_revision"]
    s.server_rev = case["negotiated"]["server_revision"]
    rw = Rewriter(store)
    exch = Exchange(flow_id="f1", session=s, is_mcp=True)
    return rw, exch


def body_of(case: dict) -> bytes:
    raw = case["input"]["body"]
    if case["id"] == "B08":
        return raw.replace("<<DATA>>", DATA).encode()
    if case["id"] == "B10":
        return raw.encode().replace(b"<<0xE9>>", b"\xe9")
    return raw.encode()


DATA = base64.b64encode(bytes((i * 7 + 3) % 256 for i in range(859887))).decode("ascii")


def sse_messages(body: bytes) -> list[dict]:
    p = SSEParser()
    events = p.feed(body) + p.close()[0]
    return [orjson.loads(e.data) for e in events if e.data]


def records(exch: Exchange) -> list[tuple]:
    return [c.key() for c in exch.changes]


@pytest.mark.parametrize("cid", ["B01", "B02", "B04", "B08", "B13"])
def test_json_cases(cid):
    case = CASES[cid]
    body = body_of(case)
    msg_id = orjson.loads(body)["id"]
    rw, exch = session_rewriter(case)
    exch.request_ids[msg_id] = METHOD[cid]
    out = rw.response_json(exch, body)
    assert records(exch) == RECORDS[cid]
    expected = case["expected"]["body_json"]
    if expected is None:
        assert out is None  # forwarded byte for byte
        return
    got = orjson.loads(out)
    assert message_errors(case["negotiated"]["client_revision"], got, METHOD[cid]) == []
    exp = copy.deepcopy(expected)
    if cid == "B01":
        text = got["result"]["content"][1]["resource"].pop("text")
        exp["result"]["content"][1]["resource"].pop("text")
        for needle in ("https://example.com/exports/summary.pdf", "summary.pdf", "application/pdf"):
            assert needle in text
    if cid == "B02":
        assert orjson.loads(got["result"]["content"][0].pop("text")) == orjson.loads(exp["result"]["content"][0].pop("text"))
    if cid == "B04":
        text = got["result"]["content"][1]["text"]
        assert "audio/wav" in text and text == "[audio content omitted: audio/wav, 48 bytes]"
    if cid == "B08":
        exp["result"]["content"][1]["data"] = DATA
        assert DATA.encode() in out  # payload byte-identical
        assert all(DATA[:40] not in (c.before or "") + (c.after or "") for c in exch.changes)
    assert got == exp


def test_b05_sse_crlf():
    case = CASES["B05"]
    rw, exch = session_rewriter(case)
    exch.request_ids[7] = "tools/call"
    body = body_of(case)
    out = rw.sse(exch).whole(body)
    got = sse_messages(out)
    exp = copy.deepcopy(case["expected"]["body_json"])  # (the case stays whole for a second run in one process)
    assert got == exp
    assert b"retry: 3000\r\n" in out and b"id: 1\r\n" in out and b"id: 2\r\n" in out
    assert out.startswith(b": keepalive\r\n\r\nretry: 3000\r\n\r\n")
    assert records(exch) == RECORDS["B05"]


def test_b06_sse_multiline():
    case = CASES["B06"]
    rw, exch = session_rewriter(case)
    exch.request_ids[3] = "tools/call"
    out = rw.sse(exch).whole(body_of(case))
    assert sse_messages(out) == case["expected"]["body_json"]
    assert b"id: 5\n" in out
    assert records(exch) == RECORDS["B06"]
    assert message_errors("2025-06-18", sse_messages(out)[0], "tools/call") == []


def test_b10_non_utf8_passthrough():
    case = CASES["B10"]
    rw, exch = session_rewriter(case)
    body = body_of(case)
    assert len(body) == 118
    assert rw.response_json(exch, body) is None
    assert records(exch) == RECORDS["B10"]
    assert exch.changes[0].detail == "body is not valid UTF-8"


def test_b11_batch_split():
    case = CASES["B11"]
    rw, exch = session_rewriter(case)
    body = body_of(case)
    got = rw.request(exch, "POST", body, {"Mcp-Session-Id": "sess-1"})
    assert isinstance(got, SplitBatch) and got.set_headers == {"MCP-Protocol-Version": "2025-06-18"}
    assert [orjson.loads(b) for b in got.members] == case["expected"]["body_json"]
    assert exch.request_ids == {11: "tools/call", 12: "tools/call"}
    assert records(exch) == RECORDS["B11"]
    assert "batch" in exch.changes[1].detail


def test_b13_byte_for_byte():
    case = CASES["B13"]
    rw, exch = session_rewriter(case)
    exch.request_ids["tl-1"] = "tools/list"
    assert rw.response_json(exch, body_of(case)) is None
    assert exch.changes == []


# -- repairs (issue 14): each case exactly, in a session as a live one sees it ------------------------
def log_mentions(case: dict, exch: Exchange) -> None:
    text = " ".join(f"{c.pointer} {c.before} {c.after} {c.detail}" for c in exch.changes)
    for word in case["expected"]["log_must_mention"]:
        assert word in text, word


def test_b17_empty_array_properties_repaired():
    """tools/list of a PHP server: ``"properties": []`` in one tool's inputSchema becomes ``{}``;
    the other tool and ``additionalProperties: false`` are delivered as sent."""
    case = CASES["B17"]
    rw, exch = session_rewriter(case)
    exch.request_ids[2] = "tools/list"
    out = rw.response_json(exch, body_of(case))
    assert orjson.loads(out) == case["expected"]["body_json"]
    assert out == body_of(case).replace(b'"properties":[]', b'"properties":{}')  # nothing else moved
    assert records(exch) == RECORDS["B17"]
    c = exch.changes[0]
    assert (c.before, c.after, c.method, c.jsonrpc_id, c.from_rev, c.to_rev) == ("[]", "{}", "tools/list", 2, "2025-06-18", "2025-06-18")
    assert message_errors("2025-06-18", orjson.loads(out), "tools/list") == []
    assert message_errors("2025-06-18", orjson.loads(body_of(case)), "tools/list") != []  # what the client rejected
    log_mentions(case, exch)


def test_b18_empty_array_arguments_repaired_c2s():
    """A PHP client's tools/call with ``"arguments": []``: the server receives ``{}``."""
    case = CASES["B18"]
    rw, exch = session_rewriter(case)
    got = rw.request(exch, "POST", body_of(case), {"Mcp-Session-Id": "sess-1", "MCP-Protocol-Version": "2025-06-18"})
    assert isinstance(got, Forward) and got.set_headers == {} and got.remove_headers == ()
    assert orjson.loads(got.body) == case["expected"]["body_json"]
    assert records(exch) == RECORDS["B18"]
    assert (exch.changes[0].direction, exch.changes[0].method, exch.changes[0].jsonrpc_id) == ("c2s", "tools/call", 3)
    assert message_errors("2025-06-18", orjson.loads(got.body)) == []
    log_mentions(case, exch)


def test_b21_2026_missing_cache_fields_get_their_defaults():
    """A 2026-07-28 client and server (a request that names its revision: no stored session): the
    tools/list result lacking ttlMs and cacheScope gets 0 and "private"; the rest is unchanged."""
    case = CASES["B21"]
    rw = Rewriter(SessionTracker())
    exch = Exchange(flow_id="f1")
    request = {"jsonrpc": "2.0", "id": 5, "method": "tools/list",
               "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                    "io.modelcontextprotocol/clientCapabilities": {}}}}
    got = rw.request(exch, "POST", orjson.dumps(request), {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
    assert got == Forward(None, {}, ()) and exch.changes == []
    assert exch.session is not None and exch.session.key == "(2026-07-28)" and len(rw.tracker) == 0
    out = rw.response_json(exch, body_of(case))
    assert orjson.loads(out) == case["expected"]["body_json"]
    assert out == body_of(case)[:-2] + b',"ttlMs":0,"cacheScope":"private"}}'
    assert records(exch) == RECORDS["B21"]
    assert [(c.after, c.method, c.to_rev) for c in exch.changes] == [("0", "tools/list", "2026-07-28"), ('"private"', "tools/list", "2026-07-28")]
    assert message_errors("2026-07-28", orjson.loads(out), "tools/list") == []
    log_mentions(case, exch)


def _elicitation_session(case: dict) -> tuple[Rewriter, Exchange]:
    """B23's session: the client's tools/call POST is answered on an SSE stream that carries the
    server's elicitation/create (id 1) first, as in a live session."""
    rw, exch = session_rewriter(case)
    call = b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"book_table","arguments":{}}}'
    assert rw.request(exch, "POST", call, {"Mcp-Session-Id": "sess-1", "MCP-Protocol-Version": "2025-06-18"}) == Forward(None, {}, ())
    elicit = (b'event: message\nid: ev-1\ndata: {"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":'
              b'{"message":"Which date?","requestedSchema":{"type":"object","properties":{"date":{"type":"string"}}}}}\n\n')
    assert rw.sse(exch).whole(elicit) == elicit  # valid for the client: delivered byte for byte
    assert exch.changes == []
    assert exch.session.pending[("s2c", 1)] == "elicitation/create"
    return rw, Exchange(flow_id="f2", session=exch.session, is_mcp=True)


def test_b23_null_content_of_a_cancelled_elicitation_c2s():
    """The client's answer to the server's elicitation/create (seen earlier in the session) is typed
    ElicitResult by that request: ``"content": null`` is removed before the server sees it."""
    case = CASES["B23"]
    rw, exch = _elicitation_session(case)
    got = rw.request(exch, "POST", body_of(case), {"Mcp-Session-Id": "sess-1", "MCP-Protocol-Version": "2025-06-18"})
    assert isinstance(got, Forward) and got.body == b'{"jsonrpc":"2.0","id":1,"result":{"action":"cancel"}}'
    assert orjson.loads(got.body) == case["expected"]["body_json"]
    assert records(exch) == RECORDS["B23"]
    c = exch.changes[0]
    assert (c.direction, c.method, c.jsonrpc_id, c.before, c.after) == ("c2s", "elicitation/create", 1, "null", None)
    assert ("s2c", 1) not in exch.session.pending  # answered
    assert message_errors("2025-06-18", orjson.loads(got.body), "elicitation/create") == []
    log_mentions(case, exch)


def test_b23_typed_by_shape_when_the_request_was_not_seen():
    """The same answer in a session where mcpx did not see the elicitation/create (e.g. a token of
    an earlier mcpx process): typed by its shape, the ClientResult member it fits (ElicitResult)."""
    case = CASES["B23"]
    rw, exch = session_rewriter(case)
    got = rw.request(exch, "POST", body_of(case), {"Mcp-Session-Id": "sess-1", "MCP-Protocol-Version": "2025-06-18"})
    assert orjson.loads(got.body) == case["expected"]["body_json"]
    assert records(exch) == RECORDS["B23"] and exch.changes[0].method is None


@pytest.mark.parametrize("cid", ["B17", "B18", "B21", "B23"])
def test_repair_cases_untouched_with_mcpx_repair_off(cid):
    """mcpx_repair off: the four bodies are forwarded byte for byte, with no record."""
    case = CASES[cid]
    rw, exch = session_rewriter(case)
    rw.repair = False
    if case["direction"] == "c2s":
        got = rw.request(exch, "POST", body_of(case), {"Mcp-Session-Id": "sess-1", "MCP-Protocol-Version": case["negotiated"]["server_revision"]})
        assert got == Forward(None, {}, ())
    else:
        exch.request_ids[orjson.loads(body_of(case))["id"]] = "tools/list"
        assert rw.response_json(exch, body_of(case)) is None
    assert exch.changes == []
