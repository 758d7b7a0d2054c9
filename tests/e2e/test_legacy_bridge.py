"""Issue 13: every legacy client works against a 2026-07-28-only server, through mcpx.

The server is PyPI mcp 2.3.0 behind tests/peers/py_server_mrtr.Only2026Gate (the SDK's own code
refuses every legacy request, as a 2026-only server does). Each legacy SDK client of PEERS.md fails
directly at initialize; through mcpx it runs its full scenario (the py scenario, every multi
round-trip kind, list_changed / resources/updated on its GET stream, Mcp-Param headers, logging),
every message it receives validates against its own revision's strict schema, and every request
the server receives validates against 2026-07-28's. A client lacking a capability gets a JSON-RPC
error naming it. Exact messages on both legs: a two-round input_required exchange, a client lacking
the capability, a resources/subscribe followed by an update.
"""
from __future__ import annotations

import threading
import time

import orjson

import pytest

import peers_lib as pl
from legacy_bridge_run import NEEDS, lacks, normalized, run_bridged, scenario
from schema_check import message_errors

pytestmark = pytest.mark.peers

CLIENTS = ["sdk-1.10.2", "sdk-1.12.3", "sdk-1.13.0", "sdk-1.25.0", "mcp-1.8.1", "mcp-1.9.4", "mcp-1.12.4"]
PV, CAPS, INFO = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
                  "io.modelcontextprotocol/clientInfo")
#: scenario seconds per client (printed at the end of the module, for the report)
TIMES: dict[str, float] = {}


@pytest.fixture(scope="module")
def server():
    pl.require(pl.peers_missing())
    with pl.start_py_server(only_2026=True) as srv:
        yield srv
    if TIMES:
        print("\nlegacy clients through mcpx in front of a 2026-07-28-only server, seconds per scenario:",
              ", ".join(f"{c} {t:.1f}" for c, t in TIMES.items()))


def _validate(run) -> list:
    """Schema errors of what each leg received: the client (its revision), the server (2026-07-28)."""
    rev = run.report["protocolVersion"]
    asked = {}  # id -> method, of the requests the client sent and of those mcpx sent it
    for leg in run.client_leg:
        for m in leg.sent + leg.received:
            if "method" in m and "id" in m:
                asked[m["id"]] = m["method"]
    bad = []
    for leg in run.client_leg:
        for m in leg.received:
            errs = message_errors(rev, m, asked.get(m.get("id")) if "method" not in m else None)
            if errs:
                bad.append(("to client", m.get("method") or asked.get(m.get("id")), errs[:2]))
    for leg in run.server_leg:
        if leg.purpose.startswith("initialize"):
            continue  # the client's own initialize, sent as it was to learn the server's era
        for m in leg.sent:
            errs = message_errors("2026-07-28", m)
            if errs:
                bad.append(("to server", m.get("method"), errs[:2]))
    return bad


@pytest.mark.parametrize("client", CLIENTS)
def test_legacy_client_full_scenario(server, client, tmp_path):
    direct = pl.run_client(client, server.url, [{"op": "listTools"}], options={"roots": pl.TEST_ROOTS})
    assert direct["returncode"] == 2 and direct["protocolVersion"] is None, "a legacy client must fail directly at initialize"

    run = run_bridged(client, server, tmp_path)
    TIMES[client] = run.seconds
    rep = run.report
    assert rep["protocolVersion"] == pl.load_scenarios()["clients"][client]["revision"], rep.get("error")
    missing = lacks(client)
    for op in scenario(client):
        e = run.result(op["id"])
        need = NEEDS.get(op["id"], set()) & missing
        if need:  # a clear JSON-RPC error naming what was missing
            assert not e["ok"] and "elicitation" in e["error"], (op["id"], e)
            continue
        assert e["ok"], (op["id"], e.get("error"))
        assert not (e.get("result") or {}).get("isError"), (op["id"], e)
        if op["id"] in pl.MRTR_EXPECTED:
            assert pl.result_text(e) == pl.MRTR_EXPECTED[op["id"]], op["id"]
    assert run.result("region")["result"]["content"][0]["text"] == "region Zürich "
    changed = run.result("wait-tools-changed")["result"]["notifications"]
    updated = run.result("wait-resource-updated")["result"]["notifications"]
    assert [n["method"] for n in changed] == ["notifications/tools/list_changed"]
    assert not (changed[0].get("params") or {}).get("_meta")  # META-subscriptionId dropped
    assert [(n["method"], n["params"]["uri"], n["params"].get("_meta") or {}) for n in updated] == [
        ("notifications/resources/updated", "resource://greeting", {})]
    if client.startswith("mcp-"):
        logs = run.result("wait-log")["result"]["notifications"]
        assert [(n["params"]["level"], n["params"]["data"]) for n in logs] == [("info", "hello")]
    assert not [c for c in run.changes if c["action"] == "passthrough"], run.output[-3000:]
    assert _validate(run) == []
    # the server received only 2026-07-28 requests after the refused initialize: no ping, no session, no GET
    methods = [m.get("method") for leg in run.server_leg for m in leg.sent]
    assert methods[0] == "initialize" and "ping" not in methods and "logging/setLevel" not in methods
    assert not [leg for leg in run.server_leg if leg.flow.request.method != "POST" or "mcp-session-id" in leg.headers]


