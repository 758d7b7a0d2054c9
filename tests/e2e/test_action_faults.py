"""An error raised inside one of mcpx's own actions (addons/actions.py: the initialize mcpx sends
itself to seal a session, a batch it splits), through the real mitmdump (found by an adversarial
review of mint_session).

Such an action sends the client's request to the server itself. Before, an error it raised left the
``request`` hook, and mitmproxy then forwarded the client's request as well: the server got the
initialize (or the batch) twice, and nothing said so. Now (``ClientRequests._act``): before mcpx
sent anything the request is forwarded untouched; once it sent, the request is never forwarded and
the client gets HTTP 502 with a JSON-RPC error -32603 (after the server answered an initialize, the
server's answer itself: tests/e2e/test_sessions.py). One passthrough record and one warning line say
which. The faults are injected by tests/e2e/action_faults.py, loaded after mcpx (no server can make
mcpx's code raise at a chosen point); the upstream is a scripted stdlib server that records every
request it receives.
"""
from __future__ import annotations

import pathlib
import time

import orjson
import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, initialize_msg, serve

FAULTS = str(pathlib.Path(__file__).with_name("action_faults.py"))
CALL = {"content": [{"type": "text", "text": "ok"}]}


class Handler(ScriptedMcpHandler):
    SERVER_INFO = {"name": "recorder", "version": "1"}
    SESSION = "recorder-1"
    REVISION = "2025-06-18"  # no batches: a pinned 2025-03-26 client's batch is split
    #: (Mcp-Session-Id, body) of every POST the server received
    seen: list[tuple] = []

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["content-length"]))
        Handler.seen.append((self.headers.get("mcp-session-id"), raw))
        body = orjson.loads(raw)
        if isinstance(body, list):  # a batch would reach the server only if mcpx forwarded it as well
            self.send_json(orjson.dumps([{"jsonrpc": "2.0", "id": m["id"], "result": CALL} for m in body]))
            return
        if body.get("method") == "initialize":
            self._initialize(body)
            return
        self.answer(body)

    def _initialize(self, body):
        self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
            "protocolVersion": self.REVISION, "capabilities": {"tools": {}}, "serverInfo": self.SERVER_INFO}}),
            {"mcp-session-id": self.SESSION})

    def answer(self, body):
        if "id" not in body:
            self.send_accepted()
        else:
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": CALL}))


@pytest.fixture
def server():
    yield from serve(Handler, "seen")


def proxy(port: int, tmp_path, fault: str) -> Proxy:
    return Proxy(f"http://127.0.0.1:{port}", tmp_path, scripts=(FAULTS,),
                 options={"action_fault": fault, "mcpx_pin": "pinned=2025-03-26"})


def warnings(px: Proxy) -> list[str]:
    return [line.split("] ", 1)[1] for line in px.output().splitlines() if "internal error" in line]


TOOL_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {}}}


def test_an_error_before_the_initialize_is_sent_forwards_it_once(server, tmp_path):
    """mint_session fails before it sends anything: the initialize is forwarded untouched (the server
    gets it once), the client gets the server's answer and its own session id, and the session works
    in this process, unsealed."""
    init = initialize_msg("2025-06-18", name="client")
    with proxy(server, tmp_path, "initialize-before-send") as px:
        c = Client(px.port)
        status, headers, body = c.post(init)
        assert (status, headers["mcp-session-id"], orjson.loads(body)) == (200, "recorder-1", {"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": Handler.SERVER_INFO}})
        assert Handler.seen == [(None, orjson.dumps(init))]
        c.session, c.revision = "recorder-1", "2025-06-18"
        status, _, msgs = c.rpc(TOOL_CALL)
        assert (status, msgs) == (200, [{"jsonrpc": "2.0", "id": 1, "result": CALL}])
        assert Handler.seen[1:] == [("recorder-1", orjson.dumps(TOOL_CALL))]
        time.sleep(0.3)
        why = ("initialize: internal error before mcpx sent it (RuntimeError: injected before sending): "
               "forwarded untouched, session not sealed")
        records = px.changes()
        assert [(r["action"], r["rule"], r["direction"], r["detail"]) for r in records] == [
            ("passthrough", "PASSTHROUGH-error", "c2s", why)]
        assert records[0]["session"].startswith("s-")
        assert warnings(px) == ["mcpx: " + why]
        c.close()


def test_an_error_after_the_initialize_was_sent_never_sends_it_again(server, tmp_path):
    """mcpx's sender raises after the server answered the initialize, before mcpx has the answer: the
    initialize is not forwarded again; the client gets HTTP 502 with a JSON-RPC error it can read."""
    init = initialize_msg("2025-06-18", name="client")
    with proxy(server, tmp_path, "initialize-after-send") as px:
        c = Client(px.port)
        status, headers, body = c.post(init)
        assert (status, headers["content-type"], "mcp-session-id" in headers, orjson.loads(body)) == (
            502, "application/json", False, {"jsonrpc": "2.0", "id": 0, "error": {
                "code": -32603, "message": "mcpx failed after sending the initialize to the server: RuntimeError"}})
        time.sleep(0.3)
        assert Handler.seen == [(None, orjson.dumps(init))]  # once
        why = ("initialize: internal error after mcpx sent it to the server (RuntimeError: injected after sending): "
               "answered HTTP 502 -32603, not sent again")
        assert [(r["action"], r["rule"], r["direction"], r["detail"]) for r in px.changes()] == [
            ("passthrough", "PASSTHROUGH-error", "c2s", why)]
        assert warnings(px) == ["mcpx: " + why]
        c.close()


def test_an_error_while_splitting_a_batch_never_forwards_the_batch(server, tmp_path):
    """split_batch fails on the second member, after the first went up alone: the batch is not
    forwarded as well (the server gets the first member once, and nothing else); the client gets
    HTTP 502 with one JSON-RPC error (id null: the batch as a whole failed)."""
    with proxy(server, tmp_path, "batch-second-member") as px:
        c = Client(px.port)
        assert c.initialize("2025-06-18", name="pinned")["protocolVersion"] == "2025-03-26"
        before = len(Handler.seen)
        calls = [dict(TOOL_CALL, id=i) for i in (1, 2, 3)]
        status, _, body = c.post(calls)
        assert (status, orjson.loads(body)) == (502, {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32603, "message": "mcpx failed after sending the batch to the server: RuntimeError"}})
        time.sleep(0.3)
        assert [orjson.loads(b) for _, b in Handler.seen[before:]] == [calls[0]]
        why = ("batch: internal error after mcpx sent it to the server (RuntimeError: injected on the second batch "
               "member): answered HTTP 502 -32603, not sent again")
        records = [(r["action"], r["rule"], r["direction"], r["detail"]) for r in px.changes() if r["action"] in ("split", "passthrough")]
        assert records == [("split", "RPC-batch-request", "c2s", "JSON-RPC batch split: the server revision has no batches"),
                           ("passthrough", "PASSTHROUGH-error", "c2s", why)]
        assert warnings(px) == ["mcpx: " + why]
        c.close()
