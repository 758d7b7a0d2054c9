"""What mcpx does with a client's POST or DELETE, as the addon receives it (``Rewriter.request``).

Survivors of mutation testing (issue 19): the fast tests read the records of client messages but
not always what is sent on: the rewritten body toward the server (``Forward.body``), the empty
202 answer when nothing is left to send (a notification the server's revision lacks;
docs/specification/2025-03-26/basic/transports.mdx: "the server MUST return HTTP status code 202
Accepted with no body"), the 204 of a DELETE mcpx answers itself for a server that keeps no
session, and the key of a session an initialize starts under the client's session id.
"""
from __future__ import annotations

import orjson

from mcpx_core import seal
from mcpx_core.disposition import AnswerLocally, Forward, MintSession
from mcpx_core.framing import json_body
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.seal import Sealer
from mcpx_core.session import SessionTracker

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
INIT_RESULT = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                     "serverInfo": {"name": "s", "version": "1"}}}


def session(client_rev: str, server_rev: str) -> Rewriter:
    store = SessionTracker()
    s = store.create("sess-1")
    s.client_rev, s.server_rev = client_rev, server_rev
    return Rewriter(store)


def fields(exch: Exchange) -> list[tuple]:
    return [(c.pointer, c.action, c.rule, c.direction, c.from_rev, c.to_rev) for c in exch.changes]


def test_a_rewritten_client_message_is_what_is_sent_on():
    """PROG-message: a 2024-11-05 server gets progress notifications without ``message``."""
    rw = session("2025-03-26", "2024-11-05")
    exch = Exchange(flow_id="f", is_mcp=True)
    body = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1,"message":"half"}}'
    assert rw.request(exch, "POST", body, {"Mcp-Session-Id": "sess-1"}) == \
        Forward(b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}', {}, ())
    assert fields(exch) == [("/params/message", "drop", "PROG-message", "c2s", "2025-03-26", "2024-11-05")]


def test_a_notification_the_server_revision_lacks_is_answered_202_with_no_body():
    rw = session("2025-11-25", "2025-06-18")
    exch = Exchange(flow_id="f", is_mcp=True)
    body = b'{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t1","status":"working"}}'
    assert rw.request(exch, "POST", body, {"Mcp-Session-Id": "sess-1"}) == AnswerLocally(202, b"", ())
    assert fields(exch) == [
        ("header:MCP-Protocol-Version", "synthesize", "TR-protocol-version-header", "c2s", "2025-11-25", "2025-06-18"),
        ("", "drop-message", "TASK-status-notification", "c2s", "2025-11-25", "2025-06-18")]


def test_delete_of_a_sealed_session_the_server_keeps_no_id_for_is_answered_by_mcpx():
    store = SessionTracker(sealer=Sealer([seal.new_key()]))
    rw = Rewriter(store)
    init = Exchange(flow_id="f-init", is_mcp=True)
    assert rw.request(init, "POST", orjson.dumps(INIT), {}, live=True) == MintSession()
    rw.response_json(init, orjson.dumps(INIT_RESULT))
    token = rw.session_learned(init, None, seal=True)  # the server sent no Mcp-Session-Id
    handle = init.session.key
    delete = Exchange(flow_id="f-delete", is_mcp=True)
    assert rw.request(delete, "DELETE", None, {"Mcp-Session-Id": token}, live=True) == AnswerLocally(204, b"", ())
    assert [{k: v for k, v in c.as_dict().items() if k != "time"} for c in delete.changes] == [
        {"pointer": "", "action": "answer-locally", "rule": "TR-session-delete", "before": None, "after": None,
         "detail": "session ended by mcpx: the server keeps no session", "flow": "f-delete", "session": handle,
         "direction": "c2s", "jsonrpc_id": None, "method": None, "from_rev": "2025-06-18", "to_rev": "2025-06-18"}]
    assert len(store) == 0 and store.get(handle) is None


def test_an_initialize_with_a_session_id_starts_the_session_under_that_id():
    """Offline (sessions not sealed): a client that re-initializes on its session id keeps it."""
    rw = Rewriter(SessionTracker())
    exch = Exchange(flow_id="f", is_mcp=True)
    assert rw.request(exch, "POST", orjson.dumps(INIT), {"Mcp-Session-Id": "abc"}) == Forward(None, {}, ())
    assert exch.session.key == "abc" and rw.tracker.get("abc") is exch.session


def test_a_request_the_server_revision_lacks_is_answered_by_mcpx_unless_its_id_is_inexact():
    """tasks/list (2025-11-25) toward a 2025-06-18 server: mcpx answers -32601 itself; but not
    with an id beyond 64 bits, which it could not write back exactly (the server answers it)."""
    answered = Exchange(flow_id="f", is_mcp=True)
    out = session("2025-11-25", "2025-06-18").request(answered, "POST", b'{"jsonrpc":"2.0","id":4,"method":"tasks/list"}',
                                                      {"Mcp-Session-Id": "sess-1"})
    assert out == AnswerLocally(200, b'{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found: tasks/list '
                                     b'(not defined in MCP 2025-06-18; answered by mcpx)"}}', (("content-type", "application/json"),))
    assert answered.replies == [] and answered.messages == [
        {"direction": "c2s", "kind": "request", "method": "tasks/list", "id": 4, "changes": 1}]
    assert [(c.pointer, c.action, c.rule, c.jsonrpc_id) for c in answered.changes][1:] == [("", "drop-message", "TASK-method-list", 4)]

    forwarded = Exchange(flow_id="f", is_mcp=True)
    out = session("2025-11-25", "2025-06-18").request(
        forwarded, "POST", b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tasks/list"}', {"Mcp-Session-Id": "sess-1"})
    assert out == Forward(None, {"MCP-Protocol-Version": "2025-06-18"}, ())
    assert forwarded.messages == [{"direction": "c2s", "kind": "request", "method": "tasks/list", "id": None, "changes": 1}]
    assert [(c.pointer, c.action, c.rule, c.detail) for c in forwarded.changes][1:] == [
        ("/id", "passthrough", "PASSTHROUGH-error", f"request id {json_body.INEXACT}; not answered by mcpx")]


def test_a_url_only_elicitation_capability_is_dropped_toward_an_older_server():
    """CAP-client-elicitation-modes: a 2025-11-25 client that declares URL-mode elicitation only
    declares no elicitation to a 2025-06-18 server (which has form elicitation only)."""
    from mcpx_core.downgrade import downgrade
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"url": {}}}, "clientInfo": {"name": "c", "version": "1"}}}
    out = downgrade(init, "request", "initialize", "2025-11-25", "2025-06-18", "c2s")
    assert out.message["params"]["capabilities"] == {}
    assert [(c.pointer, c.action, c.rule, c.before, c.after, c.detail) for c in out.changes] == [
        ("/params/capabilities/elicitation", "drop", "CAP-client-elicitation-modes", "{url: {}}", None,
         "URL mode only: no form elicitation in this revision")]