def test_two_round_input_required_exact(server, tmp_path):
    """mrtr_two_rounds: an elicitation, then a sampling that uses the answer (two input_required
    rounds): the exact messages the server and the client exchange with mcpx."""
    run = run_bridged("sdk-1.25.0", server, tmp_path, ops=[{"id": "two", "op": "callTool", "name": "mrtr_two_rounds", "arguments": {}}])
    assert pl.result_text(run.result("two")) == "greeting: mcpx test sampling reply"
    call = run.client_flow("tools/call", "mrtr_two_rounds")
    rid = call.sent[0]["id"]
    token = call.flow.request.headers["mcp-session-id"]
    assert call.sent == [{"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "mrtr_two_rounds", "arguments": {}}}]
    # server leg: three rounds, the answers folded into inputResponses, requestState echoed byte for byte
    rounds = run.for_flow(call)
    assert [leg.purpose for leg in rounds] == ["tools/call for a legacy client", "tools/call for a legacy client (round 2)",
                                               "tools/call for a legacy client (round 3)"]
    envelope = {PV: "2026-07-28", CAPS: {"sampling": {}, "elicitation": {}, "roots": {}},
                INFO: {"name": "mcpx-js-client", "version": "1.25.0"}}
    r1, r2, r3 = (leg.sent[0] for leg in rounds)
    a1, a2, a3 = (leg.received[0] for leg in rounds)
    assert r1 == {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                  "params": {"name": "mrtr_two_rounds", "arguments": {}, "_meta": envelope}}
    for leg in rounds:
        assert {k: leg.headers.get(k) for k in ("mcp-protocol-version", "mcp-method", "mcp-name", "mcp-session-id")} == {
            "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "mrtr_two_rounds", "mcp-session-id": None}
    ask = a1["result"]["inputRequests"]["py_server_mrtr:_ask_name"]
    assert a1["result"]["resultType"] == "input_required" and list(a1["result"]["inputRequests"]) == ["py_server_mrtr:_ask_name"]
    assert normalized(r2) == {"jsonrpc": "2.0", "id": "mcpx-retry-N", "method": "tools/call", "params": {
        "name": "mrtr_two_rounds", "arguments": {}, "_meta": envelope,
        "inputResponses": {"py_server_mrtr:_ask_name": {"action": "accept", "content": {"name": "Test User"}}},
        "requestState": a1["result"]["requestState"]}}
    greet = a2["result"]["inputRequests"]["py_server_mrtr:_greet"]
    assert greet == {"method": "sampling/createMessage", "params": {"maxTokens": 30, "messages": [
        {"content": {"text": "Greet Test User in five words.", "type": "text"}, "role": "user"}]}}
    assert normalized(r3) == {"jsonrpc": "2.0", "id": "mcpx-retry-N", "method": "tools/call", "params": {
        "name": "mrtr_two_rounds", "arguments": {}, "_meta": envelope,
        "inputResponses": {"py_server_mrtr:_greet": {"role": "assistant", "content": {"type": "text", "text": "mcpx test sampling reply"},
                                                     "model": "mcpx-test-model", "stopReason": "endTurn"}},
        "requestState": a2["result"]["requestState"]}}
    assert r2["id"] != r3["id"] and a3["result"]["resultType"] == "complete"
    # client leg: the server's questions as server->client requests on the POST's SSE stream, then the result
    assert call.flow.response.headers["content-type"] == "text/event-stream"
    assert [normalized(m) for m in call.received] == [
        {"jsonrpc": "2.0", "id": "mcpx-input-N", "method": "elicitation/create", "params": ask["params"]},
        {"jsonrpc": "2.0", "id": "mcpx-input-N", "method": "sampling/createMessage", "params": greet["params"]},
        {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "greeting: mcpx test sampling reply"}],
                                                 "structuredContent": {"result": "greeting: mcpx test sampling reply"},
                                                 "isError": False, "_meta": {}}}]
    answers = [leg for leg in run.client_leg if leg.sent and "result" in leg.sent[0]]
    assert [(leg.sent, leg.status, leg.flow.request.headers["mcp-session-id"] == token) for leg in answers] == [
        ([{"jsonrpc": "2.0", "id": call.received[0]["id"], "result": {"action": "accept", "content": {"name": "Test User"}}}], 202, True),
        ([{"jsonrpc": "2.0", "id": call.received[1]["id"], "result": {
            "role": "assistant", "content": {"type": "text", "text": "mcpx test sampling reply"}, "model": "mcpx-test-model",
            "stopReason": "endTurn"}}], 202, True)]
    assert not run.for_flow(answers[0]) and not run.for_flow(answers[1])  # consumed: never POSTed to the server
    assert [run.records(leg) for leg in answers] == [[("", "answer-locally", "MRTR-bridge-legacy-client")]] * 2
    assert run.records(call) == [
        # the client's request toward 2026-07-28
        ("/params/_meta/io.modelcontextprotocol~1protocolVersion", "synthesize", "META-protocolVersion"),
        ("/params/_meta/io.modelcontextprotocol~1clientCapabilities", "synthesize", "META-clientCapabilities"),
        ("/params/_meta/io.modelcontextprotocol~1clientInfo", "synthesize", "META-clientInfo"),
        ("header:MCP-Protocol-Version", "rewrite", "TR-protocol-version-header"),
        ("header:Mcp-Method", "synthesize", "TR-mcp-method-name"),
        ("header:Mcp-Name", "synthesize", "TR-mcp-method-name"),
        ("header:Mcp-Session-Id", "drop", "TR-session-id"),
        # round 1: the elicitation, to the client
        ("/result/inputRequests/py_server_mrtr:_ask_name", "rewrite", "MRTR-embedded-requests"),
        # round 2: the answer, to the server
        ("/id", "rewrite", "RPC-request-id-reuse"),
        ("/params/inputResponses", "synthesize", "MRTR-bridge-legacy-client"),
        ("/params/requestState", "synthesize", "MRTR-bridge-legacy-client"),
        # round 2: the sampling request, to the client
        ("/result/inputRequests/py_server_mrtr:_greet", "rewrite", "MRTR-embedded-requests"),
        ("/id", "rewrite", "RPC-request-id-reuse"),
        ("/params/inputResponses", "synthesize", "MRTR-bridge-legacy-client"),
        ("/params/requestState", "synthesize", "MRTR-bridge-legacy-client"),
        # the final result, under the client's id
        ("/id", "rewrite", "RPC-request-id-reuse"),
        ("/result/resultType", "drop", "RES-resultType"),
        ("/result/_meta/io.modelcontextprotocol~1serverInfo", "drop", "META-serverInfo"),
    ]
    meta = call.flow.metadata["mcpx"]
    assert meta["answered_by"] == "bridge legacy-client: the server speaks only 2026-07-28; answer streamed by mcpx"
    assert call.flow.comment.startswith("tools/call mrtr_two_rounds #1 · client 2025-11-25, server 2026-07-28 · mcpx: answered by mcpx (bridge legacy-client: ")
    # the MCP content view of the flow says so, and shows each message the client received with its records
    import mcpx  # noqa: F401  (the addon script: registers the MCP views)
    from mitmproxy import contentviews
    from mitmproxy.test import taddons
    with taddons.context():
        text = contentviews.prettify_message(call.flow.response, call.flow, view_name="MCP").text.splitlines()
    assert text[:5] == ["MCP response (server -> client): 3 messages, 5 changes (3 rewritten, 2 dropped for 2025-11-25)",
                        f"session: {meta['session']}", "client:  2025-11-25 (mcpx-js-client 1.25.0)",
                        "server:  2026-07-28 (mcpx-py-peer 1.0.0)", "answered by mcpx: " + meta["answered_by"]]
    assert [line for line in text if line.startswith("[")] == [
        f"[1] request elicitation/create id={orjson.dumps(call.received[0]['id']).decode()} · event 1",
        f"[2] request sampling/createMessage id={orjson.dumps(call.received[1]['id']).decode()} · event 2",
        f"[3] result tools/call id={rid} · event 3"]


