"""bridge/legacy_client.py and bridge/stream.py without peers: the 2026 routing headers, the
per-request envelope, answers mcpx gives itself, JSON-only fallbacks, the x-mcp-header relearn,
and the loopback stream endpoint (the real-peer tests: tests/e2e/test_legacy_bridge.py)."""
from __future__ import annotations

import asyncio
from collections import deque

import orjson
import pytest

from mcpx_core.bridge import Answer, Reply, Streamed
from mcpx_core.bridge.legacy_client import LegacyClientBridge
from mcpx_core.bridge.stream import PATH, AnswerStream, AnswerStreams
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.rules.headers import encode_header_value, upgrade_headers, x_mcp_header_map
from mcpx_core.session import Session, SessionTracker

PV, CAPS, INFO, LOG = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
                       "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/logLevel")


def test_header_values_are_sent_plain_or_as_the_base64_sentinel():
    """TR-mcp-method-name: visible ASCII without outer whitespace goes as it is; anything else, and a
    value that looks like the sentinel, as =?base64?...?= (streamable-http.mdx:495)."""
    assert encode_header_value("mrtr_elicit") == "mrtr_elicit"
    assert encode_header_value("resource://a b") == "resource://a b"
    assert encode_header_value("Zürich ") == "=?base64?WsO8cmljaCA=?="
    assert encode_header_value(" x") == "=?base64?IHg=?="
    assert encode_header_value("=?base64?eA==?=") == "=?base64?PT9iYXNlNjQ/ZUE9PT89?="


