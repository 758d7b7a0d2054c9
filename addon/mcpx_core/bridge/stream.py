"""A loopback HTTP endpoint that streams an answer a bridge makes up over time.

Why: a legacy client in front of a 2026-07-28 server must receive, on the SSE stream of its own
POST, server->client requests mcpx makes from an ``InputRequiredResult`` and, once it has POSTed
its answers and mcpx has retried upstream, the final result (REVISIONS.md MRTR-bridge-legacy-client;
docs/specification/2025-03-26/basic/transports.mdx:110 "the server MAY send JSON-RPC requests and
notifications before sending a JSON-RPC response"). mitmproxy 12 has no API for a response an addon
produces over time: ``http.Response.make`` in the ``request`` hook sends one whole body
(``HttpStream.send_response``), and ``flow.response.stream`` only transforms chunks a *server*
sends (``state_stream_response_body`` calls it per received chunk; it cannot emit later).

So mcpx is that server: the ``request`` hook redirects the client's flow (``flow.request.host`` /
``port`` / ``scheme``, which ``HttpStream.make_server_connection`` connects to) to this endpoint on
127.0.0.1, the ``responseheaders`` hook sets ``flow.response.stream = True``, and the endpoint
writes what the bridge puts into the flow's :class:`Outlet` as it comes (chunked HTTP/1.1). The
flow stays an ordinary mitmproxy flow: every addon sees it, mitmweb shows it (marked answered by
mcpx), ``-w`` saves it, mitmproxy's own client connection (HTTP/1, HTTP/2, TLS) carries it.

The alternatives were worse: delivering the server requests on the client's GET stream (not every
client keeps one, and such messages "SHOULD be unrelated to any concurrently-running request",
docs/specification/2025-03-26/basic/transports.mdx:143), or answering only with JSON (then every
input request is lost: the -32603 fallback of MRTR-bridge-legacy-client). The cost is one loopback
TCP connection per streamed answer (most answers are JSON and need none).

Each redirected request carries a random single-use token in ``x-mcpx-stream``; the endpoint
answers any other request 404 and listens on 127.0.0.1 only. In ``--mode upstream:`` mitmproxy
would send the redirected request through the upstream proxy, so bridges fall back to JSON there
(:func:`streaming_possible`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable

logger = logging.getLogger("mcpx")

TOKEN_HEADER = "x-mcpx-stream"
HOST = "127.0.0.1"
#: seconds an outlet waits for its flow to reach the endpoint before it is given up
CLAIM_TIMEOUT = 30.0
_REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 502: "Bad Gateway"}


class Outlet:
    """What one redirected flow receives: a status and headers (:meth:`start`), then body chunks
    (:meth:`write`) until :meth:`close`. ``gone`` is set when the client's connection ended first
    (mitmproxy closed the connection to the endpoint); ``on_gone`` is called then, once.
    ``delivered``: the first ``keep`` bytes written (for the views)."""

    def __init__(self, keep: int = 1 << 20):
        self.token = os.urandom(18).hex()
        self.head: asyncio.Future = asyncio.get_running_loop().create_future()
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.gone = asyncio.Event()
        self.closed = False
        self.claimed = False
        self.on_gone: Callable[[], None] | None = None
        self.keep = keep
        self._delivered: list[bytes] = []
        self._size = 0
        self.created = time.monotonic()

    @property
    def delivered(self) -> bytes:
        return b"".join(self._delivered)

    def start(self, status: int, headers: list[tuple[str, str]]) -> None:
        if not self.head.done():
            self.head.set_result((status, headers))

    def write(self, data: bytes) -> None:
        if self.closed or not data:
            return
        if self._size < self.keep:
            self._delivered.append(data[: self.keep - self._size])
            self._size += len(self._delivered[-1])
        self.queue.put_nowait(data)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)

    def lost(self) -> None:
        """The client's side ended before the answer did."""
        if self.gone.is_set():
            return
        self.gone.set()
        self.closed = True
        if self.on_gone is not None:
            try:
                self.on_gone()
            except Exception:  # a callback must never break the endpoint
                logger.exception("mcpx: stream outlet callback failed")


class StreamEndpoint:
    """The loopback server (one per mcpx, started on first use)."""

    def __init__(self) -> None:
        self.server: asyncio.AbstractServer | None = None
        self.port: int | None = None
        self.outlets: dict[str, Outlet] = {}
        self._starting: asyncio.Lock | None = None

    async def start(self) -> tuple[str, int]:
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self.server is None:
                self.server = await asyncio.start_server(self._serve, HOST, 0, limit=1 << 16)
                self.port = self.server.sockets[0].getsockname()[1]
                logger.info(f"mcpx: bridge stream endpoint on {HOST}:{self.port}")
        return HOST, self.port  # type: ignore[return-value]

    def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        for o in list(self.outlets.values()):
            o.lost()
        self.outlets.clear()

    def register(self, o: Outlet) -> Outlet:
        """Make ``o`` fetchable; its flow must reach the endpoint within :data:`CLAIM_TIMEOUT` seconds."""
        self.outlets[o.token] = o
        asyncio.get_running_loop().call_later(CLAIM_TIMEOUT, self._unclaimed, o)
        return o

    def _unclaimed(self, o: Outlet) -> None:
        if not o.claimed and self.outlets.pop(o.token, None) is not None:
            logger.warning("mcpx: a bridged answer was never fetched by its flow (client gone?): dropped")
            o.lost()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        outlet = None
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
            await _read_body(reader, headers)
            outlet = self.outlets.pop(headers.get(TOKEN_HEADER, ""), None)
            if outlet is None:
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                await writer.drain()
                return
            outlet.claimed = True
            watch = asyncio.ensure_future(reader.read(1))  # EOF: mitmproxy closed the connection (client gone)
            status, hdrs = await _first(outlet.head, watch)
            if status is None:
                outlet.lost()
                return
            out = [f"HTTP/1.1 {status} {_REASONS.get(status, 'OK')}"]
            out += [f"{k}: {v}" for k, v in hdrs if k.lower() not in ("content-length", "transfer-encoding", "connection")]
            out += ["transfer-encoding: chunked", "connection: close", "", ""]
            writer.write("\r\n".join(out).encode("latin-1"))
            await writer.drain()
            while True:
                chunk = await _first(outlet.queue.get(), watch)
                if chunk is None:
                    if watch.done():
                        outlet.lost()
                        return
                    break
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            watch.cancel()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            if outlet is not None:
                outlet.lost()
        except asyncio.CancelledError:
            if outlet is not None:
                outlet.lost()
            raise
        finally:
            try:
                writer.close()
            except Exception:
                pass


async def _first(main, watch: asyncio.Future):
    """``await main`` unless ``watch`` finishes first (then None)."""
    task = asyncio.ensure_future(main)
    done, _ = await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        return task.result()
    task.cancel()
    return None


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> None:
    """Read (and ignore) the request body: Content-Length or chunked framing."""
    if headers.get("content-length", "").isdigit():
        await reader.readexactly(int(headers["content-length"]))
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return
            await reader.readexactly(size + 2)


def streaming_possible() -> bool:
    """Whether a flow can be redirected to the endpoint: not when mitmproxy sends every request
    through an upstream proxy (``--mode upstream:``), which would receive the loopback address."""
    try:
        from mitmproxy import ctx
        modes = ctx.options.mode
    except Exception:
        return True
    return not any(str(m).startswith("upstream") for m in modes)
