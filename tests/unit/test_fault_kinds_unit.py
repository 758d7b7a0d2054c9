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

from mcpx_core import seal
from mcpx_core.references import References
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.rules import upgrade
from mcpx_core.seal import Sealer
from mcpx_core.session import Session, SessionTracker

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
    assert rw.check_references  # (mcpx_check_references: on by default)
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


def _unknown_token(shown: str, how: str = "not delivered (mcpx_policy=strict)") -> str:
    return f"notifications/progress names a progressToken {shown} that no request of the receiver carried: {how}"


def _unknown_id(shown: str, sender: str = "server", how: str = "not delivered (mcpx_policy=strict)") -> str:
    return f"notifications/cancelled names a requestId {shown} of no request the {sender} sent: {how}"


CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x", "arguments": {}, "_meta": {"progressToken": 70}}}
ANSWER = {"jsonrpc": "2.0", "id": 7, "result": {"content": []}}
PING = {"jsonrpc": "2.0", "id": "s-1", "method": "ping"}  # a request of the server's, on the call's stream


@pytest.mark.parametrize("sent,delivered,records", [
    # the server invents its own token on a call, a string or a number: not delivered
    ([progress("srv-1")], [], [("drop-message", "PROG-token-unknown", _unknown_token('"srv-1"'))]),
    ([progress(71)], [], [("drop-message", "PROG-token-unknown", _unknown_token("71"))]),
    # the call's own token, as a number or a string the client's SDK reads as it (70.0, "70": Number(token)),
    # and a token of an earlier request of the session (the initialize's)
    ([progress(70), progress(70.0, 2), progress("70", 3), progress("init-token")],
     [progress(70), progress(70.0, 2), progress("70", 3), progress("init-token")], []),
    # a cancellation names a request of its sender's: one the server never sent, the client's own call
    # (the server cannot cancel it: the client's SDK looks the id up among the requests it is handling)
    ([cancelled(99)], [], [("drop-message", "CANCEL-request-unknown", _unknown_id("99"))]),
    ([cancelled(7), cancelled(0)], [], [("drop-message", "CANCEL-request-unknown", _unknown_id("7")),
                                        ("drop-message", "CANCEL-request-unknown", _unknown_id("0"))]),
    # a request the server sent on this stream, then its cancellation: delivered
    ([PING, cancelled("s-1")], [PING, cancelled("s-1")], []),
    # several at once: only the unknown ones go
    ([progress(70), progress("x"), PING, cancelled("s-1"), cancelled(5)], [progress(70), PING, cancelled("s-1")], [
        ("drop-message", "PROG-token-unknown", _unknown_token('"x"')),
        ("drop-message", "CANCEL-request-unknown", _unknown_id("5"))]),
])
def test_notifications_naming_what_their_receiver_cannot_route(sent, delivered, records):
    rw = _started()
    exch = _client_sends(rw, CALL)
    assert _server_streams(rw, exch, *sent, ANSWER) == [*delivered, ANSWER]
    assert [(c.action, c.rule, c.detail) for c in exch.changes] == records
    assert all(c.direction == "s2c" and c.jsonrpc_id is None and c.method in ("notifications/progress", "notifications/cancelled")
               for c in exch.changes)


def test_a_server_request_on_the_get_stream_can_be_cancelled_on_a_call_s_stream():
    rw = _started()
    get = Exchange(flow_id="g", is_mcp=True)
    rw.request(get, "GET", None, HEADERS)
    assert _server_streams(rw, get, {**PING, "id": 12}) == [{**PING, "id": 12}]
    exch = _client_sends(rw, CALL)
    assert _server_streams(rw, exch, cancelled(12), cancelled("12"), cancelled(13), ANSWER) == [cancelled(12), cancelled("12"), ANSWER]
    assert [(c.action, c.detail) for c in exch.changes] == [("drop-message", _unknown_id("13"))]


def test_only_the_answer_to_a_client_request_is_judged():
    """Toward the server (a client's cancellation of its own request, its progress on a server
    request), and on the standalone GET stream (no request of the client on it): not judged,
    delivered (behind replicas balanced per request, another process may have carried what they name)."""
    rw = _started()
    exch = _client_sends(rw, CALL)
    _server_streams(rw, exch, {"jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage", "params": {
        "messages": [], "maxTokens": 1, "_meta": {"progressToken": "st"}}}, ANSWER)
    assert _client_sends(rw, progress("st")).changes == [] and _client_sends(rw, progress("other")).changes == []
    assert _client_sends(rw, cancelled(7)).changes == [] and _client_sends(rw, cancelled("s-2")).changes == []
    get = Exchange(flow_id="g", is_mcp=True)
    rw.request(get, "GET", None, HEADERS)
    assert _server_streams(rw, get, progress("srv-1"), cancelled(99)) == [progress("srv-1"), cancelled(99)]
    assert get.changes == []


