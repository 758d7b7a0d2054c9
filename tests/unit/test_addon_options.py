"""Addon options and proxy-originated POSTs."""
from __future__ import annotations

import asyncio
import http.server
import threading

import pytest
from mitmproxy import exceptions
from mitmproxy.test import taddons

import mcpx
from mcpx_core import upstream
from proxy_lib import free_port


@pytest.mark.parametrize("option,value", [("mcpx_policy", "stric"), ("mcpx_policy", "Strict"), ("mcpx_audio", "blob")])
def test_invalid_choice_is_refused_by_mitmdump(option, value, tmp_path):
    """mitmproxy does not check `choices` for a value --set before the script loads: without mcpx's own
    check, mcpx_policy=stric silently ran the lenient policy. mitmdump must refuse to start."""
    import subprocess
    from proxy_lib import ADDON, mitmdump_bin
    cp = subprocess.run([mitmdump_bin(), "-n", "-q", "-s", str(ADDON), "--set", f"{option}={value}"],
                        capture_output=True, timeout=60, cwd=tmp_path)
    out = (cp.stdout + cp.stderr).decode(errors="replace")
    assert cp.returncode != 0 and f"{option} must be one of" in out


def test_pin_option():
    addon = mcpx.MCPX()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, mcpx_pin=["old-client=2025-03-26"])
        assert addon.store.pins == {"old-client": "2025-03-26"}
        with pytest.raises(exceptions.OptionsError, match="mcpx_pin"):
            tctx.configure(addon, mcpx_pin=["old-client=2025-13-01"])


def test_proxy_post_sends_each_header_once():
    """A client's "Content-Type" and mcpx's default must not reach the server as two headers."""
    seen = []

    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            seen.append([k.lower() for k in self.headers.keys()])
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    port = free_port()
    srv = http.server.HTTPServer(("127.0.0.1", port), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        reply = asyncio.run(upstream.post(f"http://127.0.0.1:{port}/mcp", {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "Mcp-Session-Id": "s1", "Content-Length": "99", "Host": "elsewhere"}, b"{}"))
    finally:
        srv.shutdown()
    assert reply.status == 202
    names = seen[0]
    assert names.count("content-type") == 1 and names.count("accept") == 1 and names.count("host") == 1
    assert "mcp-session-id" in names


def test_outstanding_request_ids_are_bounded_per_session():
    from mcpx_core.session import MAX_PENDING, Session
    s = Session("k")
    for i in range(MAX_PENDING + 10):
        s.remember("c2s", i, "tools/call")
    assert len(s.pending) == MAX_PENDING == 1024
    assert s.answer("c2s", 0) is None and s.answer("c2s", MAX_PENDING + 9) == "tools/call"
