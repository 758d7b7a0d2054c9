"""HTTP+SSE (2024-11-05 transport) clients in front of Streamable-HTTP-only servers, through mcpx
(addon/mcpx_core/transport/http_sse/): released clients (PyPI ``mcp`` 1.8.1 ``sse_client``, npm
``@modelcontextprotocol/sdk`` 1.10.2 ``SSEClientTransport``, and PyPI ``mcp`` 1.6.0, a release that has
only the HTTP+SSE transport) given ``http://<mcpx>/sse``.

Against the npm everything server in its Streamable HTTP mode (``/mcp`` only), with the README's
plain reverse-mode command: directly each client fails at connect (``GET /sse`` 404); through mcpx
each runs the full scenario of ``scenarios.json`` (tools incl. progress and sampling, prompts,
resources; the server's ``roots/list`` on its GET stream, answered through the endpoint), and gets exactly what the same client
gets through mcpx over Streamable HTTP: the same results, the same server requests, the same change
records (mcp 1.6.0, which has no Streamable HTTP transport, against mcp 1.8.1's: same revision, same
capabilities). Every message on the client's leg (its POSTs, the events on the stream mcpx served) and
every message mcpx sent on the server's leg validates against that leg's revision; a call's
progress comes before its answer; the client's exit ends the upstream session (DELETE).

A path-prefixed deployment: a PyPI ``mcp`` 2.3.0 server at ``/prefix/mcp`` only, each client given
``/prefix/sse``: the endpoint event keeps the prefix and every leg goes to ``/prefix/mcp``. That mcpx
loads a one-line script that sets the keepalive interval to 0.3 s (instead of 15 s): the stream
mcpx serves gets keepalive comments, and its headers say not to buffer it.

A 2026-07-28-only server (PyPI ``mcp`` 2.3.0 behind its gate): the transport hands its legs to the
legacy-client bridge as any Streamable HTTP client's requests. About 60 s in all on 2 loaded cores.
"""
from __future__ import annotations

import http.client
import re
import time

import orjson
import pytest

import http_sse_lib
import peers_lib
from mcpx_core.framing.sse import SSEParser
from proxy_lib import Proxy
from schema_check import message_errors

pytestmark = pytest.mark.peers

README = {"connection_strategy": None}
CLIENTS = {"mcp-1.8.1": "py", "sdk-1.10.2": "js", "mcp-1.6.0": "py"}
#: a client with no Streamable HTTP transport -> the client whose Streamable HTTP run is its reference
REFERENCE = {"mcp-1.6.0": "mcp-1.8.1"}
SSE = {"transport": "sse"}
#: the clients declare roots: the everything server asks for them (roots/list) on its GET stream
ROOTS = {"roots": [{"uri": "file:///srv/project", "name": "project"}]}


def run(client: str, url: str, ops: list, options: dict | None = None) -> dict:
    if CLIENTS[client] == "py":
        return peers_lib.run_py_client(client, url, ops, options=options, timeout=90)
    return peers_lib.run_js_client(client, url, ops, options=options, timeout=90)


def sse_messages(body: bytes) -> list:
    """The JSON-RPC messages of an SSE body's events that hold one (the endpoint event and comments skipped)."""
    events = SSEParser().feed(body)
    return [orjson.loads(ev.payload) for ev in events
            if ev.payload and ev.payload.strip()[:1] in (b"{", b"[") and b"event: endpoint" not in ev.raw]


def _own(f) -> bool:
    return (f.metadata.get("mcpx") or {}).get("origin") == "mcpx"


def _leg(f) -> bool:
    """A Streamable HTTP request mcpx sent for an HTTP+SSE client (transport/http_sse/legs.py)."""
    return f.is_replay == "request" and not _own(f)


