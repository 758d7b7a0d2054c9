"""An initialize the server refuses leaves nothing behind, through the real mitmdump.

mcpx starts a session for an ``initialize`` before it is answered (session.SessionTracker.start),
found under the initialize's flow, a fresh handle, and the fallback keys of the client's connection
and host (for clients that echo no session id). Before, when the server answered with an HTTP error,
a JSON-RPC error, or a body mcpx could not read, that session stayed: the connection (and host) stayed
bound to it, the client's next requests without a session id were recorded under it (with the
failed initialize's client info in mcpx.report), and it stayed in memory until mcpx_session_ttl. Now
an initialize whose answer taught mcpx no server revision ends its session (addons/actions.py
``mint_session``; tracker ``abandon``): only the server's own session id, when the server gave one and
it reached the client unchanged, still finds it, so the client's requests carrying it go untouched.

The client's next initialize on the same connection starts a new session from its own request: its
revision, its client info. ``probe_addon.py`` (tests/reliability) shows the sessions and keys inside
mitmdump.
"""
from __future__ import annotations

import http.client
import time

import orjson
import pytest

from proxy_lib import ROOT, Client, Proxy, ScriptedMcpHandler, free_port, serve

PROBE = ROOT / "tests" / "reliability" / "probe_addon.py"
#: a result a 2024-11-05 client needs rewritten (audio -> text): shows the second session's revision in force
AUDIO = {"content": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]}


class Refusing(ScriptedMcpHandler):
    """Refuses the first initialize as ``KIND`` says, answers the next ones; answers tools/call with AUDIO."""
    SERVER_INFO = {"name": "refusing", "version": "1"}
    SESSION = "refusing-2"
    KIND = "http-500"
    #: initialize requests received
    inits: list[dict] = []
    #: (Mcp-Session-Id, body) of every other POST
    seen: list[tuple] = []

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["content-length"]))
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict) or body.get("method") != "initialize":
            Refusing.seen.append((self.headers.get("mcp-session-id"), raw))
            if isinstance(body, dict) and "id" in body:
                self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": AUDIO}))
            elif isinstance(body, dict):
                self.send_accepted()
            else:
                self.send_json(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}', status=400)
            return
        Refusing.inits.append(body)
        if len(Refusing.inits) > 1:
            out = orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": body["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": self.SERVER_INFO}})
            self.send_json(out, {"mcp-session-id": self.SESSION})
            return
        status, headers, out = FAILURES[self.KIND](body["id"])
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def _error(rid, code=-32602, message="Unsupported protocol version") -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


FAILURES = {
    "http-500": lambda rid: (500, {"content-type": "text/plain"}, b"internal server error"),
    "http-400-jsonrpc-error": lambda rid: (400, {"content-type": "application/json"}, _error(rid)),
    "jsonrpc-error": lambda rid: (200, {"content-type": "application/json"}, _error(rid)),
    "unreadable": lambda rid: (200, {"content-type": "application/json"}, b'{"jsonrpc":"2.0","id":0,"result":'),
    "sse-without-answer": lambda rid: (200, {"content-type": "text/event-stream"},
                                       b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n\n'),
}
KINDS = list(FAILURES)


@pytest.fixture
def server(request):
    Refusing.inits, Refusing.seen = [], []
    yield from serve(type("H", (Refusing,), {"KIND": request.param}))


def probe(port: int) -> dict:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/")
    data = c.getresponse().read()
    c.close()
    return orjson.loads(data)


def wait_changes(px: Proxy, n: int, timeout: float = 10) -> list[dict]:
    deadline = time.monotonic() + timeout
    while len(px.changes()) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return px.changes()


def init_msg(revision: str, name: str) -> dict:
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}}


