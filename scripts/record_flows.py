"""Re-record the flow files in flows/ from the real MCP peers (tests/peers/), without mcpx.

    .venv/bin/python scripts/record_flows.py            # all recordings
    .venv/bin/python scripts/record_flows.py NAME ...   # only these (see --list)
    .venv/bin/python scripts/record_flows.py --import SESSION.mitm NAME  # your own recording
    .venv/bin/python scripts/update_goldens.py          # then rewrite the golden files

Each recording starts a real server (the npm everything server or the PyPI mcp 2.3.0 server of
tests/peers/) and a bare ``mitmdump --mode reverse:... -s scripts/record_tap.py -w FILE`` in
front of it (no mcpx: the flows hold what the peers really send), and drives one real SDK client
through it with the scenario ops of tests/peers/scenarios.json (or raw stdlib POSTs, for what no
SDK sends: a 2025-03-26 batch). record_tap.py only streams SSE responses through unchanged and
keeps a copy of them (see there why plain ``-w`` cannot record sampling or elicitation).

The captured flows are then normalised and written to flows/NAME.mitm with
``mitmproxy.io.FlowWriter``, so that a re-recording only differs where the peers' answers do:

- flows are sorted by request start (the order the client sent them; -w writes them as they
  complete, so a tool call would come after the client's answer to its sampling request);
- flow and session ids, UUIDs (SSE event ids), timestamps, ``Date`` headers, and ISO dates and
  clock times ("11:40:08 PM") inside bodies, also inside base64 ``blob`` values, get fixed values
  of the same length, in order of first appearance: the n-th UUID becomes
  ``00000000-0000-4000-8000-<n>``, a clock time ``00:00:00 AM``;
- all flows come from one client connection, 127.0.0.1:40001 (which pooled connection an SDK
  client picks for a request varies from run to run; mcpx keys sessions by ``Mcp-Session-Id``);
- the upstream is always ``127.0.0.1:3001`` and the proxy ``127.0.0.1:8080``;
- a "Client disconnected." error on a flow that has its response is dropped: SDK clients close an
  SSE response once its last event is read, sooner or later than the server ends it.

Needs the peers (scripts/setup_peers.sh). Takes about 30 s.
"""

from __future__ import annotations

import argparse
import base64
import json
import pathlib
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from http.client import HTTPConnection
from urllib.parse import urlsplit

ROOT = pathlib.Path(__file__).resolve().parents[1]
FLOWS = ROOT / "flows"
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "addon")]

import peers_lib  # noqa: E402
from mitmproxy import connection, http, io  # noqa: E402
from mitmproxy.proxy.mode_specs import ProxyMode  # noqa: E402
from proxy_lib import Proxy  # noqa: E402

UPSTREAM = ("127.0.0.1", 3001)
LISTEN = ("127.0.0.1", 8080)
T0 = 1767225600.0  # 2026-01-01T00:00:00Z: every flow's timestamps are T0 + its index
FIXED_DATE = "Thu, 01 Jan 2026 00:00:00 GMT"
#: the recording proxy's only script: streams SSE responses through unchanged and keeps them
RECORD_OPTIONS = {"scripts": str(ROOT / "scripts" / "record_tap.py")}
DISCONNECTED = "Client disconnected."


# -- servers ---------------------------------------------------------------------------------
def start_py_json_server() -> peers_lib.PeerServer:
    """tests/peers/py_server.py with ``json_response=True``: results come as application/json."""
    py = peers_lib.VENVS_DIR / f"mcp-{peers_lib.PY_SERVER_VERSION}" / "bin" / "python"
    code = ("import sys; sys.path.insert(0, '.'); import py_server; "
            "py_server.mcp.run('streamable-http', host='127.0.0.1', port=int(sys.argv[1]), json_response=True)")
    return peers_lib._start("py-json", lambda p: [str(py), "-c", code, str(p)], None,
                            peers_lib._minimal_env({"PYTHONUNBUFFERED": "1"}), 30.0)


SERVERS: dict[str, Callable[[], peers_lib.PeerServer]] = {
    "everything": peers_lib.start_everything_server,
    "py": peers_lib.start_py_server,
    "py-json": start_py_json_server,
}