@pytest.mark.parametrize("client", ["sdk-1.12.3", "mcp-1.9.4"])
def test_client_lacking_the_capability_exact(server, client, tmp_path):
    """No elicitation in 2025-03-26: the server itself refuses a resolver that needs it (-32021, which
    mcpx maps to -32602: the client was given its real capabilities), and mcpx refuses the
    prompt whose input request the client cannot answer (-32603 naming elicitation)."""
    run = run_bridged(client, server, tmp_path, ops=[{"id": "elicit", "op": "callTool", "name": "mrtr_elicit", "arguments": {}},
                                                     {"id": "prompt", "op": "getPrompt", "name": "mrtr_prompt", "arguments": {}}])
    elicit = run.client_flow("tools/call", "mrtr_elicit")
    prompt = run.client_flow("prompts/get", "mrtr_prompt")
    eid, pid = elicit.sent[0]["id"], prompt.sent[0]["id"]
    assert (elicit.status, elicit.received) == (200, [{"jsonrpc": "2.0", "id": eid, "error": {
        "code": -32602, "message": "Client did not declare the form elicitation capability required by resolver 'py_server_mrtr:_ask_name'",
        "data": {"requiredCapabilities": {"elicitation": {"form": {}}}}}}])
    [up] = run.for_flow(elicit)
    assert up.status == 400 and up.received[0]["error"]["code"] == -32021
    assert up.sent[0]["params"]["_meta"][CAPS] == {"sampling": {}, "roots": {}}
    assert ("/error/code", "rewrite", "ERR-missing-client-capability") in run.records(elicit)
    assert ("http:status", "rewrite", "TR-modern-400-errors") in run.records(elicit)
    assert (prompt.status, prompt.received) == (200, [{"jsonrpc": "2.0", "id": pid, "error": {
        "code": -32603, "message": "mcpx: the server needs input this client cannot give: elicitation (MCP 2025-03-26 has no elicitation)",
        "data": {"inputRequest": "topic", "method": "elicitation/create"}}}])
    assert ("/result/inputRequests/topic", "rewrite", "ELIC-request") in run.records(prompt)
    assert len(run.for_flow(prompt)) == 1  # asked once; nothing was sent to the client, nothing retried
    assert [e["ok"] for e in run.report["results"]] == [False, False]
    assert "roots/list_changed" not in str(run.records(elicit))
    if client.startswith("mcp-"):  # mcp 1.x declares roots.listChanged: not a 2026-07-28 capability
        assert ("/params/_meta/io.modelcontextprotocol~1clientCapabilities/roots/listChanged", "drop",
                "CAP-client-roots-listChanged") in run.records(elicit)


