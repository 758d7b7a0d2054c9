"""A 2026-07-28 client's ``subscriptions/listen`` is served from the legacy upstream session's GET
stream (bridge/client2026.py). When the server ends that GET stream cleanly, the client's listen
stream ends with it. When the GET's connection breaks off instead (the server dies, the connection
is reset: no last chunk), the listen must end the same way, with a ``passthrough`` record (and its
warning line) saying why. Before, nothing ended the client's listen: it stayed open with nothing
behind it, for ever (its upstream session, kept busy by it, was never ended either).

Through the real mitmdump, against a scripted 127.0.0.1 server that stands in for a legacy
(2025-11-25) server (the fault needs a server that breaks off on cue); exact bytes the client got,
exact requests the server got, exact records."""
from __future__ import annotations

import http.client
import json

import orjson
import pytest

from proxy_lib import Proxy, ScriptedMcpHandler, serve

NEW = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": NEW, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"}}
CHANGED = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n'


class Legacy(ScriptedMcpHandler):
    """A 2025-11-25 server announcing tools.listChanged (session legacy-1). Its GET stream sends one
    tools list_changed notification, then, by ``mode``: ``clean``: the stream's last chunk;
    ``broken``: the connection closes without it (broken off). Every request is kept in ``seen`` as
    (HTTP method, Mcp-Session-Id, JSON-RPC method)."""

    seen: list = []
    mode = "clean"

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.seen.append(("POST", self.headers.get("mcp-session-id"), body.get("method")))
        if body.get("method") == "initialize":
            out = orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "legacy", "version": "1"}}})
            self.send_json(out, {"mcp-session-id": "legacy-1"})
            return
        self.send_accepted()

    def do_GET(self):
        self.seen.append(("GET", self.headers.get("mcp-session-id"), None))
        self.close_connection = True
        self.start_sse()
        self.chunk(CHANGED)
        if self.mode == "clean":
            self.chunk(b"")
        # broken: return without the last chunk; the connection closes


@pytest.fixture
def server():
    yield from serve(Legacy, "seen")


def listen(port: int) -> tuple[int, bytes]:
    """A raw 2026-07-28 client's listen (tools list_changed): its status and its whole body, read to the
    stream's end (a client timeout of 20 s: the listen must end well before)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    msg = {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": {"_meta": META, "notifications": {"toolsListChanged": True}}}
    conn.request("POST", "/mcp", orjson.dumps(msg), {"content-type": "application/json", "accept": "application/json, text/event-stream",
                                                     "mcp-protocol-version": NEW, "mcp-method": "subscriptions/listen"})
    r = conn.getresponse()
    try:
        return r.status, r.read()
    finally:
        conn.close()


ACK = (b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":'
       b'{"io.modelcontextprotocol/subscriptionId":"L"},"notifications":{"toolsListChanged":true}}}\n\n')
DELIVERED = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":' \
            b'{"io.modelcontextprotocol/subscriptionId":"L"}}}\n\n'


@pytest.mark.parametrize("mode", ["clean", "broken"])
def test_the_listen_ends_when_the_get_stream_ends_or_breaks_off(server, tmp_path, mode):
    """The client gets the acknowledgement, the notification, then the end of its stream (a whole body:
    the listen ended), whether the server ended its GET or its connection broke off; the broken one
    adds one passthrough record naming mitmproxy's reason, and its warning line."""
    Legacy.mode = mode
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_server_era": "legacy"}) as px:
        status, body = listen(px.port)
        recs = [(r["direction"], r["action"], r["rule"], r["detail"]) for r in px.changes()
                if r["action"] == "passthrough" or r["rule"] == "SUB-listen"]
        out = px.output()
    assert (status, body) == (200, ACK + DELIVERED)
    assert Legacy.seen == [("POST", None, "initialize"), ("POST", "legacy-1", "notifications/initialized"), ("GET", "legacy-1", None)]
    broke = [r for r in recs if r[1] == "passthrough"]
    assert recs[:1] == [("c2s", "bridge", "SUB-listen", "honoured: toolsListChanged")]
    if mode == "clean":
        assert broke == [] and "passed through" not in out
        return
    assert broke == [("s2c", "passthrough", "PASSTHROUGH-error",
                      "the server's GET stream broke off (HTTP/1 protocol error: peer closed connection without sending complete "
                      "message body (incomplete chunked read)): the listen ends")]
    # the record's summary line, at warning level (as for a GET refused or failed)
    assert [line.split("] ", 1)[-1] for line in out.splitlines() if "passed through" in line] == [
        "mcpx: s2c 2025-11-25->2026-07-28: 1 passed through (passthrough: PASSTHROUGH-error)"]