@pytest.fixture(scope="module")
def everything(tmp_path_factory):
    """Each client directly, then through one mcpx (README command): over HTTP+SSE, then over Streamable HTTP."""
    tmp = tmp_path_factory.mktemp("http-sse-everything")
    with peers_lib.start_everything_server() as srv:
        base = f"http://127.0.0.1:{srv.port}"
        out: dict = {"direct": {c: run(c, f"{base}/sse", peers_lib.scenario_ops("everything", c), SSE) for c in CLIENTS},
                     "sse": {}, "streamable": {}, "marks": {}}
        with Proxy(base, tmp, options=README, path="/sse") as px:
            for c in CLIENTS:
                ops = peers_lib.scenario_ops("everything", c)
                start = len(px.changes())
                out["sse"][c] = run(c, px.url, ops, {**SSE, **ROOTS})
                time.sleep(0.5)  # the client's stream closed: the upstream DELETE goes out
                mid = len(px.changes())
                if c not in REFERENCE:
                    out["streamable"][c] = run(c, px.url.replace("/sse", "/mcp"), ops, ROOTS)
                out["marks"][c] = (start, mid, len(px.changes()))
            # a call the client cancels, then one more: the session goes on
            out["cancel"] = run("sdk-1.10.2", px.url, CANCEL, SSE)
            time.sleep(1.0)  # its stream closed: the DELETE, and the end of the cancelled call's leg
            out["records"] = px.changes()
        out["flows"] = px.flows()
        yield out


CANCEL = [{"id": "long", "op": "callTool", "name": "trigger-long-running-operation", "arguments": {"duration": 2, "steps": 2},
           "cancelAfterMs": 700},
          {"id": "echo", "op": "callTool", "name": "echo", "arguments": {"message": "after the cancel"}},
          {"id": "wait", "op": "sleep", "ms": 2000}]  # (the cancelled call's upstream stream ends meanwhile)


def test_directly_each_client_fails_at_connect(everything):
    for c in CLIENTS:
        got = everything["direct"][c]
        assert got["returncode"] == 2 and got["results"] == [], c
        assert "404" in got["error"], got["error"]


def test_through_mcpx_each_client_runs_its_scenario_as_over_streamable_http(everything):
    for c in CLIENTS:
        sse, streamable = everything["sse"][c], everything["streamable"][REFERENCE.get(c, c)]
        assert sse["returncode"] == 0, sse["stderr"]
        assert peers_lib.verdicts(sse) == peers_lib.expected_verdicts("everything", c, direct=False) == peers_lib.verdicts(streamable), c
        assert sse["protocolVersion"] == streamable["protocolVersion"] == "2024-11-05"
        nondeterministic = {op["id"] for op in peers_lib.scenario_ops("everything", c) if op.get("deterministic") is False}
        # (which progress notifications a client reports before its call's promise resolves is the client's race:
        # their order on the wire is asserted below)
        assert [_same(r) for r in sse["results"] if r["id"] not in nondeterministic] == \
               [_same(r) for r in streamable["results"] if r["id"] not in nondeterministic]
        assert sse["serverRequests"] == streamable["serverRequests"]
        assert sorted(r["method"] for r in sse["serverRequests"]) == ["roots/list", "sampling/createMessage"]
        by_id = {r["id"]: r for r in sse["results"]}
        assert by_id["echo"]["result"]["content"] == [{"type": "text", "text": "Echo: hello mcpx"}]
        assert [b["type"] for b in by_id["get-resource-links"]["result"]["content"]] == ["text", "resource", "resource"]
    progress = next(r for r in everything["sse"]["sdk-1.10.2"]["results"] if r["id"] == "trigger-long-running-operation")
    assert progress["result"]["__progress"] and all(p["total"] == 3 for p in progress["result"]["__progress"])


def _same(result: dict) -> dict:
    if isinstance(result.get("result"), dict) and "__progress" in result["result"]:
        return {**result, "result": {k: v for k, v in result["result"].items() if k != "__progress"}}
    return result


def _key(r: dict) -> tuple:
    return (r["direction"], r["method"], r["jsonrpc_id"], r["pointer"], r["action"], r["rule"], r["from_rev"], r["to_rev"])


