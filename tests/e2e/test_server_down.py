"""A server that cannot be reached, with the README's command line (mitmproxy's default
``connection_strategy``, which mcpx sets to lazy): every MCP request kind (initialize, a call, a
notification, the GET stream, DELETE) gets HTTP 502 with a JSON-RPC error -32603 naming why, under
the request's id where it has one, in reverse and in regular mode, with one passthrough record each
(addons/unreachable.py). Without mcpx's choice, eager mitmproxy closes a reverse client's
connection without a byte (curl exit 52)."""
from __future__ import annotations

import re

import orjson
import pytest

from proxy_lib import Client, LoopbackServer, Proxy, ScriptedMcpHandler, free_port

README = {"connection_strategy": None}  # as `mitmdump -s addon/mcpx.py --mode reverse:...` leaves it


class Server(ScriptedMcpHandler):
    """A 2025-03-26 server that is stopped after the initialize: only there to open a session (HTTP/1.0:
    it closes each connection, so no open one outlives it)."""

    SESSION = "down-1"
    protocol_version = "HTTP/1.0"

    def answer(self, body):
        self.send_accepted()


def _reason(port: int) -> str:
    return f"[Errno 111] Connect call failed ('127.0.0.1', {port})"


def _error(rid, port: int) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": {
        "code": -32603, "message": f"mcpx could not reach the server: {_reason(port)}"}})


def _request(client: Client, method: str, body: bytes | None, extra: dict | None = None) -> tuple[int, str, bytes]:
    client.conn.request(method, client.path, body, client.headers(extra))
    r = client.conn.getresponse()
    return r.status, r.getheader("content-type"), r.read()


@pytest.mark.parametrize("mode", ["reverse", "regular"])
def test_every_request_kind_gets_a_json_rpc_502(tmp_path, mode):
    srv = LoopbackServer(Server)
    port = srv.port
    dead = free_port()
    proxy_mode = None if mode == "reverse" else "regular"
    with Proxy(f"http://127.0.0.1:{port}", tmp_path, options=README, mode=proxy_mode, save=False) as px:
        assert "connection_strategy" not in " ".join(px.proc.args)
        path = "/mcp" if mode == "reverse" else f"http://127.0.0.1:{port}/mcp"
        client = Client(px.port, path=path)
        client.initialize("2025-03-26")
        srv.stop()  # the server goes down; its port refuses
        got = {
            "call": _request(client, "POST", orjson.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                                           "params": {"name": "x", "arguments": {}}})),
            "notification": _request(client, "POST", orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                                   "params": {"requestId": 5}})),
            "GET": _request(client, "GET", None, {"accept": "text/event-stream"}),
            "DELETE": _request(client, "DELETE", None),
        }
        client.close()
        fresh = Client(px.port, path="/mcp" if mode == "reverse" else f"http://127.0.0.1:{dead}/mcp")
        if mode == "reverse":  # a second proxy whose server never ran: the initialize
            fresh.close()
        else:
            got["initialize"] = _request(fresh, "POST", orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}))
            fresh.close()
        records = [(c["direction"], c["action"], c["rule"], c["detail"]) for c in px.changes() if c["action"] == "passthrough"]
        out = px.output()
    if mode == "reverse":
        with Proxy(f"http://127.0.0.1:{dead}", tmp_path, options=README, save=False, tag="-init") as px2:
            fresh = Client(px2.port)
            got["initialize"] = _request(fresh, "POST", orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}))
            fresh.close()
            init_records = [(c["direction"], c["action"], c["rule"], c["detail"]) for c in px2.changes()]
    else:
        init_records = records[4:]
        records = records[:4]
    assert got == {
        "call": (502, "application/json", _error(5, port)),
        "notification": (502, "application/json", _error(None, port)),
        "GET": (502, "application/json", _error(None, port)),
        "DELETE": (502, "application/json", _error(None, port)),
        "initialize": (502, "application/json", _error(0, dead)),
    }
    why = f"the server could not be reached ({_reason(port)}): answered HTTP 502 -32603"
    assert records == [("c2s", "passthrough", "PASSTHROUGH-error", why)] * 4
    assert init_records == [("c2s", "passthrough", "PASSTHROUGH-error",
                             f"initialize not sent: {_reason(dead)}")], init_records
    assert "Traceback" not in out
    assert len(re.findall(r"mcpx: the server could not be reached", out)) == 4
