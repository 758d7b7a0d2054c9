"""The upstream HTTP+SSE stage's detection against a real HTTP+SSE-only server (PyPI mcp 1.8.1
FastMCP run with ``transport="sse"``, tests/peers/sse_server.py): a Streamable HTTP client's
``initialize`` POST is refused the way :func:`wire.refused_initialize` reads it, and the probe GET
of the paths :func:`wire.probe_paths` names gives the ``endpoint`` verdict and URL. The bridge
itself (answering the client's POSTs from the stream) is not built yet: docs/transports.md."""
from __future__ import annotations

import http.client
import re

import orjson
import pytest

import peers_lib as pl
from mcpx_core.transport.upstream_sse import wire

pytestmark = pytest.mark.peers
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}


@pytest.fixture(scope="module")
def sse_server():
    pl.require(pl.peers_missing())
    with pl.start_sse_server() as s:
        yield s


def test_an_sse_only_server_refuses_the_post_and_the_probe_finds_its_endpoint(sse_server):
    base = f"http://{sse_server.host}:{sse_server.port}"
    accept = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

    def post(path):
        c = http.client.HTTPConnection(sse_server.host, sse_server.port, timeout=10)
        c.request("POST", path, orjson.dumps(INIT), accept)
        status = c.getresponse().status
        c.close()
        return status

    statuses = {p: post(p) for p in ("/sse", "/mcp", "/messages/")}
    assert statuses == {"/sse": 405, "/mcp": 404, "/messages/": 400}
    assert all(wire.refused_initialize("POST", s, True) for s in statuses.values())
    verdicts = {}
    for path in wire.probe_paths("/mcp", {}):
        probe = wire.Probe(base + path)
        c = http.client.HTTPConnection(sse_server.host, sse_server.port, timeout=10)
        c.request("GET", path, headers={"accept": "text/event-stream"})
        r = c.getresponse()
        while r.status == 200 and probe.feed(r.read1(4096)) is None:
            pass
        c.close()
        verdicts[path] = (r.status, probe.verdict)
        if probe.verdict:
            assert re.fullmatch(re.escape(base) + r"/messages/\?session_id=[0-9a-f]{32}", probe.endpoint)
    assert verdicts == {"/mcp": (404, None), "/sse": (200, True)}
