"""Who shares an upstream session of the client2026 bridge (bridge/client2026/sessions.py): a legacy
server's session-level requests and notifications (its GET stream, 2025-11-25 basic/transports.mdx
"Listening for Messages from the Server") reach every 2026-07-28 client mcpx serves on that upstream
session. Clients that send no credentials are told apart by their host (IP address): two hosts with
the same clientInfo and capabilities never get each other's ``sampling/createMessage``, ``roots/list``
or ``elicitation/create``. The bridge with a scripted upstream that answers ``initialize`` (the test
is about mcpx's keying, not the server), no HTTP."""
from __future__ import annotations

import asyncio

import orjson

from mcpx_core.bridge import Reply
from mcpx_core.bridge.client2026 import Client2026Bridge, Held
from mcpx_core.rewrite import Exchange, Rewriter

META = {"io.modelcontextprotocol/clientInfo": {"name": "app", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}
SAMPLE = {"jsonrpc": "2.0", "id": 8, "method": "sampling/createMessage",
          "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "A's secret"}}], "maxTokens": 5}}


class Server:
    """Answers initialize (2025-11-25, a session id per initialize), 202 to anything else."""

    def __init__(self):
        self.inits = 0

    async def send(self, body, headers, purpose, **kw):
        if kw.get("method", "POST") != "POST":
            return Reply(405, {}, b"")
        msg = orjson.loads(body)
        if msg.get("method") == "initialize":
            self.inits += 1
            return Reply(200, {"content-type": "application/json", "mcp-session-id": f"s{self.inits}"}, orjson.dumps(
                {"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {},
                                                                "serverInfo": {"name": "srv", "version": "1"}}}))
        return Reply(202, {}, b"")

    def abort(self, flow_id):
        pass


def exchange(host: str, credentials: str = "") -> Exchange:
    return Exchange(client_keys=(f"conn:{host}:5000", f"host:{host}"), origin="http://srv:80",
                    target="http://srv:80/mcp", credentials=credentials)


def sessions_of(*exchanges: Exchange):
    async def go():
        b, server = Client2026Bridge(Rewriter(), answers=None), Server()
        ups = [await b._upstream_session(e, META, server) for e in exchanges]
        for t in list(b._tasks):
            t.cancel()
        return b, ups, server
    return asyncio.run(go())


def test_credentialless_clients_on_two_hosts_get_one_upstream_session_each():
    b, (a, b2), server = sessions_of(exchange("10.0.0.1"), exchange("10.0.0.2"))
    assert a is not b2 and server.inits == 2
    assert a.session.upstream_id == "s1" and b2.session.upstream_id == "s2"


def test_credentialless_clients_on_one_host_share_it_and_so_do_one_credentials_anywhere():
    _, (a, a2), server = sessions_of(exchange("10.0.0.1"), exchange("10.0.0.1"))
    assert a is a2 and server.inits == 1
    # credentials say who the client is wherever it connects from (reconnects, another address)
    _, (c, c2), server = sessions_of(exchange("10.0.0.1", "digest-1"), exchange("10.0.0.9", "digest-1"))
    assert c is c2 and server.inits == 1


def test_a_server_request_on_as_get_stream_never_reaches_bs_call_nor_bs_retry():
    async def go():
        b, server = Client2026Bridge(Rewriter(), answers=None), Server()
        ea, eb = exchange("10.0.0.1"), exchange("10.0.0.2")
        a, bb = await b._upstream_session(ea, META, server), await b._upstream_session(eb, META, server)
        hb = Held(handle="hb", upstream=bb, method="tools/call", exch=eb)
        bb.inbox.calls.append(hb)  # B's call is in progress; A has none
        b._server_request(a, server, SAMPLE)
        carried_b = b._carry(eb, {"jsonrpc": "2.0", "id": "b1", "method": "tools/call"}, bb)
        carried_a = b._carry(ea, {"jsonrpc": "2.0", "id": "a1", "method": "tools/call"}, a)
        state = orjson.loads(carried_a.body)["result"]["requestState"]
        retry_b = await b._retry(eb, {"jsonrpc": "2.0", "id": "b2", "method": "tools/call"},
                                 {"requestState": state, "inputResponses": {}}, state, server)
        for t in list(b._tasks):
            t.cancel()
        return hb.queue.qsize(), carried_b, orjson.loads(carried_a.body), retry_b
    b_queue, carried_b, carried_a, retry_b = asyncio.run(go())
    assert b_queue == 0 and carried_b is None
    assert carried_a["result"]["inputRequests"] == {"mcpx:8": {"method": "sampling/createMessage", "params": SAMPLE["params"]}}
    assert retry_b.status == 400 and orjson.loads(retry_b.body)["error"]["code"] == -32602
