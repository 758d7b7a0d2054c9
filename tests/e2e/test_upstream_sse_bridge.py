"""Streamable HTTP clients in front of an HTTP+SSE-only server, through mcpx
(addon/mcpx_core/transport/upstream_sse/serve.py): released clients (npm ``@modelcontextprotocol/sdk``
1.25.0, PyPI ``mcp`` 1.12.4) given ``http://<mcpx>/sse`` and ``http://<mcpx>/mcp``, in front of PyPI
``mcp`` 1.8.1 FastMCP run with ``transport="sse"`` (tests/peers/sse_server.py), with the README's plain
reverse-mode command.

Directly each client fails at connect (``POST /sse`` 405, ``POST /mcp`` 404). Through mcpx each lists
the tools and calls ``add`` and ``hi``: the first ``initialize`` is refused (405), mcpx probes ``GET
/sse``, keeps that stream, POSTs the client's messages to its ``endpoint`` and answers each POST from
the stream; the three later clients go to the known stream at once (nothing more refused, no other
probe). The server receives exactly the clients' messages, each once. When the server goes away, the
session's next request gets 404. About 10 s on 2 loaded cores.
"""
from __future__ import annotations

import re
import threading
import time

import orjson
import pytest

import peers_lib as pl
from proxy_lib import Proxy

pytestmark = pytest.mark.peers

README = {"connection_strategy": None}
OPS = [{"id": "tools", "op": "listTools"}, {"id": "add", "op": "callTool", "name": "add", "arguments": {"a": 2, "b": 3}},
       {"id": "hi", "op": "callTool", "name": "hi", "arguments": {}}]
#: (client, the path it is given), in the order they run through one mcpx
RUNS = [("sdk-1.25.0", "/sse"), ("mcp-1.12.4", "/sse"), ("sdk-1.25.0", "/mcp"), ("mcp-1.12.4", "/mcp")]
TOOLS = [{"name": "add", "description": "Add two numbers.", "inputSchema": {
             "properties": {"a": {"title": "A", "type": "integer"}, "b": {"title": "B", "type": "integer"}},
             "required": ["a", "b"], "title": "addArguments", "type": "object"}},
         {"name": "hi", "description": "Say hi.", "inputSchema": {"properties": {}, "title": "hiArguments", "type": "object"}}]
DIRECT_ERRORS = {("sdk-1.25.0", "/sse"): "Streamable HTTP error: Error POSTing to endpoint: Method Not Allowed",
                 ("mcp-1.12.4", "/sse"): "Client error '405 Method Not Allowed'",
                 ("sdk-1.25.0", "/mcp"): "Streamable HTTP error: Error POSTing to endpoint: Not Found",
                 ("mcp-1.12.4", "/mcp"): "Session terminated"}
VERSION = {"sdk-1.25.0": ("2025-11-25", "mcpx-js-client", "1.25.0"), "mcp-1.12.4": ("2025-06-18", "mcpx-py-client", "1.12.4")}


def run(client: str, url: str, ops: list) -> dict:
    if client.startswith("sdk-"):
        return pl.run_js_client(client, url, ops, timeout=60)
    return pl.run_py_client(client, url, ops, timeout=60)


def _own(f) -> bool:
    return (f.metadata.get("mcpx") or {}).get("origin") == "mcpx"


@pytest.fixture(scope="module")
def bridged(tmp_path_factory):
    pl.require(pl.peers_missing())
    tmp = tmp_path_factory.mktemp("upstream-sse")
    with pl.start_sse_server() as srv:
        base = f"http://127.0.0.1:{srv.port}"
        out: dict = {"port": srv.port, "direct": {(c, p): run(c, base + p, OPS[:1]) for c, p in RUNS}, "through": {}}
        with Proxy(base, tmp, options=README, path="") as px:
            for c, p in RUNS:
                out["through"][(c, p)] = run(c, px.url + p, OPS)
            time.sleep(0.3)  # the last client's DELETE ends its upstream stream
            out["records"] = px.changes()
            out["broken"] = _broken(srv, px, tmp)
            out["lines"] = [re.sub(r"^\[[\d:.]+\] ", "", ln) for ln in px.output().splitlines() if "] mcpx: " in ln]
        out["flows"] = px.flows()
        yield out


