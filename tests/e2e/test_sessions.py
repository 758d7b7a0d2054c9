"""Sessions travel with the session (issue 11): a restart of mitmdump loses nothing; a token that
does not open gets the 404 of an unknown session and nothing else happens.

Real released clients (npm sdk 1.10.2 against the everything server, PyPI mcp 1.8.1 against the
mcp 2.3.0 server) run half their scenario through one mitmdump + mcpx, stop at a control op, and
finish it through a new mitmdump on the same port: with the same key file every call passes with
the change records of an uninterrupted run; with another key the client's next request gets HTTP
404 from mcpx itself, with a record, and no request reaches the server.
"""
from __future__ import annotations

import http.client
import os
import pathlib
import threading
import time

import orjson
import pytest

import peers_lib as pl
from proxy_lib import Client, Proxy, free_port

pytestmark = pytest.mark.peers

CASES = [("sdk-1.10.2", "everything"), ("mcp-1.8.1", "py")]


@pytest.fixture(scope="module")
def servers():
    pl.require(pl.peers_missing())
    with pl.start_everything_server() as ev, pl.start_py_server() as py:
        yield {"everything": ev, "py": py}


def halves(server: str, client: str) -> tuple[list[dict], list[dict]]:
    ops = pl.scenario_ops(server, client)
    cut = len(ops) // 2
    return ops[:cut], ops[cut:]


def records_by_op(px_changes: list[dict]) -> list[tuple]:
    """(method, jsonrpc id, pointer, action, rule) of every record but the session's own handle."""
    return [(c["method"], c["jsonrpc_id"], c["pointer"], c["action"], c["rule"]) for c in px_changes]


def replayed(px: Proxy) -> list[dict]:
    """``px``'s records of JSON-RPC responses that came on a GET stream: the server's replay of events
    after the client's Last-Event-ID (an answer it already gave on a POST), never a request's own answer."""
    gets = {f.id for f in px.flows() if f.request.method == "GET"}
    return [c for c in px.changes() if c["flow"] in gets and c["jsonrpc_id"] is not None and c["direction"] == "s2c"]


def refused_gets(px: Proxy) -> list[dict]:
    """``px``'s records of the server's refusals of a GET stream: the client's SDK reconnects its broken
    GET stream on its own schedule (after A stopped), and one that comes after the client's DELETE
    gets the everything server's 400 ``{"jsonrpc":"2.0","error":{...}}`` without an ``id`` (seen in CI),
    which the uninterrupted run never sends."""
    gets = {f.id for f in px.flows() if f.request.method == "GET" and f.response is not None and f.response.status_code >= 400}
    return [c for c in px.changes() if c["flow"] in gets]


def run_with_restart(client: str, srv, tmp_path: pathlib.Path, second_key: pathlib.Path | None) -> tuple[dict, list[Proxy]]:
    """Run the client's scenario: the first half through proxy A, the rest through proxy B started on
    A's port after A stopped (with A's key file, or ``second_key``)."""
    first, rest = halves(srv.name, client)
    half, go = tmp_path / "half", tmp_path / "go"
    ops = first + [{"op": "signal", "path": str(half)}, {"op": "waitFor", "path": str(go), "timeoutMs": 60000}] + rest
    upstream = srv.url.rsplit("/mcp", 1)[0]
    port = free_port()
    a = Proxy(upstream, tmp_path, port=port, tag="-a")
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(report=pl.run_client(client, a.url, ops, timeout=180)))
    t.start()
    deadline = time.monotonic() + 120
    while not half.exists() and time.monotonic() < deadline and t.is_alive():
        time.sleep(0.05)
    assert half.exists(), "the client did not reach the middle of its scenario"
    a.stop()
    opts = {"mcpx_session_keys": second_key} if second_key else {}
    b = Proxy(upstream, tmp_path, port=port, tag="-b", options=opts)
    go.touch()
    t.join(180)
    b.stop()
    return out["report"], [a, b]


