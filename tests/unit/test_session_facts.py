"""A sealed session opened by another mcpx process is the session it was (issue 19, survivors).

mcpx gives the client a sealed token as ``Mcp-Session-Id`` (session.py, seal.py): the immutable
facts of the session travel in it, so a restarted or another replica's mcpx, holding the same
key, opens the same session. tests/e2e/test_sessions.py shows it with real clients; here every
fact is compared, through the rewriter: the initialize of a pinned client (``mcpx_pin``) with its
capabilities and clientInfo, the server's answer, the token, and the token opened by a new tracker.
"""
from __future__ import annotations

import orjson

from mcpx_core import seal
from mcpx_core.disposition import Forward, MintSession
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.seal import Sealer
from mcpx_core.session import SessionTracker

CLIENT = {"name": "pinned-client", "version": "1.2"}
CLIENT_CAPS = {"sampling": {}, "roots": {"listChanged": True}}
SERVER = {"name": "srv", "version": "2.0"}
SERVER_CAPS = {"tools": {"listChanged": True}, "logging": {}}
FACTS = ("key", "client_rev", "server_rev", "requested_rev", "pinned_rev", "client_info", "server_info", "client_caps",
         "server_caps", "upstream_id", "token", "bridge", "profile", "sealed")


def test_a_sealed_session_opens_with_every_fact_in_another_process():
    key = seal.new_key()
    tracker = SessionTracker(sealer=Sealer([key]))
    tracker.pins["pinned-client"] = "2025-03-26"
    rw = Rewriter(tracker)
    init = Exchange(flow_id="f-init", is_mcp=True)
    assert rw.request(init, "POST", orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": CLIENT_CAPS, "clientInfo": CLIENT}}), {}, live=True) == MintSession()
    rw.response_json(init, orjson.dumps({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-06-18", "capabilities": SERVER_CAPS, "serverInfo": SERVER}}))
    token = rw.session_learned(init, "up-1", seal=True)
    first = init.session
    assert token is not None and token.startswith("mcpx1.") and first.token == token
    assert first.key.startswith("s-") and tracker.get(first.key) is first  # the handle records and commands show
    assert tracker.get("up-1") is first and tracker.get(token) is first

    later = Rewriter(SessionTracker(sealer=Sealer([key])))  # a restarted mcpx (or another replica)
    call = Exchange(flow_id="f-call", is_mcp=True)
    out = later.request(call, "POST", b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', {"Mcp-Session-Id": token}, live=True)
    assert out == Forward(None, {"Mcp-Session-Id": "up-1", "MCP-Protocol-Version": "2025-06-18"}, ())
    opened = call.session
    assert opened is not first
    assert {f: getattr(opened, f) for f in FACTS} == {f: getattr(first, f) for f in FACTS} == {
        "key": first.key, "client_rev": "2025-03-26", "server_rev": "2025-06-18", "requested_rev": "2025-06-18",
        "pinned_rev": "2025-03-26", "client_info": CLIENT, "server_info": SERVER, "client_caps": CLIENT_CAPS,
        "server_caps": SERVER_CAPS, "upstream_id": "up-1", "token": token, "bridge": "", "profile": None, "sealed": True}
    assert opened.client_leg == "2025-03-26"