def _broken(srv, px, tmp) -> dict:
    """The server goes away between two calls of a fifth client (the last thing the fixture does)."""
    go, went = tmp / "go", tmp / "went"
    ops = [OPS[0], {"op": "signal", "path": str(went)}, {"op": "waitFor", "path": str(go), "timeoutMs": 20000}, OPS[1]]
    box: dict = {}
    t = threading.Thread(target=lambda: box.setdefault("got", run("sdk-1.25.0", px.url + "/sse", ops)))
    t.start()
    deadline = time.time() + 20
    while not went.exists() and time.time() < deadline:
        time.sleep(0.05)
    srv.stop()
    while "the session's later requests get 404" not in px.output() and time.time() < deadline:
        time.sleep(0.05)
    go.touch()
    t.join(30)
    return box["got"]


def test_directly_each_client_fails_at_connect(bridged):
    for run_, got in bridged["direct"].items():
        assert got["returncode"] == 2 and got["results"] == [], run_
        assert got["error"].startswith(DIRECT_ERRORS[run_]), (run_, got["error"])


def test_through_mcpx_each_client_lists_the_tools_and_calls_them(bridged):
    for run_, got in bridged["through"].items():
        assert got["returncode"] == 0, (run_, got["stderr"])
        assert got["protocolVersion"] == "2024-11-05"  # the revision the server answered
        assert [(r["id"], r["ok"], r["result"]) for r in got["results"]] == [
            ("tools", True, {"tools": TOOLS}),
            ("add", True, {"content": [{"type": "text", "text": "2 + 3 = 5"}], "isError": False}),
            ("hi", True, {"content": [{"type": "text", "text": "hi"}], "isError": False})], run_
        assert got["serverRequests"] == [], run_


def test_no_change_records_and_one_line_for_the_refusal(bridged):
    # every message is of the server's revision already (2024-11-05 both legs): the rule pass changes nothing
    assert bridged["records"] == []
    ended = "mcpx: upstream HTTP+SSE stream of http://127.0.0.1:%d/sse ended: the client's DELETE" % bridged["port"]
    # (a client given /mcp: the server is asked first; its 404 sends mcpx to the stream known beside it, without a probe)
    beside = "mcpx: /mcp refused the initialize (HTTP 404); /sse is an HTTP+SSE server: messages go to /messages/"
    assert [ln for ln in bridged["lines"] if "HTTP+SSE" in ln] == [
        "mcpx: /sse refused the initialize (HTTP 405); /sse is an HTTP+SSE server: messages go to /messages/"] + \
        [ended, ended, beside, ended, beside, ended] + \
        ["mcpx: upstream HTTP+SSE stream of http://127.0.0.1:%d/sse: HTTP/1 protocol error: peer closed connection without "
         "sending complete message body (incomplete chunked read); the session's later requests get 404" % bridged["port"]]


def test_a_broken_upstream_stream_gives_the_session_404(bridged):
    """The server went away between two calls of a fifth client: mcpx's upstream stream broke, and the session's
    next request got 404 (2025-03-26 Streamable HTTP 2.5.3: the client must initialize again), not a refusal."""
    got = bridged["broken"]
    assert [(r["id"], r["ok"]) for r in got["results"] if "id" in r] == [("tools", True), ("add", False)]
    assert (got["results"][-1]["code"], got["results"][-1]["error"]) == (404, "Streamable HTTP error: Error POSTing to endpoint: "
                                                                            '{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"Session not found"}}')


