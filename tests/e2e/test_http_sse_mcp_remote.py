"""``mcp-remote`` 0.1.16 ``--transport sse-only``, a released stdio <-> remote proxy (what Claude Desktop
and other stdio-only hosts are configured with), in front of Streamable-HTTP-only servers through mcpx
(addon/mcpx_core/transport/http_sse/).

The stdio client is npm ``@modelcontextprotocol/sdk`` 1.10.2 (tests/peers/js_client.mjs, its
``StdioClientTransport``); mcp-remote, started by it, speaks HTTP+SSE to the URL it is given. mcp-remote
passes every message through as it is (it adds `` (via mcp-remote 0.1.16)`` to the initialize's
``clientInfo.name``).

- The npm everything server in its Streamable HTTP mode (``/mcp`` only), the README's plain reverse-mode
  command: directly mcp-remote fails at connect (``GET /sse`` 404, the stdio client's connect fails);
  through mcpx it runs the full everything scenario, and gets what the same stdio client gets through
  mcp-remote ``--transport http-only`` (Streamable HTTP) through the same mcpx: the same verdicts, results,
  server requests (sampling, roots) and change records. Every message on the stream mcpx served and every
  POST to its endpoint is valid 2024-11-05.
- A PyPI ``mcp`` 2.3.0 server at ``/prefix/mcp`` only, mcp-remote given ``/prefix/sse``; and a current
  fastmcp server (4.1.6) at ``/mcp`` only, mcp-remote given ``/sse``: directly 404, through mcpx the tools
  listed and called (progress before the answer).
About 10 s on 2 cores.
"""
from __future__ import annotations

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
DRIVER = "sdk-1.10.2"  # the stdio client that starts mcp-remote
#: mcp-remote sends each stdio message on as it comes, not waiting for the last POST's answer: its
#: notifications/initialized and the first tools/list race at the server (directly as through mcpx), and the
#: everything server registers some tools on notifications/initialized. The scenario waits 0.3 s first.
SETTLE = {"id": "settle", "op": "sleep", "ms": 300}
ROOTS = {"roots": [{"uri": "file:///srv/project", "name": "project"}]}


def remote(url: str, ops: list, strategy: str, tmp, extra: dict | None = None) -> dict:
    """The stdio client through mcp-remote ``--transport STRATEGY`` to URL (its OAuth files in TMP, none used)."""
    options = {"transport": "mcp-remote", "mcpRemote": strategy, **(extra or {})}
    return peers_lib.run_js_client(DRIVER, url, ops, options=options, timeout=90,
                                   env={"MCP_REMOTE_CONFIG_DIR": str(tmp)})


def sse_messages(body: bytes) -> list:
    return [orjson.loads(ev.payload) for ev in SSEParser().feed(body)
            if ev.payload and ev.payload.strip()[:1] in (b"{", b"[") and b"event: endpoint" not in ev.raw]


def streams(flows) -> list:
    """The HTTP+SSE streams mcpx served (transport/http_sse/: their flows' paths start /mcpx-answer/)."""
    return [f for f in flows if f.request.path.startswith("/mcpx-answer/")
            and f.response and http_sse_lib.is_stream(f.response.content)]


def _key(r: dict) -> tuple:
    return (r["direction"], r["method"], r["jsonrpc_id"], r["pointer"], r["action"], r["rule"], r["from_rev"], r["to_rev"])


def _same(result: dict) -> dict:
    if isinstance(result.get("result"), dict) and "__progress" in result["result"]:
        return {**result, "result": {k: v for k, v in result["result"].items() if k != "__progress"}}
    return result


