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
