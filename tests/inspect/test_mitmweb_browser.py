"""mitmweb in a real browser: an MCP flow rewritten by mcpx opens with the MCP view and its change list.

Real pieces only: the npm everything server, ``mitmweb -s addon/mcpx.py`` in reverse mode on
loopback, the released ``@modelcontextprotocol/sdk@1.10.2`` client calling get-resource-links
through it, and Debian's Chromium (scripts/setup_browser.sh) driven headless by npm playwright-core
(tests/inspect/mitmweb_view.mjs). The flow list's Comment column, shown with no setting, names the
initialize flow and the tool call; mcpx.sessions in the command bar gives the same lines as the flows
mitmweb saves, read back. Screenshots go to test-output/ (gitignored); with
MCPX_DOCS_SCREENSHOT=1 the first one also replaces docs/mitmweb-mcp-view.png (the README's).
"""
from __future__ import annotations

import io as pyio
import json
import re
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from mitmproxy import io

import peers_lib as pl
from mcpx_core import flowsessions
from proxy_lib import ROOT, ADDON, free_port

pytestmark = pytest.mark.peers

CHROMIUM = Path(os.environ.get("MCPX_CHROMIUM", "/usr/bin/chromium"))
DRIVER = Path(__file__).with_name("mitmweb_view.mjs")
OUT = ROOT / "test-output" / "inspect"
COMMENT = "tools/call get-resource-links #1 · 2024-11-05 · mcpx: 2 rewritten for 2024-11-05"


def need(what: str, ok: bool, fix: str) -> None:
    if ok:
        return
    if os.environ.get("CI") or os.environ.get("MCPX_REQUIRE_PEERS"):
        pytest.fail(f"{what} missing: {fix}")
    pytest.skip(f"{what} missing: {fix}")


