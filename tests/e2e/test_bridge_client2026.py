"""Bridging, part 2 (issue 12): a 2026-07-28 client in front of a legacy-only server.

The server is the npm everything server (legacy only: it answers ``server/discover`` with 400 "Server
not initialized"); the client is the released ``@modelcontextprotocol/client`` 2.4.0 pinned to
2026-07-28, which directly fails at connect ("did not offer pinned protocol version 2026-07-28 via
server/discover"). Through mcpx it runs the everything scenario (every op but ``ping``, which
2026-07-28 does not have), the sampling and elicitation round trips included, and a
``subscriptions/listen`` stream with a resource subscription, with zero failures; every message it
receives validates against the 2026-07-28 schema with unknown properties forbidden. A raw 2026
client then shows the exact messages on both legs of an input_required round trip (minted ids, the
held upstream request, the ``requestState`` handle), of a client lacking the capability, of a stale
handle and of the listen stream.
"""
from __future__ import annotations

import json
import re

import orjson
import pytest

import peers_lib as pl
from proxy_lib import Client, Proxy, messages_of
from schema_check import message_errors

pytestmark = pytest.mark.peers
NEW = "2026-07-28"
SERVER_INFO = {"name": "mcp-servers/everything", "title": "Everything Reference Server", "version": "2.0.0"}
LISTEN_OPS = [
    {"id": "listen", "op": "listen", "filter": {"toolsListChanged": True, "resourceSubscriptions": ["demo://resource/dynamic/text/1"]}},
    {"id": "subscriber-updates-on", "op": "callTool", "name": "toggle-subscriber-updates", "arguments": {}},
    {"id": "wait-updated", "op": "waitNotification", "method": "notifications/resources/updated", "timeoutMs": 15000},
    {"id": "subscriber-updates-off", "op": "callTool", "name": "toggle-subscriber-updates", "arguments": {}},
    {"id": "unlisten", "op": "unlisten"},
]


@pytest.fixture(scope="module")
def everything():
    pl.require(pl.peers_missing())
    with pl.start_everything_server() as ev:
        yield ev


def delivered(px: Proxy) -> list[tuple[dict, str | None]]:
    """(message, method it answers) of every message the 2026 client got (its flows, not mcpx's own)."""
    out = []
    for f in px.flows():
        meta = f.metadata.get("mcpx") or {}
        if meta.get("origin") == "mcpx" or f.response is None or meta.get("client_revision") != NEW:
            continue
        req = json.loads(f.request.get_content() or b"null") if f.request.get_content() else None
        method = req.get("method") if isinstance(req, dict) else None
        for m in messages_of(f.response.headers.get("content-type", ""), f.response.get_content() or b""):
            out.append((m, method if "method" not in m else None))
    return out


def test_client_2026_runs_its_scenario_against_a_legacy_server(everything, tmp_path):
    ops = [op for op in pl.scenario_ops("everything", "client-2.4.0") if op["op"] != "ping"] + LISTEN_OPS
    direct = pl.run_client_2026(everything.url, ops[:1])
    assert direct["returncode"] == 2 and "did not offer pinned protocol version 2026-07-28" in direct["error"], direct
    with Proxy(f"http://127.0.0.1:{everything.port}", tmp_path) as px:
        rep = pl.run_client_2026(px.url, ops, timeout=120)
    assert rep.get("protocolVersion") == NEW, rep
    assert {k: v for k, v in pl.verdicts(rep).items()} == {op["id"]: "ok" for op in ops}, rep
    by_id = {e["id"]: e for e in rep["results"]}
    assert pl.result_text(by_id["trigger-sampling-request"]).startswith("LLM sampling result:")
    assert pl.result_text(by_id["trigger-elicitation-request"]) == "✅ User provided the requested information!"
    assert [b["type"] for b in by_id["get-resource-links"]["result"]["content"]] == ["text", "resource_link", "resource_link"]
    updated = [n for n in rep["notifications"] if n["method"] == "notifications/resources/updated"]
    assert updated[0] == {"method": "notifications/resources/updated", "params": {
        "_meta": {"io.modelcontextprotocol/subscriptionId": "listen:0"}, "uri": "demo://resource/dynamic/text/1"}}
    got = delivered(px)
    assert len(got) >= len(ops)
    invalid = [(m.get("method") or method, errs[:2]) for m, method in got if (errs := message_errors(NEW, m, method))]
    assert invalid == []
    rules = {(c["pointer"], c["action"], c["rule"]) for c in px.changes()}
    assert {("", "bridge", "LC-initialize"), ("", "answer-locally", "DISC-request"), ("/result", "bridge", "MRTR-bridge-legacy-server"),
            ("", "rewrite", "MRTR-embedded-requests"), ("", "bridge", "SUB-listen"), ("", "synthesize", "SUB-acknowledged"),
            ("/params/_meta/io.modelcontextprotocol~1subscriptionId", "synthesize", "META-subscriptionId"),
            ("/result/resultType", "synthesize", "RES-resultType"), ("/result/ttlMs", "synthesize", "RES-ttlMs"),
            ("/result/cacheScope", "synthesize", "RES-cacheScope"), ("/id", "rewrite", "RPC-request-id-reuse"),
            ("/result/instructions", "rewrite", "LC-instructions"),
            ("/params/_meta/io.modelcontextprotocol~1protocolVersion", "drop", "META-protocolVersion")} <= rules
    assert not [c for c in px.changes() if c["action"] == "passthrough"], px.output()[-3000:]