def test_the_change_records_are_those_of_a_streamable_http_session(everything):
    recs, marks = everything["records"], everything["marks"]
    for c in CLIENTS:
        sse = recs[marks[c][0]:marks[c][1]]
        ref = marks[REFERENCE.get(c, c)]
        streamable = recs[ref[1]:ref[2]]
        assert sse and streamable, c
        # (get-resource-reference's resource is a random one: a record's before/after may differ, not its place)
        assert sorted(map(_key, sse)) == sorted(map(_key, streamable)), c
        assert ("s2c", "tools/call", "rewrite", "CT-resource_link") in {(r["direction"], r["method"], r["action"], r["rule"]) for r in sse}
        assert len({r["session"] for r in sse}) == 1


def _stream_flows(flows):
    return [f for f in flows if f.request.path.startswith("/mcpx-answer/")]


def test_every_message_on_both_legs_validates_and_progress_comes_before_the_answer(everything):
    flows = everything["flows"]
    streams = _stream_flows(flows)[:3]
    assert len(_stream_flows(flows)) == 4  # one stream per client run, served by mcpx
    for stream in streams:
        assert stream.response.headers["content-type"] == "text/event-stream"
        assert stream.response.headers["x-accel-buffering"] == "no"
        body = stream.response.content
        ep = http_sse_lib.endpoint(body)
        assert ep is not None and ep.path == "/messages" and ep.resume == "", body[:300]
        token = ep.token
        assert stream.response.headers["mcpx-affinity"] == token  # for a load balancer (deploy/haproxy.cfg)
        # the initialize answer, next: its id seals the session a reconnecting client resumes (transport/http_sse/resume.py)
        assert re.match(rb"id: " + token.encode() + rb"~mcpx1\.[A-Za-z0-9_-]+\nevent: message\ndata: \{", ep.rest), ep.rest[:300]
        posts = [f for f in flows if f.request.method == "POST" and f.request.path == f"/messages?mcpx_session={token}"]
        assert posts and all(f.response.status_code == 202 for f in posts)
        assert posts[0].comment == "mcpx: answered by mcpx (HTTP+SSE endpoint: initialize #0, sent to the server as Streamable HTTP)"
        c2s = [orjson.loads(f.request.content) for f in posts]
        s2c = sse_messages(body)
        asked = {m["id"]: m["method"] for m in c2s if "method" in m and "id" in m}
        told = {m["id"]: m["method"] for m in s2c if "method" in m and "id" in m}
        for m in c2s:
            assert message_errors("2024-11-05", m, m.get("method") or told.get(m.get("id"))) == [], m
        for m in s2c:
            assert message_errors("2024-11-05", m, m.get("method") or asked.get(m.get("id"))) == [], m
        # the long-running call: each progress before its answer, as the server sent them
        call = next(m for m in c2s if m.get("params", {}).get("name") == "trigger-long-running-operation")
        token_p = call["params"].get("_meta", {}).get("progressToken")
        order = [m["params"]["progress"] if m.get("method") == "notifications/progress" else "answer"
                 for m in s2c if m.get("id") == call["id"] or (m.get("method") == "notifications/progress"
                                                               and m["params"]["progressToken"] == token_p)]
        assert order == ([1, 2, 3, "answer"] if token_p is not None else ["answer"]), order
    # the server's leg: each message mcpx sent, against the revision the server negotiated
    legs = [f for f in flows if _leg(f) and f.request.method == "POST"]
    sealed = [f for f in flows if _own(f) and f.request.method == "POST"]
    server_rev = {sse_or_json(f.response)["result"]["protocolVersion"] for f in sealed}
    assert server_rev == {"2024-11-05"}
    for f in legs:
        for m in _messages(f.request.content):
            if "method" in m:
                assert message_errors("2024-11-05", m, m["method"]) == [], m


def sse_or_json(resp) -> dict:
    body = resp.content
    return sse_messages(body)[0] if resp.headers.get("content-type", "").startswith("text/event-stream") else orjson.loads(body)


def _messages(body: bytes) -> list:
    v = orjson.loads(body)
    return v if isinstance(v, list) else [v]