@pytest.mark.parametrize("server", KINDS, indirect=True)
def test_a_refused_initialize_leaves_no_session_and_the_next_one_starts_clean(server, tmp_path, request):
    kind = request.node.callspec.params["server"]
    status_sent, _, body_sent = FAILURES[kind](0)
    port = free_port()
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, scripts=(str(PROBE),), options={"probe_port": port}) as px:
        c = Client(px.port)
        status, headers, body = c.post(init_msg("2025-06-18", "first"))
        # the client gets the server's answer as it was sent, with no session id
        assert (status, body, "mcp-session-id" in headers) == (status_sent, body_sent, False)
        assert probe(port)["sessions"] == 0  # before: 1, under the flow, a handle, conn:..., host:...
        before = len(px.changes())
        # the same connection, no session id: a body that is not JSON is recorded under no session
        status, _, _ = c.post(None, raw=b"not json")
        assert status == 400
        new = wait_changes(px, before + 1)[before:]
        assert [(r["session"], r["action"], r["from_rev"], r["to_rev"]) for r in new] == [
            (None, "passthrough", None, None)]
        # the next initialize on the same connection: a new session, from its own request only
        c.initialize("2024-11-05", name="second")
        assert c.session.startswith("mcpx1.")
        state = probe(port)
        assert state["sessions"] == 1
        handle = px.handle(c.session)
        assert set(state["bound"].values()) == {handle}
        from mcpx_core import seal
        facts = seal.Sealer(seal.read_key_file(str(px.key_path))).open(c.session)
        assert (facts.requested_rev, facts.client_rev, facts.server_rev, facts.client_info, facts.upstream_id) == (
            "2024-11-05", "2024-11-05", "2024-11-05", {"name": "second", "version": "1"}, "refusing-2")
        # its requests are rewritten for its revision (2024-11-05: no audio blocks)
        before = len(px.changes())
        status, _, msgs = c.rpc({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}}})
        assert status == 200 and msgs[0]["result"]["content"][0]["type"] == "text"
        new = wait_changes(px, before + 1)[before:]
        assert {(r["session"], r["from_rev"], r["to_rev"], r["rule"]) for r in new} == {
            (handle, "2024-11-05", "2024-11-05", "CT-audio")}
        # (after an HTTP 400 JSON-RPC error, mcpx asks the server whether it speaks 2026-07-28: server/discover)
        seen = [(sid, orjson.loads(b)["method"] if b != b"not json" else b) for sid, b in Refusing.seen
                if b'"server/discover"' not in b]
        assert seen == [(None, b"not json"), ("refusing-2", "notifications/initialized"), ("refusing-2", "tools/call")]
        c.close()


class RefusingWithId(Refusing):
    """A JSON-RPC error to the first initialize that still carries an Mcp-Session-Id."""
    KIND = "jsonrpc-error"
    SESSION = "refusing-2"

    def send_json(self, out, headers=None, status=200):
        if len(Refusing.inits) == 1 and b'"error"' in out:
            headers = {**(headers or {}), "mcp-session-id": "refused-1"}
        super().send_json(out, headers, status)

    def do_POST(self):
        if self.headers.get("mcp-session-id") or len(Refusing.inits) != 0:
            return super().do_POST()
        raw = self.rfile.read(int(self.headers["content-length"]))
        body = orjson.loads(raw)
        Refusing.inits.append(body)
        self.send_json(_error(body["id"]))


@pytest.fixture
def server_with_id():
    Refusing.inits, Refusing.seen = [], []
    yield from serve(RefusingWithId)