META = {"io.modelcontextprotocol/protocolVersion": NEW, "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"}}
SAMPLE = {"name": "trigger-sampling-request", "arguments": {"prompt": "say hi", "maxTokens": 10}}


def headers(method: str, name: str | None = None) -> dict:
    h = {"mcp-protocol-version": NEW, "mcp-method": method}
    if name:
        h["mcp-name"] = name
    return h


def own(px: Proxy) -> list:
    """mcpx's own flows, in the order they were sent (the file has them in the order they ended)."""
    return sorted((f for f in px.flows() if (f.metadata.get("mcpx") or {}).get("origin") == "mcpx"),
                  key=lambda f: f.request.timestamp_start)


def test_input_required_round_trip_exact_on_both_legs(everything, tmp_path):
    """sampling/createMessage sent by the legacy server during a tools/call becomes an
    InputRequiredResult; the retry's answer goes to the held upstream request; the final result
    answers the retry. Exact messages on the client leg and on the server leg."""
    with Proxy(f"http://127.0.0.1:{everything.port}", tmp_path) as px:
        c = Client(px.port)
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**SAMPLE, "_meta": META}}
        st, h, body = c.post(call, headers("tools/call", SAMPLE["name"]))
        first = orjson.loads(body)
        state = first["result"]["requestState"]
        assert st == 200 and h["content-type"] == "application/json" and re.fullmatch(r"mcpx-rs1\.[0-9a-f]{24}", state)
        assert first == {"jsonrpc": "2.0", "id": 1, "result": {
            "resultType": "input_required",
            "inputRequests": {"mcpx:0": {"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Resource trigger-sampling-request context: say hi"}}],
                "systemPrompt": "You are a helpful test server.", "maxTokens": 10, "temperature": 0.7}}},
            "requestState": state, "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}}}
        answer = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m", "stopReason": "endTurn"}
        retry = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {**SAMPLE, "_meta": META, "requestState": state, "inputResponses": {"mcpx:0": answer}}}
        st, h, body = c.post(retry, headers("tools/call", SAMPLE["name"]))
        assert st == 200 and orjson.loads(body) == {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": (
            'LLM sampling result: \n{\n  "model": "m",\n  "stopReason": "endTurn",\n  "role": "assistant",\n'
            '  "content": {\n    "type": "text",\n    "text": "hi"\n  }\n}')}], "resultType": "complete"}}
        # the same handle again: the round trip is over (this mcpx holds it no more)
        st, h, body = c.post({**retry, "id": 3}, headers("tools/call", SAMPLE["name"]))
        assert (st, orjson.loads(body)) == (400, {"jsonrpc": "2.0", "id": 3, "error": {
            "code": -32602, "message": "Invalid or expired requestState (mcpx holds no such round trip)"}})
    # the upstream session's own GET stream (the client declared sampling: a server request outside any call can
    # reach it, bridge/client2026/get_stream.py), sent once the session is initialized, concurrently with the call
    gets = [f for f in own(px) if f.request.method == "GET"]
    assert [(f.request.headers["accept"], f.request.headers["mcp-protocol-version"], bool(f.request.headers.get("mcp-session-id")))
            for f in gets] == [("text/event-stream", "2025-11-25", True)]
    sent = [(f.request.method, json.loads(f.request.get_content() or b"null"), f.request.headers.get("mcp-protocol-version"),
             bool(f.request.headers.get("mcp-session-id"))) for f in own(px) if f.request.method != "GET"]
    assert sent == [
        ("POST", {"jsonrpc": "2.0", "id": sent[0][1]["id"], "method": "server/discover", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": NEW, "io.modelcontextprotocol/clientCapabilities": {}}}}, NEW, False),
        ("POST", {"jsonrpc": "2.0", "id": sent[1][1]["id"], "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"sampling": {}}, "clientInfo": {"name": "raw-2026", "version": "1"}}}, None, False),
        ("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, "2025-11-25", True),
        # the envelope keys dropped (META-*), an empty _meta left (valid in every legacy revision)
        ("POST", {"jsonrpc": "2.0", "id": sent[3][1]["id"], "method": "tools/call", "params": {**SAMPLE, "_meta": {}}}, "2025-11-25", True),
        ("POST", {"jsonrpc": "2.0", "id": 0, "result": answer}, "2025-11-25", True),
    ]
    assert re.fullmatch(r"mcpx-era-probe-[0-9a-f]{8}", sent[0][1]["id"])
    assert re.fullmatch(r"mcpx-\d+", sent[1][1]["id"]) and re.fullmatch(r"mcpx-\d+", sent[3][1]["id"])
    recs = [(c["direction"], c["pointer"], c["action"], c["rule"]) for c in px.changes()]
    assert recs == [
        ("c2s", "", "bridge", "LC-initialize"),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1protocolVersion", "drop", "META-protocolVersion"),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1clientCapabilities", "drop", "META-clientCapabilities"),
        ("c2s", "/params/_meta/io.modelcontextprotocol~1clientInfo", "drop", "META-clientInfo"),
        ("s2c", "", "rewrite", "MRTR-embedded-requests"),
        ("s2c", "/result", "bridge", "MRTR-bridge-legacy-server"),
        ("c2s", "/params/inputResponses/mcpx:0", "bridge", "MRTR-bridge-legacy-server"),
        ("s2c", "/result/resultType", "synthesize", "RES-resultType"),
        ("c2s", "", "passthrough", "PASSTHROUGH-error"),
    ]


def test_client_without_the_capability(everything, tmp_path):
    """A 2026 client that declares no sampling: mcpx initializes upstream without it, and the server's
    own answer (its tool's error naming sampling) reaches the client, as a 2026 result."""
    bare = {**META, "io.modelcontextprotocol/clientCapabilities": {}}
    with Proxy(f"http://127.0.0.1:{everything.port}", tmp_path) as px:
        c = Client(px.port)
        st, _, body = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**SAMPLE, "_meta": bare}},
                             headers("tools/call", SAMPLE["name"]))
        res = orjson.loads(body)
        assert st == 200 and res["id"] == 1 and res["result"]["resultType"] == "complete" and res["result"]["isError"] is True
        assert "sampling" in res["result"]["content"][0]["text"].lower()
    inits = [json.loads(f.request.get_content()) for f in own(px) if b'"initialize"' in (f.request.get_content() or b"")]
    assert [i["params"]["capabilities"] for i in inits] == [{}]


def test_listen_stream_exact_on_both_legs(everything, tmp_path):
    """subscriptions/listen with a resource subscription: upstream, resources/subscribe on the client's
    upstream session and its GET stream; the client gets the acknowledgement first, then the
    subscribed resource's update, each stamped with the listen request's id."""
    import http.client
    with Proxy(f"http://127.0.0.1:{everything.port}", tmp_path) as px:
        conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
        listen = {"jsonrpc": "2.0", "id": "listen:7", "method": "subscriptions/listen", "params": {
            "_meta": META, "notifications": {"promptsListChanged": True, "resourceSubscriptions": ["demo://resource/dynamic/text/1"]}}}
        conn.request("POST", "/mcp", orjson.dumps(listen), {"content-type": "application/json", "accept": "application/json, text/event-stream",
                                                            **headers("subscriptions/listen")})
        r = conn.getresponse()
        assert r.status == 200 and r.getheader("content-type").startswith("text/event-stream")
        buf = b""
        while buf.count(b"\n\n") < 1:
            buf += r.read1(65536)
        c = Client(px.port)
        st, _, body = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "toggle-subscriber-updates", "arguments": {}, "_meta": META}}, headers("tools/call", "toggle-subscriber-updates"))
        assert st == 200 and orjson.loads(body)["result"]["content"][0]["text"].startswith("Started simulated resource updated")
        while buf.count(b"\n\n") < 2:
            buf += r.read1(65536)
        events = [orjson.loads(line[6:]) for line in buf.split(b"\n") if line.startswith(b"data: ")]
        assert events[:2] == [
            {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
                "_meta": {"io.modelcontextprotocol/subscriptionId": "listen:7"},
                "notifications": {"promptsListChanged": True, "resourceSubscriptions": ["demo://resource/dynamic/text/1"]}}},
            {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {
                "uri": "demo://resource/dynamic/text/1", "_meta": {"io.modelcontextprotocol/subscriptionId": "listen:7"}}},
        ]
        c.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "toggle-subscriber-updates", "arguments": {},
                                                                             "_meta": META}}, headers("tools/call", "toggle-subscriber-updates"))
        conn.close()
    subscribe = [json.loads(f.request.get_content()) for f in own(px) if b"resources/subscribe" in (f.request.get_content() or b"")]
    assert [(m["method"], m["params"]) for m in subscribe] == [("resources/subscribe", {"uri": "demo://resource/dynamic/text/1"})]
    gets = [f for f in own(px) if f.request.method == "GET"]  # the upstream session's GET stream, sent by mcpx
    assert len(gets) == 1 and gets[0].request.headers["mcp-protocol-version"] == "2025-11-25" \
        and gets[0].request.headers.get("mcp-session-id") and gets[0].request.headers["accept"] == "text/event-stream"
    # the client's listen flow was answered by mcpx's own stream (bridge/stream.py), marked as such
    mine = [f for f in px.flows() if f.request.path.startswith("/mcpx-answer/")]
    assert len(mine) == 1 and mine[0].comment.startswith("subscriptions/listen #listen:7 · client 2026-07-28, server 2025-11-25 · mcpx: answered by mcpx") and mine[0].response.status_code == 200