def uninterrupted(client: str, srv, tmp_path: pathlib.Path) -> tuple[dict, Proxy]:
    first, rest = halves(srv.name, client)
    with Proxy(srv.url.rsplit("/mcp", 1)[0], tmp_path / "ref") as px:
        rep = pl.run_client(client, px.url, first + rest, timeout=180)
    return rep, px


@pytest.mark.parametrize("client,server", CASES)
def test_restart_with_the_same_key_loses_nothing(servers, client, server, tmp_path):
    srv = servers[server]
    (tmp_path / "ref").mkdir()
    ref, ref_px = uninterrupted(client, srv, tmp_path)
    rep, (a, b) = run_with_restart(client, srv, tmp_path, None)
    verdicts = {e["id"]: pl.verdict(e) for e in rep["results"] if e.get("id")}
    assert verdicts == pl.expected_verdicts(server, client, direct=False), rep
    assert verdicts == pl.verdicts(ref)
    # the same change records as the uninterrupted run, split over the two processes; but for answers the
    # server replayed on the client's GET stream, which the client resumes on B with Last-Event-ID (the
    # everything server then may send again an answer it gave on a POST, e.g. prompts/list: seen in CI)
    replays = replayed(b)
    refused = refused_gets(b)
    assert [(c["pointer"], c["action"], c["rule"]) for c in refused] == [("/id", "keep", "REPAIR-invalid")] * len(refused)
    assert records_by_op(a.changes()) + records_by_op([c for c in b.changes() if c not in replays and c not in refused]) \
        == records_by_op(ref_px.changes())
    # a replayed answer is rewritten as it was the first time (B does not know its request: no method)
    firsts = {(c["jsonrpc_id"], c["pointer"], c["action"], c["rule"]) for c in a.changes() + b.changes() if c not in replays}
    assert all((c["jsonrpc_id"], c["pointer"], c["action"], c["rule"]) in firsts for c in replays), replays
    assert b.changes(), "B rewrote nothing: the restart lost the session"
    # B opened the session from the client's token: same session handle in A's and B's records
    assert {c["session"] for c in a.changes()} == {c["session"] for c in b.changes()} == {c["session"] for c in a.changes()[:1]}
    assert not [c for c in a.changes() + b.changes() if c["action"] in ("passthrough", "answer-locally")]


@pytest.mark.parametrize("client,server", CASES)
def test_restart_with_another_key_answers_404(servers, client, server, tmp_path):
    srv = servers[server]
    other = tmp_path / "other.key"
    other.write_bytes(__import__("base64").b64encode(os.urandom(32)) + b"\n")
    rep, (a, b) = run_with_restart(client, srv, tmp_path, other)
    first, rest = halves(server, client)
    results = [r for r in rep["results"] if r.get("id")]
    assert [r["ok"] for r in results[:len(first)]] == [True] * len(first)
    assert results[len(first)]["ok"] is False  # the first call after the restart: the session is unknown
    flows = b.flows()
    assert flows, "the client sent nothing to B"
    # every request B got carried the old token: answered 404 by mcpx itself, none reached the server
    assert {f.response.status_code for f in flows} == {404}
    assert all(f.server_conn.timestamp_start is None for f in flows)
    recs = b.changes()
    assert recs and {(r["pointer"], r["action"], r["rule"]) for r in recs} == {("header:Mcp-Session-Id", "answer-locally", "TR-session-id")}
    assert all(r["detail"].startswith("unknown session (session id does not open with any session key") for r in recs)
    token = next(f.request.headers["mcp-session-id"] for f in flows)
    for px in (a, b):  # the token is never logged
        assert token[6:40] not in px.log_path.read_text() + px.output()


