"""A small asyncio HTTP/1.1 MCP client for the benchmark (loopback only, bounded in calls and time).

Each :class:`Client` holds one keep-alive connection and one MCP session (``initialize``, then
``notifications/initialized``). :func:`run_load` runs ``calls`` ``tools/call`` requests over
``concurrency`` clients and returns every call's latency (seconds) and the wall time.
Raw HTTP keeps the client's own CPU use small: on a 2-core machine it shares the cores with the
proxy and the server, the same way for every proxy measured.
"""
from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass

import orjson

REVISION = "2025-03-26"
CALL_TIMEOUT = 60.0


class BenchError(RuntimeError):
    pass


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    first_event: float | None  # perf_counter() when the first complete SSE event had arrived


class Client:
    def __init__(self, port: int, host_header: str, revision: str = REVISION):
        self.port = port
        self.revision = revision
        self.host_header = host_header
        self.session: str | None = None
        self.ids = itertools.count(1)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port, limit=1 << 20)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except OSError:
                pass

    async def post(self, message: dict) -> Reply:
        body = orjson.dumps(message)
        head = [f"POST /mcp HTTP/1.1", f"Host: {self.host_header}", "Content-Type: application/json",
                "Accept: application/json, text/event-stream", f"Content-Length: {len(body)}"]
        if self.session:
            head += [f"Mcp-Session-Id: {self.session}", f"Mcp-Protocol-Version: {self.revision}"]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        return await asyncio.wait_for(self._read(), CALL_TIMEOUT)

    async def _read(self) -> Reply:
        r = self.reader
        raw = await r.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            if line:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
        first = None
        if "content-length" in headers:
            body = await r.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            buf = bytearray()
            while True:
                size = int((await r.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    while (await r.readuntil(b"\r\n")) != b"\r\n":
                        pass  # trailers
                    break
                buf += (await r.readexactly(size + 2))[:-2]
                if first is None and (b"\n\n" in buf or b"\r\n\r\n" in buf or b"\r\r" in buf):
                    first = time.perf_counter()
            body = bytes(buf)
        else:
            body = await r.read()
        if first is None and body and headers.get("content-type", "").startswith("text/event-stream"):
            first = time.perf_counter()
        return Reply(status, headers, body, first)

    async def initialize(self) -> None:
        rep = await self.post({"jsonrpc": "2.0", "id": next(self.ids), "method": "initialize", "params": {
            "protocolVersion": self.revision, "capabilities": {}, "clientInfo": {"name": "mcpx-bench", "version": "1"}}})
        if rep.status != 200:
            raise BenchError(f"initialize: HTTP {rep.status}: {rep.body[:200]!r}")
        self.session = rep.headers.get("mcp-session-id")
        rep = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if rep.status not in (200, 202):
            raise BenchError(f"notifications/initialized: HTTP {rep.status}")

    async def call(self, tool: str, args: dict) -> Reply:
        return await self.request("tools/call", {"name": tool, "arguments": args})

    async def request(self, method: str, params: dict) -> Reply:
        rep = await self.post({"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params})
        if rep.status != 200 or b'"result"' not in rep.body:
            raise BenchError(f"{method} {params.get('name', '')}: HTTP {rep.status}: {rep.body[:300]!r}")
        return rep


def result_of(rep: Reply) -> dict:
    """The JSON-RPC response carried by a reply (JSON body or the last SSE event with an id)."""
    if rep.headers.get("content-type", "").startswith("application/json"):
        return orjson.loads(rep.body)
    out = None
    for block in rep.body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = b"\n".join(line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:"))
        if data.strip():
            msg = orjson.loads(data)
            if isinstance(msg, dict) and "id" in msg:
                out = msg
    if out is None:
        raise BenchError(f"no JSON-RPC response in SSE body: {rep.body[:200]!r}")
    return out


async def run_load(port: int, host_header: str, calls: int, concurrency: int, tool: str, args: dict,
                   check=None, deadline: float = 300.0, method: str = "tools/call") -> tuple[list[float], float]:
    """``calls`` tools/call requests over ``concurrency`` sessions: (latencies in s, wall time in s).

    ``check(reply)`` is called on each session's first reply (raise to fail the run). ``method``
    other than tools/call: that request with ``args`` as its params (``tool`` unused).
    """
    clients = [Client(port, host_header) for _ in range(concurrency)]
    for c in clients:
        await c.connect()
        await c.initialize()
    counter = itertools.count()
    latencies: list[float] = []

    async def worker(c: Client) -> None:
        first = True
        while next(counter) < calls:
            t0 = time.perf_counter()
            rep = await (c.call(tool, args) if method == "tools/call" else c.request(method, args))
            latencies.append(time.perf_counter() - t0)
            if first and check is not None:
                check(rep)
            first = False

    t0 = time.perf_counter()
    try:
        await asyncio.wait_for(asyncio.gather(*(worker(c) for c in clients)), deadline)
    finally:
        wall = time.perf_counter() - t0
        for c in clients:
            await c.close()
    return latencies, wall
