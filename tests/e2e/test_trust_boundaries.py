"""Trust boundaries, attacked as another client on the same machine would (raw HTTP, loopback).

Each test runs the real ``mitmdump -s addon/mcpx.py`` (tests/proxy_lib.Proxy) with default options
for what it attacks, in front of a scripted server that only records every request it gets (method,
path, headers, body) and answers what the attack needs: the servers are scripted because what the
test is about is what reaches them and what each client gets, byte for byte.

1. A client that sends no ``Mcp-Session-Id`` cannot act in another client's bridged session: its
   answer to the other session's question reaches nobody (400, a record), its DELETE ends nothing.
2. Two users of one app (same clientInfo and capabilities, other ``Authorization``) get one upstream
   session each, each opened with its own credentials.
3. An mcpx token never reaches the server: not with a revision named in ``_meta``, not on
   ``initialize``, not forged.
4. A token minted in front of one server opens at no other (same key file, another upstream).
5. Wire values that hold ESC sequences and newlines reach mitmdump's output escaped.
6. A request mcpx answers for the server is refused for a foreign Origin, as a local server refuses
   DNS rebinding (the conformance suite's ``dns-rebinding-protection`` request, sent as it sends it).
"""
from __future__ import annotations

import http.client
import json
import threading

import orjson
import pytest

from proxy_lib import ACCEPT, Client, LoopbackServer, Proxy, ScriptedMcpHandler, initialize_msg, messages_of, sse_events

PV, CAPS, INFO = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
                  "io.modelcontextprotocol/clientInfo")
ASK = {"method": "elicitation/create", "params": {"mode": "form", "message": "v?", "requestedSchema": {
    "type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]}}}


class Recording(ScriptedMcpHandler):
    """Records every request: ``seen`` holds (method, path, {header: value}, parsed body or None)."""

    seen: list = []

    def _record(self) -> dict | None:
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        body = json.loads(raw) if raw else None
        self.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        return body

    def reply(self, status: int, obj, headers: dict | None = None) -> None:
        self.send_json(orjson.dumps(obj), headers, status)

    def send_empty(self, status: int) -> None:
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):
        self._record()
        self.send_empty(405)

    def do_DELETE(self):
        self._record()
        self.send_empty(405)


class Only2026(Recording):
    """A 2026-07-28-only server: ``server/discover``; ``tools/call ask`` answers input_required with
    one elicitation (round 1), then, retried with ``inputResponses``, a text naming what it got."""

    seen: list = []

    def do_POST(self):
        body = self._record()
        method, rid = body.get("method"), body.get("id")
        params = body.get("params") or {}
        if method == "server/discover":
            self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {
                "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private",
                "resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "only-2026", "version": "1"}}}})
        elif method == "tools/call" and "inputResponses" not in params:
            self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {
                "resultType": "input_required", "inputRequests": {"ask": ASK}, "requestState": "round-1"}})
        elif method == "tools/call":
            got = params["inputResponses"]["ask"]["content"]["v"]
            self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": f"got {got}"}], "resultType": "complete"}})
        elif rid is None:
            self.send_empty(202)
        else:
            self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete"}})


class Legacy(Recording):
    """A legacy (2025-06-18) server with sessions: ``initialize`` opens session ``legacy-N`` and
    remembers the ``Authorization`` it was opened with; a ``tools/call`` answers a text naming the
    session it came on and that session's credentials."""

    seen: list = []
    opened: dict = {}

    def do_POST(self):
        body = self._record()
        method, rid = body.get("method"), body.get("id")
        if method == "initialize":
            sid = f"legacy-{len(self.opened) + 1}"
            self.opened[sid] = self.headers.get("authorization")
            self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "legacy", "version": "1"}}},
                {"mcp-session-id": sid})
        elif rid is None or "method" not in body:
            self.send_empty(202)
        elif method == "server/discover":
            self.reply(400, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}})
        else:
            sid = self.headers.get("mcp-session-id")
            self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": f"session {sid} opened by {self.opened.get(sid)}"}]}})


@pytest.fixture
def only_2026():
    Only2026.seen = []
    srv = LoopbackServer(Only2026)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def legacy():
    Legacy.seen, Legacy.opened = [], {}
    srv = LoopbackServer(Legacy)
    try:
        yield srv
    finally:
        srv.stop()