@pytest.fixture(scope="module")
def everything(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mcp-remote-everything")
    ops = [SETTLE, *peers_lib.scenario_ops("everything", DRIVER)]
    with peers_lib.start_everything_server() as srv:
        base = f"http://127.0.0.1:{srv.port}"
        out: dict = {"ops": ops, "direct": remote(f"{base}/sse", ops[1:2], "sse-only", tmp)}
        with Proxy(base, tmp, options=README, path="/sse") as px:
            out["sse"] = remote(px.url, ops, "sse-only", tmp, ROOTS)
            time.sleep(0.5)  # mcp-remote's stream closed: the upstream DELETE goes out
            mid = len(px.changes())
            out["streamable"] = remote(px.url.replace("/sse", "/mcp"), ops, "http-only", tmp, ROOTS)
            deadline = time.time() + 10  # (the log is written as the flows end: wait for as many records, or more)
            while len(records := px.changes()) < 2 * mid and time.time() < deadline:
                time.sleep(0.2)
            out["records"] = (records[:mid], records[mid:])
        out["flows"] = px.flows()
        yield out


def test_directly_mcp_remote_fails_at_connect(everything):
    got = everything["direct"]
    assert got["returncode"] == 2 and got["results"] == [], got
    assert "404" in got["stderr"], got["stderr"][-2000:]


def test_through_mcpx_mcp_remote_runs_the_scenario_as_over_streamable_http(everything):
    sse, streamable = everything["sse"], everything["streamable"]
    assert sse["returncode"] == 0, sse["stderr"][-3000:]
    assert "Connected to remote server using SSEClientTransport" in sse["stderr"]
    assert "Connected to remote server using StreamableHTTPClientTransport" in streamable["stderr"]
    assert peers_lib.verdicts(sse) == {"settle": "ok", **peers_lib.expected_verdicts("everything", DRIVER, direct=False)} \
           == peers_lib.verdicts(streamable)
    assert sse["protocolVersion"] == streamable["protocolVersion"]
    nondeterministic = {op["id"] for op in everything["ops"] if op.get("deterministic") is False}
    assert [_same(r) for r in sse["results"] if r["id"] not in nondeterministic] == \
           [_same(r) for r in streamable["results"] if r["id"] not in nondeterministic]
    assert sse["serverRequests"] == streamable["serverRequests"]
    assert sorted(r["method"] for r in sse["serverRequests"]) == ["roots/list", "sampling/createMessage"]
    by_id = {r["id"]: r for r in sse["results"]}
    assert by_id["echo"]["result"]["content"] == [{"type": "text", "text": "Echo: hello mcpx"}]
    assert [b["type"] for b in by_id["get-resource-links"]["result"]["content"]] == ["text", "resource", "resource"]
    progress = by_id["trigger-long-running-operation"]["result"]["__progress"]
    assert progress and all(p["total"] == 3 for p in progress)


def test_the_change_records_are_those_of_the_streamable_http_run(everything):
    """The same records, in one session each; ``--transport http-only`` first connects a test client of its own
    (``mcp-remote-fallback-test``, 2025-03-26: its session's records are of its initialize only)."""
    sse, streamable = everything["records"]
    assert len({r["session"] for r in sse}) == 1
    own = {r["session"] for r in streamable if r["from_rev"] == "2025-03-26"}
    assert len(own) == 1 and {r["method"] for r in streamable if r["session"] in own} == {"initialize"}
    streamable = [r for r in streamable if r["session"] not in own]
    assert len({r["session"] for r in streamable}) == 1
    assert sse and sorted(map(_key, sse)) == sorted(map(_key, streamable))
    assert ("s2c", "tools/call", "rewrite", "CT-resource_link") in {(r["direction"], r["method"], r["action"], r["rule"]) for r in sse}


def test_every_message_on_the_client_leg_is_2024_11_05(everything):
    flows = everything["flows"]
    [stream] = streams(flows)
    body = stream.response.content
    token = http_sse_lib.endpoint(body).token
    posts = [f for f in flows if f.request.method == "POST" and f.request.path == f"/messages?mcpx_session={token}"]
    assert posts and all(f.response.status_code == 202 for f in posts)
    c2s = [orjson.loads(f.request.content) for f in posts]
    assert c2s[0]["params"]["clientInfo"]["name"].endswith(" (via mcp-remote 0.1.16)")
    s2c = sse_messages(body)
    asked = {m["id"]: m["method"] for m in c2s if "method" in m and "id" in m}
    told = {m["id"]: m["method"] for m in s2c if "method" in m and "id" in m}
    assert len(c2s) > 20 and len(s2c) > 20
    for m in c2s:
        assert message_errors("2024-11-05", m, m.get("method") or told.get(m.get("id"))) == [], m
    for m in s2c:
        assert message_errors("2024-11-05", m, m.get("method") or asked.get(m.get("id"))) == [], m


OPS = [{"id": "listTools", "op": "listTools"},
       {"id": "add", "op": "callTool", "name": "add", "arguments": {"a": 2, "b": 3}},
       {"id": "progress", "op": "callTool", "name": "progress", "arguments": {"steps": 3}, "progress": True}]


@pytest.fixture(scope="module")
def others(tmp_path_factory):
    """A PyPI mcp 2.3.0 server at /prefix/mcp only and a fastmcp 4.1.6 server at /mcp only, directly and through mcpx."""
    tmp = tmp_path_factory.mktemp("mcp-remote-others")
    out: dict = {}
    for name, start, path in (("mcp-2.3.0", lambda: peers_lib.start_py_server(path="/prefix/mcp"), "/prefix/sse"),
                              ("fastmcp-4.1.6", peers_lib.start_fastmcp_server, "/sse")):
        with start() as srv:
            base = f"http://127.0.0.1:{srv.port}"
            out[name] = {"direct": remote(base + path, OPS[:1], "sse-only", tmp)}
            with Proxy(base, tmp_path_factory.mktemp(name), options=README, path=path) as px:
                out[name]["through"] = remote(px.url, OPS, "sse-only", tmp)
                time.sleep(0.3)
            out[name]["flows"] = px.flows()
    yield out


@pytest.mark.parametrize("server", ["mcp-2.3.0", "fastmcp-4.1.6"])
def test_other_streamable_http_only_servers(others, server):
    got = others[server]["direct"]
    assert got["returncode"] == 2 and got["results"] == [] and "404" in got["stderr"], got
    got = others[server]["through"]
    assert got["returncode"] == 0, got["stderr"][-3000:]
    assert {r["id"]: r["ok"] for r in got["results"]} == {"listTools": True, "add": True, "progress": True}
    by_id = {r["id"]: r for r in got["results"]}
    assert by_id["add"]["result"]["content"] == [{"type": "text", "text": "2 + 3 = 5"}]
    assert by_id["progress"]["result"]["content"] == [{"type": "text", "text": "done in 3 steps"}]
    [stream] = streams(others[server]["flows"])
    s2c = sse_messages(stream.response.content)
    call = [m for m in s2c if m.get("method") == "notifications/progress" or "content" in m.get("result", {})]
    assert [m["params"]["progress"] if "method" in m else "answer" for m in call] == ["answer", 1, 2, 3, "answer"]
    for m in s2c:
        assert message_errors("2024-11-05", m, "tools/list" if "tools" in m.get("result", {}) else "tools/call"
                              if "content" in m.get("result", {}) else m.get("method") or "initialize") == [], m