def test_x_mcp_header_map():
    """TR-mcp-param-headers: annotations reached by `properties` only, on string/integer/boolean
    properties, unique ignoring case; one invalid annotation voids the tool's (None)."""
    schema = {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}}},
        "n": {"type": "integer"}}}
    assert x_mcp_header_map(schema) == {("region",): "Region", ("opts", "dry"): "Dry-Run"}
    assert x_mcp_header_map({"type": "object", "properties": {"x": {"type": "number", "x-mcp-header": "X"}}}) is None
    assert x_mcp_header_map({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A"},
                                                              "b": {"type": "string", "x-mcp-header": "a"}}}) is None
    assert x_mcp_header_map({"type": "object", "oneOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}) is None
    assert x_mcp_header_map({"type": "object"}) == {}


def test_upgrade_headers_exact():
    headers, changes = upgrade_headers("tools/call", {"name": "t", "arguments": {"region": "Zürich ", "opts": {"dry": True}, "n": None}},
                                       {("region",): "Region", ("opts", "dry"): "Dry-Run", ("n",): "N"})
    assert headers == {"Mcp-Method": "tools/call", "Mcp-Name": "t", "Mcp-Param-Region": "=?base64?WsO8cmljaCA=?=",
                       "Mcp-Param-Dry-Run": "true"}
    assert [c.key() for c in changes] == [("header:Mcp-Method", "synthesize", "TR-mcp-method-name"),
                                          ("header:Mcp-Name", "synthesize", "TR-mcp-method-name"),
                                          ("header:Mcp-Param-Region", "synthesize", "TR-mcp-param-headers"),
                                          ("header:Mcp-Param-Dry-Run", "synthesize", "TR-mcp-param-headers")]
    headers, _ = upgrade_headers("resources/read", {"uri": "resource://x"}, None)
    assert headers == {"Mcp-Method": "resources/read", "Mcp-Name": "resource://x"}


# -- the bridge with a scripted upstream --------------------------------------------------------------
class State:
    def __init__(self):
        self.rewriter = Rewriter(SessionTracker())
        self.keep_original = 1 << 20
        self.closed: deque = deque()
        self.records: list = []
        self.answers = AnswerStreams()
        self.rewriter.on_changes = lambda exch, changes: self.records.extend(changes)


class Upstream:
    """Answers each send with the next scripted (status, content-type, body); keeps what was sent."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.sent: list[tuple[dict, dict]] = []

    async def send(self, body, headers, purpose, *, method="POST", on_chunk=None, stop=None, timeout=600.0, client_headers=False):
        req = orjson.loads(body)
        self.sent.append((req, dict(headers)))
        status, ctype, answer = self.answers.pop(0)
        if isinstance(answer, dict) and answer.get("id") == "*":  # answers whatever id the request has
            answer = {**answer, "id": req["id"]}
        return Reply(status, {"content-type": ctype}, orjson.dumps(answer) if not isinstance(answer, bytes) else answer)

    def live(self):
        return True


def _session(rev="2025-03-26", caps=None) -> Session:
    return Session("s-test", client_rev=rev, server_rev="2026-07-28", bridge="legacy-client",
                   client_caps=caps if caps is not None else {"sampling": {}, "roots": {"listChanged": True}},
                   client_info={"name": "old-client", "version": "1.0"}, token="mcpx1.x")


def _exch(s: Session) -> Exchange:
    return Exchange(flow_id="f1", origin="http://127.0.0.1:1", session=s)


def _run(coro):
    return asyncio.run(coro)


def test_envelope_of_a_paginated_request_without_params():
    """META-* upgrade direction and PAGE-params-required: a 2025-03-26 tools/list without params,
    after logging/setLevel (answered by mcpx), reaches the server with the full envelope."""
    st = State()
    b = LegacyClientBridge(st)
    s = _session()
    up = Upstream((200, "application/json", {"jsonrpc": "2.0", "id": 2, "result": {
        "tools": [{"name": "t", "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}}],
        "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}}))

    level_records: list = []

    async def go():
        level = await b.request(_exch(s), "POST", b'{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}', {}, up)
        level_records.extend(c.key() for c in st.records)
        st.records.clear()
        listed = await b.request(_exch(s), "POST", b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
                                 {"Mcp-Session-Id": "mcpx1.x", "Accept": "application/json", "Last-Event-ID": "7"}, up)
        return level, listed

    level, listed = _run(go())
    assert isinstance(level, Answer) and orjson.loads(level.body) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert level_records == [("", "answer-locally", "LOG-setLevel")]
    [(sent, headers)] = up.sent
    assert sent == {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {
        PV: "2026-07-28", CAPS: {"sampling": {}, "roots": {}}, INFO: {"name": "old-client", "version": "1.0"}, LOG: "debug"}}}
    assert headers == {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
    assert [c.key() for c in st.records if c.direction == "c2s"] == [
        ("/params", "synthesize", "PAGE-params-required"),
        ("/params/_meta/io.modelcontextprotocol~1protocolVersion", "synthesize", "META-protocolVersion"),
        ("/params/_meta/io.modelcontextprotocol~1clientCapabilities", "synthesize", "META-clientCapabilities"),
        ("/params/_meta/io.modelcontextprotocol~1clientCapabilities/roots/listChanged", "drop", "CAP-client-roots-listChanged"),
        ("/params/_meta/io.modelcontextprotocol~1clientInfo", "synthesize", "META-clientInfo"),
        ("/params/_meta/io.modelcontextprotocol~1logLevel", "synthesize", "META-logLevel"),
        ("header:MCP-Protocol-Version", "synthesize", "TR-protocol-version-header"),
        ("header:Mcp-Method", "synthesize", "TR-mcp-method-name"),
        ("header:Mcp-Session-Id", "drop", "TR-session-id"),
        ("header:Last-Event-ID", "drop", "TR-sse-resumability")]
    assert isinstance(listed, Answer) and listed.status == 200
    assert orjson.loads(listed.body) == {"jsonrpc": "2.0", "id": 2, "result": {"tools": [
        {"name": "t", "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}}]}}
    assert [c.key() for c in st.records if c.direction == "s2c"] == [
        ("/result/resultType", "drop", "RES-resultType"), ("/result/ttlMs", "drop", "RES-ttlMs"),
        ("/result/cacheScope", "drop", "RES-cacheScope")]
    assert b.tools[("http://127.0.0.1:1", "")] == {"t": {("r",): "R"}}  # learnt for Mcp-Param-R (no credentials)


def test_unknown_method_404_and_modern_400_become_200():
    """TR-unknown-method-404 / TR-modern-400-errors: a legacy client reads a JSON-RPC error on 2xx only."""
    st = State()
    b = LegacyClientBridge(st)
    s = _session("2025-06-18", {})
    up = Upstream((404, "application/json", {"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "Method not found"}}),
                  (400, "application/json", {"jsonrpc": "2.0", "id": 6, "error": {"code": -32022, "message": "Unsupported",
                                                                                  "data": {"supported": ["2026-07-28"]}}}),
                  (400, "application/json", {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "Unknown resource: x:/"}}))
    seen = []

    async def go():
        out = []
        for body in (b'{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"b"}}}',
                     b'{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"x:/"}}',
                     b'{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"x:/"}}'):
            st.records.clear()
            out.append(await b.request(_exch(s), "POST", body, {}, up))
            seen.append([c.key() for c in st.records if c.direction == "s2c"])
        return out

    a, c, d = _run(go())
    assert (a.status, orjson.loads(a.body)) == (200, {"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "Method not found"}})
    assert (c.status, orjson.loads(c.body)["error"]["code"]) == (200, -32602)
    assert (d.status, orjson.loads(d.body)["error"]) == (200, {"code": -32602, "message": "Unknown resource: x:/"})
    assert seen == [[("http:status", "rewrite", "TR-unknown-method-404")],
                    [("/error/code", "rewrite", "ERR-unsupported-protocol-version"), ("http:status", "rewrite", "TR-modern-400-errors")],
                    [("/error/code", "keep", "ERR-resource-not-found"), ("http:status", "rewrite", "TR-modern-400-errors")]]


def test_input_required_for_a_json_only_client_is_an_error():
    """MRTR-bridge-legacy-client: no SSE stream (the client accepts only JSON): -32603, nothing asked."""
    st = State()
    b = LegacyClientBridge(st)
    s = _session("2025-06-18", {"elicitation": {}})
    up = Upstream((200, "application/json", {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required", "requestState": "s",
                                             "inputRequests": {"k": {"method": "elicitation/create", "params": {
                                                 "message": "?", "requestedSchema": {"type": "object", "properties": {}}}}}}}))
    out = _run(b.request(_exch(s), "POST", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}',
                         {"Accept": "application/json"}, up))
    assert isinstance(out, Answer) and orjson.loads(out.body) == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32603, "message": "mcpx: input required but not expressible for this client (it accepts only application/json)"}}
    assert len(up.sent) == 1 and not b.pending


def test_unknown_tool_headers_are_learnt_after_a_header_mismatch():
    """TR-mcp-param-headers after a failover: the tool's x-mcp-header is unknown here; the server says
    -32020; mcpx lists the tools and sends the call again with Mcp-Param-*."""
    st = State()
    b = LegacyClientBridge(st)
    s = _session("2025-06-18", {})
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    up = Upstream((400, "application/json", {"jsonrpc": "2.0", "id": 3, "error": {"code": -32020, "message": "mismatch"}}),
                  (200, "application/json", {"jsonrpc": "2.0", "id": "x", "result": {"tools": [{"name": "t", "inputSchema": schema}],
                                                                                     "resultType": "complete"}}),
                  (200, "application/json", {"jsonrpc": "2.0", "id": 3, "result": {"content": [], "resultType": "complete"}}))
    out = _run(b.request(_exch(s), "POST", b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{"region":"eu"}}}',
                         {}, up))
    assert orjson.loads(out.body) == {"jsonrpc": "2.0", "id": 3, "result": {"content": []}}
    assert [sent["method"] for sent, _ in up.sent] == ["tools/call", "tools/list", "tools/call"]
    assert "mcp-param-region" not in up.sent[0][1] and up.sent[2][1]["mcp-param-region"] == "eu"
    assert ("header:Mcp-Param-Region", "synthesize", "TR-mcp-param-headers") in [c.key() for c in st.records]


def test_batch_of_a_2025_03_26_client():
    """RPC-batch-request toward a 2026 server: each member alone (here: answered by mcpx), one batch back."""
    st = State()
    b = LegacyClientBridge(st)
    s = _session()
    out = _run(b.request(_exch(s), "POST", b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},'
                                           b'{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t"}}]', {}, Upstream()))
    assert orjson.loads(out.body) == [{"jsonrpc": "2.0", "id": 1, "result": {}},
                                      {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "Method not found: tasks/get (not defined in MCP 2026-07-28; answered by mcpx)"}}]
    assert [c.key() for c in st.records] == [("", "answer-locally", "LC-ping"), ("", "drop-message", "ROOTS-list-changed"),
                                             ("", "drop-message", "TASK-method-get")]


def test_client_answers_and_notifications_are_consumed():
    """PROG-direction, CANCEL-direction; an answer to no outstanding input request is dropped, with a record."""
    st = State()
    b = LegacyClientBridge(st)
    s = _session()

    async def go():
        outs = []
        for body in (b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}',
                     b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}',
                     b'{"jsonrpc":"2.0","id":"mcpx-000000-input-1","result":{"roots":[]}}'):
            outs.append(await b.request(_exch(s), "POST", body, {}, Upstream()))
        return outs

    outs = _run(go())
    assert [o.status for o in outs] == [202, 202, 202]
    assert [c.key() for c in st.records] == [("", "drop-message", "PROG-direction"), ("", "drop-message", "CANCEL-direction"),
                                             ("", "drop-message", "MRTR-bridge-legacy-client")]


class BlockingUpstream(Upstream):
    """Holds the first send until it is cancelled (an upstream exchange in flight)."""

    def __init__(self):
        super().__init__()
        self.cancelled = False

    async def send(self, body, headers, purpose, **kw):
        self.sent.append((orjson.loads(body), dict(headers)))
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.cancelled = True
            raise


def test_cancelled_notification_aborts_the_upstream_exchange():
    """TR-cancel-by-stream-close: a legacy client's notifications/cancelled ends mcpx's upstream request
    (closing it is the 2026-07-28 cancel); the cancelled request gets no answer."""
    st = State()
    b = LegacyClientBridge(st)
    s = _session()
    up = BlockingUpstream()

    async def go():
        call = asyncio.ensure_future(b.request(_exch(s), "POST", b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow"}}', {}, up))
        # wait until the call reached the upstream (a fixed 0.05 s assumed it did: a busy machine may not get there)
        for _ in range(1000):
            if up.sent:
                break
            await asyncio.sleep(0.01)
        assert up.sent
        st.records.clear()
        note = await b.request(_exch(s), "POST", b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}', {}, Upstream())
        return await call, note

    answer, note = _run(go())
    assert (answer.status, answer.body, note.status) == (202, b"", 202)
    assert up.cancelled
    assert [c.key() for c in st.records] == [("", "drop-message", "TR-cancel-by-stream-close")]


async def _events(outlet: AnswerStream, n: int) -> list[dict]:
    out = []
    while len(out) < n:
        chunk = await asyncio.wait_for(outlet.queue.get(), 5)
        if chunk is None:
            break
        out.append(orjson.loads(chunk.split(b"data: ", 1)[1]))
    return out


def test_url_elicitation_gets_an_elicitation_id_for_a_2025_11_25_client():
    """ELIC-elicitationId upgrade direction: a 2026 URL elicitation has none; a 2025-11-25 client
    requires it. The answer goes back in inputResponses, requestState untouched."""
    st = State()
    b = LegacyClientBridge(st)
    s = _session("2025-11-25", {"elicitation": {"url": {}}})
    ask = {"method": "elicitation/create", "params": {"mode": "url", "message": "Sign in", "url": "https://example.com/x"}}
    up = Upstream((200, "application/json", {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required", "requestState": "S1",
                                                                                    "inputRequests": {"login": ask}}}),
                  (200, "application/json", {"jsonrpc": "2.0", "id": "*", "result": {"content": [], "resultType": "complete"}}))

    async def go():
        out = await b.request(_exch(s), "POST", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}', {}, up)
        [req] = await _events(out.stream, 1)
        await b.request(_exch(s), "POST", orjson.dumps({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept"}}), {}, Upstream())
        rest = await _events(out.stream, 1)
        return out, req, rest

    out, req, rest = _run(go())
    assert isinstance(out, Streamed)
    eid = req["params"]["elicitationId"]
    assert req == {"jsonrpc": "2.0", "id": req["id"], "method": "elicitation/create",
                   "params": {"mode": "url", "message": "Sign in", "url": "https://example.com/x", "elicitationId": eid}}
    assert eid.startswith("mcpx-") and ("/result/inputRequests/login/params/elicitationId", "synthesize", "ELIC-elicitationId") in [
        c.key() for c in st.records]
    retry = up.sent[1][0]
    assert retry["params"]["inputResponses"] == {"login": {"action": "accept"}} and retry["params"]["requestState"] == "S1"
    assert rest == [{"jsonrpc": "2.0", "id": 1, "result": {"content": []}}]


def test_input_required_without_requests_or_state():
    """MRTR-input-required-result: neither inputRequests nor requestState (schema/2026-07-28/schema.ts:584
    says one MUST be present): the client gets -32603."""
    st = State()
    b = LegacyClientBridge(st)
    up = Upstream((200, "application/json", {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required"}}))
    out = _run(b.request(_exch(_session()), "POST", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}', {}, up))
    assert orjson.loads(out.body)["error"]["code"] == -32603
    assert ("/result", "rewrite", "MRTR-input-required-result") in [c.key() for c in st.records]


class ListenUpstream(Upstream):
    """A subscriptions/listen answer: the ack, a change, then the server ends the stream."""

    async def send(self, body, headers, purpose, *, on_chunk=None, **kw):
        req = orjson.loads(body)
        self.sent.append((req, dict(headers)))
        sub = {"io.modelcontextprotocol/subscriptionId": req["id"]}
        for m in ({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"_meta": sub, "notifications": {}}},
                  {"jsonrpc": "2.0", "method": "notifications/prompts/list_changed", "params": {"_meta": sub}},
                  {"jsonrpc": "2.0", "id": req["id"], "result": {"resultType": "complete", "_meta": sub}}):
            on_chunk(b"event: message\r\ndata: " + orjson.dumps(m) + b"\r\n\r\n")
            await asyncio.sleep(0.01)
        on_chunk(b"")
        return Reply(200, {"content-type": "text/event-stream"}, b"")


def test_get_stream_relays_the_listen_and_consumes_its_end():
    """TR-get-stream, SUB-acknowledged, META-subscriptionId, SUB-listen-result toward a legacy client."""
    st = State()
    b = LegacyClientBridge(st)
    s = _session("2025-06-18", {})
    s.server_caps = {"prompts": {"listChanged": True}, "tools": {}}
    up = ListenUpstream()

    async def go():
        out = await b.request(_exch(s), "GET", None, {"Accept": "text/event-stream"}, up)
        events = await _events(out.stream, 1)
        await asyncio.sleep(0.05)
        b.closing()
        return out, events

    out, events = _run(go())
    assert isinstance(out, Streamed) and out.stream is not None
    assert up.sent[0][0]["params"]["notifications"] == {"promptsListChanged": True}
    assert events == [{"jsonrpc": "2.0", "method": "notifications/prompts/list_changed", "params": {"_meta": {}}}]
    assert [c.key() for c in st.records] == [
        ("", "drop-message", "SUB-acknowledged"), ("", "rewrite", "TR-get-stream"),
        ("/params/_meta/io.modelcontextprotocol~1subscriptionId", "drop", "META-subscriptionId"),
        ("", "drop-message", "SUB-listen-result")]


# -- the answer endpoint (bridge/stream.py): what the legacy-client bridge adds to it ----------------
async def _fetch(port: int, token: str) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {PATH}{token} HTTP/1.1\r\nhost: x\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data


def test_answer_stream_keeps_what_it_delivered_and_says_who_ended_it():
    async def go():
        answers = AnswerStreams()
        await answers.ensure()
        ended = []
        s = answers.make(on_close=lambda: _note(ended, s.finished), keep=30)
        task = asyncio.ensure_future(_fetch(answers.port, s.token))
        await asyncio.sleep(0.05)
        s.put(b"event: message\ndata: {}\n\n")
        await asyncio.sleep(0.05)
        s.put(b"data: 2\n\n")
        s.close()
        got = await task
        await asyncio.sleep(0.05)
        gone = answers.make(on_close=lambda: _note(ended, gone.finished))
        reader, writer = await asyncio.open_connection("127.0.0.1", answers.port)
        writer.write(f"GET {PATH}{gone.token} HTTP/1.1\r\n\r\n".encode())
        await writer.drain()
        await reader.readuntil(b"\r\n\r\n")
        writer.close()
        for _ in range(1000):  # the endpoint notices the client went away: 1 s was tight on a busy machine
            if len(ended) == 2:
                break
            await asyncio.sleep(0.02)
        answers.stop()
        return got, s.delivered, ended

    got, delivered, ended = _run(go())
    assert got.split(b"\r\n\r\n", 1)[1] == b"19\r\nevent: message\ndata: {}\n\n\r\n9\r\ndata: 2\n\n\r\n0\r\n\r\n"
    assert delivered == b"event: message\ndata: {}\n\ndata:"  # the first 30 bytes
    assert ended == [True, False]  # ended by the bridge; then by the client going away


async def _note(out: list, value) -> None:
    out.append(value)


@pytest.mark.parametrize("accept,expected", [("application/json, text/event-stream", True), ("application/json", False), (None, True)])
def test_can_stream(accept, expected):
    b = LegacyClientBridge(State())
    assert b.can_stream({"Accept": accept} if accept else {}) is expected
