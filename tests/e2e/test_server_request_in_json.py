"""A server request inside a JSON answer (not an SSE stream) that the client's revision cannot
receive is answered on the client's behalf, and that answer reaches the server.

Found by the adversarial run of stop 21: mcpx dropped the request for the client, as it should,
but its ``-32601`` answer was never sent ("not sent (flow is not live)"), because the flow was
forgotten before the JSON body was rewritten. The server then waits for an answer forever. (A
request in an SSE event was always answered: the stream is rewritten while the flow is live.)

Upstream: a scripted loopback server (stdlib HTTP) at 2025-06-18 that answers a ``tools/call``
with a JSON array holding an ``elicitation/create`` request (2025-06-18, schema/2025-06-18/
schema.ts ElicitRequest) and the call's result. The client's session is pinned to 2025-03-26,
which has no elicitation: the request is dropped from what the client gets and answered -32601.
"""
from __future__ import annotations

import json
import time

import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, serve

ELICIT = {"jsonrpc": "2.0", "id": "srv-7", "method": "elicitation/create",
          "params": {"message": "Which file?", "requestedSchema": {"type": "object", "properties": {"f": {"type": "string"}}}}}
RESULT = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "done"}], "isError": False}}


class Handler(ScriptedMcpHandler):
    SERVER_INFO = {"name": "asks-in-json", "version": "1"}
    SESSION = "asks-1"
    REVISION = "2025-06-18"
    seen: list = []

    def answer(self, body):
        Handler.seen.append((dict(self.headers), body))
        if body.get("method") == "tools/call":
            self.send_json(json.dumps([ELICIT, RESULT]).encode())
        else:
            self.send_accepted()


@pytest.fixture
def server():
    yield from serve(Handler, "seen")


def test_server_request_in_a_json_answer_is_answered_upstream(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_pin": "asker=2025-03-26"}) as px:
        client = Client(px.port)
        assert client.initialize("2025-06-18", name="asker")["protocolVersion"] == "2025-03-26"
        _, _, body = client.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "pick", "arguments": {}}})
        assert json.loads(body) == [RESULT]  # the elicitation request is not the client's to see
        deadline = time.time() + 10
        while time.time() < deadline and not any(b.get("id") == "srv-7" for _, b in Handler.seen if isinstance(b, dict)):
            time.sleep(0.05)
        # The log line is written once the server has answered mcpx's reply (HTTP 202), which
        # can be after the server saw it: wait for it before the proxy stops.
        line = "mcpx: answered server request id='srv-7' with error -32601 (HTTP 202)"
        while time.time() < deadline and line not in px.output():
            time.sleep(0.05)
        client.close()
    answers = [(h, b) for h, b in Handler.seen if isinstance(b, dict) and b.get("id") == "srv-7"]
    assert [b for _, b in answers] == [{"jsonrpc": "2.0", "id": "srv-7", "error": {
        "code": -32601, "message": "Method not found: elicitation/create (not defined in MCP 2025-03-26; answered by mcpx)"}}]
    headers = {k.lower(): v for k, v in answers[0][0].items()}
    assert headers["mcp-session-id"] == "asks-1" and headers["mcp-protocol-version"] == "2025-06-18"
    records = [(c["direction"], c["pointer"], c["action"], c["rule"], c["before"], c["detail"]) for c in px.changes()]
    assert records[-1] == ("s2c", "", "drop-message", "ELIC-request", '{method: "elicitation/create", id: "srv-7"}',
                           "answered with -32601 Method not found on the receiver's behalf")
    out = px.output()
    assert "not sent (flow is not live)" not in out
    assert line in out
