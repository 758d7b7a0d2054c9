"""The authorization stage against a hostile authorization server: a huge or a slow metadata body.

A small scripted server (the test is about what mcpx's own discovery fetch does with the answer, which
no SDK's authorization server can be made to send): one port is an MCP origin that publishes Protected
Resource Metadata (RFC 9728) naming an authorization server on another port and answers 404 at
``/.well-known/oauth-authorization-server``; the authorization server answers its metadata (RFC 8414
§3) with an endless chunked body or not at all. A 2025-03-26 client's discovery request through mcpx
(``MCP-Protocol-Version: 2025-03-26``, 2025-03-26 ``basic/authorization`` §2.3.2) must get the origin's
own 404: a huge body cut at ``DOC_MAX`` (mitmdump's memory and the bytes read bounded), a slow one given
up after ``FETCH_TIMEOUT`` for all of the response's fetches together.
"""

from __future__ import annotations

import http.client
import time
import urllib.request

import orjson
import pytest

from mcpx_core.addons import authorization as discovery
from proxy_lib import LoopbackServer, Proxy, ScriptedMcpHandler

ORIGIN_PORT: list[int] = []
AS_PORT: list[int] = []
MODE: list[str] = ["huge"]
SENT: list[int] = [0]  # bytes of the huge body the authorization server wrote


class Hostile(ScriptedMcpHandler):
    def do_GET(self):
        if self.server.server_address[1] == ORIGIN_PORT[0]:
            if self.path == "/.well-known/oauth-protected-resource":
                self.send_json(orjson.dumps({"resource": f"http://127.0.0.1:{ORIGIN_PORT[0]}/mcp",
                                             "authorization_servers": [f"http://127.0.0.1:{AS_PORT[0]}/"]}))
            else:
                self.send_json(b'{"detail":"Not Found"}', status=404)
            return
        if MODE[0] == "slow":
            time.sleep(discovery.FETCH_TIMEOUT + 5)  # (the fetch gives up before)
            return
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            self.chunk(b'{"issuer": "http://127.0.0.1:%d/", "x": "' % AS_PORT[0])
            block = b"a" * (1 << 20)
            for _ in range(4096):  # up to 4 GiB: far past any bound
                self.chunk(block)
                SENT[0] += len(block)
        except OSError:
            pass


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    origin, asrv = LoopbackServer(Hostile), LoopbackServer(Hostile)
    ORIGIN_PORT[:], AS_PORT[:] = [origin.port], [asrv.port]
    px = Proxy(f"http://127.0.0.1:{origin.port}", tmp_path_factory.mktemp("auth-hostile"), save=False)
    try:
        yield px
    finally:
        px.stop()
        origin.stop()
        asrv.stop()


def _discover(px: Proxy) -> tuple[int, bytes, float]:
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=60)
    conn.request("GET", "/.well-known/oauth-authorization-server", headers={"MCP-Protocol-Version": "2025-03-26"})
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, body, time.monotonic() - start


def _rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):  # the peak resident set
            return int(line.split()[1])
    return 0


def test_a_huge_metadata_body_is_cut_at_the_bound(hostile):
    MODE[0], SENT[0] = "huge", 0
    status, body, took = _discover(hostile)
    assert (status, body) == (404, b'{"detail":"Not Found"}')  # the origin's own answer
    assert took < 3  # cut at the bound, not read until the fetch timeout (it was 20 s: two URLs, 10 s each)
    assert SENT[0] < 32 << 20  # mcpx stopped reading at DOC_MAX (the rest is socket buffers); it read 4.5 GiB before
    assert _rss_kib(hostile.proc.pid) < 160 << 10  # mitmdump's peak resident set (223 MiB before, 87 MiB measured)
    assert f"did not answer: answer larger than {discovery.DOC_MAX} bytes" in hostile.output()
    assert not [r for r in hostile.changes() if r["rule"].startswith("AUTH-")]


def test_a_slow_metadata_answer_is_given_up_after_the_fetch_timeout(hostile):
    MODE[0] = "slow"
    mark = len(hostile.output())
    status, body, took = _discover(hostile)
    assert (status, body) == (404, b'{"detail":"Not Found"}')
    # FETCH_TIMEOUT bounds all of one response's fetches together (it was 20 s: each URL tried for 10 s)
    assert discovery.FETCH_TIMEOUT - 1 < took < discovery.FETCH_TIMEOUT + 3
    assert "no answer within 10 s" in hostile.output()[mark:]
    assert "/.well-known/openid-configuration" not in hostile.output()[mark:]
