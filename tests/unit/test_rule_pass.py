"""The rule pass on one message is a function of a :class:`~mcpx_core.rewrite.Rules` (no
:class:`~mcpx_core.rewrite.Rewriter`, no tracker, no HTTP): what a bridge or a transport stage
calls. One 2025-06-18 tool result for a 2025-03-26 client: ``annotations.lastModified`` exists
from 2025-06-18 on only (schema/2025-06-18/schema.ts, ``Annotations.lastModified``; absent from
schema/2025-03-26/schema.ts), so it is dropped, with one record that names its message."""
from __future__ import annotations

from mcpx_core.framing import json_body
from mcpx_core.rewrite import Exchange, Rewriter, Rules, rule_pass
from mcpx_core.session import SessionTracker

BODY = (b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi",'
        b'"annotations":{"lastModified":"2025-01-12T15:00:58Z"}}]}}')


def _exchange() -> Exchange:
    s = SessionTracker().create("k")
    s.server_rev, s.client_rev = "2025-06-18", "2025-03-26"
    exch = Exchange(flow_id="f", session=s, is_mcp=True, single_request_id=7)
    exch.request_ids[7] = "tools/call"
    return exch


def test_rule_pass_without_a_rewriter():
    seen: list = []
    rules = Rules(on_changes=lambda exch, changes: seen.extend(changes))
    exch = _exchange()
    msg = json_body.parse(BODY).messages[0]
    out = rule_pass(rules, exch, msg, "s2c", "2025-06-18", "2025-03-26", source=BODY)
    assert out is not None and out.message == {"jsonrpc": "2.0", "id": 7, "result": {
        "content": [{"type": "text", "text": "hi", "annotations": {}}]}}
    (change,) = seen
    assert (change.pointer, change.action, change.flow, change.session, change.direction, change.jsonrpc_id,
            change.method, change.from_rev, change.to_rev) == (
        "/result/content/0/annotations/lastModified", "drop", "f", "k", "s2c", 7, "tools/call", "2025-06-18", "2025-03-26")
    assert exch.changes == [change] and exch.session.changes == 1 and exch.answered_ids == {7}
    assert exch.messages == [{"direction": "s2c", "kind": "result", "method": "tools/call", "id": 7, "changes": 1}]


def test_the_rewriter_gives_the_same_answer():
    """The same body through :meth:`Rewriter.response_json`: the same bytes and the same record."""
    seen: list = []
    rules = Rules(on_changes=lambda exch, changes: seen.extend(changes))
    msg = json_body.parse(BODY).messages[0]
    rule_pass(rules, _exchange(), msg, "s2c", "2025-06-18", "2025-03-26", source=BODY)
    rw = Rewriter(SessionTracker())
    exch = _exchange()
    out = rw.response_json(exch, BODY)
    assert out == json_body.dumps(msg)
    assert [c.as_dict() | {"time": 0} for c in exch.changes] == [c.as_dict() | {"time": 0} for c in seen]


def test_same_revision_untouched():
    """Both legs on one revision: no change, nothing logged (mcpx is invisible)."""
    rules = Rules(on_changes=lambda exch, changes: (_ for _ in ()).throw(AssertionError(changes)))
    exch = _exchange()
    msg = json_body.parse(BODY).messages[0]
    assert rule_pass(rules, exch, msg, "s2c", "2025-06-18", "2025-06-18", source=BODY) is None
    assert exch.changes == []


def _server_request(rid: bytes) -> tuple[Exchange, dict, bytes]:
    """A 2025-06-18 server's ``elicitation/create`` for a 2025-03-26 client, which has no such method
    (schema/2025-06-18/schema.ts ``ElicitRequest``; absent from schema/2025-03-26/schema.ts)."""
    s = SessionTracker().create("k")
    s.server_rev, s.client_rev = "2025-06-18", "2025-03-26"
    body = (b'{"jsonrpc":"2.0","id":' + rid + b',"method":"elicitation/create","params":{"message":"m",'
            b'"requestedSchema":{"type":"object","properties":{}}}}')
    return Exchange(flow_id="f", session=s, is_mcp=True), json_body.parse(body).messages[0], body