def test_subscribe_then_update_exact(server, tmp_path):
    """resources/subscribe is answered by mcpx and re-opens the upstream subscriptions/listen that
    serves the client's GET stream; the server's resources/updated reaches the GET stream without
    subscriptionId; the ack never does."""
    ops = [{"id": "tools", "op": "listTools"},
           {"id": "subscribe", "op": "subscribeResource", "uri": "resource://greeting"},
           {"id": "touch", "op": "callTool", "name": "touch_resource", "arguments": {"uri": "resource://greeting"}},
           {"id": "wait", "op": "waitNotification", "method": "notifications/resources/updated", "timeoutMs": 10000}]
    run = run_bridged("mcp-1.12.4", server, tmp_path, ops=ops)
    assert all(e["ok"] for e in run.report["results"]), run.report
    sub = run.client_flow("resources/subscribe")
    sid = sub.sent[0]["id"]
    assert (sub.sent, sub.status, sub.received) == (
        [{"jsonrpc": "2.0", "id": sid, "method": "resources/subscribe", "params": {"uri": "resource://greeting"}}], 200,
        [{"jsonrpc": "2.0", "id": sid, "result": {}}])
    assert run.records(sub) == [("", "answer-locally", "SUB-resources-subscribe")]
    assert not [m for leg in run.server_leg for m in leg.sent if m.get("method") == "resources/subscribe"]
    # the GET stream and the listens behind it: the first one (list kinds only), then the re-opened one
    get = next(leg for leg in run.client_leg if "GET stream" in ((leg.flow.metadata.get("mcpx") or {}).get("answered_by") or ""))
    listens = run.for_flow(get) + run.for_flow(sub)
    envelope = {PV: "2026-07-28", CAPS: {"sampling": {}, "elicitation": {}, "roots": {}}, INFO: {"name": "mcpx-py-client", "version": "1.12.4"}}
    kinds = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
    assert [normalized(leg.sent[0]) for leg in listens] == [
        {"jsonrpc": "2.0", "id": "mcpx-listen-N", "method": "subscriptions/listen", "params": {"_meta": envelope, "notifications": kinds}},
        {"jsonrpc": "2.0", "id": "mcpx-listen-N", "method": "subscriptions/listen",
         "params": {"_meta": envelope, "notifications": {**kinds, "resourceSubscriptions": ["resource://greeting"]}}}]
    assert [leg.headers.get("mcp-method") for leg in listens] == ["subscriptions/listen"] * 2
    assert get.flow.response.headers["content-type"] == "text/event-stream"
    # subscriptionId dropped (META-subscriptionId); the _meta it sat in stays, empty
    assert get.received == [{"jsonrpc": "2.0", "method": "notifications/resources/updated",
                             "params": {"_meta": {}, "uri": "resource://greeting"}}]
    assert run.result("wait")["result"]["notifications"] == [
        {"method": "notifications/resources/updated", "params": {"_meta": {}, "uri": "resource://greeting"}}]
    assert run.records(get) == [
        ("", "drop-message", "SUB-acknowledged"),
        ("", "rewrite", "TR-get-stream"),
        ("", "drop-message", "SUB-acknowledged"),
        ("/params/_meta/io.modelcontextprotocol~1subscriptionId", "drop", "META-subscriptionId")]


