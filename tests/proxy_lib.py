"""Start the real product for tests: ``mitmdump -s addon/mcpx.py --mode reverse:...`` on loopback."""
from __future__ import annotations

import http.client
import os
import pathlib
import socket
import subprocess
import sys
import time
from typing import Any

import orjson

import mitmdump_fork

ROOT = pathlib.Path(__file__).resolve().parents[1]
ADDON = ROOT / "addon" / "mcpx.py"


def mitmdump_bin() -> str:
    cand = pathlib.Path(sys.executable).with_name("mitmdump")
    return str(cand) if cand.exists() else "mitmdump"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proxy:
    """A running mitmdump; ``url`` is the MCP endpoint through it, ``changes()`` the JSONL records."""

    def __init__(self, upstream: str, workdir: pathlib.Path, path: str = "/mcp", script: bool = True,
                 options: dict[str, Any] | None = None, save: bool = True, scripts: tuple[str, ...] = (),
                 mode: str | None = None, port: int | None = None, tag: str = "",
                 mitmdump: str | None = None, addon: pathlib.Path | str | None = None, cwd: pathlib.Path | None = None,
                 wait: bool = True):
        """``options`` may override the defaults below (e.g. termlog_verbosity); ``scripts`` are
        further addon scripts loaded after mcpx; ``mode``: a mitmproxy mode instead of
        ``reverse:{upstream}`` (e.g. ``upstream:http://...``, ``regular``); ``port``: listen on this
        port (e.g. a restart on the port of a stopped proxy); ``tag``: names this process's files.
        ``mitmdump``, ``addon``, ``cwd``: another mitmdump binary, addon file and working directory
        (default: this venv's, addon/mcpx.py, the checkout). ``wait=False``: return once started, and
        call :meth:`wait_ready` (several proxies start side by side)."""
        self.port = port or free_port()
        self.workdir = workdir
        name = f"{self.port}{tag}"
        self.log_path = workdir / f"changes-{name}.jsonl"
        self.flows_path = workdir / f"flows-{name}.mitm"
        self.out_path = workdir / f"mitmdump-{name}.log"
        argv = [mitmdump or mitmdump_bin(), "--mode", mode or f"reverse:{upstream}", "--listen-host", "127.0.0.1", "-p", str(self.port)]
        opts: dict[str, Any] = {"connection_strategy": "lazy", "termlog_verbosity": "info", "flow_detail": 0}
        #: the file with the keys that seal session ids (one per workdir: replicas of a test share it)
        self.key_path = workdir / "mcpx-session.key"
        if script:
            argv += ["-s", str(addon or ADDON)]
            opts["mcpx_log"] = self.log_path
            # a test stops mitmdump with SIGTERM: no drain (addons/drain.py), whatever is still in flight
            opts["mcpx_drain_grace"] = "0s"
            if "mcpx_session_keys" not in (options or {}):
                if not self.key_path.exists():
                    _write_key(self.key_path)
                opts["mcpx_session_keys"] = self.key_path
        for extra in scripts:
            argv += ["-s", str(extra)]
        if save:
            argv += ["-w", str(self.flows_path)]
        opts.update(options or {})
        for k, v in opts.items():
            if v is not None:  # None: not set (e.g. connection_strategy as the README's command line leaves it)
                argv += ["--set", f"{k}={v}"]
        self._out = open(self.out_path, "wb")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if mitmdump is None and mitmdump_fork.ENABLED:  # this venv's mitmdump, forked with mitmproxy imported
            self.proc = mitmdump_fork.spawn(argv, str(cwd or ROOT), env, self.out_path)
        else:
            self.proc = subprocess.Popen(argv, stdout=self._out, stderr=subprocess.STDOUT, cwd=str(cwd or ROOT), env=env)
        self.url = f"http://127.0.0.1:{self.port}{path}"
        # the line that says it started; below info (e.g. termlog_verbosity=warn) none: a connection is
        self._ready = ("mcpx ready" if script else "listening at") if opts["termlog_verbosity"] in ("info", "debug") else None
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Wait until mitmdump listens and every addon has started (or raise with its output)."""
        deadline = time.time() + 30
        # mitmproxy listens before every addon's `running` hook has run (tlsconfig loads its certificate
        # store there): a request in that window fails, and mitmdump exits on an error logged at start-up,
        # right after the hooks. mcpx's hook runs last and logs "mcpx ready" (without mcpx: mitmproxy's
        # "listening at" line); then the process must still be there.
        while not self._started():
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                raise RuntimeError(f"mitmdump did not start (exit {self.proc.returncode}): {self.output()}")
            time.sleep(0.02)
        time.sleep(0.05)
        if self.proc.poll() is not None:
            raise RuntimeError(f"mitmdump exited at start-up ({self.proc.returncode}): {self.output()}")

    def _started(self) -> bool:
        if self._ready is not None:
            return self._ready in self.output()
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                time.sleep(0.5)  # listening: the addons' running hooks follow
                return True
        except OSError:
            return False

    def output(self) -> str:
        return self.out_path.read_text(errors="replace") if self.out_path.exists() else ""

    def handle(self, session_id: str | None) -> str | None:
        """The session handle change records name for a client's ``Mcp-Session-Id`` (a sealed
        token is opened with this proxy's key file; any other id is its own handle)."""
        if not session_id or not session_id.startswith("mcpx1."):
            return session_id
        from mcpx_core import seal
        return seal.Sealer(seal.read_key_file(str(self.key_path))).open(session_id).sid

    def session_changes(self, session_id: str | None) -> list[dict]:
        """The change records of the session a client knows as ``session_id``."""
        h = self.handle(session_id)
        return [r for r in self.changes() if r["session"] == h]

    def changes(self) -> list[dict]:
        if not self.log_path.exists():
            return []
        return [orjson.loads(line) for line in self.log_path.read_bytes().splitlines() if line.strip()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()

    def flows(self) -> list:
        """The flows mitmdump wrote with -w (call after stop())."""
        from mitmproxy import io
        with open(self.flows_path, "rb") as fh:
            return list(io.FlowReader(fh).stream())

    def __enter__(self) -> "Proxy":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _write_key(path: pathlib.Path) -> None:
    import base64
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(base64.b64encode(os.urandom(32)) + b"\n")


class LoopbackServer:
    """A stdlib HTTP server on a free 127.0.0.1 port in a thread (for tests that control timing or faults)."""

    def __init__(self, handler):
        import http.server
        import threading
        self.port = free_port()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def serve(handler, *emptied: str):
    """The body of a scripted server's fixture (``yield from serve(Handler, "seen")``): the class
    lists of ``handler`` named in ``emptied`` emptied, a :class:`LoopbackServer` started, its port
    yielded, the server stopped after the test."""
    for name in emptied:
        setattr(handler, name, [])
    srv = LoopbackServer(handler)
    try:
        yield srv.port
    finally:
        srv.stop()


import http.server as _http_server  # noqa: E402


class ScriptedMcpHandler(_http_server.BaseHTTPRequestHandler):
    """Base of the small scripted upstreams that control timing: answers ``initialize`` with
    ``SERVER_INFO`` and session ``SESSION`` (echoing the client's revision unless ``REVISION`` is
    set), and hands every other POST body to :meth:`answer`, which streams with :meth:`start_sse`
    and :meth:`chunk` (HTTP/1.1 chunked; ``chunk(b"")`` ends the body)."""

    protocol_version = "HTTP/1.1"
    SERVER_INFO: dict = {"name": "scripted", "version": "1"}
    SESSION = "scripted-1"
    REVISION: str | None = None

    def log_message(self, *a):
        pass

    def do_POST(self):
        import json
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))  # stdlib: integers stay exact
        if body.get("method") != "initialize":
            self.answer(body)
            return
        out = orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
            "protocolVersion": self.REVISION or body["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": self.SERVER_INFO}})
        self.send_json(out, {"mcp-session-id": self.SESSION})

    def send_json(self, out: bytes, headers: dict[str, str] | None = None, status: int = 200) -> None:
        """Answer with the JSON body ``out`` (Content-Length set) and ``headers``."""
        self.send_response(status)
        self.send_header("content-type", "application/json")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def send_accepted(self) -> None:
        """202 Accepted with no body: the answer to a notification or a response."""
        self.send_response(202)
        self.send_header("content-length", "0")
        self.end_headers()

    def answer(self, body: dict) -> None:
        raise NotImplementedError

    def start_sse(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


# -- a raw MCP client (JSON-RPC over HTTP/1.1, no SDK): for tests that control every byte ----------
ACCEPT = "application/json, text/event-stream"


def initialize_msg(revision: str, rid: Any = 0, name: str = "reliability") -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": {
        "protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}}


def sse_events(body: bytes) -> list[dict]:
    """Every SSE event of a complete body: {"id", "event", "data", "lines"} (stdlib parse, LF/CRLF/CR)."""
    out = []
    text = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    for block in text.split(b"\n\n"):
        if not block.strip(b"\n"):
            continue
        ev: dict[str, Any] = {"lines": block.split(b"\n"), "data": None, "id": None, "event": None}
        data = []
        for line in ev["lines"]:
            if line.startswith(b":"):
                continue
            name, _, value = line.partition(b":")
            value = value[1:] if value.startswith(b" ") else value
            if name == b"data":
                data.append(value)
            elif name in (b"id", b"event"):
                ev[name.decode()] = value.decode()
        if data:
            ev["data"] = b"\n".join(data).decode()
        out.append(ev)
    return out


def messages_of(content_type: str, body: bytes) -> list[dict]:
    """The JSON-RPC messages a response body delivers (JSON body or SSE events)."""
    if not body:
        return []
    if content_type.startswith("text/event-stream"):
        msgs = []
        for ev in sse_events(body):
            if ev["data"] and ev["data"].strip():
                v = orjson.loads(ev["data"])
                msgs.extend(v if isinstance(v, list) else [v])
        return msgs
    v = orjson.loads(body)
    return v if isinstance(v, list) else [v]


class Client:
    """One MCP client over one keep-alive HTTP/1.1 connection (http.client), raw JSON-RPC."""

    def __init__(self, port: int, path: str = "/mcp", timeout: float = 30, headers: dict | None = None):
        self.port, self.path, self.timeout = port, path, timeout
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.session: str | None = None
        self.revision: str | None = None
        self.extra = headers or {}

    def headers(self, extra: dict | None = None) -> dict:
        h = {"content-type": "application/json", "accept": ACCEPT, **self.extra}
        if self.session:
            h["mcp-session-id"] = self.session
        if self.revision and self.revision >= "2025-06-18":
            h["mcp-protocol-version"] = self.revision
        h.update(extra or {})
        return h

    def post(self, message: Any, extra: dict | None = None, raw: bytes | None = None) -> tuple[int, dict, bytes]:
        body = raw if raw is not None else orjson.dumps(message)
        for attempt in (0, 1):
            try:
                self.conn.request("POST", self.path, body, self.headers(extra))
                r = self.conn.getresponse()
                data = r.read()
                return r.status, {k.lower(): v for k, v in r.getheaders()}, data
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # the proxy closed an idle keep-alive connection: reconnect once
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def rpc(self, message: Any, extra: dict | None = None) -> tuple[int, dict, list[dict]]:
        status, headers, body = self.post(message, extra)
        return status, headers, messages_of(headers.get("content-type", ""), body)

    def initialize(self, revision: str, name: str = "reliability") -> dict:
        status, headers, msgs = self.rpc(initialize_msg(revision, name=name))
        assert status == 200, (status, msgs)
        self.session = headers.get("mcp-session-id")
        result = msgs[-1]["result"]
        self.revision = result["protocolVersion"]
        status, _, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status in (200, 202), status
        return result

    def close(self) -> None:
        self.conn.close()


def orjson_error(data: bytes) -> str:
    """The message orjson gives for ``data`` that does not parse (what a passthrough record's detail quotes)."""
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError as e:
        return str(e)
    raise AssertionError("parses")
