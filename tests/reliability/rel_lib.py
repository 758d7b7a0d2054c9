"""Helpers of the reliability suite (tests/reliability/): budgets, figures, raw MCP over HTTP.

Budgets: the normal run is bounded (a few hundred fuzz examples per property, 50 sessions x 200
calls under load); ``MCPX_LONG=1`` runs the long version (more examples, a bigger load);
``MCPX_FUZZ_EXAMPLES=N`` sets the examples per property.

Figures: tests add what they measured with :func:`count` / :func:`figure`; the ``figures``
fixture (module scope, autouse where imported) prints them and merges them into
``test-output/reliability-figures.json`` (or ``$MCPX_FIGURES``), which the README's reliability
section quotes.
(No conftest.py here: a second non-package conftest would shadow tests/conftest.py.)
"""
from __future__ import annotations

import http.client
import json
import os
import pathlib
import threading
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, settings

from proxy_lib import Proxy, free_port

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROBE = pathlib.Path(__file__).resolve().with_name("probe_addon.py")
FIGURES_FILE = pathlib.Path(os.environ.get("MCPX_FIGURES") or ROOT / "test-output" / "reliability-figures.json")

LONG = os.environ.get("MCPX_LONG", "") not in ("", "0")
EXAMPLES = int(os.environ.get("MCPX_FUZZ_EXAMPLES", 4000 if LONG else 200))

#: hypothesis settings of the fuzz properties: no example database (nothing written to the tree),
#: no per-example deadline (CI machines vary), a bounded number of examples.
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

FIGURES: dict[str, Any] = {}
_lock = threading.Lock()


def count(name: str, n: int = 1) -> None:
    with _lock:
        FIGURES[name] = FIGURES.get(name, 0) + n


def figure(name: str, value: Any) -> None:
    with _lock:
        FIGURES[name] = value


@pytest.fixture(scope="module", autouse=True)
def figures(request):
    """Print this module's figures at its end and merge them into FIGURES_FILE."""
    FIGURES.clear()
    yield FIGURES
    if not FIGURES:
        return
    tr = request.config.pluginmanager.get_plugin("terminalreporter")
    capman = request.config.pluginmanager.get_plugin("capturemanager")
    if tr is not None and capman is not None:
        with capman.global_and_fixture_disabled():
            tr.write_line("")
            for k in sorted(FIGURES):
                tr.write_line(f"  [figure] {k}: {FIGURES[k]}")
    FIGURES_FILE.parent.mkdir(exist_ok=True)
    old = {}
    if FIGURES_FILE.exists():
        try:
            old = json.loads(FIGURES_FILE.read_text())
        except ValueError:
            old = {}
    old.update(FIGURES)
    FIGURES_FILE.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")


# -- raw MCP over HTTP (stdlib) ------------------------------------------------------------------
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


def probed_proxy(upstream: str, workdir: pathlib.Path, **kw) -> Proxy:
    """The real mitmdump + mcpx (proxy_lib.Proxy), with probe_addon.py listening on ``.probe_port``."""
    port = free_port()
    px = Proxy(upstream, workdir, scripts=(str(PROBE),), options={**kw.pop("options", {}), "probe_port": port}, **kw)
    px.probe_port = port
    return px


def probe(px: Proxy, collect: bool = False) -> dict:
    """The mcpx addon's state inside a running mitmdump started by :func:`probed_proxy`."""
    c = http.client.HTTPConnection("127.0.0.1", px.probe_port, timeout=10)
    c.request("GET", "/?gc=1" if collect else "/")
    r = c.getresponse()
    data = r.read()
    c.close()
    assert r.status == 200, data
    return orjson.loads(data)


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB, from /proc/PID/status."""
    vals = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            vals[k] = int(v.split()[0])
    return vals["VmRSS"], vals["VmHWM"]