def test_a_refused_initialize_that_names_a_server_session_keeps_only_that_id(server_with_id, tmp_path):
    """The server's id reaches the client unchanged (as for any answer mcpx could not seal): a request
    carrying it still reaches the server untouched, but the connection is bound to nothing."""
    port = free_port()
    with Proxy(f"http://127.0.0.1:{server_with_id}", tmp_path, scripts=(str(PROBE),), options={"probe_port": port}) as px:
        c = Client(px.port)
        status, headers, body = c.post(init_msg("2025-03-26", "first"))
        assert (status, headers["mcp-session-id"], body) == (200, "refused-1", _error(0))
        state = probe(port)
        assert (state["sessions"], sorted(state["bound"])) == (1, ["refused-1"])  # before: the flow, conn:..., host:..., a handle too
        c.session = "refused-1"
        status, _, body = c.post({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        assert Refusing.seen == [("refused-1", b'{"jsonrpc":"2.0","id":5,"method":"ping"}')]
        c.close()


class RefusingSecond(ScriptedMcpHandler):
    """Accepts the first initialize (session ``keep-1``); refuses the next ones with a JSON-RPC error that
    still names ``keep-1`` (the session the server keeps); answers tools/call with AUDIO."""
    SERVER_INFO = {"name": "refusing-second", "version": "1"}
    inits: list = []
    #: (Mcp-Session-Id, body) of every other POST
    seen: list = []

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["content-length"]))
        body = orjson.loads(raw)
        if body.get("method") == "initialize":
            RefusingSecond.inits.append(body)
            if len(RefusingSecond.inits) == 1:
                self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                    "protocolVersion": body["params"]["protocolVersion"], "capabilities": {"tools": {}},
                    "serverInfo": self.SERVER_INFO}}), {"mcp-session-id": "keep-1"})
            else:
                self.send_json(_error(body["id"]), {"mcp-session-id": "keep-1"})
            return
        RefusingSecond.seen.append((self.headers.get("mcp-session-id"), raw))
        if "id" in body:
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": AUDIO}))
        else:
            self.send_accepted()


@pytest.fixture
def second_refused():
    yield from serve(RefusingSecond, "inits", "seen")


def test_a_refused_initialize_leaves_the_earlier_session_of_the_connection_bound(second_refused, tmp_path):
    """A 2024-11-05 client whose session is open sends a second initialize (2025-06-18), which the server
    refuses naming its existing session. Before, that initialize's session took the connection, host and
    server-id keys of the first one, and abandoning it unbound them: the client's next request without a
    session id (a client that echoes none) was bound to nothing and forwarded unrewritten (an audio block
    reached a 2024-11-05 client). Now the first session keeps them."""
    port = free_port()
    with Proxy(f"http://127.0.0.1:{second_refused}", tmp_path, scripts=(str(PROBE),), options={"probe_port": port}) as px:
        c = Client(px.port)
        c.initialize("2024-11-05", name="first")
        handle, token = px.handle(c.session), c.session
        bound = probe(port)["bound"]
        c.session = None
        status, headers, body = c.post(init_msg("2025-06-18", "second"))
        assert (status, headers.get("mcp-session-id"), body) == (200, "keep-1", _error(0))
        state = probe(port)
        assert state["sessions"] == 1
        assert {k: v for k, v in state["bound"].items()} == bound  # the first session's keys, all of them
        before = len(px.changes())
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}}}
        # with no session id: not this session's client (its server keeps a session and its client echoed its
        # token, docs/security.md "The one guess"): forwarded as it came, answered as the server answers it
        status, _, msgs = c.rpc(call)
        assert (status, msgs[0]["result"]) == (200, AUDIO)
        c.session = token
        status, _, msgs = c.rpc(call)  # with its token: the first session, as before the refused initialize
        assert (status, msgs[0]["result"]["content"]) == (200, [{"type": "text", "text": "[audio content omitted: audio/wav, 3 bytes]"}])
        assert [(r["session"], r["rule"]) for r in wait_changes(px, before + 1)[before:]] == [(handle, "CT-audio")]
        c.close()
    # notifications/initialized with the server's id; the call without a session id as the client sent it; the call with its token
    assert [sid for sid, _ in RefusingSecond.seen] == ["keep-1", None, "keep-1"]