def test_tampered_truncated_and_foreign_tokens_get_404(servers, tmp_path):
    """A token that does not open (one character changed, cut short, or sealed by an mcpx with another
    key) is never trusted: HTTP 404 with the JSON-RPC error a server gives an unknown session, one
    record naming why, nothing forwarded; no token bytes and no key material in the change log or in
    mitmdump's output at debug verbosity."""
    upstream = servers["everything"].url.rsplit("/mcp", 1)[0]
    (tmp_path / "other").mkdir()
    with Proxy(upstream, tmp_path / "other", tag="-other") as other:  # its own key file
        stranger = Client(other.port)
        stranger.initialize("2025-06-18")
        foreign = stranger.session
    with Proxy(upstream, tmp_path, options={"termlog_verbosity": "debug"}) as px:
        c = Client(px.port)
        c.initialize("2025-06-18")
        good = c.session
        assert good.startswith("mcpx1.") and len(good) < 600  # measured: about 430 characters for this server
        tampered = good[:40] + ("A" if good[40] != "A" else "B") + good[41:]
        listing = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
        got = {}
        truncated = good[:6 + (len(good) - 16) // 4 * 4]  # cut at a base64 quantum: still base64url
        for name, token in (("tampered", tampered), ("truncated", truncated), ("other key", foreign)):
            c.session = token
            st, h, body = c.post(listing)
            got[name] = (st, h.get("content-type"), orjson.loads(body))
        c.session = good
        st, _, msgs = c.rpc(listing)
        assert st == 200 and msgs[0]["id"] == 5 and msgs[0]["result"]["tools"]
    err = {"jsonrpc": "2.0", "id": 5, "error": {"code": -32001, "message": "Session not found"}}
    assert got == {k: (404, "application/json", err) for k in ("tampered", "truncated", "other key")}
    recs = [(r["pointer"], r["action"], r["rule"], r["detail"]) for r in px.changes() if r["action"] == "answer-locally"]
    assert recs == [
        ("header:Mcp-Session-Id", "answer-locally", "TR-session-id",
         "unknown session (session id does not open with any session key (tampered, truncated or sealed with another key)): answered 404, nothing forwarded"),
        ("header:Mcp-Session-Id", "answer-locally", "TR-session-id",
         "unknown session (session id does not open with any session key (tampered, truncated or sealed with another key)): answered 404, nothing forwarded"),
        ("header:Mcp-Session-Id", "answer-locally", "TR-session-id",
         "unknown session (session id does not open with any session key (tampered, truncated or sealed with another key)): answered 404, nothing forwarded"),
    ]
    answered = [f for f in px.flows() if f.response is not None and f.response.status_code == 404]
    assert len(answered) == 3 and all(f.server_conn.timestamp_start is None for f in answered)
    logs = px.log_path.read_text() + px.output()
    key = px.key_path.read_text().strip()
    for token in (good, tampered, truncated, foreign):
        for i in range(6, len(token) - 24, 24):
            assert token[i:i + 24] not in logs
    assert key not in logs and key[:16] not in logs


# -- scripted upstreams: every header and body either leg sees ------------------------------------------
from proxy_lib import LoopbackServer, ScriptedMcpHandler  # noqa: E402

TOOL_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}}}
TOOL_RESULT = {"content": [{"type": "text", "text": "ok"}]}


class Strict(ScriptedMcpHandler):
    """A server that knows one session, ``scripted-1``: any other ``Mcp-Session-Id`` (none, empty,
    a token) gets 400 -32600, and a second initialize in its session gets the everything server's
    "Server already initialized". ``seen``: (Mcp-Session-Id as received or None, body) per POST."""
    seen: list[tuple[str | None, bytes]] = []

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["content-length"]))
        sid = self.headers.get("mcp-session-id")
        Strict.seen.append((sid, raw))
        body = orjson.loads(raw)
        if body.get("method") == "initialize" and sid is None:
            out = orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": body["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": self.SERVER_INFO}})
            self.send_json(out, {"mcp-session-id": self.SESSION})
        elif sid != self.SESSION or body.get("method") == "initialize":
            msg = "Server already initialized" if sid == self.SESSION else "Bad Request: No valid session ID provided"
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": msg}}), status=400)
        elif "id" not in body:
            self.send_json(b"", status=202)
        else:
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": TOOL_RESULT}))