def test_url_elicitation_and_log_level(everything, tmp_path):
    """A URL-mode elicitation/create of the legacy server reaches a 2026 client (which declared
    elicitation.url) as an inputRequests entry without ``elicitationId`` (ELIC-elicitationId); a
    request's ``_meta`` logLevel is set on the upstream session first (logging/setLevel, META-logLevel)."""
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}, "form": {}}},
            "io.modelcontextprotocol/logLevel": "warning"}
    url_tool = {"name": "trigger-url-elicitation", "arguments": {"url": "https://example.com/login", "message": "Sign in"}}
    with Proxy(f"http://127.0.0.1:{everything.port}", tmp_path) as px:
        c = Client(px.port)
        st, _, body = c.post({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {**url_tool, "_meta": meta}},
                             headers("tools/call", url_tool["name"]))
        res = orjson.loads(body)
        assert st == 200 and res == {"jsonrpc": "2.0", "id": 4, "result": {
            "resultType": "input_required",
            "inputRequests": {"mcpx:0": {"method": "elicitation/create", "params": {
                "mode": "url", "url": "https://example.com/login", "message": "Sign in"}}},
            "requestState": res["result"]["requestState"], "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}}}
    sent = [json.loads(f.request.get_content() or b"null") for f in own(px) if f.request.method == "POST"]
    assert [m["params"] for m in sent if isinstance(m, dict) and m.get("method") == "logging/setLevel"] == [{"level": "warning"}]
    recs = [(c["pointer"], c["action"], c["rule"]) for c in px.changes()]
    assert ("/params/elicitationId", "drop", "ELIC-elicitationId") in recs
    assert recs.count(("/params/_meta/io.modelcontextprotocol~1logLevel", "rewrite", "META-logLevel")) == 1
    assert ("/params/_meta/io.modelcontextprotocol~1logLevel", "drop", "META-logLevel") in recs


def test_batch_and_posted_response_refused_as_a_2026_server_does(everything, tmp_path):
    """A 2026-07-28 POST body is one request or notification (TR-post-body): a batch, and a JSON-RPC
    response (2026-07-28 has no server->client requests), get HTTP 400 -32600 from mcpx standing for
    the 2026-07-28 server, without an id, with one answer-locally record each, and nothing reaches
    the legacy server. Before, both went upstream untouched, outside any session and with no record,
    and the client got the legacy server's "Server not initialized" error with an "id": null that
    2026-07-28 does not allow."""
    with Proxy(f"http://127.0.0.1:{everything.port}", tmp_path) as px:
        c = Client(px.port)
        st, _, body = c.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}, headers("tools/list"))
        assert st == 200
        n = len(px.changes())
        batch = [{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": META}},
                 {"jsonrpc": "2.0", "id": 3, "method": "prompts/list", "params": {"_meta": META}}]
        st, h, body = c.post(batch, headers("tools/list"))
        assert (st, h["content-type"], body) == (400, "application/json", b'{"jsonrpc":"2.0","error":{"code":-32600,"message":'
                                                 b'"Invalid Request: a 2026-07-28 POST body is one JSON-RPC request or notification, not a batch"}}')
        st, h, body = c.post({"jsonrpc": "2.0", "id": 0, "result": {}}, {"mcp-protocol-version": NEW})
        assert (st, h["content-type"], body) == (400, "application/json", b'{"jsonrpc":"2.0","error":{"code":-32600,"message":'
                                                 b'"Invalid Request: a 2026-07-28 client never POSTs a JSON-RPC response"}}')
        recs = [(r["direction"], r["pointer"], r["action"], r["rule"], r["detail"]) for r in px.changes()[n:]]
    assert recs == [
        ("c2s", "", "answer-locally", "TR-post-body", "refused as a 2026-07-28 server does: HTTP 400, -32600 Invalid Request: "
         "a 2026-07-28 POST body is one JSON-RPC request or notification, not a batch"),
        ("c2s", "", "answer-locally", "TR-post-body", "refused as a 2026-07-28 server does: HTTP 400, -32600 Invalid Request: "
         "a 2026-07-28 client never POSTs a JSON-RPC response"),
    ]
    # the server leg: mcpx's probe and the upstream session's handshake, then the first tools/list on
    # the client's own flow; the batch and the response were answered by mcpx (their flows' requests
    # are the client's, unchanged), nothing else was sent
    assert [json.loads(f.request.get_content() or b"null").get("method") if f.request.method == "POST" else "GET" for f in own(px)] == [
        "server/discover", "initialize", "notifications/initialized", "GET"]  # (GET: the session's own stream, get_stream.py)
    mine = [f for f in px.flows() if (f.metadata.get("mcpx") or {}).get("origin") != "mcpx"]
    assert [(f.request.get_content(), f.response.status_code) for f in mine[1:]] == [
        (orjson.dumps(batch), 400), (b'{"jsonrpc":"2.0","id":0,"result":{}}', 400)]
    assert all(f.server_conn.timestamp_start is None for f in mine[1:])


def test_a_refused_notification_gets_an_error_without_id(everything, tmp_path):
    """A 2026-07-28 notification that a 2026-07-28 server refuses (no ``MCP-Protocol-Version`` header;
    no ``_meta`` protocolVersion) gets HTTP 400 and an error without ``id``: 2026-07-28's
    JSONRPCErrorResponse.id is an optional RequestId (a string or a number), never null. Before,
    mcpx wrote ``"id":null``, which the client's schema rejects."""
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"_meta": META, "requestId": 1}}
    bare = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    with Proxy(f"http://127.0.0.1:{everything.port}", tmp_path) as px:
        c = Client(px.port)
        got = [c.post(note, {"mcp-method": "notifications/cancelled"}), c.post(bare, {"mcp-protocol-version": NEW})]
        recs = [(r["direction"], r["pointer"], r["action"], r["rule"], r["detail"]) for r in px.changes()]
    assert [(st, h["content-type"], body) for st, h, body in got] == [
        (400, "application/json", b'{"jsonrpc":"2.0","error":{"code":-32020,"message":"MCP-Protocol-Version header does not match '
                                  b'params._meta protocolVersion"}}'),
        (400, "application/json", b'{"jsonrpc":"2.0","error":{"code":-32602,"message":"params._meta must carry '
                                  b'io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities"}}'),
    ]
    assert all(message_errors(NEW, orjson.loads(body), None) == [] for _, _, body in got)
    assert recs == [
        ("c2s", "", "answer-locally", "TR-protocol-version-header", "refused as a 2026-07-28 server does: HTTP 400, -32020 "
         "MCP-Protocol-Version header does not match params._meta protocolVersion"),
        ("c2s", "", "answer-locally", "META-protocolVersion", "refused as a 2026-07-28 server does: HTTP 400, -32602 "
         "params._meta must carry io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities"),
    ]
    # nothing reached the server but mcpx's era probe
    assert [json.loads(f.request.get_content()).get("method") for f in own(px)] == ["server/discover"]