def _read_events(resp: http.client.HTTPResponse, n: int) -> list[dict]:
    """The first ``n`` SSE events of a response still streaming."""
    buf = b""
    while buf.count(b"\n\n") < n:
        chunk = resp.read1(65536)
        if not chunk:
            break
        buf += chunk
    return sse_events(buf)


def _rest(resp: http.client.HTTPResponse) -> list[dict]:
    return sse_events(resp.read())


def test_a_tokenless_answer_to_another_sessions_question_reaches_nobody(only_2026, tmp_path):
    """Legacy bridge (mcpx_server_era=2026). Y (2025-06-18, elicitation) calls a tool; the server asks
    a question, which mcpx puts on Y's stream as an elicitation/create with an id of mcpx's. X, on
    another connection of the same host, POSTs an answer to that id with no session header: 400, a
    drop-message record, nothing reaches Y's call or the server. X's tokenless DELETE ends nothing.
    Y then answers its own question and gets the result built from its own answer."""
    with Proxy(f"http://127.0.0.1:{only_2026.port}", tmp_path, options={"mcpx_server_era": "2026"}) as px:
        y = Client(px.port)
        y_init = initialize_msg("2025-06-18", name="victim")
        y_init["params"]["capabilities"] = {"elicitation": {}}
        status, headers, msgs = y.rpc(y_init)
        assert status == 200 and msgs[0]["result"]["protocolVersion"] == "2025-06-18"
        y.session, y.revision = headers["mcp-session-id"], "2025-06-18"
        assert y.post({"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 202

        call = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
        call.request("POST", "/mcp", orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                                    "params": {"name": "ask", "arguments": {}}}), y.headers())
        stream = call.getresponse()
        assert stream.status == 200 and stream.getheader("content-type").startswith("text/event-stream")
        [question] = [orjson.loads(e["data"]) for e in _read_events(stream, 1)]
        assert question["method"] == "elicitation/create" and question["id"].startswith("mcpx-")

        x = Client(px.port)  # the stranger: same host, its own connection, no session id
        forged = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"v": "ATTACKER"}}}
        refused = orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message":
                                "Invalid Request: no request of this session has that id (a response needs its session's Mcp-Session-Id)"}})
        assert x.post(forged) == (400, {"content-type": "application/json", "content-length": str(len(refused))}, refused)
        x.conn.request("DELETE", "/mcp", headers={"accept": ACCEPT})
        gone = x.conn.getresponse()
        gone.read()
        assert gone.status == 405  # the server's own answer to a DELETE without a session: nothing ended

        answer = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"v": "victim's"}}}
        assert y.post(answer)[0] == 202
        final = [orjson.loads(e["data"]) for e in _rest(stream)]
        assert final == [{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "got victim's"}]}}]
        status, _, listed = y.rpc({"jsonrpc": "2.0", "id": 8, "method": "ping"})
        assert (status, listed) == (200, [{"jsonrpc": "2.0", "id": 8, "result": {}}])  # Y's session lives on
        records = px.changes()
    # the server got the question's retry with Y's answer only, and no DELETE
    calls = [b for m, _, _, b in Only2026.seen if m == "POST" and b.get("method") == "tools/call"]
    assert [c["params"].get("inputResponses") for c in calls] == [
        None, {"ask": {"action": "accept", "content": {"v": "victim's"}}}]
    assert [m for m, *_ in Only2026.seen if m != "POST"] == ["DELETE"]  # X's, forwarded as it came
    assert [(r["pointer"], r["action"], r["rule"], r["detail"], r["session"]) for r in records if r["session"] is None] == [
        ("header:Mcp-Session-Id", "drop-message", "TR-session-id",
         "an answer to a server request of a session, sent without that session's id: delivered to nobody, answered 400", None)]