@pytest.fixture()
def strict():
    Strict.seen = []
    srv = LoopbackServer(Strict)
    yield srv
    srv.stop()


@pytest.mark.parametrize("empty", ["", "   "])
def test_an_empty_session_id_is_bound_to_no_session(strict, tmp_path, empty):
    """Another client on the same host sends ``Mcp-Session-Id:`` with no value: it is forwarded
    untouched (no session guessed from the host, no server id put in), the server's 400 reaches it
    unchanged, and no record names a session."""
    with Proxy(f"http://127.0.0.1:{strict.port}", tmp_path) as proxy:
        a = Client(proxy.port)
        a.initialize("2024-11-05")
        assert a.session.startswith("mcpx1.")
        b = Client(proxy.port)
        before = len(proxy.changes())
        status, headers, body = b.post(TOOL_CALL, {"mcp-session-id": empty})
        assert (status, orjson.loads(body)) == (400, {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "Bad Request: No valid session ID provided"}})
        assert "mcp-session-id" not in headers
        assert Strict.seen[-1] == ("", orjson.dumps(TOOL_CALL))
        time.sleep(0.3)
        assert proxy.changes()[before:] == []
        status, _, msgs = a.rpc(TOOL_CALL)  # the first client's session is untouched
        assert (status, msgs) == (200, [{"jsonrpc": "2.0", "id": 1, "result": TOOL_RESULT}])
        assert Strict.seen[-1] == ("scripted-1", orjson.dumps(TOOL_CALL))
        a.close(), b.close()


def test_a_second_initialize_in_a_session_gets_the_servers_own_id(strict, tmp_path):
    """An initialize sent with a valid token is one more request of that session: the server gets
    its own session id (never the token) and answers as it would directly (400 -32600 "Server
    already initialized"), delivered unchanged; the session goes on."""
    with Proxy(f"http://127.0.0.1:{strict.port}", tmp_path) as proxy:
        a = Client(proxy.port)
        a.initialize("2025-03-26")
        before = len(proxy.changes())
        again = {"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "adv", "version": "1"}}}
        status, headers, body = a.post(again)
        assert Strict.seen[-1] == ("scripted-1", orjson.dumps(again))
        assert (status, orjson.loads(body)) == (400, {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "Server already initialized"}})
        assert "mcp-session-id" not in headers
        assert not any(sid and sid.startswith("mcpx1.") for sid, _ in Strict.seen)
        time.sleep(0.3)
        # the server's own answer, checked as any (a JSON-RPC error with id null is not 2025-03-26's)
        assert [(c["pointer"], c["action"], c["rule"], c["direction"], c["session"], c["detail"]) for c in proxy.changes()[before:]] == [
            ("/id", "keep", "REPAIR-invalid", "s2c", proxy.handle(a.session),
             "fails 2025-03-26 JSONRPCError: expected string/number, got null; nothing repaired, delivered as it was")]
        status, _, msgs = a.rpc(TOOL_CALL)
        assert (status, msgs) == (200, [{"jsonrpc": "2.0", "id": 1, "result": TOOL_RESULT}])
        assert Strict.seen[-1] == ("scripted-1", orjson.dumps(TOOL_CALL))
        a.close()


class Unparsable(Strict):
    """Answers initialize with a serverInfo.name mcpx cannot parse (``NAME``: a lone surrogate escape,
    or a byte that is not UTF-8), with its session id ``scripted-1``."""
    NAME = b"s\\ud800"

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["content-length"]))
        Strict.seen.append((self.headers.get("mcp-session-id"), raw))
        body = orjson.loads(raw)
        if body.get("method") == "initialize":
            self.send_json(b'{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"2025-03-26","capabilities":{},'
                           b'"serverInfo":{"name":"%s","version":"1"}}}' % (body["id"], self.NAME), {"mcp-session-id": self.SESSION})
        else:
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": TOOL_RESULT}))


