"""Two kinds of fault, each as a class of small inputs (from two public bug reports):

- **a code one revision retired, sent toward a receiver of that revision** (rules/upgrade.py
  ``RETIRED``, the table of revision-delta.json's ``error-code`` records that say "X replaced by Y"):
  a 2026-07-28-only server answering a missing resource with the legacy -32002 gets it to a
  2026-07-28 client as -32602 (docs/specification/2026-07-28/server/resources.mdx:405), as a legacy
  server across the bridge does; toward an older receiver the code is its own and kept;
- **a notification that references what its receiver never sent** (references.py): a
  ``notifications/progress`` whose ``progressToken`` no request of the receiver carried
  (docs/specification/2025-06-18/basic/utilities/progress.mdx:47), a ``notifications/cancelled``
  whose ``requestId`` the receiver never sent (basic/utilities/cancellation.mdx:19): not delivered to
  a strict receiver (``drop-message``), delivered with a ``keep`` record to a lenient one, never
  judged where mcpx did not see the whole session.
"""
from __future__ import annotations

import orjson
import pytest

from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.rules import upgrade
from mcpx_core.session import SessionTracker

E, D = "2026-07-28", "2025-11-25"
NOT_FOUND = {"code": -32002, "message": "Resource not found", "data": {"uri": "file:///missing", "code": -32002}}


def _session(server: str, client: str, method: str | None = "resources/read") -> tuple[Rewriter, Exchange]:
    store = SessionTracker()
    s = store.create("k")
    s.server_rev, s.client_rev = server, client
    rw = Rewriter(store)
    rw.check_references = True  # (mcpx_check_references)
    exch = Exchange(flow_id="f", session=s, is_mcp=True, single_request_id=1)
    if method:
        exch.request_ids[1] = method
    return rw, exch


def _records(exch: Exchange) -> list[tuple]:
    return [(c.pointer, c.action, c.rule, c.before, c.after, c.detail) for c in exch.changes]


RETIRED_DETAIL = "-32002 was retired in 2026-07-28 (replaced by -32602); a 2026-07-28 sender still sent it"


@pytest.mark.parametrize("server,client,method,error,code,records", [
    # a 2026-07-28-only server, a 2026-07-28 client: the retired code becomes the revision's own
    (E, E, "resources/read", NOT_FOUND, -32602,
     [("/error/code", "rewrite", "ERR-resource-not-found", "-32002", "-32602", RETIRED_DETAIL)]),
    # the class is the code, not the method: any answer carrying it
    (E, E, "tools/call", NOT_FOUND, -32602,
     [("/error/code", "rewrite", "ERR-resource-not-found", "-32002", "-32602", RETIRED_DETAIL)]),
    (E, E, None, NOT_FOUND, -32602,
     [("/error/code", "rewrite", "ERR-resource-not-found", "-32002", "-32602", RETIRED_DETAIL)]),
    # a legacy server across the bridge: the same rewrite (its record as before: no detail)
    (D, E, "resources/read", NOT_FOUND, -32602, [("/error/code", "rewrite", "ERR-resource-not-found", "-32002", "-32602", None)]),
    # toward a receiver older than the retiring revision the code is its own: kept, no record
    (E, D, "resources/read", NOT_FOUND, -32002, []),
    (D, D, "resources/read", NOT_FOUND, -32002, []),
    # the replacement itself, and a code no revision retired, are untouched
    (E, E, "resources/read", {"code": -32602, "message": "Resource not found"}, -32602, []),
    (E, E, "resources/read", {"code": -32001, "message": "x"}, -32001, []),
])
def test_a_retired_code_reaches_a_receiver_of_the_retiring_revision_as_its_replacement(server, client, method, error, code, records):
    rw, exch = _session(server, client, method)
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "error": error})
    out = rw.response_json(exch, body)
    got = orjson.loads(out if out is not None else body)
    assert got["error"]["code"] == code
    assert got["error"].get("data") == error.get("data")  # (a code inside data is the server's own: kept)
    assert _records(exch) == records
    if not records:
        assert out is None  # delivered byte for byte