def test_two_users_of_one_app_get_one_upstream_session_each(legacy, tmp_path):
    """2026-07-28 client bridge (mcpx_server_era=legacy). A and B send the same clientInfo and
    capabilities with other Authorization headers: each call goes on an upstream session opened with
    that user's own Authorization; a third call of A's reuses A's session."""
    envelope = {PV: "2026-07-28", CAPS: {}, INFO: {"name": "one-app", "version": "1.0"}}

    def call(token: str, rid: int) -> list[dict]:
        c = Client(px.port, headers={"authorization": f"Bearer {token}", "mcp-protocol-version": "2026-07-28",
                                     "mcp-method": "tools/call", "mcp-name": "whoami"})
        status, _, msgs = c.rpc({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                 "params": {"name": "whoami", "arguments": {}, "_meta": envelope}})
        c.close()
        assert status == 200, msgs
        return msgs

    with Proxy(f"http://127.0.0.1:{legacy.port}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        a1, b1, a2 = call("alice-secret", 1), call("bob-secret", 2), call("alice-secret", 3)
        out = px.output()
    texts = [m[0]["result"]["content"][0]["text"] for m in (a1, b1, a2)]
    assert texts == ["session legacy-1 opened by Bearer alice-secret", "session legacy-2 opened by Bearer bob-secret",
                     "session legacy-1 opened by Bearer alice-secret"]
    inits = [(h.get("authorization"), b["params"]["clientInfo"]) for m, _, h, b in Legacy.seen if b and b.get("method") == "initialize"]
    assert inits == [("Bearer alice-secret", {"name": "one-app", "version": "1.0"}), ("Bearer bob-secret", {"name": "one-app", "version": "1.0"})]
    on = [(h.get("mcp-session-id"), h.get("authorization")) for m, _, h, b in Legacy.seen if b and b.get("method") == "tools/call"]
    assert on == [("legacy-1", "Bearer alice-secret"), ("legacy-2", "Bearer bob-secret"), ("legacy-1", "Bearer alice-secret")]
    assert "secret" not in out


def test_a_token_never_reaches_the_server(legacy, tmp_path):
    """A real token, sent with a revision named in params._meta, on an initialize, and a forged one:
    the server never receives a header value of mcpx's; the real token's requests go on its session
    under the server's own id, the forged one gets 404 -32001 with nothing forwarded."""
    with Proxy(f"http://127.0.0.1:{legacy.port}", tmp_path) as px:
        c = Client(px.port)
        c.initialize("2025-06-18", name="holder")
        token = c.session
        assert token.startswith("mcpx1.")
        named = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "t", "arguments": {}, "_meta": {PV: "2025-06-18"}}}
        status, _, msgs = c.rpc(named)
        assert (status, msgs[0]["result"]["content"][0]["text"]) == (200, "session legacy-1 opened by None")
        status, _, msgs = c.rpc(initialize_msg("2025-06-18", rid=3))
        assert status == 200 and msgs[0]["id"] == 3
        forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
        for body in (named, initialize_msg("2025-06-18", rid=4)):
            status, _, msgs = c.rpc(body, {"mcp-session-id": forged})
            assert (status, msgs) == (404, [{"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32001, "message": "Session not found"}}])
    sent = [h.get("mcp-session-id") for _, _, h, _ in Legacy.seen]
    assert sent == [None, "legacy-1", "legacy-1", "legacy-1"]  # initialize, initialized, the named call, the initialize again
    assert not any("mcpx1." in v for _, _, h, _ in Legacy.seen for v in h.values())


def test_a_token_of_one_server_is_unknown_at_another(legacy, tmp_path):
    """Two mcpx with one key file, in front of two servers: the token of a session opened through the
    first is an unknown session at the second (404 -32001, a record), which forwards nothing."""
    other = LoopbackServer(Legacy)
    try:
        with Proxy(f"http://127.0.0.1:{legacy.port}", tmp_path, tag="-a") as pa:
            a = Client(pa.port)
            a.initialize("2025-06-18")
            token = a.session
        before = len(Legacy.seen)
        with Proxy(f"http://127.0.0.1:{other.port}", tmp_path, tag="-b") as pb:
            b = Client(pb.port)
            status, _, msgs = b.rpc({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, {"mcp-session-id": token})
            records = pb.changes()
    finally:
        other.stop()
    assert (status, msgs) == (404, [{"jsonrpc": "2.0", "id": 5, "error": {"code": -32001, "message": "Session not found"}}])
    assert len(Legacy.seen) == before  # (both servers share the class's list: nothing more reached either)
    assert [(r["action"], r["rule"], r["detail"]) for r in records] == [
        ("answer-locally", "TR-session-id",
         "unknown session (a session of another server (the token names another origin or path)): answered 404, nothing forwarded")]


def test_hostile_wire_values_reach_the_terminal_escaped(legacy, tmp_path):
    """Ids, a method and a clientInfo name holding ESC sequences, CR, LF and a bidi override, on a
    session, without one and with a forged token: mitmdump's whole output holds no raw control byte
    (but the newlines between its lines) and no line mcpx did not write."""
    evil = "x\x1b[2J\x1b]0;owned\x07\r\nmcpx: s2c forged line\u202e"
    with Proxy(f"http://127.0.0.1:{legacy.port}", tmp_path, options={"termlog_verbosity": "debug", "mcpx_record_lines": "true"}) as px:
        c = Client(px.port)
        c.initialize("2025-06-18", name=evil)
        c.rpc({"jsonrpc": "2.0", "id": evil, "method": "tools/call", "params": {"name": evil, "arguments": {}}})
        c.rpc({"jsonrpc": "2.0", "id": 9, "method": evil})
        c.rpc({"jsonrpc": "2.0", "id": 10, "method": "tools/list", "params": {evil: 1}})  # a key: a pointer of a record line
        c.rpc({"jsonrpc": "2.0", "id": evil, "method": "tools/list"}, {"mcp-session-id": "mcpx1." + "A" * 60})
        Client(px.port).rpc({"jsonrpc": "2.0", "id": evil, "method": evil, "params": {"_meta": {PV: evil}}})
        px.stop()
        raw = px.out_path.read_bytes()
    text = raw.decode("utf-8")
    assert [c for c in text if (ord(c) < 32 and c != "\n") or 0x7f <= ord(c) <= 0x9f or c == "\u202e"] == []
    assert not any(line.startswith("mcpx: s2c forged") for line in text.split("\n"))
    assert "\\x1b[2J\\x1b]0;owned\\x07\\x0d\\x0amcpx: s2c forged line\\u202e" in text  # shown, as escapes
    log = px.log_path.read_bytes()  # the change log: one JSON record a line, for every reader of lines
    assert "\u202e".encode() not in log and len(log.decode().splitlines()) == len(px.changes())


@pytest.mark.parametrize("origin,status", [("http://evil.example.com", 403), (None, 200), ("http://127.0.0.1:{port}", 200),
                                           ("http://localhost:6274", 200)])
def test_a_request_mcpx_answers_is_checked_for_dns_rebinding(legacy, tmp_path, origin, status):
    """The conformance suite's dns-rebinding-protection request for 2026-07-28 (server/discover, which
    the 2026-07-28 client bridge answers itself): a foreign Origin gets 403 with a JSON-RPC error and
    a record, and nothing reaches the server; a local Origin, or none, is served."""
    with Proxy(f"http://127.0.0.1:{legacy.port}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        discover = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
            PV: "2026-07-28", INFO: {"name": "conformance-dns-rebinding-test", "version": "1.0.0"}, CAPS: {}}}}
        extra = {"mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover"}
        if origin:
            extra["origin"] = origin.format(port=px.port)
        got, headers, body = Client(px.port).post(discover, extra)
        records = px.changes()
    assert got == status
    if status == 403:
        assert orjson.loads(body) == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32000, "message": "Forbidden: Origin is not a local origin (mcpx refuses it as the server would)"}}
        assert Legacy.seen == []
        assert [(r["pointer"], r["action"], r["rule"]) for r in records] == [("header:Origin", "answer-locally", "MCPX-origin-check")]
    else:
        assert messages_of(headers["content-type"], body)[0]["result"]["supportedVersions"] == ["2026-07-28"]