WHY = {b"s\\ud800": "body is not valid JSON: no low surrogate in string: line 1 column 107 (char 106)",
       b"s\xff": "body is not valid UTF-8"}


@pytest.mark.parametrize("name", [b"s\\ud800", b"s\xff"], ids=["lone-surrogate", "not-utf-8"])
def test_an_initialize_answer_mcpx_cannot_parse_keeps_the_servers_session_id(tmp_path, name):
    """mcpx cannot learn the session from the answer (nothing to seal): the client gets the server's
    answer and its own Mcp-Session-Id byte for byte, with passthrough records; its next request,
    carrying that id, reaches the server untouched."""
    Strict.seen = []
    handler = type("H", (Unparsable,), {"NAME": name})
    srv = LoopbackServer(handler)
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path) as proxy:
            c = Client(proxy.port)
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "adv", "version": "1"}}}
            status, headers, body = c.post(init)
            assert (status, headers["mcp-session-id"]) == (200, "scripted-1")
            assert body == b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{},' \
                           b'"serverInfo":{"name":"%s","version":"1"}}}' % name
            time.sleep(0.3)
            records = [(c_["pointer"], c_["action"], c_["rule"], c_["direction"]) for c_ in proxy.changes()]
            details = [c_["detail"] for c_ in proxy.changes()]
            assert records == [("", "passthrough", "PASSTHROUGH-error", "s2c")] * 2, records
            assert details == [WHY[name], "initialize result not understood: session not sealed, "
                                          "the server's Mcp-Session-Id passed to the client unchanged"]
            c.session = "scripted-1"
            before = len(proxy.changes())
            status, headers, body = c.post(TOOL_CALL)
            assert (status, orjson.loads(body)) == (200, {"jsonrpc": "2.0", "id": 1, "result": TOOL_RESULT})
            assert Strict.seen[-1] == ("scripted-1", orjson.dumps(TOOL_CALL))
            time.sleep(0.3)
            assert proxy.changes()[before:] == []
            c.close()
    finally:
        srv.stop()