def test_handshake_exact(server, tmp_path):
    """initialize: refused by the server (400, -32022), answered by mcpx from server/discover; the
    session token carries the bridge; initialized, ping and DELETE never reach the server."""
    run = run_bridged("sdk-1.10.2", server, tmp_path, ops=[{"id": "ping", "op": "ping"}])
    init = run.client_flow("initialize")
    iid = init.sent[0]["id"]
    assert init.status == 200 and init.received == [{"jsonrpc": "2.0", "id": iid, "result": {
        "protocolVersion": "2024-11-05",
        "capabilities": {"prompts": {"listChanged": True}, "resources": {"listChanged": True, "subscribe": True},
                         "tools": {"listChanged": True}},
        "serverInfo": {"name": "mcpx-py-peer", "version": "1.0.0"}}}]
    assert init.flow.response.headers["mcp-session-id"].startswith("mcpx1.")
    refused, discover = run.for_flow(init)
    assert refused.sent == init.sent and refused.status == 400 and refused.received[0]["error"]["code"] == -32022
    assert normalized(discover.sent[0]) == {"jsonrpc": "2.0", "id": "mcpx-discover-N", "method": "server/discover", "params": {"_meta": {
        PV: "2026-07-28", CAPS: {"sampling": {}, "roots": {}}, INFO: {"name": "mcpx-js-client", "version": "1.10.2"}}}}
    assert run.records(init) == [
        ("", "answer-locally", "LC-initialize"),
        ("/result/capabilities/resources/subscribe", "keep", "CAP-server-resources-subscribe"),
        ("/result/serverInfo/title", "drop", "IMPL-title"),
        ("/result/serverInfo/icons", "drop", "IMPL-icons"),
        ("header:Mcp-Session-Id", "synthesize", "TR-session-id")]
    initialized = run.client_flow("notifications/initialized")
    assert (initialized.status, run.records(initialized)) == (202, [("", "drop-message", "LC-initialized")])
    ping = run.client_flow("ping")
    assert (ping.status, ping.received) == (200, [{"jsonrpc": "2.0", "id": ping.sent[0]["id"], "result": {}}])
    assert run.records(ping) == [("", "answer-locally", "LC-ping")]
    delete = next(leg for leg in run.client_leg if leg.flow.request.method == "DELETE")
    assert (delete.status, run.records(delete)) == (200, [("", "answer-locally", "TR-session-delete")])
    assert [m["method"] for leg in run.server_leg for m in leg.sent] == ["initialize", "server/discover", "subscriptions/listen"]


