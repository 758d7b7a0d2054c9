"""The proxy-only install of the README ("Install only the proxy"), from a clean copy of the checkout.

A fresh venv and ``pip install -c requirements.lock .`` in the copy: the venv holds mcpx, mitmproxy,
orjson, pydantic, prometheus-client and their dependencies, none of the test tools; ``python -m mcpx`` names the
installed addon file, and that venv's ``mitmdump -s`` on it, started outside the checkout, puts mcpx
in front of the real npm everything server and rewrites one real exchange for a 2025-03-26 client.

Then, in the same venv with pytest added, a user's own project tests a recorded session with mcpx's
pytest plugin (its pytest11 entry point): goldens written, passing, a changed value failing with its
diff, rewritten.

It makes a venv and installs about 45 packages from PyPI (about 35 s on 2 cores with a warm pip
cache; the plugin test adds pytest and four pytest runs, 45-60 s on a loaded machine), so it runs in
CI only, after the tests: ``scripts/test_install.sh`` (``MCPX_INSTALL_TEST=1``). Elsewhere it is skipped.
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


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(clean copy, venv) of the README's proxy-only install, made once for this module's tests."""
    missing = peers_lib.peers_missing()
    if missing:
        pytest.fail(f"test peers missing: {missing}; run scripts/setup.sh first")
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "mcpx"
    venv = src / ".venv"  # where the README's command puts it
    clean_copy(src)
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], cwd=src, check=True)
    t1 = time.monotonic()
    # the README's command: .venv/bin/pip install -c requirements.lock .
    cp = subprocess.run([str(venv / "bin" / "pip"), "install", "-qq", "--disable-pip-version-check", "-c", "requirements.lock", "."],
                        cwd=src, capture_output=True, timeout=600)
    t2 = time.monotonic()
    assert cp.returncode == 0, cp.stderr.decode(errors="replace")[-3000:]
    print(f"\nproxy-only install: venv {t1 - t0:.1f} s, pip install {t2 - t1:.1f} s")
    return src, venv


def test_proxy_only_install_rewrites_a_real_exchange(installed, tmp_path):
    src, venv = installed
    listed = json.loads(subprocess.run([str(venv / "bin" / "pip"), "list", "--format=json", "--disable-pip-version-check"],
                                       capture_output=True, check=True).stdout)
    names = {p["name"].lower() for p in listed}
    assert {"mcpx", "mitmproxy", "orjson", "pydantic", "prometheus-client"} <= {n.replace("_", "-") for n in names}
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


def test_setup_demo_keeps_the_quick_start_venv(installed):
    """The Quick start's next step after the proxy-only install, ``scripts/setup.sh demo``, keeps that
    ``.venv`` as it is (scripts/venv_kind.py judges it: the lock's versions, mcpx, no test tools) instead of
    deleting and rebuilding it, and ends with a command that runs as printed from the checkout. It installs
    the demo's peers into the copy from the registries as a user's run does (npm ci, the mcp 1.8.1 venv:
    about 30 s): never symlink the checkout's own peers here, setup_peers.sh would empty them through the
    link when its stamps (keyed by path) differ."""
    src, venv = installed
    before = {p.name: p.stat().st_mtime_ns for p in (venv / "bin").iterdir()}
    before["pyvenv.cfg"] = (venv / "pyvenv.cfg").stat().st_mtime_ns
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MCPX_INSTALL_TEST")}
    env["PEERS_PYTHON"] = sys._base_executable  # the interpreter the venv was made with
    cp = subprocess.run(["bash", "scripts/setup.sh", "demo"], cwd=src, capture_output=True, text=True, timeout=300, env=env)
    assert cp.returncode == 0, cp.stderr[-3000:]
    lines = cp.stderr.splitlines()
    assert f"setup: reusing {venv} (it holds the proxy part at the versions of requirements.lock)" in lines, cp.stderr
    assert f"setup: python environment up to date ({venv})" in lines, cp.stderr
    assert not [line for line in lines if line.startswith("setup: creating")], cp.stderr
    assert lines[-1] == "setup: ready: .venv/bin/mitmdump -s addon/mcpx.py --mode reverse:http://YOUR-SERVER"
    after = {p.name: p.stat().st_mtime_ns for p in (venv / "bin").iterdir()}
    after["pyvenv.cfg"] = (venv / "pyvenv.cfg").stat().st_mtime_ns
    assert after == before
    assert not (venv / ".mcpx-stamp").exists()
    help_ = subprocess.run([str(src / ".venv/bin/mitmdump"), "--version"], cwd=src, capture_output=True, text=True, timeout=60)
    assert help_.returncode == 0 and help_.stdout.startswith("Mitmproxy: 12."), help_.stdout + help_.stderr