def wait_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mitmweb exited: {log.read_text(errors='replace')[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"mitmweb did not listen on {port}: {log.read_text(errors='replace')[-3000:]}")


@pytest.fixture
def mitmweb(tmp_path):
    """(proxy url, web url with token, token) of a mitmweb with the addon in front of the everything server."""
    need("test peers", not pl.peers_missing(), "run scripts/setup_peers.sh")
    need("Chromium", CHROMIUM.exists(), "run scripts/setup_browser.sh (Debian package chromium)")
    need("playwright-core", (pl.PEERS_DIR / "node_modules" / "playwright-core").exists(), "run scripts/setup_peers.sh")
    token = secrets.token_hex(12)
    with pl.start_everything_server() as srv:
        proxy_port, web_port = free_port(), free_port()
        log = tmp_path / "mitmweb.log"
        argv = [str(Path(sys.executable).with_name("mitmweb")), "-s", str(ADDON),
                "--mode", f"reverse:http://127.0.0.1:{srv.port}", "--listen-host", "127.0.0.1", "-p", str(proxy_port),
                "--web-host", "127.0.0.1", "--web-port", str(web_port),
                "--set", "web_open_browser=false", "--set", f"web_password={token}",
                "--set", "termlog_verbosity=info"]
        # flow list columns: none set, mcpx adds the Comment column to mitmweb's default ones
        with open(log, "wb") as fh:
            proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, cwd=str(ROOT),
                                    env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            wait_port(proxy_port, proc, log)
            wait_port(web_port, proc, log)
            yield f"http://127.0.0.1:{proxy_port}/mcp", f"http://127.0.0.1:{web_port}", token
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def flows(web: str, token: str) -> list[dict]:
    with urllib.request.urlopen(f"{web}/flows?token={token}", timeout=10) as r:
        return json.loads(r.read())


def _request_body(web: str, token: str, flow: dict) -> bytes:
    with urllib.request.urlopen(f"{web}/flows/{flow['id']}/request/content.data?token={token}", timeout=10) as r:
        return r.read()


def test_mcp_flow_opens_with_the_mcp_view_and_its_change_list(mitmweb):
    proxy_url, web, token = mitmweb
    ops = [op for op in pl.scenario_ops("everything", "sdk-1.10.2") if op["id"] == "get-resource-links"]
    report = pl.run_client("sdk-1.10.2", proxy_url, ops)
    assert pl.verdicts(report) == {"get-resource-links": "ok"}, report  # fails directly; passes through mcpx

    deadline = time.time() + 10
    while True:
        rewritten = [f for f in flows(web, token) if f.get("comment") == COMMENT]
        if rewritten or time.time() > deadline:
            break
        time.sleep(0.2)
    assert len(rewritten) == 1, [f.get("comment") for f in flows(web, token)]
    flow = rewritten[0]
    assert flow["marked"] == ""  # rewritten, nothing dropped: commented but not marked

    expect = ["[1] result tools/call id=1 · event 1",
              "rewrite /result/content/1 [CT-resource_link]",
              "rewrite /result/content/2 [CT-resource_link]",
              "delivered:"]
    expect_original = ['"type": "resource_link"', "sent:"]
    cfg = {"url": f"{web}/?token={token}", "flow": flow["id"], "comment": COMMENT,
           "expect": expect, "expectOriginal": expect_original, "out": str(OUT),
           "command": "mcpx.sessions", "commandExpect": "(closed): client mcpx-js-client 1.10.2 receives",
           "commentStarts": ["initialize #0 · 2024-11-05", "tools/call get-resource-links #1 · 2024-11-05"]}
    cp = subprocess.run([shutil.which("node") or "node", str(DRIVER), json.dumps(cfg)], capture_output=True,
                        timeout=90, cwd=str(ROOT))
    lines = [ln for ln in cp.stdout.decode(errors="replace").splitlines() if ln.strip()]
    assert lines, cp.stderr.decode(errors="replace")[-3000:]
    out = json.loads(lines[-1])
    assert cp.returncode == 0, out.get("error") or cp.stderr.decode(errors="replace")[-3000:]
    assert out["view"] == "MCP"  # chosen automatically (render priority above the JSON view)
    assert out["seen"] == expect
    assert out["commentSeen"] is True
    # without any setting, the flow list's Comment column says what each flow is: initialize, each tool call by name
    assert out["commentsSeen"] == {"initialize #0 · 2024-11-05": True, "tools/call get-resource-links #1 · 2024-11-05": True}
    listed = flows(web, token)
    calls = [f["comment"] for f in listed if b'"tools/call"' in _request_body(web, token, f)]
    assert calls == [COMMENT]
    # the client's initialize, then mcpx's own initialize that seals the session: each names its message first
    assert [f["comment"].split(" · ")[:2] for f in listed if f["request"]["method"] == "POST"][:2] == [
        ["initialize #0", "2024-11-05"], ["initialize #0", f"mcpx: sent by mcpx: initialize, to seal the session (for flow {listed[0]['id'][:8]})"]]
    assert out["original"] == "MCP original"
    sid = next(v for k, v in flow["response"]["headers"] if k.lower() == "mcp-session-id")
    assert sid.startswith("mcpx1.")  # the client holds a sealed token; commands name the session by its handle
    # mitmweb shows the command and its result (one line per session) as JSON; read from the flow list's
    # metadata; the client ended the session (DELETE): listed as closed
    assert re.fullmatch(r'\$ mcpx\.sessions\["s-[0-9a-f]{16} \(closed\): client mcpx-js-client 1\.10\.2 receives 2024-11-05, '
                        r'server mcp-servers/everything 2\.0\.0 speaks 2024-11-05: \d+ messages, 5 changes, 3 dropped"\]',
                        out["commandResult"]), out["commandResult"]
    assert sid not in out["commandResult"]
    # the flows saved from mitmweb (its "Save" download), read back as -r reads them: the same lines
    with urllib.request.urlopen(f"{web}/flows/dump?token={token}", timeout=10) as r:
        saved = list(io.FlowReader(pyio.BytesIO(r.read())).stream())
    assert flowsessions.lines(saved) == json.loads(out["commandResult"].removeprefix("$ mcpx.sessions"))
    for shot in out["screenshots"]:
        data = Path(shot).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000, shot
    if os.environ.get("MCPX_DOCS_SCREENSHOT"):
        shutil.copy(out["screenshots"][0], ROOT / "docs" / "mitmweb-mcp-view.png")
