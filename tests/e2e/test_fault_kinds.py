"""The two fault kinds of tests/unit/test_fault_kinds_unit.py, each once through the real mitmdump with
the README's command line:

- a server that speaks only 2026-07-28 answers a missing resource with the legacy -32002: the
  2026-07-28 client gets -32602 (docs/specification/2026-07-28/server/resources.mdx:405), one
  ``rewrite`` record, everything else byte for byte;
- a 2025-06-18 server that invents its own progress token on a call, and cancels a request it
  never sent (99, and the client's own call): with the README's command line (mcpx_check_references
  on by default) the strict client gets none of them, with one ``drop-message`` record each; the
  progress with the client's own token (as sent, and as the string ``"40"`` the TypeScript SDK
  routes by ``Number(token)``), and the cancellation of the server's own ``ping``, reach it.
"""
from __future__ import annotations

import json

import orjson
import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve, sse_events

README = {"connection_strategy": None}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "c26", "version": "1"}}
MISSING = b'{"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"Resource not found","data":{"uri":"res://gone"}}}'


class Only2026(ScriptedMcpHandler):
    """A 2026-07-28-only server: server/discover names 2026-07-28 alone, resources/read answers -32002
    (the retired code, what the test is about); a legacy initialize is refused 400 -32022."""

    seen: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        Only2026.seen.append((self.headers.get("mcp-method"), body))
        rid = json.dumps(body.get("id")).encode()
        if body.get("method") == "server/discover":
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "supportedVersions": ["2026-07-28"], "capabilities": {"resources": {}}, "ttlMs": 0, "cacheScope": "private",
                "resultType": "complete"}}))
        elif body.get("method") == "resources/read":
            self.send_json(MISSING)
        else:
            self.send_json(b'{"jsonrpc":"2.0","id":' + rid + b',"error":{"code":-32022,"message":"Unsupported protocol version",'
                           b'"data":{"supported":["2026-07-28"],"requested":"x"}}}', status=400)


@pytest.fixture
def only_2026():
    yield from serve(Only2026, "seen")


def test_a_2026_server_s_retired_code_reaches_a_2026_client_as_its_replacement(only_2026, tmp_path):
    with Proxy(f"http://127.0.0.1:{only_2026}", tmp_path, options=README) as px:
        client = Client(px.port)
        read = {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "res://gone", "_meta": META}}
        status, headers, body = client.post(read, extra={"mcp-protocol-version": "2026-07-28", "mcp-method": "resources/read",
                                                         "mcp-name": "res://gone"})
        client.close()
        records = [(c["direction"], c["pointer"], c["action"], c["rule"], c["before"], c["after"], c["detail"], c["from_rev"], c["to_rev"])
                   for c in px.changes()]
    assert (status, body) == (200, MISSING.replace(b"-32002", b"-32602"))
    assert Only2026.seen[-1] == ("resources/read", read)  # the request reached the server as sent
    assert records == [("s2c", "/error/code", "rewrite", "ERR-resource-not-found", "-32002", "-32602",
                        "-32002 was retired in 2026-07-28 (replaced by -32602); a 2026-07-28 sender still sent it",
                        "2026-07-28", "2026-07-28")]


def _progress(token, n: int) -> dict:
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": n}}


def _cancelled(rid) -> dict:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}


PING = {"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"}
RESULT = {"jsonrpc": "2.0", "id": 4, "result": {"content": [{"type": "text", "text": "done"}]}}
#: what the server streams on the client's call 4 (token 40)
STREAM = (_progress(40, 1), _progress("40", 2), _progress("srv-7", 3), _cancelled(99), _cancelled(4), PING,
          _cancelled("srv-ping"), RESULT)


class InventsTokens(ScriptedMcpHandler):
    """A 2025-06-18 server whose tools/call answers on SSE: progress with the client's token (as sent,
    then as a string), progress with a token of its own ("srv-7", the bug), a cancellation of request
    99 (which it never sent) and of the client's call (which it cannot cancel), a ping of its own and
    its cancellation, then the result. Only the notifications are what the test is about."""

    REVISION = "2025-06-18"
    seen: list = []

    def answer(self, body):
        InventsTokens.seen.append(body)
        if "id" not in body:
            return self.send_accepted()
        self.start_sse()
        for msg in (*STREAM[:-1], {**STREAM[-1], "id": body["id"]}):
            self.chunk(b"event: message\ndata: " + orjson.dumps(msg) + b"\n\n")
        self.chunk(b"")


@pytest.fixture
def invents():
    yield from serve(InventsTokens, "seen")


def test_notifications_naming_what_the_client_cannot_route_are_not_delivered(invents, tmp_path):
    with Proxy(f"http://127.0.0.1:{invents}", tmp_path, options=README) as px:
        client = Client(px.port)
        client.initialize("2025-06-18")
        call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "slow", "arguments": {}, "_meta": {"progressToken": 40}}}
        status, headers, body = client.post(call)
        client.close()
        records = [(c["direction"], c["action"], c["rule"], c["method"], c["detail"]) for c in px.changes()]
    assert client.session.startswith("mcpx1.")  # a session sealed by this process is judged by it
    assert InventsTokens.seen[-1] == call
    assert status == 200
    assert [orjson.loads(e["data"]) for e in sse_events(body) if e["data"]] == [
        _progress(40, 1), _progress("40", 2), PING, _cancelled("srv-ping"), RESULT]
    strict = "not delivered (mcpx_policy=strict)"
    assert records == [
        ("s2c", "drop-message", "PROG-token-unknown", "notifications/progress",
         f'notifications/progress names a progressToken "srv-7" that no request of the receiver carried: {strict}'),
        ("s2c", "drop-message", "CANCEL-request-unknown", "notifications/cancelled",
         f"notifications/cancelled names a requestId 99 of no request the server sent: {strict}"),
        ("s2c", "drop-message", "CANCEL-request-unknown", "notifications/cancelled",
         f"notifications/cancelled names a requestId 4 of no request the server sent: {strict}"),
    ]
