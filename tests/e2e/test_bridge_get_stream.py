"""A bridged 2026-07-28 session does what the native one does with what a legacy server sends outside
any call (bridge/client2026/get_stream.py): its GET stream's ``roots/list``, ``sampling/createMessage``,
``elicitation/create`` reach the 2026-07-28 client as ``input_required`` on its call in progress or its
next call, answered by the client's own handlers; its ``list_changed`` notifications reach the client's
``subscriptions/listen``; one that no call carries is answered -32603 after ``PENDING_TTL``.

The released ``@modelcontextprotocol/client`` 2.4.0 against the npm everything server (legacy only),
in ``pin:2026-07-28`` and in ``auto`` mode: directly ``auto`` negotiates 2025-11-25 and pin mode fails
at connect; through mcpx both negotiate 2026-07-28 (its ``server/discover`` probe is the same bytes
in both modes: mcpx bridges both; in ``auto`` mode the whole everything scenario runs first, and every call
that passes directly passes but ``ping``, which the client itself refuses in the 2026-07-28 era). ``get-roots-list`` (the server's ``listRoots()`` without a related
request: its GET stream), ``trigger-sampling-request`` and ``trigger-elicitation-request`` pass, and
each result carries the value only the client's handler gave (``handlerTag``, the unique roots).
Then a small scripted legacy server, for what only it can show on cue: ``roots/list`` sent only on its
GET stream (what it received is asserted), a tool that changes its tool list and sends
``notifications/tools/list_changed`` on its GET stream, and a ``roots/list`` no call ever carries.
"""
from __future__ import annotations

import http.client
import json
import threading
import uuid

import orjson
import pytest

import peers_lib as pl
from proxy_lib import Proxy, ScriptedMcpHandler, serve

pytestmark = pytest.mark.peers
NEW = "2026-07-28"
OPS = [
    {"id": "get-roots-list", "op": "callTool", "name": "get-roots-list", "arguments": {}, "timeoutMs": 15000},
    {"id": "trigger-sampling-request", "op": "callTool", "name": "trigger-sampling-request",
     "arguments": {"prompt": "say hi", "maxTokens": 10}, "timeoutMs": 15000},
    {"id": "trigger-elicitation-request", "op": "callTool", "name": "trigger-elicitation-request", "arguments": {}, "timeoutMs": 15000},
]


@pytest.fixture(scope="module")
def everything():
    pl.require(pl.peers_missing())
    with pl.start_everything_server() as ev:
        yield ev


def run(url: str, mode: str, tag: str) -> dict:
    """The three ops (pin mode), or the whole everything scenario before them (auto: the matrix of docs/bridging.md)."""
    roots = [{"uri": f"file:///tmp/{tag}", "name": f"root {tag}"}]
    ops = OPS if mode != "auto" else pl.scenario_ops("everything", pl.CLIENT_2026) + OPS
    return pl.run_js_client(pl.CLIENT_2026, url, ops, options={"versionNegotiation": mode, "roots": roots, "handlerTag": tag},
                            timeout=90)


@pytest.mark.parametrize("mode", ["pin:2026-07-28", "auto"])
def test_the_clients_own_handlers_answer_through_the_bridge(everything, tmp_path, mode):
    tag = f"tag-{uuid.uuid4().hex[:12]}"
    direct = run(everything.url, mode, tag)
    if mode == "auto":  # directly: the legacy era, every call passes, every handler runs
        assert direct["protocolVersion"] == "2025-11-25" and set(pl.verdicts(direct).values()) == {"ok"}, direct
    else:
        assert direct["returncode"] == 2 and "did not offer pinned protocol version 2026-07-28" in direct["error"], direct
    with Proxy(f"http://127.0.0.1:{everything.port}", tmp_path) as px:
        rep = run(px.url, mode, tag)
        changes = px.changes()
    assert rep["protocolVersion"] == NEW, rep
    verdicts = pl.verdicts(rep)
    if mode == "auto":
        # every call that passes directly passes, but ping: the client refuses it itself in the 2026-07-28 era
        # (2026-07-28 has no ping; nothing is sent), as against any 2026-07-28 server
        assert len(verdicts) == 25 and verdicts.pop("ping") == "FAIL" and [e["error"] for e in rep["results"] if e["op"] == "ping"] == [
            "Method 'ping' is not supported by the negotiated protocol version (wire era 2026-07-28)"], rep
        assert set(verdicts.values()) == {"ok"}, rep
    else:
        assert verdicts == {op["id"]: "ok" for op in OPS}, rep
    by_id = {e["id"]: e for e in rep["results"]}
    # each result carries what only the client's handler gave
    assert pl.result_text(by_id["get-roots-list"]).startswith(f"Current MCP Roots (1 total):\n\n1. root {tag}\n   URI: file:///tmp/{tag}\n")
    assert f'"text": "{tag}"' in pl.result_text(by_id["trigger-sampling-request"])
    assert any(f"- Name: {tag}\n" in (b.get("text") or "") for b in by_id["trigger-elicitation-request"]["result"]["content"]), by_id
    # the handlers ran: roots/list (the everything server's sync after notifications/initialized, then its
    # get-roots-list tool's own: both sent on the GET stream), then sampling and elicitation (within their calls)
    methods = [r["method"] for r in rep["serverRequests"]]
    assert set(methods) == {"roots/list", "sampling/createMessage", "elicitation/create"} and methods[-2:] == [
        "sampling/createMessage", "elicitation/create"], methods
    # (the sync's roots/list comes 350 ms after notifications/initialized: carried by the next call, or by the call in progress)
    carried = [c for c in changes if c["rule"] == "MRTR-bridge-legacy-server" and "outside any call" in (c["detail"] or "")]
    assert carried and all("roots/list" in c["before"] for c in carried), carried
    assert not [c for c in changes if c["action"] == "passthrough"], changes