class RefusingOnCue(ScriptedMcpHandler):
    """Accepts the first initialize (session ``keep-1``); holds each later one until the test releases it
    (``gates[clientInfo.name]``), then refuses it with a JSON-RPC error (as a server that caps its
    sessions would; the timing needs a server that answers on cue). ``inits``: the client names of the
    initializes received, in order; tools/call is answered with AUDIO."""
    SERVER_INFO = {"name": "refusing-on-cue", "version": "1"}
    inits: list = []
    gates: dict = {}
    arrived = __import__("threading").Condition()

    def do_POST(self):
        body = orjson.loads(self.rfile.read(int(self.headers["content-length"])))
        if body.get("method") == "initialize":
            name = body["params"]["clientInfo"]["name"]
            with self.arrived:
                self.inits.append(name)
                self.arrived.notify_all()
            if len(self.inits) == 1:
                self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                    "protocolVersion": body["params"]["protocolVersion"], "capabilities": {"tools": {}},
                    "serverInfo": self.SERVER_INFO}}), {"mcp-session-id": "keep-1"})
            else:
                self.gates[name].wait(20)
                self.send_json(_error(body["id"]))
            return
        if "id" in body:
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": AUDIO}))
        else:
            self.send_accepted()


@pytest.fixture
def on_cue():
    import threading
    RefusingOnCue.gates = {"a": threading.Event(), "b": threading.Event()}
    yield from serve(RefusingOnCue, "inits")
    for g in RefusingOnCue.gates.values():
        g.set()


@pytest.mark.parametrize("first_refused", ["a", "b"])
def test_two_refused_initializes_in_flight_leave_the_hosts_earlier_session_bound(on_cue, tmp_path, first_refused):
    """A 2024-11-05 client's session is open (found by its host too: it echoes no session id). Two more
    clients on the same host send an initialize each (``a``, then ``b``, both in flight: ``b``'s session
    takes the host key over from ``a``'s, which took it over from the first); the server refuses both,
    ``a``'s first or ``b``'s first. Before, when ``a``'s was refused first, the host key stayed with
    ``b``'s session (still in flight), and ``b``'s refusal then gave it back to ``a``'s, which was gone:
    the host was bound to nothing, and the first client's next request from a new connection went
    through unrewritten (an audio block to a 2024-11-05 client). Now it gives it to the session ``a``'s
    had taken it from: the first client's (the probe shows the keys; the guess itself serves that session
    to no tokenless request, since its server keeps a session: docs/security.md "The one guess")."""
    import threading
    port = free_port()
    with Proxy(f"http://127.0.0.1:{on_cue}", tmp_path, scripts=(str(PROBE),), options={"probe_port": port}) as px:
        c = Client(px.port)
        c.initialize("2024-11-05", name="first")
        handle, token = px.handle(c.session), c.session
        c.close()
        answers: dict = {}

        def init(name: str) -> None:
            other = Client(px.port)
            answers[name] = other.post(init_msg("2025-06-18", name))
            other.close()

        threads = {}
        for name in ("a", "b"):
            threads[name] = threading.Thread(target=init, args=(name,))
            threads[name].start()
            with RefusingOnCue.arrived:
                assert RefusingOnCue.arrived.wait_for(lambda: name in RefusingOnCue.inits, 20)
        for name in (first_refused, "b" if first_refused == "a" else "a"):
            RefusingOnCue.gates[name].set()
            threads[name].join(20)
        assert {n: (st, "mcp-session-id" in h, body) for n, (st, h, body) in answers.items()} == {
            "a": (200, False, _error(0)), "b": (200, False, _error(0))}
        state = probe(port)
        assert state["sessions"] == 1 and set(state["bound"].values()) == {handle}
        assert "host:127.0.0.1" in state["bound"]
        before = len(px.changes())
        again = Client(px.port)  # the first client, on a new connection, with its token
        again.session = token
        status, _, msgs = again.rpc({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}}})
        again.close()
        assert (status, msgs[0]["result"]["content"]) == (200, [{"type": "text", "text": "[audio content omitted: audio/wav, 3 bytes]"}])
        assert [(r["session"], r["rule"]) for r in wait_changes(px, before + 1)[before:]] == [(handle, "CT-audio")]
