"""The HTTP+SSE transport's wire, sans-IO (addon/mcpx_core/transport/http_sse/wire.py): which
request opens it, which upstream path is the MCP endpoint, the endpoint URL as each released
client resolves it, the token's round trip, and the events mcpx writes (schema/2024-11-05
transports "HTTP with SSE"; WHATWG HTML 9.2 "Server-sent events")."""
from __future__ import annotations

import itertools
import shutil
import subprocess
from urllib.parse import urljoin

import orjson
import pytest

from mcpx_core.framing.sse import SSEParser
from mcpx_core.transport.http_sse import wire

TOKEN = "mcpx1.AbC-_9"


@pytest.mark.parametrize("method,headers,opens", [
    ("GET", {"accept": "text/event-stream"}, True),
    ("GET", {"accept": "application/json, text/event-stream"}, True),  # (some clients send both)
    ("GET", {"accept": "text/event-stream", "mcp-session-id": "x"}, False),  # a Streamable HTTP client's GET stream
    ("GET", {"accept": "application/json"}, False),
    ("GET", {}, False),
    ("POST", {"accept": "text/event-stream"}, False),
])
def test_which_request_opens_the_transport(method, headers, opens):
    assert wire.opens_stream(method, headers) is opens


@pytest.mark.parametrize("path,status,endpoint", [
    ("/sse", 404, "/mcp"),  # the SDKs' pair: nobody serves /sse, /mcp beside it
    ("/prefix/sse", 404, "/prefix/mcp"),
    ("/prefix/sse/", 404, "/prefix/mcp"),
    ("/mcp", 400, "/mcp"),  # the client was given the MCP endpoint itself ("Missing session ID")
    ("/mcp", 405, None),  # a server with no GET stream (the spec's answer, which its clients may check for)
    ("/sse", 405, None),
    ("/events", 404, None),  # no convention names its endpoint: the client gets the server's 404
    ("/sse", 200, None),  # the server serves HTTP+SSE itself
    ("/sse", 500, None),
    ("/sse", 401, None),  # not a refusal of the transport: the client must see it
])
def test_the_mcp_endpoint_by_convention(path, status, endpoint):
    assert wire.mcp_endpoint(path, status, {}) == endpoint


def test_the_option_names_the_endpoint_first():
    assert wire.mcp_endpoint("/legacy/events", 200, {"/legacy/events": "/api/mcp"}) == "/api/mcp"
    assert wire.mcp_endpoint("/sse", 404, {"/legacy/events": "/api/mcp"}) == "/mcp"


@pytest.mark.parametrize("sse_path,prefix,expected", [
    ("/sse", "", "/messages?mcpx_session=" + TOKEN),
    ("/prefix/sse", "", "/prefix/messages?mcpx_session=" + TOKEN),
    ("/prefix/sse/", "", "/prefix/messages?mcpx_session=" + TOKEN),
    ("/a/b/sse", "/gw", "/gw/a/b/messages?mcpx_session=" + TOKEN),
    ("/mcp", "", "/messages?mcpx_session=" + TOKEN),
    ("/", "", "/messages?mcpx_session=" + TOKEN),
])
def test_endpoint_url(sse_path, prefix, expected):
    assert wire.endpoint_url(sse_path, TOKEN, prefix) == expected


@pytest.mark.parametrize("client_url,sse_path,prefix,posts_to", [
    ("http://127.0.0.1:8080/sse", "/sse", "", "http://127.0.0.1:8080/messages"),
    ("http://127.0.0.1:8080/prefix/sse", "/prefix/sse", "", "http://127.0.0.1:8080/prefix/messages"),
    ("http://127.0.0.1:8080/prefix/sse/", "/prefix/sse/", "", "http://127.0.0.1:8080/prefix/messages"),
    # behind a reverse proxy that strips /gw and says so (X-Forwarded-Prefix)
    ("https://gw.example/gw/prefix/sse", "/prefix/sse", "/gw", "https://gw.example/gw/prefix/messages"),
])
def test_every_client_resolution_reaches_the_endpoint(client_url, sse_path, prefix, posts_to):
    """PyPI ``mcp`` ``sse_client`` resolves the data with ``urljoin``, npm ``SSEClientTransport`` with
    ``new URL(data, url)`` (WHATWG URL), and some clients join the origin and the data as strings:
    the absolute path with every prefix reaches the endpoint in each. (A relative ``messages?…``
    would break the third; a bare ``/messages`` loses the prefix in the first two: the bug of
    SDK servers mounted under a prefix.)"""
    data = wire.endpoint_url(sse_path, TOKEN, prefix)
    want = f"{posts_to}?mcpx_session={TOKEN}"
    assert urljoin(client_url, data) == want
    origin = client_url.split("/", 3)
    assert "/".join(origin[:3]) + data == want
    if shutil.which("node"):
        js = subprocess.run(["node", "-e", "console.log(new URL(process.argv[1], process.argv[2]).href)", data, client_url],
                            capture_output=True, text=True, timeout=20)
        assert js.stdout.strip() == want
    assert wire.token_of("POST", want.split(origin[2], 1)[1]) == TOKEN