class Legacy(ScriptedMcpHandler):
    """A 2025-11-25 server (tools.listChanged; session legacy-1) that sends ``roots/list`` (id
    ``srv-roots-1``) only on its GET stream, at once; ``show-roots`` answers with the roots it was
    given (waits up to 10 s for them); ``add-tool`` adds a tool and sends ``notifications/tools/list_changed``
    on the GET stream. ``seen``: every POST body; ``gets``: the session id of each GET."""

    seen: list = []
    gets: list = []
    #: a file made once the GET stream's roots/list was sent (the client waits for it: no call is then in progress)
    sent: str = ""
    tools = ["show-roots", "add-tool"]
    roots = threading.Event()
    changed = threading.Event()
    done = threading.Event()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.seen.append(body)
        if body.get("method") == "initialize":
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "legacy", "version": "1"}}}), {"mcp-session-id": "legacy-1"})
        elif body.get("id") == "srv-roots-1":
            self.roots.set()
            self.send_accepted()
        elif body.get("method") == "tools/list":
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {"tools": [
                {"name": n, "inputSchema": {"type": "object"}} for n in self.tools]}}))
        elif body.get("method") == "tools/call":
            name = body["params"]["name"]
            if name == "show-roots":
                self.roots.wait(10)
                got = [b for b in self.seen if b.get("id") == "srv-roots-1"]
                text = json.dumps(got[0].get("result")) if got else "no roots"
            else:
                self.tools.append("added")
                self.changed.set()
                text = "added"
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {"content": [{"type": "text", "text": text}]}}))
        else:
            self.send_accepted()

    def do_GET(self):
        self.gets.append(self.headers.get("mcp-session-id"))
        self.start_sse()
        self.chunk(b'event: message\ndata: {"jsonrpc":"2.0","id":"srv-roots-1","method":"roots/list"}\n\n')
        if self.sent:
            open(self.sent, "w").close()
        if self.changed.wait(20):
            self.chunk(b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n')
        self.done.wait(20)


@pytest.fixture
def legacy(tmp_path):
    Legacy.tools = ["show-roots", "add-tool"]
    Legacy.sent = str(tmp_path / "roots-sent")
    for e in (Legacy.roots, Legacy.changed, Legacy.done):
        e.clear()
    yield from serve(Legacy, "seen", "gets")
    Legacy.done.set()


def test_roots_list_sent_only_on_the_get_stream_gets_the_clients_roots(legacy, tmp_path):
    """No call is in progress when the server's roots/list comes: the client's next call carries it
    (input_required at once, the call sent upstream on the retry); the server gets the client's roots."""
    tag = f"tag-{uuid.uuid4().hex[:12]}"
    roots = [{"uri": f"file:///tmp/{tag}", "name": tag}]
    with Proxy(f"http://127.0.0.1:{legacy}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        rep = pl.run_client_2026(px.url, [{"id": "sent", "op": "waitFor", "path": Legacy.sent, "timeoutMs": 10000},
                                          {"id": "show", "op": "callTool", "name": "show-roots", "arguments": {}}],
                                 options={"roots": roots})
        changes = px.changes()
    assert pl.verdicts(rep) == {"sent": "ok", "show": "ok"}, rep
    assert [b for b in Legacy.seen if b.get("id") == "srv-roots-1"] == [{"jsonrpc": "2.0", "id": "srv-roots-1", "result": {"roots": roots}}]
    assert pl.result_text(rep["results"][1]) == json.dumps({"roots": roots})
    assert [r["method"] for r in rep["serverRequests"]] == ["roots/list"]
    # the roots answer reached the server before the call did
    order = [b.get("method") or b.get("id") for b in Legacy.seen]
    assert order.index("srv-roots-1") < order.index("tools/call"), order
    assert [(c["pointer"], c["action"], c["rule"], c["before"]) for c in changes if c["rule"] == "MRTR-bridge-legacy-server"] == [
        ("/result", "bridge", "MRTR-bridge-legacy-server", "mcpx:srv-roots-1: roots/list"),
        ("/params/inputResponses/mcpx:srv-roots-1", "bridge", "MRTR-bridge-legacy-server", None)]