def test_a_server_session_id_too_long_to_seal_stays_in_memory_and_says_so(tmp_path):
    """A server's Mcp-Session-Id that does not fit in a sealed token (tokens are at most 1,024
    characters, seal.MAX_TOKEN; the server's id is sealed whole): before, sealing raised inside the
    request hook, the client's initialize then went to the server a second time on its own flow,
    and the session, kept in memory only with nothing said, got 404 after a restart. Now the session
    is not sealed: the client gets the server's own id byte for byte (as for an initialize answer mcpx
    cannot parse), one passthrough record and one warning line say why and what it means, the
    session works in this process, and after a restart its id gets the 404 of an unknown session
    (the client re-initializes), as the record said."""
    long_id = os.urandom(700).hex()  # 1,400 random characters: compression cannot shorten them enough
    Strict.seen = []
    srv = LoopbackServer(type("H", (Strict,), {"SESSION": long_id}))
    upstream, port = f"http://127.0.0.1:{srv.port}", free_port()
    why = ("the server's Mcp-Session-Id (1400 characters) is too long to seal in a session token (at most 1024): "
           "session not sealed, the server's Mcp-Session-Id passed to the client unchanged; the session lives in this "
           "process's memory only (after a restart, or on another replica, its requests get 404 and the client starts a new one)")
    try:
        with Proxy(upstream, tmp_path, port=port, tag="-a") as px:
            c = Client(px.port)
            c.initialize("2025-03-26")
            assert c.session == long_id
            status, _, msgs = c.rpc(TOOL_CALL)
            assert (status, msgs) == (200, [{"jsonrpc": "2.0", "id": 1, "result": TOOL_RESULT}])
            assert [sid == long_id for sid, _ in Strict.seen] == [False, True, True]  # one initialize, then the session
            assert Strict.seen[0][0] is None
            time.sleep(0.3)
            records = px.changes()
            assert [(r["action"], r["rule"], r["direction"], r["method"], r["detail"]) for r in records] == [
                ("passthrough", "PASSTHROUGH-error", "s2c", None, why)]
            assert records[0]["session"].startswith("s-") and long_id not in px.log_path.read_text()
            assert [line.split("] ", 1)[1] for line in px.output().splitlines() if "too long to seal" in line] == [
                "mcpx: " + why]
        with Proxy(upstream, tmp_path, port=port, tag="-b") as px:
            c.conn.close()
            c.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            status, _, body = c.post(TOOL_CALL)
            assert (status, orjson.loads(body)) == (404, {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Session not found"}})
            time.sleep(0.3)
            assert [(r["action"], r["rule"], r["detail"]) for r in px.changes()] == [
                ("answer-locally", "TR-session-id",
                 "unknown session (not a session id mcpx issued (or one mcpx no longer knows)): answered 404, nothing forwarded")]
            c.close()
    finally:
        srv.stop()


def test_an_error_while_sealing_sends_the_initialize_once_and_delivers_the_servers_answer(tmp_path):
    """An error raised inside mint_session (addons/actions.py), here while sealing: the server's
    Mcp-Session-Id holds a byte that is not UTF-8 (0xff; the spec allows visible ASCII only, so this
    is a scripted server), which mitmproxy reads as a lone surrogate that orjson cannot write into the
    token. Before, the error left the request hook, mitmproxy forwarded the client's initialize as
    well, and the server got it twice, with nothing said. Now the initialize reaches the server once:
    the client gets the server's answer with its own session id byte for byte, one passthrough record
    and one warning line say why and that the session is not sealed, and the session works in this
    process (its requests carry the server's id, as for an id too long to seal)."""
    sid = "bad\xff-1"  # as http.client and http.server read the header: latin-1, byte for byte
    Strict.seen = []
    srv = LoopbackServer(type("H", (Strict,), {"SESSION": sid}))
    try:
        error = f"TypeError: {orjson_encode_error(chr(0xdcff))}"
        why = (f"internal error after the server answered the initialize ({error}): its answer delivered untouched, "
               "the server's Mcp-Session-Id passed to the client unchanged; session not sealed (it lives in this "
               "process's memory only); the initialize was not sent again")
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path) as px:
            c = Client(px.port)
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "adv", "version": "1"}}}
            status, headers, body = c.post(init)
            assert (status, headers["mcp-session-id"], orjson.loads(body)) == (200, sid, {"jsonrpc": "2.0", "id": 0, "result": {
                "protocolVersion": "2025-03-26", "capabilities": {"tools": {}}, "serverInfo": Strict.SERVER_INFO}})
            assert Strict.seen == [(None, orjson.dumps(init))]  # once
            c.session = sid
            status, _, msgs = c.rpc(TOOL_CALL)
            assert (status, msgs) == (200, [{"jsonrpc": "2.0", "id": 1, "result": TOOL_RESULT}])
            assert Strict.seen[1:] == [(sid, orjson.dumps(TOOL_CALL))]
            time.sleep(0.3)
            records = px.changes()
            assert [(r["action"], r["rule"], r["direction"], r["method"], r["detail"]) for r in records] == [
                ("passthrough", "PASSTHROUGH-error", "s2c", None, why)]
            assert records[0]["session"].startswith("s-")
            assert [line.split("] ", 1)[1] for line in px.output().splitlines() if "internal error" in line] == ["mcpx: " + why]
            assert "Traceback" not in px.output()
            c.close()
    finally:
        srv.stop()


def orjson_encode_error(value) -> str:
    """The message orjson gives for a value it cannot write."""
    try:
        orjson.dumps(value)
    except TypeError as e:
        return str(e)
    raise AssertionError("written")
