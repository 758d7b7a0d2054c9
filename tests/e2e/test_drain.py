"""The drain on SIGTERM (``mcpx_drain_grace``, addons/drain.py), through the real mitmdump.

A small scripted server (tests/proxy_lib.ScriptedMcpHandler) controls the one thing these tests
are about, how long an SSE answer streams: ``tools/call`` ``slow`` sends a progress notification
every 0.2 s, ``STEPS`` of them, then its result; ``tools/list`` answers at once. (The same drain
with the real everything server and a real client: tests/e2e/test_operating.py.)

- A call that ends within the grace period: after SIGTERM, ``/healthz`` answers 503, a new
  connection is refused, a request on a connection opened before is still answered (with
  ``Connection: close``), the call streams on to its result, and mitmdump exits right after it.
- A call longer than the grace period: mitmdump exits when the grace period is over, saying so.
"""
from __future__ import annotations

import http.client
import signal
import socket
import time
import urllib.error
import urllib.request

import orjson
import pytest

from proxy_lib import Client, Proxy, ScriptedMcpHandler, free_port, serve


class Slow(ScriptedMcpHandler):
    STEPS = 5

    def answer(self, body):
        if "id" not in body:
            self.send_accepted()
            return
        if body["method"] == "tools/list":
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {"tools": []}}))
            return
        steps = body["params"]["arguments"]["steps"]
        self.start_sse()
        try:
            for i in range(steps):
                note = {"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": body["id"], "progress": i + 1, "total": steps}}
                self.chunk(b"data: " + orjson.dumps(note) + b"\n\n")
                time.sleep(0.2)
            result = {"jsonrpc": "2.0", "id": body["id"], "result": {"content": [{"type": "text", "text": "done"}]}}
            self.chunk(b"data: " + orjson.dumps(result) + b"\n\n")
            self.chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture(scope="module")
def upstream():
    yield from serve(Slow)


def _health(address: str) -> int:
    try:
        with urllib.request.urlopen(f"http://{address}/healthz", timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _start_call(px: Proxy, session: str, steps: int) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=10)
    conn.request("POST", "/mcp", orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                               "params": {"name": "slow", "arguments": {"steps": steps}, "_meta": {"progressToken": 7}}}),
                 {"content-type": "application/json", "accept": "application/json, text/event-stream", "mcp-session-id": session})
    r = conn.getresponse()
    assert r.status == 200 and r.headers["content-type"] == "text/event-stream"
    return r


def _events(r: http.client.HTTPResponse, n: int | None = None) -> list[dict]:
    out = []
    while n is None or len(out) < n:
        line = r.readline()
        if not line:
            break
        if line.startswith(b"data: "):
            out.append(orjson.loads(line[6:]))
    return out


def _refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except ConnectionRefusedError:
        return True


def test_sigterm_lets_the_call_in_flight_finish(upstream, tmp_path):
    address = f"127.0.0.1:{free_port()}"
    px = Proxy(f"http://127.0.0.1:{upstream}", tmp_path, save=False,
               options={"mcpx_drain_grace": "10s", "mcpx_metrics": address})
    try:
        c = Client(px.port)
        c.initialize("2025-03-26")
        other = Client(px.port)  # a connection opened before the SIGTERM
        other.session, other.revision = c.session, c.revision
        assert other.rpc({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})[0] == 200
        assert _health(address) == 200
        r = _start_call(px, c.session, Slow.STEPS)
        assert [e["params"]["progress"] for e in _events(r, 1)] == [1]
        px.proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        time.sleep(0.3)
        assert _health(address) == 503
        assert _refused(px.port)
        status, headers, msgs = other.rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert (status, headers.get("connection"), msgs) == (200, "close", [{"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}])
        rest = _events(r)
        assert [e.get("params", {}).get("progress") for e in rest] == [2, 3, 4, 5, None]
        assert rest[-1] == {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "done"}]}}
        px.proc.wait(10)
        took = time.monotonic() - signalled
    finally:
        px.stop()
    assert px.proc.returncode == 0
    assert 0.6 < took < 5, took  # the call's last 0.8 s, then at once (a loaded machine: slower)
    out = px.output()
    assert "mcpx: SIGTERM: draining: 1 listener(s) closed, /healthz answers 503; 1 request(s) in flight, " \
           "exiting when they end or in 10s" in out
    assert "mcpx: drained: exiting" in out


def test_the_grace_period_bounds_the_drain(upstream, tmp_path):
    px = Proxy(f"http://127.0.0.1:{upstream}", tmp_path, save=False, options={"mcpx_drain_grace": "1s"})
    try:
        c = Client(px.port)
        c.initialize("2025-03-26")
        r = _start_call(px, c.session, 50)  # 10 s
        assert len(_events(r, 1)) == 1
        px.proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        px.proc.wait(10)
        took = time.monotonic() - signalled
    finally:
        px.stop()
    assert 0.9 < took < 4, took  # the grace period, then mitmproxy's own shutdown (a loaded machine: slower)
    out = px.output()
    assert "1 request(s) in flight, exiting when they end or in 1s" in out
    assert "mcpx: drain grace period over with 1 request(s) still in flight: exiting" in out