def test_forced_era_sends_no_initialize(server, tmp_path):
    """mcpx_server_era=2026: no legacy initialize is sent to learn the era (one round trip less)."""
    run = run_bridged("mcp-1.8.1", server, tmp_path, ops=[{"id": "tools", "op": "listTools"}],
                      proxy_options={"mcpx_server_era": "2026"})
    assert run.result("tools")["ok"]
    methods = [m["method"] for leg in run.server_leg for m in leg.sent]
    assert methods[0] == "server/discover" and "initialize" not in methods and "tools/list" in methods


def test_bridge_off_fails_as_directly(server, tmp_path):
    """mcpx_bridge=false: the client gets the server's refusal, as it would directly."""
    run = run_bridged("sdk-1.25.0", server, tmp_path, ops=[{"id": "tools", "op": "listTools"}], proxy_options={"mcpx_bridge": "false"})
    assert run.report["returncode"] == 2 and run.report["protocolVersion"] is None
    assert [m["method"] for leg in run.server_leg for m in leg.sent] == ["initialize"]


def test_dual_era_server_stays_transparent(tmp_path):
    """A server that speaks both eras answers the legacy initialize itself: no bridge, no discover."""
    with pl.start_py_server(mrtr_tools=True) as dual:
        run = run_bridged("sdk-1.25.0", dual, tmp_path, ops=pl.MRTR_OPS[:2])
    assert [pl.result_text(e) for e in run.report["results"]] == [pl.MRTR_EXPECTED["mrtr-elicit"], pl.MRTR_EXPECTED["mrtr-sample"]]
    assert [leg.purpose for leg in run.server_leg] == ["initialize, to seal the session"]
    assert not [c for c in run.changes if c["rule"].startswith(("LC-", "MRTR-", "META-protocolVersion"))]
    assert not [leg for leg in run.client_leg if (leg.flow.metadata.get("mcpx") or {}).get("answered_by")]


def test_behind_hashed_replicas(server, tmp_path):
    """Three replicas behind HAProxy hashing on Mcp-Session-Id: the whole bridged scenario passes
    (initialize on one replica, the rest of the session wherever the hash puts it)."""
    from replicas_lib import Replicas, haproxy_missing
    pl.require(["haproxy (Debian package)"] if haproxy_missing() else [])
    client = "sdk-1.25.0"
    run = run_bridged(client, server, tmp_path, proxy=lambda up, wd: Replicas(up, wd, n=3, balance="hash"))
    failed = [(e["id"], e.get("error")) for e in run.report["results"] if not e["ok"]]
    assert failed == []
    assert [pl.result_text(run.result(k)) for k in pl.MRTR_EXPECTED] == list(pl.MRTR_EXPECTED.values())
    assert _validate(run) == []