@pytest.mark.parametrize("value,prefix", [
    ("/gw", "/gw"), ("/gw/", "/gw"), ("/gw, /other", "/gw"), ("/a/b", "/a/b"),
    ("", ""), ("gw", ""), ("http://evil.example/x", ""), ("//evil.example", ""), ("/a?b=1", ""), ("/a#x", ""),
    ("/a b", ""), ("/a\r\nx", ""),
])
def test_forwarded_prefix_is_a_plain_path_or_nothing(value, prefix):
    assert wire.forwarded_prefix({"x-forwarded-prefix": value}) == prefix


@pytest.mark.parametrize("method,path,token", [
    ("POST", f"/messages?mcpx_session={TOKEN}", TOKEN),
    ("POST", f"/prefix/messages/?mcpx_session={TOKEN}&x=1", TOKEN),
    ("GET", f"/messages?mcpx_session={TOKEN}", None),
    ("POST", f"/messages?session_id={TOKEN}", None),  # an SDK server's own endpoint: not mcpx's
    ("POST", f"/other?mcpx_session={TOKEN}", None),
    ("POST", f"/messages?mcpx_session={TOKEN}&mcpx_session=x", None),
])
def test_token_of(method, path, token):
    assert wire.token_of(method, path) == token


def test_endpoint_and_message_events_parse_back():
    assert wire.endpoint_event("/messages?mcpx_session=t") == b"event: endpoint\ndata: /messages?mcpx_session=t\n\n"
    assert wire.endpoint_event("/m?mcpx_session=t", "t~r", 1000) == b"id: t~r\nretry: 1000\nevent: endpoint\ndata: /m?mcpx_session=t\n\n"
    (parsed,) = SSEParser().feed(wire.with_id(wire.message_event(b'{"id":0}'), "t~r"))
    assert (parsed.last_id, parsed.payload) == ("t~r", b'{"id":0}')
    init = wire.message_event(b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2024-11-05","capabilities":{}}}')
    assert wire.initialize_result(init) == {"protocolVersion": "2024-11-05", "capabilities": {}}
    assert wire.initialize_result(wire.message_event(b'{"jsonrpc":"2.0","id":1,"result":{}}')) is None
    assert wire.initialize_result(b": keepalive\n\n") is None
    pretty = b'{\n  "jsonrpc": "2.0",\r\n  "id": 1,\n  "result": {}\n}\n'
    ev = wire.message_event(pretty)
    assert ev == b'event: message\ndata: {\ndata:   "jsonrpc": "2.0",\ndata:   "id": 1,\ndata:   "result": {}\ndata: }\n\n'
    (parsed,) = SSEParser().feed(ev)
    assert orjson.loads(parsed.payload) == {"jsonrpc": "2.0", "id": 1, "result": {}}


STREAM = (b"id: 0\nretry: 1000\ndata:\n\n"  # a 2025-11-25 server's priming event: no message
          b": a comment\n\n"
          b"event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n"
          b"id: 2\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\r\ndata: \"result\":{}}\r\n\r\n")
EXPECTED = [b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n',
            b'event: message\ndata: {"jsonrpc":"2.0","id":7,\ndata: "result":{}}\n\n']


def test_reframer_gives_each_message_once_in_order_for_every_cut():
    """Every cut of a Streamable HTTP answer into two or three chunks gives the same events, in order:
    the messages only (the priming event, comments and ids are that transport's own)."""
    for i, j in itertools.combinations(range(1, len(STREAM)), 2):
        r = wire.Reframer()
        out = r.feed(STREAM[:i]) + r.feed(STREAM[i:j]) + r.feed(STREAM[j:]) + r.close()
        assert out == EXPECTED, (i, j)
    r = wire.Reframer()
    # an answer that ends before its last blank line: that event is not dispatched (WHATWG 9.2.6), as a client would not
    assert r.feed(STREAM[:-2]) == EXPECTED[:1] and r.close() == []


def test_request_ids_and_their_errors():
    assert wire.request_ids(b'{"jsonrpc":"2.0","id":3,"method":"tools/list"}') == [3]
    assert wire.request_ids(b'[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},'
                            b'{"jsonrpc":"2.0","id":9,"result":{}}]') == ["a"]
    assert wire.request_ids(b"not json") == []
    (ev,) = wire.error_events([3], "mcpx: why")
    assert ev == b'event: message\ndata: {"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"mcpx: why"}}\n\n'
