"""A server's redirect keeps the client on mcpx (TR-location), with the README's command line
(``--mode reverse:http://127.0.0.1:PORT``): a ``Location`` naming the server's own origin reaches the
client naming mcpx's, with a ``rewrite`` record; a relative one or one naming another origin goes as
the server sent it. Once with a scripted server, once with a real Starlette-based server (PyPI
``mcp`` 2.3.0's streamable-http app at ``/mcp``, which redirects ``/mcp/`` to ``/mcp``) and the released
PyPI ``mcp`` 1.8.1 client pointed at ``.../mcp/``."""
from __future__ import annotations

import http.client

import orjson
import pytest

from proxy_lib import Client, LoopbackServer, Proxy, ScriptedMcpHandler, initialize_msg

README = {"connection_strategy": None}


class Redirecting(ScriptedMcpHandler):
    """/mcp: an MCP server (2025-03-26, answers a notification 202); /mcp/: 307 to the absolute URL of
    /mcp, as Starlette's redirect_slashes does; /away: 302 to another origin; /rel: 307 to /mcp
    (relative); each redirect also carries a Content-Location of its own origin. Only the redirects
    are what the test is about."""

    SESSION = "loc-1"
    posted: list = []

    def do_POST(self):
        if self.path != "/mcp":
            self.rfile.read(int(self.headers["content-length"]))
            target = {"/mcp/": f"http://127.0.0.1:{self.server.server_port}/mcp",
                      "/away": "https://auth.example/login?next=%2Fmcp", "/rel": "/mcp"}[self.path]
            self.send_response(302 if self.path == "/away" else 307)
            self.send_header("location", target)
            self.send_header("content-location", f"http://127.0.0.1:{self.server.server_port}{self.path}")
            self.send_header("content-length", "0")
            self.end_headers()
            return
        Redirecting.posted.append(self.path)
        super().do_POST()

    def answer(self, body):
        self.send_accepted()


@pytest.fixture
def server():
    Redirecting.posted = []
    srv = LoopbackServer(Redirecting)
    yield srv.port
    srv.stop()


def _post(port: int, path: str, msg: dict) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", path, orjson.dumps(msg), {"content-type": "application/json", "accept": "application/json, text/event-stream"})
    r = conn.getresponse()
    out = r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    conn.close()
    return out


def test_the_servers_origin_in_location_becomes_mcpx(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options=README, save=False) as px:
        assert px.proc.args[1:5] == ["--mode", f"reverse:http://127.0.0.1:{server}", "--listen-host", "127.0.0.1"]
        status, headers, body = _post(px.port, "/mcp/", initialize_msg("2025-03-26"))
        assert (status, headers["location"], headers["content-location"], body) == (
            307, f"http://127.0.0.1:{px.port}/mcp", f"http://127.0.0.1:{px.port}/mcp/", b"")
        client = Client(px.port, path=headers["location"].removeprefix(f"http://127.0.0.1:{px.port}"))
        client.initialize("2025-03-26")  # the redirect followed: on mcpx, a sealed session
        assert client.session.startswith("mcpx1.")
        client.close()
        away = _post(px.port, "/away", initialize_msg("2025-03-26"))
        rel = _post(px.port, "/rel", initialize_msg("2025-03-26"))
        records = [(c["direction"], c["pointer"], c["action"], c["rule"], c["before"], c["after"]) for c in px.changes()
                   if c["rule"] == "TR-location"]
    assert (away[0], away[1]["location"], away[1]["content-location"]) == (
        302, "https://auth.example/login?next=%2Fmcp", f"http://127.0.0.1:{px.port}/away")
    assert (rel[0], rel[1]["location"], rel[1]["content-location"]) == (307, "/mcp", f"http://127.0.0.1:{px.port}/rel")
    up, me = f"http://127.0.0.1:{server}", f"http://127.0.0.1:{px.port}"
    assert records == [
        ("s2c", "header:Location", "rewrite", "TR-location", f"{up}/mcp", f"{me}/mcp"),
        ("s2c", "header:Content-Location", "rewrite", "TR-location", f"{up}/mcp/", f"{me}/mcp/"),
        ("s2c", "header:Content-Location", "rewrite", "TR-location", f"{up}/away", f"{me}/away"),
        ("s2c", "header:Content-Location", "rewrite", "TR-location", f"{up}/rel", f"{me}/rel"),
    ]
    assert Redirecting.posted == ["/mcp", "/mcp"]  # the initialize and notifications/initialized, via mcpx


OPS = [{"op": "listTools"}, {"op": "callTool", "name": "add", "arguments": {"a": 2, "b": 3}}, {"op": "ping"}]


@pytest.mark.peers
def test_a_real_client_follows_a_starlette_redirect_and_stays_on_mcpx(tmp_path):
    import peers_lib
    peers_lib.require(peers_lib.peers_missing())
    with peers_lib.start_py_server() as srv:
        direct = peers_lib.run_py_client("1.8.1", srv.url + "/", OPS)
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, options=README) as px:
            through = peers_lib.run_py_client("1.8.1", px.url + "/", OPS)
            records = px.changes()
            flows = px.flows()
    assert [r["ok"] for r in direct["results"]] == [True, True, True], direct
    names = [[t["name"] for t in r["result"]["tools"]] for r in (direct["results"][0], through["results"][0])]
    assert names[0] == names[1]  # (the tools' 2025-06-18 fields are dropped for this 2024-11-05 client)
    assert through["results"][1]["result"]["content"] == direct["results"][1]["result"]["content"] == [
        {"type": "text", "text": "2 + 3 = 5"}]  # (the text half says it all: no JSON of structuredContent added)
    assert through["results"][2] == direct["results"][2]
    assert through["protocolVersion"] == direct["protocolVersion"] == "2024-11-05"
    up, me = f"http://127.0.0.1:{srv.port}", f"http://127.0.0.1:{px.port}"
    # the client sends each request to .../mcp/ (httpx follows the 307 every time): each redirect names mcpx,
    # and each request after it reached mcpx at /mcp, in the one session mcpx sealed
    client_flows = [f for f in flows if "mcpx: sent by mcpx" not in (f.comment or "")]
    slash = [f for f in client_flows if f.request.path == "/mcp/"]
    rest = [f for f in client_flows if f.request.path != "/mcp/"]
    assert {(f.response.status_code, f.response.headers["location"]) for f in slash} == {(307, f"{me}/mcp")}
    assert {f.request.path for f in rest} == {"/mcp"} and len(rest) == len(slash)
    assert all(200 <= f.response.status_code < 300 for f in rest)
    assert [(c["pointer"], c["action"], c["before"], c["after"]) for c in records if c["rule"] == "TR-location"] == [
        ("header:Location", "rewrite", f"{up}/mcp", f"{me}/mcp")] * len(slash)
    assert rest[0].response.headers["mcp-session-id"].startswith("mcpx1.")  # the initialize: sealed by mcpx
    assert len({f.request.headers.get("mcp-session-id") for f in rest[1:]}) == 1  # (as sent upstream)