class Stateless(Recording):
    """A stateless legacy server (no Mcp-Session-Id): initialize echoes the client's revision; a
    tools/call answers a resource_link block (2025-06-18 has it; 2024-11-05 does not)."""

    seen: list = []
    LINK = {"type": "resource_link", "uri": "file:///n.txt", "name": "n"}

    def do_POST(self):
        body = self._record()
        method, rid = body.get("method"), body.get("id")
        if method == "initialize":
            self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": body["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "stateless", "version": "1"}}})
        elif rid is None:
            self.send_empty(202)
        else:
            self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {"content": [self.LINK]}})


def test_the_guess_serves_a_client_that_echoes_no_id_and_no_stranger_reaches_a_sealed_session(tmp_path):
    """The one guess left (the client's connection, then its host), against a stateless server: A
    (2025-06-18) echoes its token; a stranger on the same host with no session id then finds no session
    (A's token was echoed: A is never tokenless) and gets the server's answer untouched. B (2024-11-05)
    never echoes its token: its calls on its connection are found by the guess and get 2024-11-05."""
    Stateless.seen = []
    srv = LoopbackServer(Stateless)
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path) as px:
            a = Client(px.port)
            a.initialize("2025-06-18", name="a")
            assert a.session.startswith("mcpx1.")
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "n", "arguments": {}}}
            _, _, got_a = a.rpc(call)
            stranger = Client(px.port)
            _, _, got_stranger = stranger.rpc(call)
            b = Client(px.port)  # B cannot echo a session id: it never sends one
            assert b.rpc(initialize_msg("2024-11-05", name="b"))[0] == 200
            assert b.post({"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 202
            _, _, got_b = b.rpc(call)
            flows = [f for f in px.flows() if f.request.method == "POST" and b'"tools/call"' in (f.request.get_content() or b"")]
    finally:
        srv.stop()
    assert got_a == got_stranger == [{"jsonrpc": "2.0", "id": 2, "result": {"content": [Stateless.LINK]}}]
    assert got_b[0]["result"]["content"][0]["type"] == "resource"  # downgraded for 2024-11-05
    assert [(f.metadata["mcpx"]["session"] is not None, f.metadata["mcpx"]["client_revision"]) for f in flows] == [
        (True, "2025-06-18"), (False, None), (True, "2024-11-05")]


def test_no_key_of_mcpxs_own_is_a_session_id(legacy, tmp_path):
    """The keys mcpx finds sessions under in memory (the guess's host and connection, the session's handle,
    the flow of its initialize, the server's own id of a sealed session) are never a session id a client
    can send: each gets 404 -32001 with nothing forwarded, a DELETE too; the token holder is unharmed."""
    with Proxy(f"http://127.0.0.1:{legacy.port}", tmp_path) as px:
        victim = Client(px.port)
        victim.initialize("2025-06-18", name="victim")
        handle = px.handle(victim.session)
        port = victim.conn.sock.getsockname()[1]
        flow_key = next(f"flow:{f.id}" for f in px.flows() if b'"initialize"' in (f.request.get_content() or b""))
        before = len(Legacy.seen)
        got = []
        for sid in ("host:127.0.0.1", f"conn:127.0.0.1:{port}", handle, flow_key, "legacy-1"):
            stranger = Client(px.port)
            got.append(stranger.rpc({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                     "params": {"name": "t", "arguments": {}}}, {"mcp-session-id": sid})[::2])
            stranger.conn.request("DELETE", "/mcp", headers={"mcp-session-id": sid})
            r = stranger.conn.getresponse()
            r.read()
            got.append(r.status)
        assert len(Legacy.seen) == before
        _, _, mine = victim.rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t", "arguments": {}}})
    assert got == [(404, [{"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Session not found"}}]), 404] * 5
    assert mine[0]["result"]["content"][0]["text"] == "session legacy-1 opened by None"


def test_a_bridged_session_body_too_large_to_read_gets_413_and_nothing_reaches_the_server(only_2026, tmp_path):
    """Legacy bridge: a request body above mcpx_max_body, which mitmproxy streams (Content-Length, or
    chunked), cannot go through the bridge: mcpx answers 413 with a JSON-RPC error and a record, and the
    server receives nothing (its session token least of all)."""
    with Proxy(f"http://127.0.0.1:{only_2026.port}", tmp_path, options={"mcpx_server_era": "2026", "mcpx_max_body": "64KiB"}) as px:
        c = Client(px.port)
        init = initialize_msg("2025-06-18")
        status, headers, _ = c.rpc(init)
        c.session, c.revision = headers["mcp-session-id"], "2025-06-18"
        big = orjson.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "x", "arguments": {"pad": "A" * 70000}}})
        before = len(Only2026.seen)
        status, _, body = c.post(None, raw=big)
        conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
        conn.putrequest("POST", "/mcp")
        for k, v in {**c.headers(), "transfer-encoding": "chunked"}.items():
            conn.putheader(k, v)
        conn.endheaders()
        for i in range(0, len(big), 8192):
            part = big[i:i + 8192]
            conn.send(b"%x\r\n%s\r\n" % (len(part), part))
        conn.send(b"0\r\n\r\n")
        chunked = conn.getresponse()
        chunked_body = chunked.read()
        records = px.changes()
    refused = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Request body too large for mcpx to bridge (above mcpx_max_body)"}}
    assert (status, orjson.loads(body)) == (413, refused)
    assert (chunked.status, orjson.loads(chunked_body)) == (413, refused)
    assert Only2026.seen[before:] == []
    assert [(r["action"], r["rule"]) for r in records if r["rule"] == "MCPX-body-limit"] == [("answer-locally", "MCPX-body-limit")] * 2


