"""Answers a bridge writes to a client over time (an SSE stream that mcpx itself produces).

mitmproxy streams only what a server sends (``response.stream`` transforms the server's chunks) and
sends a response an addon makes (``http.Response.make``) whole. A bridge sometimes must answer a
client with a stream whose events it makes up as things happen: the acknowledgement of a
``subscriptions/listen`` before the first upstream event, server->client requests a legacy client
must answer before the final result of its call. For those, the client's flow is routed to this
in-process endpoint on 127.0.0.1 (an asyncio server on mitmproxy's own event loop, no thread): it
answers ``200 text/event-stream`` at once and writes each chunk the bridge puts, as it comes,
until the bridge closes the stream or the client goes away (then ``on_close`` runs). The flow
shows in mitmweb with this endpoint as its server and mcpx's comment; its body is what the client got.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable

logger = logging.getLogger("mcpx")
PATH = "/mcpx-answer/"


class AnswerStream:
    """One stream to one client: :meth:`put` chunks (bytes), :meth:`close` ends it."""

    def __init__(self, token: str, headers: list[tuple[str, str]], on_close: Callable[[], Awaitable[None]] | None):
        self.token = token
        self.headers = headers
        self.on_close = on_close
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.closed = False

    def put(self, chunk: bytes) -> None:
        if chunk and not self.closed:
            self.queue.put_nowait(chunk)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)


class AnswerStreams:
    """The endpoint and its open streams. :meth:`open` makes a stream; :meth:`route` sends a flow to it."""

    def __init__(self) -> None:
        self.server: asyncio.base_events.Server | None = None
        self.port: int | None = None
        self.streams: dict[str, AnswerStream] = {}

    async def ensure(self) -> None:
        if self.server is None:
            self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            self.port = self.server.sockets[0].getsockname()[1]

    async def open(self, content_type: str = "text/event-stream",
                   on_close: Callable[[], Awaitable[None]] | None = None) -> AnswerStream:
        await self.ensure()
        token = os.urandom(12).hex()
        s = self.streams[token] = AnswerStream(token, [("content-type", content_type), ("cache-control", "no-cache, no-transform"),
                                                       ("x-accel-buffering", "no")], on_close)
        return s

    def route(self, flow, stream: AnswerStream) -> None:
        """Send ``flow`` (in its request hook) to ``stream`` instead of the server."""
        r = flow.request
        r.scheme, r.host, r.port = "http", "127.0.0.1", self.port
        r.path = PATH + stream.token
        r.method = "GET"
        r.content = b""
        r.headers["host"] = f"127.0.0.1:{self.port}"
        try:
            flow.server_conn.via = None  # straight to this process, never through an upstream proxy
        except AttributeError:
            pass

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        stream = None
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            target = head.split(b"\r\n", 1)[0].split(b" ")[1].decode("latin-1")
            token = target[len(PATH):] if target.startswith(PATH) else ""
            stream = self.streams.pop(token, None)
            if stream is None:
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                await writer.drain()
                return
            lines = [b"HTTP/1.1 200 OK"] + [f"{k}: {v}".encode() for k, v in stream.headers] + \
                    [b"transfer-encoding: chunked", b"connection: close", b"", b""]
            writer.write(b"\r\n".join(lines))
            await writer.drain()
            gone = asyncio.ensure_future(reader.read(1))  # the client (mitmproxy) closed the connection
            while True:
                get = asyncio.ensure_future(stream.queue.get())
                done, _ = await asyncio.wait({get, gone}, return_when=asyncio.FIRST_COMPLETED)
                if get not in done:
                    get.cancel()
                    break
                chunk = get.result()
                if chunk is None:
                    writer.write(b"0\r\n\r\n")
                    await writer.drain()
                    break
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
            gone.cancel()
        except (ConnectionError, asyncio.IncompleteReadError, IndexError, asyncio.LimitOverrunError):
            pass
        finally:
            if stream is not None:
                stream.closed = True
                if stream.on_close is not None:
                    try:
                        await stream.on_close()
                    except Exception as e:
                        logger.warning(f"mcpx: closing an answer stream: {type(e).__name__}: {e}")
            try:
                writer.close()
            except Exception:
                pass

    def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
