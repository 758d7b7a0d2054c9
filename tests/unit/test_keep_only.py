"""A message whose only records are ``keep`` is delivered byte for byte (issue 19).

``keep`` means "tolerated by the receiver, kept, logged": the message is not changed, so mcpx
delivers the bytes the server sent (README: "A body it cannot handle, and any non-MCP traffic,
passes through byte for byte"; ``Rewriter._one``: "only keep and audit records: the message is
delivered byte for byte"), never a re-serialisation of them. The bodies here are written the way
no serialiser writes them (spaces around ``:`` and ``,``, ``\\u`` escapes, ``id`` before
``jsonrpc``, a trailing newline), so a re-serialised message cannot pass for the original.

The ``keep`` record: a ``tools/list`` result whose inputSchema carries ``$schema``, which the
receiving revision's ``Tool.inputSchema`` does not declare (rules/tools.py, TOOL-inputSchema-$schema;
schema/2025-06-18/schema.json ``Tool.inputSchema``).
"""
from __future__ import annotations

import pytest

from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.session import SessionTracker

SCHEMA_URI = "https://json-schema.org/draft/2020-12/schema"
#: one tools/list result (JSON-RPC id 2), as no serialiser writes it
RESULT = (b'{ "id" : 2 ,"result": {"tools": [ {"name":"caf\\u00e9", "description" : "\\u00e9t\\u00e9 \\/ \\u2603",'
          b'"inputSchema":{"type": "object", "$schema":"' + SCHEMA_URI.encode() + b'"}}]} , "jsonrpc":"2.0" }')
#: (server revision, client revision): downgrades and a same-revision leg, all with the keep record
LEGS = [("2025-11-25", "2025-06-18"), ("2025-06-18", "2025-03-26"), ("2025-11-25", "2024-11-05"), ("2025-06-18", "2025-06-18")]


def session(server_rev: str, client_rev: str) -> tuple[Rewriter, Exchange]:
    """A rewriter and an exchange of session ``sess-1`` whose client asked ``tools/list`` (id 2)."""
    store = SessionTracker()
    s = store.create("sess-1")
    s.server_rev, s.client_rev = server_rev, client_rev
    exch = Exchange(flow_id="f1", session=s, is_mcp=True)
    exch.request_ids[2] = "tools/list"
    return Rewriter(store), exch


def records(exch: Exchange) -> list[dict]:
    """The exchange's change records, without the time they were made."""
    return [{k: v for k, v in c.as_dict().items() if k != "time"} for c in exch.changes]


def keep_record(server_rev: str, client_rev: str) -> dict:
    return {"pointer": "/result/tools/0/inputSchema/$schema", "action": "keep", "rule": "TOOL-inputSchema-$schema",
            "before": f'"{SCHEMA_URI}"', "after": None, "detail": None, "flow": "f1", "session": "sess-1",
            "direction": "s2c", "jsonrpc_id": 2, "method": "tools/list", "from_rev": server_rev, "to_rev": client_rev}


@pytest.mark.parametrize("server_rev,client_rev", LEGS)
def test_keep_only_json_body_is_delivered_byte_for_byte(server_rev, client_rev):
    rw, exch = session(server_rev, client_rev)
    body = RESULT + b"\n"
    out = rw.response_json(exch, body)
    assert out is None  # None: mitmproxy forwards the body as received
    assert records(exch) == [keep_record(server_rev, client_rev)]


@pytest.mark.parametrize("server_rev,client_rev", LEGS)
def test_keep_only_sse_event_is_delivered_byte_for_byte(server_rev, client_rev):
    rw, exch = session(server_rev, client_rev)
    stream = b": hi\r\nid: 9\r\nevent: message\r\ndata:" + RESULT + b"\r\n\r\n"
    assert rw.sse(exch).whole(stream) == stream
    assert records(exch) == [keep_record(server_rev, client_rev)]


def test_keep_only_event_beside_a_rewritten_one_stays_byte_for_byte():
    """One stream, two events: the first (keep only) as sent, the second (a ``title`` a 2025-03-26
    client lacks moved to ``annotations.title``, TOOL-title) rewritten."""
    rw, exch = session("2025-06-18", "2025-03-26")
    exch.request_ids[3] = "tools/list"
    kept = b"data: " + RESULT + b"\n\n"
    titled = b'data: {"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"t","title":"T","inputSchema":{"type":"object"}}]}}\n\n'
    out = rw.sse(exch).whole(kept + titled)
    assert out == kept + b'data: {"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"},' \
                         b'"annotations":{"title":"T"}}]}}\n\n'
    assert [(c.pointer, c.action, c.rule, c.jsonrpc_id) for c in exch.changes] == [
        ("/result/tools/0/inputSchema/$schema", "keep", "TOOL-inputSchema-$schema", 2),
        ("/result/tools/0/title", "rewrite", "TOOL-title", 3)]


def test_keep_only_for_composition_keywords_is_delivered_byte_for_byte():
    """TOOL-inputSchema-open: JSON Schema composition keywords a legacy client's types do not
    list are kept and logged (rules/tools.py COMPOSITION)."""
    rw, exch = session("2025-06-18", "2025-03-26")
    body = (b'{"jsonrpc":"2.0", "id":2, "result":{"tools":[{"name":"pick","inputSchema":{"type":"object",'
            b'"properties":{"c":{"anyOf":[{"type":"string"},{"type":"number"}]}},"$defs":{}}}]}}')
    assert rw.response_json(exch, body) is None
    assert records(exch) == [keep_record("2025-06-18", "2025-03-26") | {
        "pointer": "/result/tools/0/inputSchema", "rule": "TOOL-inputSchema-open", "before": None,
        "detail": "JSON Schema keywords kept: $defs, anyOf"}]