def test_the_probe_and_the_close(everything):
    """One probe of ``GET /sse`` (404: the server does not serve it), kept for the later clients; each
    client's upstream GET stream, and its roots round trip; each client's exit ends its stream and mcpx
    DELETEs the upstream session (200)."""
    flows = everything["flows"]
    probes = [f for f in flows if _own(f) and f.request.method == "GET"]
    assert [(f.request.path, f.response.status_code) for f in probes] == [("/sse", 404)]
    deletes = [f for f in flows if _leg(f) and f.request.method == "DELETE"]
    assert [(f.request.path, f.response.status_code) for f in deletes] == [("/mcp", 200)] * 4
    gets = [f for f in flows if _leg(f) and f.request.method == "GET"][:3]
    assert [(f.request.path, f.response.status_code) for f in gets] == [("/mcp", 200)] * 3  # the upstream GET stream of each
    # on it the server asked for the roots; each client's answer came back through its endpoint, to the server as a leg (202)
    # (what else the stream carried before it, a list_changed or a log message, depends on the server's timers)
    assert all(f.comment.startswith("GET stream: ") and "roots/list #" in f.comment.split(" · ")[0] for f in gets), \
        [f.comment for f in gets]
    answers = [f for f in flows if _leg(f) and f.request.method == "POST" and f.comment.startswith("result #")
               and b'"roots"' in f.request.content]
    assert [f.response.status_code for f in answers] == [202, 202, 202]


def test_a_cancelled_call(everything):
    """The client cancels a long call (sdk 1.10.2 sends ``notifications/cancelled``): the notification goes to the
    server as a leg (202), the client's stream carries no answer to the cancelled request (the server sends none;
    that mcpx makes none up either: tests/unit/test_http_sse_tokens.py), and the next call is answered."""
    got = everything["cancel"]
    assert got["returncode"] == 0, got["stderr"]
    assert [(r["id"], r["ok"]) for r in got["results"]] == [("long", False), ("echo", True), ("wait", True)]
    assert "cancelled by the test" in got["results"][0]["error"]
    assert got["results"][1]["result"]["content"] == [{"type": "text", "text": "Echo: after the cancel"}]
    stream = _stream_flows(everything["flows"])[-1]
    token = http_sse_lib.endpoint(stream.response.content).token
    posts = [orjson.loads(f.request.content) for f in everything["flows"] if f.request.path == f"/messages?mcpx_session={token}"]
    call = next(m for m in posts if m.get("params", {}).get("name") == "trigger-long-running-operation")
    cancel = next(m for m in posts if m.get("method") == "notifications/cancelled")
    assert cancel["params"]["requestId"] == call["id"]
    legs = [f for f in everything["flows"] if _leg(f) and f.request.method == "POST" and b"notifications/cancelled" in f.request.content]
    assert [f.response.status_code for f in legs] == [202]
    assert [m for m in sse_messages(stream.response.content) if m.get("id") == call["id"]] == []


def test_the_flow_list_shows_both_transports(everything):
    legs = [f for f in everything["flows"] if _leg(f)]
    assert legs and all(f.comment.endswith(" · transports: client HTTP+SSE, server Streamable HTTP") for f in legs)
    assert all(f.metadata["mcpx"]["transports"] == {"client": "HTTP+SSE (2024-11-05)", "server": "Streamable HTTP"} for f in legs)
    call = next(f for f in legs if f.comment.startswith("tools/call get-resource-links #"))
    assert call.comment.endswith(" · 2024-11-05 · mcpx: 2 rewritten for 2024-11-05 · transports: client HTTP+SSE, server Streamable HTTP")


@pytest.fixture(scope="module")
def bridged(tmp_path_factory):
    """A 2026-07-28-only server (PyPI mcp 2.3.0 behind its gate): the transport and the legacy-client bridge together
    (one client: the bridge's own tests run every client), the client given a path no convention names
    (``/legacy/events``), which ``mcpx_http_sse`` pairs with ``/mcp``."""
    tmp = tmp_path_factory.mktemp("http-sse-2026")
    ops = [{"id": "add", "op": "callTool", "name": "add", "arguments": {"a": 2, "b": 3}},
           {"id": "progress", "op": "callTool", "name": "progress", "arguments": {"steps": 3}, "progress": True}]
    with peers_lib.start_py_server(only_2026=True) as srv:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp, options={**README, "mcpx_http_sse": "/legacy/events=/mcp"},
                   path="/legacy/events") as px:
            out = {"sdk-1.10.2": run("sdk-1.10.2", px.url, ops, SSE)}
            out["records"] = px.changes()
        out["flows"] = px.flows()
        yield out