def test_a_server_request_the_client_lacks_is_answered_by_mcpx():
    seen: list = []
    exch, msg, body = _server_request(b"5")
    out = rule_pass(Rules(on_changes=lambda e, c: seen.extend(c)), exch, msg, "s2c", "2025-06-18", "2025-03-26", source=body)
    assert out is not None and out.message is None
    assert exch.replies == [{"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message":
                             "Method not found: elicitation/create (not defined in MCP 2025-03-26; answered by mcpx)"}}]
    assert [(c.action, c.rule, c.from_rev, c.to_rev) for c in seen] == [("drop-message", "ELIC-request", "2025-06-18", "2025-03-26")]


def test_a_request_whose_id_cannot_be_written_back_exactly_goes_on_untouched_with_one_record():
    """A 30-digit id: mcpx cannot answer under it exactly (orjson reads it as a float), so the
    receiver gets the request byte for byte and answers it itself; the one record names both legs."""
    seen: list = []
    exch, msg, body = _server_request(b"123456789012345678901234567890")
    out = rule_pass(Rules(on_changes=lambda e, c: seen.extend(c)), exch, msg, "s2c", "2025-06-18", "2025-03-26", source=body)
    assert out is None and exch.replies == []
    (c,) = seen
    assert (c.pointer, c.action, c.rule, c.from_rev, c.to_rev, c.method) == (
        "/id", "passthrough", "PASSTHROUGH-error", "2025-06-18", "2025-03-26", "elicitation/create")
    assert c.detail.endswith("not answered by mcpx")
    assert exch.messages == [{"direction": "s2c", "kind": "request", "method": "elicitation/create", "id": None, "changes": 1}]


def test_a_rule_that_fails_forwards_the_message_untouched_and_says_why(monkeypatch):
    """The walk raising (a stand-in for a rule's bug, put in with monkeypatch: no shipped rule fails on
    this body) delivers the message as it came, with one passthrough record naming both legs."""
    import mcpx_core.rewrite.message as message

    def broken(*a, **kw):
        raise RuntimeError("boom")
    monkeypatch.setattr(message, "downgrade", broken)
    seen: list = []
    exch = _exchange()
    msg = json_body.parse(BODY).messages[0]
    assert rule_pass(Rules(on_changes=lambda e, c: seen.extend(c)), exch, msg, "s2c", "2025-06-18", "2025-03-26", source=BODY) is None
    assert msg == json_body.parse(BODY).messages[0]
    (c,) = seen
    assert (c.pointer, c.action, c.from_rev, c.to_rev, c.detail) == ("", "passthrough", "2025-06-18", "2025-03-26",
                                                                     "rule failed: RuntimeError: boom")


def test_a_message_with_only_audit_and_keep_records_is_delivered_byte_for_byte(monkeypatch):
    """Records that change nothing (``audit``, ``keep``) are logged, and the message is not written
    again (None: the original bytes go on). The walk's answer is given with monkeypatch, to hold
    exactly those two records."""
    import mcpx_core.rewrite.message as message
    from mcpx_core.changes import Change
    from mcpx_core.rules.api import Outcome
    records = [Change(pointer="/result", action="audit", rule="AUDIT-x", detail="a"),
               Change(pointer="/result/content", action="keep", rule="KEEP-x", detail="k")]
    monkeypatch.setattr(message, "downgrade", lambda msg, *a, **kw: Outcome(msg, list(records)))
    seen: list = []
    exch = _exchange()
    msg = json_body.parse(BODY).messages[0]
    rules = Rules(on_changes=lambda e, c: seen.extend(c), repair=False)
    assert rule_pass(rules, exch, msg, "s2c", "2025-06-18", "2025-03-26", source=BODY) is None
    assert [(c.action, c.rule) for c in seen] == [("audit", "AUDIT-x"), ("keep", "KEEP-x")]
    assert exch.messages[-1]["changes"] == 2
