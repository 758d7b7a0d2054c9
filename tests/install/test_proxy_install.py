"""The proxy-only install of the README ("Install only the proxy"), from a clean copy of the checkout.

A fresh venv and ``pip install -c requirements.lock .`` in the copy: the venv holds mcpx, mitmproxy,
orjson, pydantic and their dependencies, none of the test tools; ``python -m mcpx`` names the
installed addon file, and that venv's ``mitmdump -s`` on it, started outside the checkout, puts mcpx
in front of the real npm everything server and rewrites one real exchange for a 2025-03-26 client.

It makes a venv and installs about 45 packages from PyPI (about 35 s on 2 cores with a warm pip
cache), so it runs in CI only, after the tests: ``scripts/test_install.sh`` (``MCPX_INSTALL_TEST=1``).
Elsewhere it is skipped.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

import peers_lib
from mcpx_core import __version__
from proxy_lib import ROOT, Client, Proxy

pytestmark = pytest.mark.skipif(not os.environ.get("MCPX_INSTALL_TEST"),
                                reason="proxy-only install: CI only (scripts/test_install.sh)")

TEST_TOOLS = {"pytest", "pytest-timeout", "hypothesis", "jsonschema"}


def clean_copy(dest) -> None:
    """The checkout's files as git knows them (tracked, and new files not ignored), without what
    setup made in it (.venv, node_modules, egg-info, build/)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, check=True).stdout
    for rel in filter(None, out.decode().split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_bytes(src.read_bytes())


def test_proxy_only_install_rewrites_a_real_exchange(tmp_path):
    missing = peers_lib.peers_missing()
    if missing:
        pytest.fail(f"test peers missing: {missing}; run scripts/setup.sh first")
    src, venv = tmp_path / "mcpx", tmp_path / "venv"
    clean_copy(src)
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    t1 = time.monotonic()
    # the README's command: .venv/bin/pip install -c requirements.lock .
    cp = subprocess.run([str(venv / "bin" / "pip"), "install", "-qq", "--disable-pip-version-check", "-c", "requirements.lock", "."],
                        cwd=src, capture_output=True, timeout=600)
    t2 = time.monotonic()
    assert cp.returncode == 0, cp.stderr.decode(errors="replace")[-3000:]
    print(f"\nproxy-only install: venv {t1 - t0:.1f} s, pip install {t2 - t1:.1f} s")

    listed = json.loads(subprocess.run([str(venv / "bin" / "pip"), "list", "--format=json", "--disable-pip-version-check"],
                                       capture_output=True, check=True).stdout)
    names = {p["name"].lower() for p in listed}
    assert {"mcpx", "mitmproxy", "orjson", "pydantic"} <= names
    assert not names & TEST_TOOLS
    assert next(p["version"] for p in listed if p["name"].lower() == "mcpx") == __version__

    addon = subprocess.run([str(venv / "bin" / "python"), "-m", "mcpx"], cwd=tmp_path, capture_output=True,
                           check=True).stdout.decode().strip()
    assert re.fullmatch(re.escape(str(venv)) + r"/lib/python3\.\d+/site-packages/mcpx\.py", addon), addon

    with peers_lib.start_everything_server() as srv:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False, mitmdump=str(venv / "bin" / "mitmdump"),
                   addon=addon, cwd=tmp_path) as px:
            c = Client(px.port)
            c.initialize("2025-03-26", name="install-check")
            status, _, msgs = c.rpc({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                     "params": {"name": "get-resource-links", "arguments": {"count": 1}}})
            c.close()
    assert status == 200
    content = msgs[-1]["result"]["content"]
    assert [b["type"] for b in content] == ["text", "resource"]
    assert [(r["pointer"], r["action"], r["rule"]) for r in px.changes() if r["method"] == "tools/call"] == [
        ("/result/content/1", "rewrite", "CT-resource_link")]
    first = [re.sub(r"^\[[\d:.]+\] ", "", line) for line in px.output().splitlines()][:2]
    assert first[0] == f"Loading script {addon}"
    assert first[1].startswith(f"mcpx {__version__} active: revisions 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28; ")