def test_lenient_delivers_with_a_keep_record():
    rw = _started(policy="lenient")
    exch = _client_sends(rw, CALL)
    assert _server_streams(rw, exch, progress("srv-1"), cancelled(7), ANSWER) == [progress("srv-1"), cancelled(7), ANSWER]
    assert [(c.action, c.rule, c.detail) for c in exch.changes] == [
        ("keep", "PROG-token-unknown", _unknown_token('"srv-1"', "delivered (mcpx_policy=lenient)")),
        ("keep", "CANCEL-request-unknown", _unknown_id("7", how="delivered (mcpx_policy=lenient)"))]


def test_off_delivers_without_a_record():
    rw = _started()
    rw.check_references = False  # (mcpx_check_references=false)
    exch = _client_sends(rw, CALL)
    assert _server_streams(rw, exch, progress("srv-1"), cancelled(99), ANSWER) == [progress("srv-1"), cancelled(99), ANSWER]
    assert exch.changes == []


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
    assert _server_streams(rw, exch, progress(80), cancelled(99), ANSWER) == [progress(80), cancelled(99), ANSWER] and exch.changes == []


def test_the_tokens_of_a_batch_mcpx_splits_are_known():
    """A 2025-03-26 client's batch toward a 2025-06-18 server is split into single POSTs (no walk of
    its members here): their progress tokens are still the client's."""
    rw = Rewriter(SessionTracker())
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


# -- the class itself (references.References) --------------------------------------------------------
def _refs(*sent: tuple[str, dict], sender_rev: str | None = None) -> tuple[References, Session]:
    """A References that saw ``s`` start, then each (direction, request) of ``sent``."""
    refs, s = References(), Session("k")
    refs.start(s.uid)
    for direction, msg in sent:
        refs.sent(s.uid, direction, msg)
    return refs, s


def _req(rid, method: str = "tools/call", token=None) -> dict:
    params: dict = {"name": "x"}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def _verdict(refs: References, s: Session, direction: str, msg: dict, strict: bool = True, rev: str = "2025-06-18"):
    c = refs.judge(s, direction, msg["method"], msg, strict, rev)
    return None if c is None else (c.pointer, c.action, c.rule, c.before, c.after, c.detail)


@pytest.mark.parametrize("client_token,judged,routable", [
    # a token the server invents: a string, a number
    (1, "srv-1", False), (1, 2, False), ("a", "b", False), (1, "1a", False), (1, "one", False), (10, "1e2", False),
    # the same token for the client's SDK: 1 and "1" (Number(token) in the TypeScript SDK, int() in PyPI mcp 2.x)
    (1, 1, True), (1, "1", True), ("1", 1, True), (1, 1.0, True), (1, "1.0", True), (1, " 1\n", True),
    (1, "01", True), (1, "+1", True), (1, "0x1", True), (100, "1e2", True), (10, "1_0", True), (0, "", True),
    ("tok", "tok", True), (1.5, "1.5", True), (-3, "-3", True),
    # an exact string is never another string
    ("01", "1", True), ("a", "A", False),
])
def test_progress_is_judged_by_every_key_the_client_s_sdk_routes_it_by(client_token, judged, routable):
    refs, s = _refs(("c2s", _req(7, token=client_token)))
    got = _verdict(refs, s, "s2c", progress(judged))
    shown = orjson.dumps(judged).decode()
    assert got == (None if routable else ("", "drop-message", "PROG-token-unknown", None, None, _unknown_token(shown)))


def test_progress_toward_the_server_names_a_server_request_s_token():
    refs, s = _refs(("c2s", _req(7, token=70)), ("s2c", _req("s-1", "sampling/createMessage", token="st")))
    assert _verdict(refs, s, "c2s", progress("st")) is None
    assert _verdict(refs, s, "c2s", progress(70)) == ("", "drop-message", "PROG-token-unknown", None, None, _unknown_token("70"))
    assert _verdict(refs, s, "s2c", progress("st")) == ("", "drop-message", "PROG-token-unknown", None, None, _unknown_token('"st"'))
    assert _verdict(refs, s, "s2c", progress(70)) is None


@pytest.mark.parametrize("direction,rid,known", [
    # a server's cancellation names a request the server sent (s2c ids), never one the client sent
    ("s2c", "s-1", True), ("s2c", 5, True), ("s2c", "5", True), ("s2c", 7, False), ("s2c", "s-2", False),
    # a client's names a request the client sent (c2s ids), never one the server sent
    ("c2s", 7, True), ("c2s", "7", True), ("c2s", 7.0, True), ("c2s", "s-1", False), ("c2s", 5, False),
])
def test_a_cancellation_names_a_request_of_its_sender_s(direction, rid, known):
    refs, s = _refs(("c2s", _req(7)), ("s2c", _req("s-1", "ping")), ("s2c", _req(5, "roots/list")))
    sender = "server" if direction == "s2c" else "client"
    assert _verdict(refs, s, direction, cancelled(rid)) == (None if known else (
        "", "drop-message", "CANCEL-request-unknown", None, None, _unknown_id(orjson.dumps(rid).decode(), sender)))