def test_list_changed_on_the_get_stream_reaches_the_listen(legacy, tmp_path):
    """The session's GET stream (opened for the client's roots) also serves its listen: the server's
    notifications/tools/list_changed after add-tool reaches it, with the listen's subscriptionId."""
    ops = [{"id": "listen", "op": "listen", "filter": {"toolsListChanged": True}},
           {"id": "add", "op": "callTool", "name": "add-tool", "arguments": {}},
           {"id": "wait", "op": "waitNotification", "method": "notifications/tools/list_changed", "timeoutMs": 10000},
           {"id": "list", "op": "listTools"},
           {"id": "unlisten", "op": "unlisten"}]
    with Proxy(f"http://127.0.0.1:{legacy}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        rep = pl.run_client_2026(px.url, ops)
    assert pl.verdicts(rep) == {op["id"]: "ok" for op in ops}, rep
    by_id = {e["id"]: e for e in rep["results"]}
    assert by_id["listen"]["result"] == {"honoredFilter": {"toolsListChanged": True}}
    assert by_id["wait"]["result"]["notifications"] == [{"method": "notifications/tools/list_changed", "params": {
        "_meta": {"io.modelcontextprotocol/subscriptionId": by_id["wait"]["result"]["notifications"][0]["params"]["_meta"][
            "io.modelcontextprotocol/subscriptionId"]}}}]
    assert [t["name"] for t in by_id["list"]["result"]["tools"]] == ["show-roots", "add-tool", "added"]
    assert Legacy.gets == ["legacy-1"]  # one GET stream for the session: its roots/list and the listen


def test_a_server_request_no_call_carries_is_answered_after_pending_ttl(legacy, tmp_path):
    """A 2026 client that declared roots and makes no call: the server's roots/list is answered -32603
    saying why after PENDING_TTL (scaled to 1 s by a script loaded into mitmdump), with a record."""
    script = tmp_path / "ttl.py"
    script.write_text("import mcpx_core.bridge.client2026 as c\nc.PENDING_TTL = 1.0\n")
    meta = {"io.modelcontextprotocol/protocolVersion": NEW, "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"}}
    with Proxy(f"http://127.0.0.1:{legacy}", tmp_path, options={"mcpx_server_era": "legacy"}, scripts=(str(script),)) as px:
        conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
        conn.request("POST", "/mcp", orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}),
                     {"content-type": "application/json", "accept": "application/json, text/event-stream",
                      "mcp-protocol-version": NEW, "mcp-method": "tools/list"})
        assert conn.getresponse().status == 200
        assert Legacy.roots.wait(10)
        changes = px.changes()
    assert [b for b in Legacy.seen if b.get("id") == "srv-roots-1"] == [{"jsonrpc": "2.0", "id": "srv-roots-1", "error": {
        "code": -32603, "message": "mcpx: no request of the 2026-07-28 client came within 1 s to carry roots/list (a 2026-07-28 "
                                   "client takes server requests only as input_required of its calls)"}}]
    assert [(c["action"], c["rule"], c["detail"]) for c in changes if c["action"] == "passthrough"] == [
        ("passthrough", "MRTR-bridge-legacy-server", "roots/list id='srv-roots-1' (sent outside any call) waited 1 s for a call of "
         "the 2026-07-28 client to carry it as input_required, and none came: -32603 on the client's behalf")]