def test_a_2026_only_server_through_the_legacy_client_bridge(bridged):
    for c in ("sdk-1.10.2",):
        got = bridged[c]
        assert got["returncode"] == 0 and got["protocolVersion"] == "2024-11-05", got["stderr"]
        by_id = {r["id"]: r for r in got["results"]}
        assert by_id["add"]["result"]["content"] == [{"type": "text", "text": "2 + 3 = 5"}]
        assert by_id["progress"]["result"]["content"] == [{"type": "text", "text": "done in 3 steps"}]
    bridging = {(r["from_rev"], r["to_rev"]) for r in bridged["records"] if r["direction"] == "s2c" and r["method"] == "tools/call"}
    assert bridging == {("2026-07-28", "2024-11-05")}
    flows = bridged["flows"]
    assert not [f for f in flows if _own(f) and f.request.method == "GET"]  # a pair the option names: no probe
    stream = next(f for f in flows if f.request.path.startswith("/mcpx-answer/") and http_sse_lib.is_stream(f.response.content))
    assert http_sse_lib.endpoint(stream.response.content).path == "/legacy/messages"


@pytest.fixture(scope="module")
def prefixed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("http-sse-prefix")
    script = tmp / "keepalive.py"
    script.write_text("import mcpx_core.transport.http_sse as t\nt.KEEPALIVE = 0.3\n")
    ops = [{"id": "listTools", "op": "listTools"}, {"id": "add", "op": "callTool", "name": "add", "arguments": {"a": 2, "b": 3}},
           {"id": "progress", "op": "callTool", "name": "progress", "arguments": {"steps": 3}, "progress": True}]
    with peers_lib.start_py_server(path="/prefix/mcp") as srv:
        base = f"http://127.0.0.1:{srv.port}"
        direct = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
        direct.request("GET", "/prefix/sse", headers={"accept": "text/event-stream"})
        out = {"direct": direct.getresponse().status}  # (what each client fails at directly, as above)
        direct.close()
        with Proxy(base, tmp, options=README, path="/prefix/sse", scripts=(str(script),)) as px:
            out["through"] = {c: run(c, px.url, ops, SSE) for c in CLIENTS}
            conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=10)
            conn.request("GET", "/prefix/sse", headers={"accept": "text/event-stream", "x-forwarded-prefix": "/gw"})
            resp = conn.getresponse()
            out["head"] = (resp.status, resp.getheader("content-type"), resp.getheader("x-accel-buffering"),
                           resp.getheader("cache-control"))
            buf = b""
            deadline = time.time() + 5
            while buf.count(b": keepalive\n\n") < 2 and time.time() < deadline:
                buf += resp.read1(4096)
            out["raw"] = buf
            conn.close()
            time.sleep(0.3)
        out["flows"] = px.flows()
        yield out


def test_a_path_prefixed_deployment(prefixed):
    assert prefixed["direct"] == 404
    for c in CLIENTS:
        got = prefixed["through"][c]
        assert got["returncode"] == 0, got["stderr"]
        assert {r["id"]: r["ok"] for r in got["results"]} == {"listTools": True, "add": True, "progress": True}
        assert next(r for r in got["results"] if r["id"] == "add")["result"]["content"] == [{"type": "text", "text": "2 + 3 = 5"}]
    flows = prefixed["flows"]
    posts = {f.request.path.split("?")[0] for f in flows if f.request.method == "POST" and f.response.status_code == 202
             and "mcpx_session=" in f.request.path}
    assert posts == {"/prefix/messages"}
    assert {f.request.path for f in flows if f.request.method == "POST" and "mcpx_session=" not in f.request.path} == {"/prefix/mcp"}