def test_failover_between_round_trips(server, tmp_path):
    """The replica serving a bridged session is killed between two calls: the client goes on with
    another replica (the session lives in its token); at most the call in flight fails."""
    from replicas_lib import Replicas, haproxy_missing
    pl.require(["haproxy (Debian package)"] if haproxy_missing() else [])
    client = "sdk-1.25.0"
    ops = pl.MRTR_OPS
    half = tmp_path / "half"
    plan = ops + [{"op": "signal", "path": str(half)}, {"op": "sleep", "ms": 300}] + [{**op, "id": f"again-{op['id']}", "timeoutMs": 10000} for op in ops]  # the call in flight at the kill fails in 10 s, not the SDK's 60
    with Replicas(f"http://127.0.0.1:{server.port}", tmp_path / "rp", n=3, balance="hash") as rp:
        out: dict = {}
        t = threading.Thread(target=lambda: out.update(report=pl.run_client(client, rp.url, plan, options={"roots": pl.TEST_ROOTS},
                                                                            timeout=240)))
        t.start()
        deadline = time.monotonic() + 120
        while not half.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert half.exists()
        busiest = max(range(3), key=lambda i: sum(1 for c in rp.proxies[i].changes() if c["rule"] == "MRTR-bridge-legacy-client"))
        rp.kill(busiest)
        t.join(240)
    results = [e for e in out["report"]["results"] if e.get("id")]
    first, again = results[:len(ops)], results[len(ops):]
    print("\nfailover between round trips:", [(e["id"], e["ok"], (e.get("error") or "")[:80]) for e in again])
    assert [e["id"] for e in first if not e["ok"]] == []
    failed = [e for e in again if not e["ok"]]
    assert len(failed) <= 1, failed
    assert sum(e["ok"] for e in again) >= len(again) - 1 and again[-1]["ok"]
    assert {pl.result_text(e) for e in again if e["ok"]} <= set(pl.MRTR_EXPECTED.values())


def test_failover_mid_round_trip(server, tmp_path):
    """The replica is killed while the client answers an elicitation (the round trip half done): that
    call fails (the stream it waited on is gone), its answer reaches a survivor that knows no such
    question (dropped, with a record), and the client's next calls work through the survivor.

    The next calls wait until HAProxy marked the replica DOWN: before that, a request hashed to it is
    redispatched to a survivor other than the one the hash picks afterwards (measured in CI: the
    question of the next round trip asked by one survivor, its answer at the other, the call lost at
    the client's timeout; docs/bridging.md#behind-replicas)."""
    from replicas_lib import Replicas, haproxy_missing
    pl.require(["haproxy (Debian package)"] if haproxy_missing() else [])
    settled = tmp_path / "settled"
    plan = [{"id": "tools", "op": "listTools"},
            {"id": "elicit", "op": "callTool", "name": "mrtr_elicit", "arguments": {}, "timeoutMs": 8000},
            {"op": "waitFor", "path": str(settled)},
            {"id": "sample", "op": "callTool", "name": "mrtr_sample", "arguments": {"topic": "x"}},
            {"id": "elicit-again", "op": "callTool", "name": "mrtr_elicit", "arguments": {}}]
    with Replicas(f"http://127.0.0.1:{server.port}", tmp_path / "rp", n=3, balance="hash") as rp:
        out: dict = {}
        t = threading.Thread(target=lambda: out.update(report=pl.run_client(
            "sdk-1.25.0", rp.url, plan, options={"roots": pl.TEST_ROOTS, "elicitationDelayMs": 1500}, timeout=120)))
        t.start()
        holder, deadline = None, time.monotonic() + 60
        while holder is None and time.monotonic() < deadline:
            holder = next((i for i in range(3) if any(c["rule"] == "MRTR-embedded-requests" for c in rp.proxies[i].changes())), None)
            time.sleep(0.02)
        assert holder is not None, "no replica asked the client"
        rp.kill(holder)
        rp.wait_down(holder)
        settled.touch()
        t.join(120)
        orphans = [c for i in range(3) if i != holder for c in rp.proxies[i].changes()
                   if c["rule"] == "MRTR-bridge-legacy-client" and c["action"] == "drop-message"]
    # the client's elicitation answers that reached a survivor (the client may also fail the call when
    # its stream breaks and send its answer nowhere, or to the dead replica: a race in the client)
    def elicit_answer(f) -> bool:
        try:
            m = orjson.loads(f.request.content)
        except Exception:
            return False
        return isinstance(m, dict) and "method" not in m and "action" in (m.get("result") or {})
    reached = [f for i in range(3) if i != holder for f in rp.proxies[i].flows()
               if f.request.method == "POST" and elicit_answer(f)]
    by_id = {e["id"]: e for e in out["report"]["results"] if e.get("id")}
    print("\nfailover mid round trip:", {k: (e["ok"], (e.get("error") or "")[:100]) for k, e in by_id.items()})
    print("answers at survivors:", len(reached), "orphans:", len(orphans))
    assert by_id["tools"]["ok"] and not by_id["elicit"]["ok"]
    assert pl.result_text(by_id["sample"]) == pl.MRTR_EXPECTED["mrtr-sample"]
    assert pl.result_text(by_id["elicit-again"]) == pl.MRTR_EXPECTED["mrtr-elicit"]
    # each answer that reached a survivor, which knows no such question, was dropped there with a record;
    # the second elicitation's answer belongs to a live question and is no orphan
    assert len(reached) - 1 == len(orphans) <= 1, (len(reached), orphans)


