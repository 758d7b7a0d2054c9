"""Launch the real MCP test peers (tests/peers/) from tests. Standard library only.

Install the peers first: scripts/setup_peers.sh.

    from peers_lib import start_everything_server, start_py_server, run_js_client, run_py_client

    with start_py_server() as srv:                     # or srv = ...; srv.stop()
        out = run_py_client("1.12.4", srv.url, [{"op": "listTools"}])
        out = run_js_client("sdk-1.10.2", srv.url, scenario_ops("py", "sdk-1.10.2"))
    out["protocolVersion"]; out["results"][0]["ok"]

Servers listen on 127.0.0.1 only; their url is http://127.0.0.1:PORT/mcp.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

PEERS_DIR = Path(__file__).resolve().parent / "peers"
VENVS_DIR = PEERS_DIR / ".venvs"
NODE_MODULES = PEERS_DIR / "node_modules"
HOST = "127.0.0.1"

JS_CLIENTS = ("sdk-1.10.2", "sdk-1.12.3", "sdk-1.13.0", "sdk-1.25.0")
JS_CLIENTS_EXTRA = ("client-2.4.0",)
PY_SERVER_VERSION = "2.3.0"
PY_CLIENTS = ("1.8.1", "1.9.4", "1.12.4")
# scenarios.json client names, oldest revision first within each SDK family.
CLIENTS = (*JS_CLIENTS, *(f"mcp-{v}" for v in PY_CLIENTS))
CLIENTS_EXTRA = (*JS_CLIENTS_EXTRA, f"mcp-{PY_SERVER_VERSION}")
#: PyPI mcp releases with the HTTP+SSE client transport only (no Streamable HTTP): tests/e2e/test_http_sse_bridge.py
SSE_ONLY_PY_CLIENTS = ("1.6.0",)
#: released third-party clients (tests/peers/tp_client.py), each in its own venv .venvs/<name>
TP_CLIENTS = (
    "fastmcp-2.3.4",
    "fastmcp-2.10.6",
    "langchain-mcp-adapters-0.1.7",
    "pydantic-ai-slim-0.4.4",
    "openai-agents-0.0.19",
)

_PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
_live: list[PeerServer] = []


class PeerError(RuntimeError):
    """A peer could not be started or gave no usable answer."""


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def peers_missing() -> list[str]:
    """Paths that scripts/setup_peers.sh should have made; [] when all peers are installed."""
    need = [NODE_MODULES / "@modelcontextprotocol" / "server-everything", *(NODE_MODULES / a for a in JS_CLIENTS)]
    need += [VENVS_DIR / f"mcp-{v}" / "bin" / "python" for v in (*PY_CLIENTS, *SSE_ONLY_PY_CLIENTS, PY_SERVER_VERSION)]
    need.append(VENVS_DIR / FASTMCP_SERVER / "bin" / "python")
    return [str(p) for p in need if not p.exists()]


def require(missing: list[str], fix: str = "run scripts/setup.sh") -> None:
    """Fail the test (under CI or MCPX_REQUIRE_PEERS=1) or skip it when anything is `missing`."""
    if not missing:
        return
    import pytest

    if os.environ.get("CI") or os.environ.get("MCPX_REQUIRE_PEERS"):
        pytest.fail(f"test peers missing: {missing}; {fix}")
    pytest.skip(f"test peers missing: {missing}; {fix}")


def _node() -> str:
    node = shutil.which("node")
    if not node:
        raise PeerError("node not found on PATH")
    return node


def tp_missing() -> list[str]:
    """Venvs of the third-party clients that scripts/setup_peers.sh should have made; [] when all are there."""
    return [str(p) for p in (VENVS_DIR / n / "bin" / "python" for n in TP_CLIENTS) if not p.exists()]


def _venv_python(version: str) -> Path:
    name = version if version in TP_CLIENTS else f"mcp-{version}"
    py = VENVS_DIR / name / "bin" / "python"
    if not py.exists():
        raise PeerError(f"{py} missing: run scripts/setup_peers.sh")
    return py


def _minimal_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    # Servers get almost nothing: the everything server's get-env tool returns its env.
    env = {"PATH": os.pathsep.join([str(Path(_node()).parent), "/usr/bin", "/bin"]), "LANG": "C.UTF-8"}
    env.update(extra or {})
    return env


def _client_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in _PROXY_VARS}
    env.update(extra or {})
    return env


class PeerServer:
    """A running server subprocess: .url, .port, .proc, .log_path, .stop(); a context manager."""

    def __init__(self, name: str, port: int, proc: subprocess.Popen[bytes], log_path: Path) -> None:
        self.name, self.port, self.proc, self.log_path = name, port, proc, log_path
        self.host = HOST
        self.url = f"http://{HOST}:{port}/mcp"

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self in _live:
            _live.remove(self)
        self.log_path.unlink(missing_ok=True)  # read .log() before .stop() if needed

    def __enter__(self) -> PeerServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<PeerServer {self.name} {self.url} pid={self.proc.pid}>"


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
        return True


def _wait_listening(proc: subprocess.Popen[bytes], port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                pass
        except OSError:
            time.sleep(0.05)
            continue
        time.sleep(0.1)  # a server that lost the port race exits right away
        return proc.poll() is None
    return False


def _start(name: str, argv_for_port: Any, port: int | None, env: dict[str, str], timeout: float) -> PeerServer:
    attempts = 1 if port is not None else 3  # a picked free port can be taken meanwhile: retry
    last = ""
    for _ in range(attempts):
        p = port if port is not None else free_port()
        if not _port_free(p):
            last = f"port {p} is already in use"
            continue
        fd, log_name = tempfile.mkstemp(prefix=f"mcpx-{name}-", suffix=".log")
        with os.fdopen(fd, "wb") as log:
            proc = subprocess.Popen(
                argv_for_port(p), cwd=PEERS_DIR, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        server = PeerServer(name, p, proc, Path(log_name))
        if _wait_listening(proc, p, timeout):
            _live.append(server)
            return server
        if server.alive():
            server.proc.kill()
            server.proc.wait()
        last = server.log()
        server.stop()
    raise PeerError(f"{name} server did not start listening:\n{last[-2000:]}")


def start_everything_server(port: int | None = None, timeout: float = 20.0, transport: str = "streamableHttp") -> PeerServer:
    """npm @modelcontextprotocol/server-everything, minimal env: Streamable HTTP at /mcp, or with
    ``transport="sse"`` the HTTP+SSE (2024-11-05) transport only (.url its SSE endpoint, GET /sse)."""
    script = PEERS_DIR / "everything_server.cjs"
    node = _node()
    if transport == "sse":
        server = _start("everything-sse", lambda p: [node, str(script), str(p), "sse"], port, _minimal_env(), timeout)
        server.url = f"http://{HOST}:{server.port}/sse"
        return server
    return _start("everything", lambda p: [node, str(script), str(p)], port, _minimal_env(), timeout)


def start_py_server(
    port: int | None = None,
    timeout: float = 30.0,
    stateless: bool = False,
    json_response: bool = False,
    only_2026: bool = False,
    mrtr_tools: bool | None = None,
    path: str | None = None,
) -> PeerServer:
    """tests/peers/py_server.py on PyPI mcp==2.3.0, Streamable HTTP, minimal env.

    ``path``: the Streamable HTTP endpoint's path (default ``/mcp``), e.g. ``/prefix/mcp``.

    ``stateless``: no Mcp-Session-Id (MCPServer stateless_http); ``json_response``: application/json
    answers instead of SSE streams (except subscriptions/listen, always SSE).
    ``mrtr_tools``: also serve the client-input tools, prompt and resource template and the
    change-notification tools of py_server_mrtr.py (mrtr_elicit, mrtr_sample, mrtr_roots, mrtr_all,
    mrtr_two_rounds, mrtr_prompt, resource://mrtr/{item}, add_dynamic_tool, touch_resource); off by
    default so the default server's lists stay as scenarios.json expects.
    ``only_2026``: a 2026-07-28-only server (implies ``mrtr_tools``): the same SDK server behind
    py_server_mrtr.Only2026Gate, which refuses all legacy traffic (initialize -> 400/-32022,
    GET/DELETE -> 405, no _meta -> 400/-32602); 2026-07-28 requests reach the SDK unchanged."""
    py = _venv_python(PY_SERVER_VERSION)
    script = PEERS_DIR / "py_server.py"
    env = _minimal_env({"PYTHONUNBUFFERED": "1"})
    flags = (["--stateless"] if stateless else []) + (["--json"] if json_response else [])
    if only_2026:
        flags.append("--only-2026")
    elif mrtr_tools:
        flags.append("--mrtr-tools")
    if path is not None:
        flags += ["--path", path]
    name = "py-2026" if only_2026 else "py"
    return _start(name, lambda p: [str(py), str(script), str(p), *flags], port, env, timeout)


FASTMCP_SERVER = "fastmcp-4.1.6"


def start_fastmcp_server(port: int | None = None, timeout: float = 30.0) -> PeerServer:
    """tests/peers/fastmcp_server.py on fastmcp==4.1.6: a current fastmcp server, Streamable HTTP only, at /mcp."""
    py = VENVS_DIR / FASTMCP_SERVER / "bin" / "python"
    env = _minimal_env({"PYTHONUNBUFFERED": "1"})
    return _start("fastmcp", lambda p: [str(py), str(PEERS_DIR / "fastmcp_server.py"), str(p)], port, env, timeout)


def start_sse_server(port: int | None = None, timeout: float = 30.0, sse_path: str = "/sse") -> PeerServer:
    """tests/peers/sse_server.py on PyPI mcp==1.8.1: an HTTP+SSE (2024-11-05 transport) server only,
    GET /sse (or ``sse_path``) and POST /messages/ (.url is its SSE endpoint)."""
    py = _venv_python("1.8.1")
    env = _minimal_env({"PYTHONUNBUFFERED": "1"})
    server = _start("sse", lambda p: [str(py), str(PEERS_DIR / "sse_server.py"), str(p), sse_path], port, env, timeout)
    server.url = f"http://{HOST}:{server.port}{sse_path}"
    return server


def start_two_marker_server(
    port: int | None = None, timeout: float = 30.0, stateless: bool = False, json_response: bool = False
) -> PeerServer:
    """tests/peers/two_marker_server.py on PyPI mcp==2.3.0: tools search_with_schema (outputSchema)
    and search_no_schema, whose text says MARKER-A and whose structuredContent carries MARKER-B
    (field next_cursor). Same flags as start_py_server."""
    py = _venv_python(PY_SERVER_VERSION)
    script = PEERS_DIR / "two_marker_server.py"
    env = _minimal_env({"PYTHONUNBUFFERED": "1"})
    flags = (["--stateless"] if stateless else []) + (["--json"] if json_response else [])
    return _start("two-marker", lambda p: [str(py), str(script), str(p), *flags], port, env, timeout)


def _run_client(argv: list[str], ops: list[dict[str, Any]], timeout: float, env: dict[str, str]) -> dict[str, Any]:
    try:
        cp = subprocess.run(
            argv, input=json.dumps(ops).encode(), capture_output=True, timeout=timeout, cwd=PEERS_DIR, env=env
        )
    except subprocess.TimeoutExpired as exc:
        raise PeerError(f"client timed out after {timeout}s: {argv[:3]}\n{(exc.stderr or b'')[-2000:]!r}") from exc
    # (LF only: str.splitlines also splits at U+2028, which JSON.stringify leaves raw inside a string)
    lines = [ln for ln in cp.stdout.decode(errors="replace").split("\n") if ln.strip()]
    try:
        out = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError) as exc:
        raise PeerError(
            f"client gave no JSON (rc={cp.returncode}): {argv[:3]}\n"
            f"stdout: {cp.stdout[-1000:]!r}\nstderr: {cp.stderr[-2000:]!r}"
        ) from exc
    out["returncode"] = cp.returncode
    out["stderr"] = cp.stderr.decode(errors="replace")[-4000:]
    return out


def run_js_client(
    alias: str,
    url: str,
    ops: list[dict[str, Any]],
    timeout: float = 60,
    options: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run tests/peers/js_client.mjs with SDK `alias` (e.g. "sdk-1.10.2", "client-2.4.0").

    Returns its JSON report: {"protocolVersion", "results": [{"op","ok","result"|"error"}],
    "serverRequests", "returncode", "stderr"}; on connection failure "error" is set and
    returncode is 2. `options` e.g. {"elicitation": "decline"}; `env` adds variables
    (proxy variables are otherwise removed).
    """
    argv = [_node(), str(PEERS_DIR / "js_client.mjs"), alias, url, "-"]
    if options:
        argv.append(json.dumps(options))
    return _run_client(argv, ops, timeout, _client_env(env))


def run_py_client(
    version: str,
    url: str,
    ops: list[dict[str, Any]],
    timeout: float = 60,
    options: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run tests/peers/py_client.py in venv mcp-<version> (e.g. "1.8.1"); same report as run_js_client."""
    version = version.removeprefix("mcp-")
    argv = [str(_venv_python(version)), str(PEERS_DIR / "py_client.py"), url, "-"]
    if options:
        argv.append(json.dumps(options))
    return _run_client(argv, ops, timeout, _client_env({"PYTHONUNBUFFERED": "1", **(env or {})}))


def run_tp_client(
    name: str,
    url: str,
    ops: list[dict[str, Any]],
    timeout: float = 90,
    options: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run tests/peers/tp_client.py for third-party client `name` (one of TP_CLIENTS, e.g.
    "fastmcp-2.10.6") in its venv .venvs/<name>, through the library's own high-level API.

    Same report as run_py_client, plus "client", "library", "clientInfo", "initializeCount" and
    "protocolVersionSource". Ops the library has no API for come back {"ok": false, "errorType":
    "NoAPI"}; scenario_ops(server, name) leaves them out. `options` e.g. {"langchain": "per-call"}.
    """
    if name not in TP_CLIENTS:
        raise PeerError(f"unknown third-party client {name!r}: one of {TP_CLIENTS}")
    argv = [str(_venv_python(name)), str(PEERS_DIR / "tp_client.py"), name, url, "-"]
    if options:
        argv.append(json.dumps(options))
    return _run_client(argv, ops, timeout, _client_env({"PYTHONUNBUFFERED": "1", **(env or {})}))


def run_client(client: str, url: str, ops: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    """Dispatch on a scenarios.json client name: "sdk-1.10.2", "client-2.4.0", "mcp-1.8.1" or a
    third-party client such as "fastmcp-2.10.6"."""
    if client in TP_CLIENTS:
        return run_tp_client(client, url, ops, **kw)
    if client.startswith("mcp-"):
        return run_py_client(client, url, ops, **kw)
    return run_js_client(client, url, ops, **kw)


# --- 2026-07-28 peers (see tests/peers/BRIDGING.md) ----------------------------------------

CLIENT_2026 = "client-2.4.0"
PIN_2026: dict[str, Any] = {"versionNegotiation": "pin:2026-07-28"}
TEST_ROOTS = [{"uri": "file:///tmp/mcpx-root", "name": "mcpx root"}]

# Ops that need client input (one per multi-round-trip kind) and a listen stream, for the
# --mrtr-tools / --only-2026 py server ("requires": the rarest client capability the op needs;
# mrtr-all needs elicitation, sampling and roots); MRTR_EXPECTED: the text each op's result must carry
# (content[0].text, messages[0].content.text or contents[0].text) for a client run with
# client_2026_options() (elicitation "accept" -> name "Test User", the fixed sampling reply, TEST_ROOTS).
MRTR_OPS: list[dict[str, Any]] = [
    {"id": "mrtr-elicit", "op": "callTool", "name": "mrtr_elicit", "arguments": {}, "requires": "elicitation"},
    {"id": "mrtr-sample", "op": "callTool", "name": "mrtr_sample", "arguments": {"topic": "x"}, "requires": "sampling"},
    {"id": "mrtr-roots", "op": "callTool", "name": "mrtr_roots", "arguments": {}, "requires": "roots"},
    {"id": "mrtr-all", "op": "callTool", "name": "mrtr_all", "arguments": {}, "requires": "roots"},
    {"id": "mrtr-two-rounds", "op": "callTool", "name": "mrtr_two_rounds", "arguments": {}, "requires": "elicitation"},
    {"id": "mrtr-prompt", "op": "getPrompt", "name": "mrtr_prompt", "arguments": {}, "requires": "elicitation"},
    {"id": "mrtr-resource", "op": "readResource", "uri": "resource://mrtr/7", "requires": "roots"},
]
MRTR_EXPECTED = {
    "mrtr-elicit": "Hello, Test User!",
    "mrtr-sample": "sampled (mcpx-test-model): mcpx test sampling reply",
    "mrtr-roots": "roots: file:///tmp/mcpx-root",
    "mrtr-all": "name: Test User; sampled: mcpx test sampling reply; roots: file:///tmp/mcpx-root",
    "mrtr-two-rounds": "greeting: mcpx test sampling reply",
    "mrtr-prompt": "Tell me about test.",
    "mrtr-resource": "item 7 under file:///tmp/mcpx-root",
}
LISTEN_OPS: list[dict[str, Any]] = [
    {"id": "listen", "op": "listen", "filter": {"toolsListChanged": True, "resourceSubscriptions": ["resource://greeting"]}},
    {"id": "add-dynamic-tool", "op": "callTool", "name": "add_dynamic_tool", "arguments": {"name": "dynamic_echo"}},
    {"id": "wait-tools-changed", "op": "waitNotification", "method": "notifications/tools/list_changed"},
    {"id": "touch-resource", "op": "callTool", "name": "touch_resource", "arguments": {"uri": "resource://greeting"}},
    {"id": "wait-resource-updated", "op": "waitNotification", "method": "notifications/resources/updated"},
    {"id": "unlisten", "op": "unlisten"},
]


def client_2026_options(**extra: Any) -> dict[str, Any]:
    """js_client.mjs options for client-2.4.0 pinned to 2026-07-28 with roots (plus ``extra``)."""
    return {**PIN_2026, "roots": TEST_ROOTS, **extra}


def run_client_2026(url: str, ops: list[dict[str, Any]], options: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """@modelcontextprotocol/client@2.4.0 pinned to 2026-07-28 (server/discover at connect, then
    per-request _meta; input_required results auto-fulfilled through its handlers); ``options``
    are added to client_2026_options()."""
    return run_js_client(CLIENT_2026, url, ops, options=client_2026_options(**(options or {})), **kw)


def result_text(entry: dict[str, Any]) -> str | None:
    """The first text of a report entry's result (tool content, prompt message or resource contents)."""
    result = entry.get("result") or {}
    try:
        if "content" in result:
            return result["content"][0]["text"]
        if "messages" in result:
            return result["messages"][0]["content"]["text"]
        return result["contents"][0]["text"]
    except (KeyError, IndexError, TypeError):
        return None


def load_scenarios() -> dict[str, Any]:
    return json.loads((PEERS_DIR / "scenarios.json").read_text())


#: server variants that run another server's scenario ops (same server, other transport options)
SCENARIO_OF = {"py-stateless": "py"}


def scenario_ops(server: str, client: str | None = None) -> list[dict[str, Any]]:
    """Ops of scenarios.json for server "everything", "py" or "py-stateless" (the py ops), without those needing a
    capability that `client` (a scenarios.json client name) lacks, and without the op kinds the
    client has no API for (its "unsupported" list: third-party clients)."""
    sc = load_scenarios()
    caps = sc["clients"].get(client, {}) if client else {}
    unsupported = set(caps.get("unsupported", ()))
    ops = []
    for op in sc["servers"][SCENARIO_OF.get(server, server)]["ops"]:
        req = op.get("requires")
        if req and client and not caps.get(req, False):
            continue
        if op["op"] in unsupported:
            continue
        ops.append(op)
    return ops


def verdict(entry: dict[str, Any]) -> str:
    """"ok", "FAIL" (the SDK call threw) or "isError" (result.isError) for one report entry."""
    if not entry.get("ok"):
        return "FAIL"
    result = entry.get("result")
    return "isError" if isinstance(result, dict) and result.get("isError") else "ok"


def verdicts(report: dict[str, Any]) -> dict[str, str]:
    """{op id: verdict} for a client report (ops need an "id", as in scenarios.json)."""
    return {e.get("id") or e["op"]: verdict(e) for e in report.get("results", [])}


def expected_verdicts(server: str, client: str, direct: bool = True) -> dict[str, str]:
    """Verdicts scenario_ops(server, client) gives with no proxy (direct=True), or through mcpx
    (direct=False): all "ok" but for the "mcpx_failures" of scenarios.json (third-party clients'
    own limits at their own revision, which a proxy that delivers exactly that revision cannot lift)."""
    sc = load_scenarios()
    failures = sc["direct_failures" if direct else "mcpx_failures"].get(server, {}).get(client, {})
    return {op["id"]: failures.get(op["id"], "ok") for op in scenario_ops(server, client)}


@atexit.register
def _stop_all() -> None:
    for server in list(_live):
        server.stop()


@contextlib.contextmanager
def three_servers():
    """The npm everything server and the PyPI mcp 2.3.0 server, stateful (SSE) and stateless
    (JSON answers), started for a test module: {"everything": ..., "py": ..., "py-stateless": ...}."""
    ev = start_everything_server()
    py = start_py_server()
    stateless = start_py_server(stateless=True, json_response=True)
    try:
        yield {"everything": ev, "py": py, "py-stateless": stateless}
    finally:
        ev.stop()
        py.stop()
        stateless.stop()