def test_what_the_server_received(bridged):
    """One refused initialize per client given ``/mcp`` and one for the first given ``/sse``, then per client one
    SSE stream and its five messages on the endpoint, in the client's order, each once; nothing else (no DELETE:
    an HTTP+SSE server has none; no probe of ``/mcp``: ``/sse`` beside it is known by then, and the server's
    refusal of ``/mcp`` is what sends mcpx there: a server that served both would have answered)."""
    port = bridged["port"]
    reached = [f for f in bridged["flows"] if f.server_conn.timestamp_tcp_setup and f.server_conn.address[1] == port]
    assert all(_own(f) for f in reached)  # every request the server got, mcpx sent (its own flows, in mitmweb)
    refused = [f for f in reached if f.request.method == "POST" and not f.request.path.startswith("/messages/")]
    assert [(f.request.path, f.response.status_code) for f in refused] == [("/sse", 200), ("/mcp", 200), ("/mcp", 200)]  # replaced
    assert refused[0].comment.endswith("· the server refused it (HTTP 405): answered from the server's HTTP+SSE stream "
                                       f"(http://127.0.0.1:{port}/sse)")
    streams = [f for f in reached if f.request.method == "GET"]
    assert [(f.request.path, f.response.status_code, f.metadata["mcpx"]["purpose"]) for f in streams] == \
        [("/sse", 200, "upstream HTTP+SSE: the server's SSE stream")] * 5
    endpoints: dict = {}
    for f in reached:
        if f.request.method == "POST" and f.request.path.startswith("/messages/"):
            assert re.fullmatch(r"/messages/\?session_id=[0-9a-f]{32}", f.request.path)
            assert f.response.status_code == 202
            endpoints.setdefault(f.request.path, []).append(orjson.loads(f.request.content))
    assert len(reached) == 3 + 5 + 4 * 5 + 3  # (the fifth client: initialize, initialized, tools/list, then the break)
    assert len(endpoints) == 5
    assert [m.get("method") for m in list(endpoints.values())[4]] == ["initialize", "notifications/initialized", "tools/list"]
    for (client, _), got in zip(RUNS, endpoints.values()):
        rev, name, version = VERSION[client]
        assert got == [
            {"method": "initialize", "params": {"protocolVersion": rev, "capabilities": got[0]["params"]["capabilities"],
                                                "clientInfo": {"name": name, "version": version}}, "jsonrpc": "2.0", "id": 0},
            {"method": "notifications/initialized", "jsonrpc": "2.0"},
            {"method": "tools/list", "jsonrpc": "2.0", "id": 1},
            {"method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}, "jsonrpc": "2.0", "id": 2},
            {"method": "tools/call", "params": {"name": "hi", "arguments": {}}, "jsonrpc": "2.0", "id": 3}], client


def test_the_clients_flows_and_their_sessions(bridged):
    """Each client its own session (and upstream stream); its requests answered from the stream by mcpx's answer
    endpoint, its GET stream served by mcpx, its DELETE answered by mcpx."""
    client = [f for f in bridged["flows"] if not _own(f)]
    sids = {f.request.headers.get("mcp-session-id") for f in client} - {None}  # (the sealed token, opened upstream)
    assert len(sids) == 5 and all(re.fullmatch(r"mcpx-sse-[0-9a-f]{32}", s) for s in sids)
    assert len({f.metadata["mcpx"]["session"] for f in client}) == 5
    answered = [f for f in client if f.request.method == "POST" and f.request.path.startswith("/mcpx-answer/")]
    assert sorted(orjson.loads(f.response.content)["id"] for f in answered) == [1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]
    assert {f.response.headers["content-type"] for f in answered} == {"application/json"}
    notes = sorted({(f.request.method, f.response.status_code, f.metadata["mcpx"].get("transport_note"))
                    for f in client if f.request.headers.get("mcp-session-id")})
    gone = "upstream HTTP+SSE: no open upstream stream for this session (it ended, or lives in another process)"
    assert notes == [("DELETE", 200, "upstream HTTP+SSE: the client's DELETE ended the upstream stream"),
                     ("DELETE", 404, gone),  # the fifth client's, after its upstream stream broke
                     ("GET", 200, "upstream HTTP+SSE: the server's messages outside any request"),
                     ("POST", 200, f"upstream HTTP+SSE: answered from the server's stream (http://127.0.0.1:{bridged['port']}/sse)"),
                     ("POST", 202, "upstream HTTP+SSE: sent to the server's endpoint"),
                     ("POST", 404, gone)]  # the fifth client's tools/call add
    assert all(f.metadata["mcpx"]["transports"] == {"client": "Streamable HTTP", "server": "HTTP+SSE (2024-11-05)"}
               for f in client if f.request.headers.get("mcp-session-id"))
    assert {(f.metadata["mcpx"]["client_revision"], f.metadata["mcpx"]["server_revision"]) for f in client} == \
        {("2024-11-05", "2024-11-05")}


#: a deployment no convention names: the server's HTTP+SSE stream at /events/stream, the client given /api/mcp
PAIR = {"mcpx_upstream_sse": "/api/mcp=/events/stream"}


@pytest.fixture(scope="module")
def paired(tmp_path_factory):
    """The FastMCP server with its stream at ``/events/stream``, npm sdk 1.25.0 given ``/api/mcp``: directly, through
    mcpx with no option (the conventions find nothing), with the pair named, and with ``mcpx_upstream_sse=off``."""
    pl.require(pl.peers_missing())
    tmp = tmp_path_factory.mktemp("upstream-sse-paired")
    out: dict = {}
    with pl.start_sse_server(sse_path="/events/stream") as srv:
        base = f"http://127.0.0.1:{srv.port}"
        out["direct"] = run("sdk-1.25.0", base + "/api/mcp", OPS[:1])
        for name, options in (("none", README), ("pair", {**README, **PAIR}), ("off", {**README, "mcpx_upstream_sse": "off"})):
            with Proxy(base, tmp, options=options, path="/api/mcp", tag=name) as px:
                out[name] = {"got": run("sdk-1.25.0", px.url, OPS)}
                time.sleep(0.3)
            out[name]["flows"] = px.flows()
        yield out


def _own_gets(flows) -> list:
    return [(f.request.path, f.response.status_code if f.response else None) for f in flows if _own(f) and f.request.method == "GET"]


def test_a_pair_names_where_the_servers_stream_is(paired):
    """Directly, and through mcpx without the option, the client's ``initialize`` gets the server's 404 (the
    conventions probe ``/api/mcp`` and ``/api/sse``: neither is a stream). With the pair, the refusal of
    ``/api/mcp`` sends mcpx to ``/events/stream`` only, and the client runs its calls. With ``off``, mcpx
    probes nothing and the server's refusal reaches the client."""
    refused = "Streamable HTTP error: Error POSTing to endpoint: Not Found"
    assert paired["direct"]["returncode"] == 2 and paired["direct"]["error"] == refused
    assert paired["none"]["got"]["returncode"] == 2 and paired["none"]["got"]["error"] == refused
    assert _own_gets(paired["none"]["flows"]) == [("/api/mcp", 404), ("/api/sse", 404)]
    got = paired["pair"]["got"]
    assert got["returncode"] == 0, got["stderr"]
    assert [(r["id"], r["ok"]) for r in got["results"]] == [("tools", True), ("add", True), ("hi", True)]
    assert next(r for r in got["results"] if r["id"] == "add")["result"]["content"] == [{"type": "text", "text": "2 + 3 = 5"}]
    assert _own_gets(paired["pair"]["flows"]) == [("/events/stream", 200)]
    assert paired["off"]["got"]["returncode"] == 2 and paired["off"]["got"]["error"] == refused
    assert _own_gets(paired["off"]["flows"]) == []