USER_TEST = '''\
def test_recorded_session_still_served(mcpx_replay, mcpx_golden):
    for revision in ("recorded", "2024-11-05"):
        run = mcpx_replay("session.mitm", revision)
        assert run.not_delivered == [] and run.invalid == []
        mcpx_golden(run, f"session.{revision}.golden.json")
'''


def test_a_user_project_tests_a_recorded_session_with_the_plugin(installed, tmp_path):
    """The same install plus pytest (the lock's version), as a user adds it to their project: a new
    project outside the checkout, one test on a real recorded session (flows/mcp-1.9.4_py-json: the
    released mcp 1.9.4 client against the PyPI mcp 2.3.0 server) with the plugin's fixtures, found
    through its pytest11 entry point. --mcpx-update-goldens writes the goldens, a plain run passes,
    a changed golden value fails with a diff showing it, --mcpx-update-goldens makes it pass again."""
    src, venv = installed
    t0 = time.monotonic()
    cp = subprocess.run([str(venv / "bin" / "pip"), "install", "-qq", "--disable-pip-version-check", "-c", "requirements.lock", "pytest"],
                        cwd=src, capture_output=True, timeout=600)
    assert cp.returncode == 0, cp.stderr.decode(errors="replace")[-3000:]
    t1 = time.monotonic()
    project = tmp_path / "project"
    project.mkdir()
    (project / "session.mitm").write_bytes((ROOT / "flows" / "mcp-1.9.4_py-json.mitm").read_bytes())
    (project / "test_session.py").write_text(USER_TEST)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MCPX_INSTALL_TEST")}

    def pytest_run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider", "-q", *args], cwd=project,
                              capture_output=True, text=True, timeout=300, env=env)

    wrote = pytest_run("--mcpx-update-goldens")
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    golden = project / "session.2024-11-05.golden.json"
    text = golden.read_text()
    data = json.loads(text)
    assert (data["file"], data["client_revision"]) == ("session.mitm", "2024-11-05")
    add = next(c for c in data["calls"] if c["call"] == "tools/call add #2")
    assert [(r["pointer"], r["action"], r["rule"]) for r in add["changes"]] == [("/result/structuredContent", "drop", "SC-structuredContent")]
    assert [d["to"] for d in add["delivered"]] == ["server", "client"]
    assert "structuredContent" not in add["delivered"][1]["message"]["result"]
    assert pytest_run().returncode == 0

    golden.write_text(text.replace('"rule": "SC-structuredContent"', '"rule": "SC-edited-by-hand"', 1))
    failed = pytest_run()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert '-          "rule": "SC-edited-by-hand",' in failed.stdout.splitlines(), failed.stdout
    assert '+          "rule": "SC-structuredContent",' in failed.stdout.splitlines(), failed.stdout
    assert "differs from" in failed.stdout and "--mcpx-update-goldens" in failed.stdout

    again = pytest_run("--mcpx-update-goldens")
    assert again.returncode == 0, again.stdout + again.stderr
    assert golden.read_text() == text
    # the same install's check command, outside the checkout
    check = subprocess.run([str(venv / "bin" / "python"), "-m", "mcpx", "check", "session.mitm"], cwd=project,
                           capture_output=True, text=True, timeout=120, env=env)
    assert check.returncode == 0 and check.stdout.endswith("\nok\n"), check.stdout + check.stderr
    print(f"\nplugin: pip install pytest {t1 - t0:.1f} s, the project's four pytest runs and check {time.monotonic() - t1:.1f} s")
