"""The 2024-11-05 HTTP+SSE transport through mcpx, with the README's command line: released clients
(PyPI ``mcp`` 1.8.1 ``sse_client``, npm ``@modelcontextprotocol/sdk`` 1.15.1 ``SSEClientTransport``)
in front of an SSE-only server (PyPI ``mcp`` 1.8.1 FastMCP, ``transport="sse"``) get through mcpx
exactly what they get directly. The ``GET /sse`` answer is an SSE stream of unbounded length that
mcpx does not read as MCP: it reaches the client as it arrives (before, mitmproxy held it up to
``stream_large_bodies``, 64 MiB, and the client got nothing). mcpx writes no record for it; with
``stream_large_bodies=1`` the small ``POST /messages/`` bodies are not said to exceed mcpx_max_body.
mcpx does not serve the transport itself here (mcpx_core/transport/http_sse/): its one probe of
``GET /sse`` (ended at the server's ``200``) is the only flow of its own, and the verdict is kept."""
from __future__ import annotations

import json
import subprocess

import pytest

import peers_lib
from proxy_lib import Proxy

pytestmark = pytest.mark.peers

README = {"connection_strategy": None}
PY = peers_lib.VENVS_DIR / "mcp-1.8.1" / "bin" / "python"
JS = peers_lib.PEERS_DIR / "sse_client.mjs"
JS_SDK = peers_lib.NODE_MODULES / "sdk-1.15.1"
EXPECTED_CALLS = {"tools": ["add", "hi"], "add": [{"type": "text", "text": "2 + 3 = 5"}], "hi": [{"type": "text", "text": "hi"}]}


def run_client(argv: list[str]) -> dict:
    cp = subprocess.run(argv, capture_output=True, timeout=60, cwd=peers_lib.PEERS_DIR)
    assert cp.returncode == 0, cp.stderr.decode()[-2000:]
    return json.loads(cp.stdout)


def clients() -> dict[str, list[str]]:
    out = {"mcp-1.8.1": [str(PY), str(peers_lib.PEERS_DIR / "sse_client.py")]}
    if JS_SDK.exists():
        out["sdk-1.15.1"] = ["node", str(JS)]
    return out


@pytest.fixture(scope="module")
def server():
    peers_lib.require([str(PY)] if not PY.exists() else [])
    with peers_lib.start_sse_server() as srv:
        yield srv


@pytest.mark.parametrize("options", [{}, {"stream_large_bodies": "1"}], ids=["readme", "stream_large_bodies=1"])
def test_http_sse_clients_pass_through_mcpx_as_directly(server, tmp_path, options):
    if not JS_SDK.exists():
        peers_lib.require([str(JS_SDK)], "run scripts/setup_peers.sh (npm sdk-1.15.1)")
    direct = {name: run_client([*argv, server.url]) for name, argv in clients().items()}
    with Proxy(f"http://127.0.0.1:{server.port}", tmp_path, options={**README, **options}, path="/sse") as px:
        through = {name: run_client([*argv, px.url]) for name, argv in clients().items()}
        records = px.changes()
        flows = px.flows()
    assert through == direct
    assert direct["mcp-1.8.1"] == {"protocolVersion": "2024-11-05", **EXPECTED_CALLS}
    assert direct["sdk-1.15.1"] == {"server": "sse-only", **EXPECTED_CALLS}
    if not options:
        assert records == []  # the same revision on both legs: mcpx is invisible
    else:  # each POST /messages/ (a JSON-RPC body mitmproxy streamed): a record that says so, not that it is too large
        sizes = sorted(int(f.request.headers["content-length"]) for f in flows if f.request.method == "POST")
        assert sorted((r["direction"], r["action"], r["detail"]) for r in records) == sorted(
            ("c2s", "passthrough", f"body of {n} bytes streamed by mitmproxy (stream_large_bodies=1), not read: passed through untouched")
            for n in sizes)
    # mcpx's one probe of the SSE path (the server serves it: mcpx serves nothing itself), then
    # each client: one GET /sse (streamed through), its POSTs to the endpoint the server named
    own = [f for f in flows if (f.metadata.get("mcpx") or {}).get("origin") == "mcpx" and f.request.method == "GET"]
    assert [(f.request.method, f.request.path, f.response.status_code, f.metadata["mcpx"]["purpose"]) for f in own] == [
        ("GET", "/sse", 200, "HTTP+SSE probe: does the server serve this SSE path")]
    flows = [f for f in flows if f not in own]
    gets = [f for f in flows if f.request.method == "GET"]
    assert [(f.request.path, f.response.status_code, f.response.headers["content-type"]) for f in gets] == [
        ("/sse", 200, "text/event-stream; charset=utf-8")] * 2
    posts = {f.request.path.split("?")[0] for f in flows if f.request.method == "POST"}
    assert posts == {"/messages/"}
