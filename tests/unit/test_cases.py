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
from mcpx_core.disposition import SplitBatch
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
            ("/result/content/1", "rewrite", "SC-structuredContent"),
            ("/result/structuredContent", "drop", "SC-structuredContent"),
            ("/result/content/0/_meta", "drop", "META-on-content-blocks")],
    "B06": [("/result/content/0/icons", "drop", "RESOURCE-icons")],
    "B08": [("/result/content/1/annotations/lastModified", "drop", "ANN-lastModified"),
            ("/result/content/1/_meta", "drop", "META-on-content-blocks")],
    "B10": [("", "passthrough", "PASSTHROUGH-error")],
    # the 2025-03-26 client leg sends no MCP-Protocol-Version; its 2025-06-18 server gets one (upgrade direction)
    "B11": [("header:MCP-Protocol-Version", "synthesize", "TR-protocol-version-header"), ("", "split", "RPC-batch-request")],
    "B13": [],
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
    assert orjson.loads(got[1]["result"]["content"][1].pop("text")) == orjson.loads(exp[1]["result"]["content"][1].pop("text"))
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