def test_the_stream_mcpx_serves_keepalive_and_no_buffering(prefixed):
    """Behind a reverse proxy that says it stripped ``/gw``: the endpoint keeps it; the stream's
    headers forbid buffering (nginx ``X-Accel-Buffering``); keepalive comments come while it is idle."""
    assert prefixed["head"] == (200, "text/event-stream", "no", "no-cache, no-transform")
    raw = prefixed["raw"]
    ep = http_sse_lib.endpoint(raw)
    assert ep is not None and ep.path == "/gw/prefix/messages"
    assert ep.rest.startswith(b": keepalive\n\n: keepalive\n\n")


FASTMCP_OPS = [{"id": "listTools", "op": "listTools"},
               {"id": "add", "op": "callTool", "name": "add", "arguments": {"a": 2, "b": 3}},
               {"id": "progress", "op": "callTool", "name": "progress", "arguments": {"steps": 3}, "progress": True},
               {"id": "echo", "op": "callTool", "name": "echo", "arguments": {"text": "héllo \u2028 mcpx"}}]


@pytest.fixture(scope="module")
def fastmcp(tmp_path_factory):
    """A current fastmcp server (4.1.6, tests/peers/fastmcp_server.py), Streamable HTTP only at ``/mcp``: each
    client given ``/sse``, directly and through mcpx (README command)."""
    tmp = tmp_path_factory.mktemp("http-sse-fastmcp")
    with peers_lib.start_fastmcp_server() as srv:
        base = f"http://127.0.0.1:{srv.port}"
        out: dict = {"direct": {c: run(c, f"{base}/sse", FASTMCP_OPS[:1], SSE) for c in CLIENTS}}
        with Proxy(base, tmp, options=README, path="/sse") as px:
            out["through"] = {c: run(c, px.url, FASTMCP_OPS, SSE) for c in CLIENTS}
            time.sleep(0.3)
            out["records"] = px.changes()
        out["flows"] = px.flows()
        yield out


def test_a_current_fastmcp_server(fastmcp):
    """Directly each client fails at connect (``GET /sse`` 404); through mcpx each lists the tools and calls them,
    the progress of the long call before its answer, the echo's text byte for byte (a U+2028 in a JSON string on
    an SSE stream); every message on the stream mcpx served is valid 2024-11-05."""
    for c in CLIENTS:
        got = fastmcp["direct"][c]
        assert got["returncode"] == 2 and got["results"] == [] and "404" in got["error"], (c, got)
        got = fastmcp["through"][c]
        assert got["returncode"] == 0 and got["protocolVersion"] == "2024-11-05", (c, got["stderr"][-2000:])
        by_id = {r["id"]: r for r in got["results"]}
        assert {r["id"]: r["ok"] for r in got["results"]} == {"listTools": True, "add": True, "progress": True, "echo": True}, c
        assert [t["name"] for t in by_id["listTools"]["result"]["tools"]] == ["add", "progress", "echo"]
        assert by_id["add"]["result"]["content"] == [{"type": "text", "text": "2 + 3 = 5"}]
        assert by_id["progress"]["result"]["content"] == [{"type": "text", "text": "done in 3 steps"}]
        assert by_id["echo"]["result"]["content"] == [{"type": "text", "text": "héllo \u2028 mcpx"}]
    for stream in _stream_flows(fastmcp["flows"]):
        s2c = sse_messages(stream.response.content)
        assert s2c, stream.comment
        for m in s2c:
            assert message_errors("2024-11-05", m, "tools/list" if "tools" in m.get("result", {}) else "tools/call"
                                  if "content" in m.get("result", {}) else m.get("method") or "initialize") == [], m
        progress = [m["params"]["progress"] for m in s2c if m.get("method") == "notifications/progress"]
        assert progress in ([1, 2, 3], []), progress  # (a client that sent no progressToken gets none)
    assert len(_stream_flows(fastmcp["flows"])) == len(CLIENTS)