def test_retired_codes_are_a_table_of_the_revision_delta():
    assert upgrade.RETIRED == {-32002: upgrade.Retired(-32002, E, -32602, "ERR-resource-not-found")}
    delta = {"records": [
        {"id": "ERR-a", "kind": "error-code", "changed": [{"rev": E, "change": "-32010 replaced by -32603"}]},
        {"id": "ERR-b", "kind": "error-code", "changed": [{"rev": "2025-06-18", "change": " -32011 replaced by -32600 "}]},
        {"id": "ERR-c", "kind": "error-code", "changed": [{"rev": E, "change": "dedicated code -32022"}]},  # no replacement
        {"id": "X-d", "kind": "field", "changed": [{"rev": E, "change": "-32012 replaced by -32602"}]},  # not an error code
    ]}
    assert upgrade.retired_codes(delta) == {-32010: upgrade.Retired(-32010, E, -32603, "ERR-a"),
                                            -32011: upgrade.Retired(-32011, "2025-06-18", -32600, "ERR-b")}


def test_a_code_added_to_the_table_is_rewritten_without_new_code(monkeypatch):
    monkeypatch.setitem(upgrade.RETIRED, -32010, upgrade.Retired(-32010, "2025-06-18", -32603, "ERR-a"))
    for client, code in ((E, -32603), (D, -32603), ("2025-03-26", -32010)):
        rw, exch = _session(client, client)
        out = rw.response_json(exch, orjson.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": -32010, "message": "m"}}))
        assert (orjson.loads(out)["error"]["code"] if out is not None else -32010) == code


# -- notifications that reference what the receiver never sent ---------------------------------------
def _started(policy: str = "strict", rev: str = "2025-06-18") -> Rewriter:
    rw = Rewriter(SessionTracker())
    rw.check_references = True  # (mcpx_check_references)
    rw.policy = policy
    init = Exchange(flow_id="i", is_mcp=True)
    rw.request(init, "POST", orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": rev, "capabilities": {"sampling": {}}, "clientInfo": {"name": "c", "version": "1"},
        "_meta": {"progressToken": "init-token"}}}), {})
    rw.response_json(init, orjson.dumps({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": rev, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}}))
    rw.session_learned(init, "up-1")
    return rw


HEADERS = {"Mcp-Session-Id": "up-1", "MCP-Protocol-Version": "2025-06-18"}


def _client_sends(rw: Rewriter, msg: dict) -> Exchange:
    exch = Exchange(flow_id="c", is_mcp=True)
    rw.request(exch, "POST", orjson.dumps(msg), HEADERS)
    return exch


def _server_streams(rw: Rewriter, exch: Exchange, *msgs: dict) -> list[dict]:
    body = b"".join(b"event: message\ndata: " + orjson.dumps(m) + b"\n\n" for m in msgs)
    out = rw.sse(exch).whole(body)
    return [orjson.loads(line[6:]) for line in out.split(b"\n") if line.startswith(b"data: ")]


def progress(token, n=1) -> dict:
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": n}}


def cancelled(rid) -> dict:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid, "reason": "r"}}


CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x", "arguments": {}, "_meta": {"progressToken": 70}}}
ANSWER = {"jsonrpc": "2.0", "id": 7, "result": {"content": []}}


@pytest.mark.parametrize("sent,delivered,records", [
    # the server invents its own token on a call: not delivered
    ([progress("srv-1")], [], [("drop-message", "PROG-token-unknown",
                                'notifications/progress names a progressToken "srv-1" that no request of the receiver carried: '
                                "not delivered (mcpx_policy=strict)")]),
    # the call's own token (and 70.0 for 70), a token of an earlier request of the session (the initialize's)
    ([progress(70), progress(70.0, 2), progress("init-token")], [progress(70), progress(70.0, 2), progress("init-token")], []),
    # a cancellation of a request the client never sent; of one it sent (the call's id): delivered
    ([cancelled(99)], [], [("drop-message", "CANCEL-request-unknown",
                            "notifications/cancelled names a requestId 99 of a request the receiver never sent: not delivered "
                            "(mcpx_policy=strict)")]),
    ([cancelled(7), cancelled(0)], [cancelled(7), cancelled(0)], []),
    # a string id "7" is not the integer 7 the client sent
    ([cancelled("7")], [], [("drop-message", "CANCEL-request-unknown",
                             'notifications/cancelled names a requestId "7" of a request the receiver never sent: not delivered '
                             "(mcpx_policy=strict)")]),
    # several at once: only the unknown ones go
    ([progress(70), progress("x"), cancelled(5)], [progress(70)], [
        ("drop-message", "PROG-token-unknown", 'notifications/progress names a progressToken "x" that no request of the receiver '
                                               "carried: not delivered (mcpx_policy=strict)"),
        ("drop-message", "CANCEL-request-unknown", "notifications/cancelled names a requestId 5 of a request the receiver never "
                                                   "sent: not delivered (mcpx_policy=strict)")]),
])
def test_notifications_naming_what_the_client_never_sent(sent, delivered, records):
    rw = _started()
    exch = _client_sends(rw, CALL)
    assert _server_streams(rw, exch, *sent, ANSWER) == [*delivered, ANSWER]
    assert [(c.action, c.rule, c.detail) for c in exch.changes] == records
    assert all(c.direction == "s2c" and c.jsonrpc_id is None and c.method in ("notifications/progress", "notifications/cancelled")
               for c in exch.changes)


def test_only_the_answer_to_a_client_request_is_judged():
    """Toward the server (a client's cancellation of a server request), and on the standalone GET
    stream (no request of the client on it): not judged, delivered (behind replicas balanced per
    request, another process may have carried what they name)."""
    rw = _started()
    exch = _client_sends(rw, CALL)
    _server_streams(rw, exch, {"jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage", "params": {
        "messages": [], "maxTokens": 1, "_meta": {"progressToken": "st"}}}, ANSWER)
    assert _client_sends(rw, progress("st")).changes == [] and _client_sends(rw, cancelled("s-2")).changes == []
    get = Exchange(flow_id="g", is_mcp=True)
    rw.request(get, "GET", None, HEADERS)
    assert _server_streams(rw, get, progress("srv-1"), cancelled(99)) == [progress("srv-1"), cancelled(99)]
    assert get.changes == []


def test_lenient_delivers_with_a_keep_record():
    rw = _started(policy="lenient")
    exch = _client_sends(rw, CALL)
    assert _server_streams(rw, exch, progress("srv-1"), ANSWER) == [progress("srv-1"), ANSWER]
    assert [(c.action, c.rule, c.detail) for c in exch.changes] == [
        ("keep", "PROG-token-unknown", 'notifications/progress names a progressToken "srv-1" that no request of the receiver '
                                       "carried: delivered (mcpx_policy=lenient)")]


def test_not_judged_where_mcpx_did_not_see_the_whole_session():
    # a session mcpx did not see start (reopened from its token after a restart): nothing dropped
    rw, exch = _session("2025-06-18", "2025-06-18", "tools/call")
    assert _server_streams(rw, exch, progress("srv-1"), ANSWER) == [progress("srv-1"), ANSWER] and exch.changes == []
    # a client body mcpx passed through unread: its tokens are not known, nothing is dropped from then on
    rw = _started()
    big = Exchange(flow_id="b", is_mcp=True)
    rw.request(big, "POST", b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":80}}', HEADERS)
    assert [c.action for c in big.changes] == ["passthrough"]
    exch = _client_sends(rw, CALL)
    assert _server_streams(rw, exch, progress(80), ANSWER) == [progress(80), ANSWER] and exch.changes == []


def test_the_tokens_of_a_batch_mcpx_splits_are_known():
    """A 2025-03-26 client's batch toward a 2025-06-18 server is split into single POSTs (no walk of
    its members here): their progress tokens are still the client's."""
    rw = Rewriter(SessionTracker())
    rw.check_references = True  # (mcpx_check_references)
    init = Exchange(flow_id="i", is_mcp=True)
    rw.request(init, "POST", orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}), {})
    rw.response_json(init, orjson.dumps({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}}))
    rw.session_learned(init, "up-1")
    batch = Exchange(flow_id="b", is_mcp=True)
    out = rw.request(batch, "POST", orjson.dumps([CALL, {**CALL, "id": 8, "params": {**CALL["params"], "_meta": {"progressToken": "b8"}}}]),
                     {"Mcp-Session-Id": "up-1"})
    assert type(out).__name__ == "SplitBatch"
    assert _server_streams(rw, batch, progress(70), progress("b8"), progress("nope"), ANSWER) == [progress(70), progress("b8"), ANSWER]
    assert [(c.action, c.rule) for c in batch.changes if c.rule == "PROG-token-unknown"] == [("drop-message", "PROG-token-unknown")]