def test_a_foreign_origin_initialize_is_refused_even_with_a_cached_discover(tmp_path):
    """Legacy bridge: mcpx answers a legacy client's initialize from server/discover (cached for its ttlMs):
    an initialize with a foreign Origin gets 403 whether or not an answer is cached, and no session."""
    class Cached(Only2026):
        seen: list = []

        def do_POST(self):
            if self.headers.get("origin", "").startswith("http://evil"):
                self._record()
                self.reply(403, {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "Forbidden origin"}})
                return
            Only2026.do_POST(self)
    srv = LoopbackServer(Cached)
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, options={"mcpx_server_era": "2026"}) as px:
            evil = {"origin": "http://evil.example.com:8080"}
            first = Client(px.port).post(initialize_msg("2025-06-18"), evil)
            assert Client(px.port).rpc(initialize_msg("2025-06-18"))[0] == 200  # a local client: discover cached
            again = Client(px.port).post(initialize_msg("2025-06-18"), evil)
    finally:
        srv.stop()
    for status, headers, body in (first, again):
        assert (status, "mcp-session-id" in headers) == (403, False)
        assert orjson.loads(body)["error"]["message"] == "Forbidden: Origin is not a local origin (mcpx refuses it as the server would)"


def test_a_tokenless_answer_with_a_revision_header_or_beside_an_initialize_reaches_nobody(only_2026, tmp_path):
    """The held-id answer of the first test, sent with MCP-Protocol-Version, with a revision in _meta, and
    in a batch beside an initialize: 400 each time, and the victim's call gets its own answer."""
    with Proxy(f"http://127.0.0.1:{only_2026.port}", tmp_path, options={"mcpx_server_era": "2026"}) as px:
        y = Client(px.port)
        y_init = initialize_msg("2025-06-18", name="victim")
        y_init["params"]["capabilities"] = {"elicitation": {}}
        status, headers, _ = y.rpc(y_init)
        y.session, y.revision = headers["mcp-session-id"], "2025-06-18"
        call = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
        call.request("POST", "/mcp", orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                                    "params": {"name": "ask", "arguments": {}}}), y.headers())
        stream = call.getresponse()
        [question] = [orjson.loads(e["data"]) for e in _read_events(stream, 1)]
        forged = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"v": "ATTACKER"}, "_meta": {PV: "2025-06-18"}}}
        x = Client(px.port)
        statuses = [x.post(forged, {"mcp-protocol-version": "2025-06-18"})[0], x.post([initialize_msg("2025-03-26", rid=1), forged])[0]]
        assert y.post({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"v": "mine"}}})[0] == 202
        final = [orjson.loads(e["data"]) for e in _rest(stream)]
    assert statuses == [400, 400]
    assert final == [{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "got mine"}]}}]


def test_tenants_by_path_and_query_get_their_own_upstream_sessions(legacy, tmp_path):
    """2026-07-28 client bridge: the same client identity at /mcp?api_key=alice and /mcp?api_key=bob, or at
    another path, gets an upstream session of its own (the URL scopes what mcpx keeps, as the credentials do)."""
    envelope = {PV: "2026-07-28", CAPS: {}, INFO: {"name": "one-app", "version": "1.0"}}
    with Proxy(f"http://127.0.0.1:{legacy.port}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        texts = []
        for path in ("/mcp?api_key=alice", "/mcp?api_key=bob", "/tenant-b/mcp", "/mcp?api_key=alice"):
            c = Client(px.port, path=path, headers={"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "w"})
            _, _, msgs = c.rpc({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "w", "arguments": {}, "_meta": envelope}})
            texts.append(msgs[0]["result"]["content"][0]["text"])
    assert texts == ["session legacy-1 opened by None", "session legacy-2 opened by None", "session legacy-3 opened by None",
                     "session legacy-1 opened by None"]
    assert [p for m, p, h, b in Legacy.seen if b and b.get("method") == "initialize"] == ["/mcp?api_key=alice", "/mcp?api_key=bob", "/tenant-b/mcp"]