def test_an_initialize_of_the_2026_era_is_not_bridged(tmp_path):
    """An initialize that names 2026-07-28 (header and _meta: a 2026 client, or the conformance suite
    checking the server refuses it) is forwarded: the dual server's own 404/-32601 reaches the
    client, mcpx learns nothing from it, and a legacy client after it stays transparent."""
    import http.client
    from proxy_lib import Proxy
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"},
        "_meta": {PV: "2026-07-28", CAPS: {}}}}
    with pl.start_py_server(mrtr_tools=True) as dual, Proxy(f"http://127.0.0.1:{dual.port}", tmp_path) as px:
        conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=20)
        conn.request("POST", "/mcp", body=orjson.dumps(init), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "initialize"})
        resp = conn.getresponse()
        status, body = resp.status, orjson.loads(resp.read())
        conn.close()
        rep = pl.run_client("sdk-1.25.0", px.url, pl.MRTR_OPS[:1])
    assert (status, body["error"]["code"]) == (404, -32601)
    assert pl.result_text(rep["results"][0]) == pl.MRTR_EXPECTED["mrtr-elicit"]
    assert not [c for c in px.changes() if c["rule"].startswith("LC-")]


def test_a_deleted_session_gets_404(server, tmp_path):
    """After the client's DELETE (answered by mcpx: a 2026-07-28 server keeps no session) the same
    token gets what a server gives an ended session: HTTP 404, -32001, one answer-locally record,
    nothing forwarded (Streamable HTTP, session management)."""
    from proxy_lib import Client, Proxy
    with Proxy(f"http://127.0.0.1:{server.port}", tmp_path) as px:
        c = Client(px.port)
        c.initialize("2025-06-18")
        token = c.session
        status, _, msgs = c.rpc({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert status == 200 and "tools" in msgs[0]["result"]
        before = len(px.changes())  # an initialize with the token: in that session, never a new one
        again = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "again", "version": "1"}}}
        status, headers, body = c.post(again)
        # as a legacy server answers it (HTTP 400 -32600, the TypeScript SDK's wording; before: HTTP 200), under
        # the request's own id (the SDK's null is no RequestId of these revisions)
        assert (status, headers["content-type"], orjson.loads(body), headers["mcp-session-id"]) == (
            400, "application/json",
            {"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": "Invalid Request: Server already initialized"}}, token)
        time.sleep(0.3)
        assert [(x["pointer"], x["action"], x["rule"], x["direction"], x["detail"]) for x in px.changes()[before:]] == [
            ("", "answer-locally", "LC-initialize", "c2s",
             "initialize inside a session: answered HTTP 400 -32600, as a legacy server does")]
        c.conn.request("DELETE", c.path, headers=c.headers())
        r = c.conn.getresponse()
        assert (r.status, r.read()) == (200, b"")
        before = len(px.changes())
        status, headers, body = c.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert (status, orjson.loads(body)) == (404, {"jsonrpc": "2.0", "id": 2, "error": {"code": -32001, "message": "Session not found"}})
        time.sleep(0.3)
        assert [(x["pointer"], x["action"], x["rule"], x["session"], x["detail"]) for x in px.changes()[before:]] == [
            ("header:Mcp-Session-Id", "answer-locally", "TR-session-id", None,
             "unknown session (a session the client ended (DELETE)): answered 404, nothing forwarded")]
        assert c.session == token
        c.close()