# -- raw clients (what no SDK sends) ---------------------------------------------------------
class RawSession:
    """A minimal Streamable HTTP client on http.client: POST JSON, keep Mcp-Session-Id."""

    def __init__(self, url: str, protocol_version: str) -> None:
        u = urlsplit(url)
        self.host, self.port, self.path = u.hostname, u.port, u.path
        self.version = protocol_version
        self.session: str | None = None

    def send(self, method: str, payload: Any = None) -> tuple[int, bytes]:
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        if self.session:
            headers["mcp-session-id"] = self.session
        if self.session and self.version >= "2025-06-18":
            headers["mcp-protocol-version"] = self.version
        conn = HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request(method, self.path, body=None if payload is None else json.dumps(payload).encode(), headers=headers)
            resp = conn.getresponse()
            body = resp.read()
            self.session = self.session or resp.getheader("mcp-session-id")
            return resp.status, body
        finally:
            conn.close()

    def initialize(self, capabilities: dict | None = None) -> None:
        self.send("POST", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                           "params": {"protocolVersion": self.version, "capabilities": capabilities or {},
                                      "clientInfo": {"name": "mcpx-raw-client", "version": "1.0.0"}}})
        self.send("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call_answering(self, request: dict, answer: Callable[[dict], dict]) -> list[dict]:
        """POST ``request`` and read its SSE response event by event; answer each server request
        in it with ``answer(message)`` (a JSON-RPC response, POSTed at once) until the response
        to ``request`` arrives. Returns the messages received."""
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json",
                   "mcp-session-id": self.session or ""}
        conn = HTTPConnection(self.host, self.port, timeout=30)
        got: list[dict] = []
        try:
            conn.request("POST", self.path, body=json.dumps(request).encode(), headers=headers)
            resp = conn.getresponse()
            data: list[str] = []
            while True:
                line = resp.readline()
                if not line:
                    break
                line = line.decode().rstrip("\r\n")
                if line.startswith("data:"):
                    data.append(line[5:].lstrip(" "))
                    continue
                if line or not data:
                    continue
                msg, data = json.loads("\n".join(data)), []
                got.append(msg)
                if "method" in msg and "id" in msg:
                    self.send("POST", answer(msg))
                elif msg.get("id") == request["id"]:
                    break
        finally:
            conn.close()
        return got


def raw_batches(url: str) -> dict[str, Any]:
    """A 2025-03-26 session that sends a JSON-RPC batch (one server revision with batches), and a
    2025-06-18 session sending the same batch (mcpx would split it into single POSTs)."""
    out = {}
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get-resource-links", "arguments": {"count": 1}}},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
    ]
    for version in ("2025-03-26", "2025-06-18"):
        s = RawSession(url, version)
        s.initialize()
        out[version] = s.send("POST", batch)
        s.send("DELETE")
    return out