def test_a_2026_server_cancels_only_the_client_s_listen():
    """A 2026-07-28 server sends no requests (its schema has no ServerRequest): its cancellation may
    only end the client's subscriptions/listen (schema/2026-07-28/schema.ts:637); a 2025-11-25
    server's may name only its own requests."""
    listen = {"jsonrpc": "2.0", "id": "L1", "method": "subscriptions/listen", "params": {"notifications": {}}}
    refs, s = _refs(("c2s", listen), ("c2s", _req(7)), ("s2c", _req("s-1", "ping")))
    assert _verdict(refs, s, "s2c", cancelled("L1"), rev=E) is None
    detail = ("notifications/cancelled names a requestId {} of no subscriptions/listen request of the client (a 2026-07-28 "
              "server sends no requests: its cancellation may only end a listen stream): not delivered (mcpx_policy=strict)")
    for rid in (7, "s-1", "L2"):
        assert _verdict(refs, s, "s2c", cancelled(rid), rev=E) == (
            "", "drop-message", "CANCEL-request-unknown", None, None, detail.format(orjson.dumps(rid).decode()))
    assert _verdict(refs, s, "s2c", cancelled("s-1"), rev=D) is None
    assert _verdict(refs, s, "s2c", cancelled("L1"), rev=D) == ("", "drop-message", "CANCEL-request-unknown", None, None, _unknown_id('"L1"'))
    # a 2026-07-28 client cancels its own requests, as a legacy one does
    assert _verdict(refs, s, "c2s", cancelled(7), rev=E) is None and _verdict(refs, s, "c2s", cancelled("L1"), rev=E) is None
    assert _verdict(refs, s, "c2s", cancelled("s-1"), rev=E) == (
        "", "drop-message", "CANCEL-request-unknown", None, None, _unknown_id('"s-1"', "client"))


def test_lenient_keeps_with_a_record():
    refs, s = _refs(("c2s", _req(7, token=70)))
    assert _verdict(refs, s, "s2c", progress("srv-1"), strict=False) == (
        "", "keep", "PROG-token-unknown", None, None, _unknown_token('"srv-1"', "delivered (mcpx_policy=lenient)"))
    assert _verdict(refs, s, "s2c", cancelled(7), strict=False) == (
        "", "keep", "CANCEL-request-unknown", None, None, _unknown_id("7", how="delivered (mcpx_policy=lenient)"))
    assert _verdict(refs, s, "s2c", progress(70), strict=False) is None


def test_a_session_opened_from_its_token_is_not_judged():
    """A sealed session opened from its token by another process (a replica with the same key, or this
    one after a restart) did not see the initialize: nothing of it is judged there. The process that
    started it, and sealed it, judges it."""
    sealer = Sealer([seal.new_key()])
    here, replica = SessionTracker(sealer=sealer), SessionTracker(sealer=sealer)
    s = here.start({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
                   "flow:i", sealed=True, endpoint="http://up/mcp")
    refs = References()
    refs.start(s.uid)
    refs.sent(s.uid, "c2s", _req(7, token=70))
    s.server_rev = s.client_rev = "2025-06-18"
    token = here.learn(s, "up-1", seal=True)
    assert token is not None and s.token == token
    assert _verdict(refs, s, "s2c", progress("srv-1")) == ("", "drop-message", "PROG-token-unknown", None, None, _unknown_token('"srv-1"'))
    opened = replica.lookup(token, None, None, endpoint="http://up/mcp")
    assert here.lookup(token, None, None, endpoint="http://up/mcp") is s
    assert opened is not None and opened.token == token and opened.uid != s.uid
    assert _verdict(refs, opened, "s2c", progress("srv-1")) is None and _verdict(refs, opened, "s2c", cancelled(99)) is None


def test_not_judged_sessions_and_messages():
    refs, s = _refs(("c2s", _req(7, token=70)))
    bridged = Session("b", bridge="legacy-client")
    refs.start(bridged.uid)
    assert _verdict(refs, bridged, "s2c", progress("srv-1")) is None  # a bridge's messages: the bridge's own ids
    assert _verdict(refs, Session("never-started"), "s2c", progress("srv-1")) is None
    for msg in ({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "no id (2025-11-25)"}},
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": True, "progress": 1}},
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": {"a": 1}, "progress": 1}},
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": []},
                {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": 99}}):
        assert _verdict(refs, s, "s2c", msg) is None, msg
    # a token no notification can match (an object): the session is no longer judged
    refs.sent(s.uid, "c2s", _req(8, token={"odd": 1}))
    assert _verdict(refs, s, "s2c", progress("srv-1")) is None
    # a body passed through unread: no longer judged
    refs, s = _refs(("c2s", _req(7, token=70)))
    refs.incomplete(s.uid)
    assert _verdict(refs, s, "s2c", progress("srv-1")) is None and _verdict(refs, s, "s2c", cancelled(99)) is None