def raw_elicitation(url: str) -> Any:
    """A 2025-03-26 session whose client declares the elicitation capability (2025-06-18) and
    calls the everything server's elicitation tool: the server sends ``elicitation/create``, which
    2025-03-26 lacks; the client answers it as SDKs answer an unknown method (-32601)."""
    s = RawSession(url, "2025-03-26")
    s.initialize({"elicitation": {}})
    got = s.call_answering(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "trigger-elicitation-request", "arguments": {}}},
        lambda m: {"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "Method not found"}})
    s.send("DELETE")
    return got


# -- recordings ------------------------------------------------------------------------------
@dataclass
class Recording:
    """One flows/NAME.mitm: SERVER driven by CLIENT (a scenarios.json client) or by RAW."""

    name: str
    server: str
    client: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    raw: Callable[[str], Any] | None = None
    note: str = ""

    def ops(self) -> list[dict]:
        return peers_lib.scenario_ops("everything" if self.server == "everything" else "py", self.client)


RECORDINGS = [
    Recording("sdk-1.10.2_everything", "everything", "sdk-1.10.2", note="2024-11-05 JS client, SSE responses"),
    Recording("mcp-1.8.1_py", "py", "mcp-1.8.1", note="2024-11-05 Python client (no audio), SSE responses"),
    Recording("sdk-1.12.3_everything", "everything", "sdk-1.12.3", note="2025-03-26 JS client, SSE responses"),
    Recording("mcp-1.9.4_py-json", "py-json", "mcp-1.9.4", note="2025-03-26 Python client, application/json responses"),
    Recording("sdk-1.13.0_everything", "everything", "sdk-1.13.0", note="2025-06-18 JS client, sampling + multi-select elicitation"),
    Recording("mcp-1.12.4_py", "py", "mcp-1.12.4", note="2025-06-18 Python client, form elicitation"),
    Recording("sdk-1.25.0_everything", "everything", "sdk-1.25.0", note="2025-11-25 JS client"),
    Recording("client-2.4.0-auto_py", "py", "client-2.4.0", {"versionNegotiation": "auto"},
              note="2026-07-28 client (versionNegotiation auto) and server"),
    Recording("batch-2025-03-26_everything", "everything", raw=raw_batches,
              note="raw JSON-RPC batch in a 2025-03-26 and in a 2025-06-18 session"),
    Recording("batch-2025-03-26_py-json", "py-json", raw=raw_batches,
              note="the same batches to the mcp 2.3.0 server, which rejects them"),
    Recording("elicitation-2025-03-26_everything", "everything", raw=raw_elicitation,
              note="elicitation/create sent to a 2025-03-26 session (raw client)"),
]


def record(rec: Recording, server: peers_lib.PeerServer, workdir: pathlib.Path) -> list[http.HTTPFlow]:
    with Proxy(f"http://127.0.0.1:{server.port}", workdir, script=False, options=RECORD_OPTIONS) as px:
        if rec.raw is not None:
            rec.raw(px.url)
        else:
            report = peers_lib.run_client(rec.client, px.url, rec.ops(), options=rec.options or None)
            if report.get("returncode") != 0:
                raise SystemExit(f"{rec.name}: client failed: {report.get('error')}\n{report.get('stderr')}")
            bad = {k: v for k, v in peers_lib.verdicts(report).items() if v == "FAIL"}
            print(f"  {rec.name}: {report.get('protocolVersion')}, {len(report['results'])} ops"
                  f"{', failing directly: ' + ', '.join(bad) if bad else ''}")
        time.sleep(0.3)  # let the proxy finish writing streams the client closed
    return px.flows()


# -- normalisation ---------------------------------------------------------------------------
UUID_RE = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
HEX32_RE = re.compile(rb"(?<![0-9a-fA-F])[0-9a-f]{32}(?![0-9a-fA-F])")
ISO_RE = re.compile(rb"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?")
ISO_FIXED = b"2026-01-01T00:00:00.000000000"
CLOCK_RE = re.compile(rb"\b\d{1,2}:\d{2}:\d{2} [AP]M\b")
BLOB_RE = re.compile(rb'"blob":"([A-Za-z0-9+/=]+)"')


class Normaliser:
    """Same-length, first-appearance-order replacements of the volatile values of one recording."""

    def __init__(self) -> None:
        self.uuids: dict[bytes, bytes] = {}
        self.hex32: dict[bytes, bytes] = {}

    def _uuid(self, m: re.Match) -> bytes:
        v = m.group(0).lower()
        return self.uuids.setdefault(v, b"00000000-0000-4000-8000-%012d" % (len(self.uuids) + 1))

    def _hex(self, m: re.Match) -> bytes:
        return self.hex32.setdefault(m.group(0), b"%032d" % (len(self.hex32) + 1))

    def text(self, data: bytes) -> bytes:
        data = UUID_RE.sub(self._uuid, data)
        data = HEX32_RE.sub(self._hex, data)
        data = ISO_RE.sub(lambda m: ISO_FIXED[: len(m.group(0))], data)
        return CLOCK_RE.sub(lambda m: re.sub(rb"\d", b"0", m.group(0))[:-2] + b"AM", data)

    def body(self, data: bytes | None) -> bytes | None:
        if not data:
            return data
        data = self.text(data)

        def blob(m: re.Match) -> bytes:
            try:
                raw = base64.b64decode(m.group(1), validate=True)
            except ValueError:
                return m.group(0)
            new = self.text(raw)
            return m.group(0) if new == raw else b'"blob":"' + base64.b64encode(new) + b'"'

        return BLOB_RE.sub(blob, data)

    def headers(self, headers: http.Headers) -> None:
        fields = []
        for k, v in headers.fields:
            if k.lower() == b"date":
                v = FIXED_DATE.encode()
            elif k.lower() == b"host":
                v = b"%s:%d" % (UPSTREAM[0].encode(), UPSTREAM[1])
            else:
                v = self.text(v)
            fields.append((k, v))
        headers.fields = tuple(fields)


def _fixed_id(kind: int, n: int) -> str:
    return f"00000000-0000-4000-{kind:04d}-{n:012d}"


def normalise(flows: list[http.HTTPFlow]) -> list[http.HTTPFlow]:
    norm = Normaliser()
    flows = sorted((f for f in flows if isinstance(f, http.HTTPFlow)), key=lambda f: f.request.timestamp_start)
    out = []
    for i, f in enumerate(flows):
        t = T0 + i
        client = connection.Client(peername=("127.0.0.1", 40001), sockname=LISTEN, timestamp_start=T0,
                                   id=_fixed_id(1, 1),
                                   proxy_mode=ProxyMode.parse(f"reverse:http://{UPSTREAM[0]}:{UPSTREAM[1]}"))
        server = connection.Server(address=UPSTREAM, peername=UPSTREAM, sockname=("127.0.0.1", 50001),
                                   timestamp_start=T0, timestamp_tcp_setup=T0, id=_fixed_id(2, 1))
        g = http.HTTPFlow(client, server)
        g.id = _fixed_id(3, i + 1)
        g.timestamp_created = t
        req = f.request.copy()
        req.host, req.port = UPSTREAM
        norm.headers(req.headers)
        req.raw_content = norm.body(req.raw_content)
        req.timestamp_start, req.timestamp_end = t, t + 0.001
        g.request = req
        if f.response is not None:
            resp = f.response.copy()
            norm.headers(resp.headers)
            resp.raw_content = norm.body(resp.raw_content)
            if "content-length" in resp.headers and resp.raw_content is not None:
                resp.headers["content-length"] = str(len(resp.raw_content))
            resp.timestamp_start, resp.timestamp_end = t + 0.5, t + 0.6
            g.response = resp
        if f.error is not None and not (f.response is not None and f.error.msg == DISCONNECTED):
            g.error = f.error.copy()
            g.error.timestamp = t + 0.9
        out.append(g)
    return out


def write(path: pathlib.Path, flows: list[http.HTTPFlow]) -> None:
    tmp = path.with_suffix(".mitm.tmp")
    with open(tmp, "wb") as fh:
        w = io.FlowWriter(fh)
        for f in flows:
            w.add(f)
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="recordings to redo (default: all)")
    ap.add_argument("--list", action="store_true", help="list the recordings and exit")
    ap.add_argument("--out", type=pathlib.Path, default=FLOWS, help="directory for NAME.mitm (default: flows/)")
    ap.add_argument("--import", dest="import_", nargs=2, metavar=("SESSION.mitm", "NAME"),
                    help="normalise a session recorded elsewhere (mitmdump -w, without mcpx) into NAME.mitm")
    args = ap.parse_args(argv)
    if args.import_:
        src, name = pathlib.Path(args.import_[0]), args.import_[1]
        with open(src, "rb") as fh:
            flows = normalise([f for f in io.FlowReader(fh).stream() if isinstance(f, http.HTTPFlow)])
        args.out.mkdir(parents=True, exist_ok=True)
        write(args.out / f"{name}.mitm", flows)
        print(f"wrote {args.out / f'{name}.mitm'}: {len(flows)} flows, {(args.out / f'{name}.mitm').stat().st_size} bytes")
        return 0
    if args.list:
        for r in RECORDINGS:
            print(f"{r.name:32} {r.note}")
        return 0
    unknown = set(args.names) - {r.name for r in RECORDINGS}
    if unknown:
        ap.error(f"unknown recording(s): {', '.join(sorted(unknown))} (see --list)")
    missing = peers_lib.peers_missing()
    if missing:
        raise SystemExit(f"test peers missing: {missing}; run scripts/setup_peers.sh")
    todo = [r for r in RECORDINGS if not args.names or r.name in args.names]
    args.out.mkdir(parents=True, exist_ok=True)
    servers: dict[str, peers_lib.PeerServer] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="mcpx-record-") as tmp:
            for rec in todo:
                # a fresh server per recording: its ids and counters start over
                if rec.server in servers:
                    servers.pop(rec.server).stop()
                servers[rec.server] = SERVERS[rec.server]()
                flows = normalise(record(rec, servers[rec.server], pathlib.Path(tmp)))
                path = args.out / f"{rec.name}.mitm"
                write(path, flows)
                print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: "
                      f"{len(flows)} flows, {path.stat().st_size} bytes")
    finally:
        for s in servers.values():
            s.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
