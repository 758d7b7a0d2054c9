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

The same endpoint gives fixed answers (:meth:`AnswerStreams.answer`): a request mcpx answers itself
whose body mitmproxy may stream (larger than ``stream_large_bodies``, or of unknown length) is routed
here from its headers, so that no byte of it reaches the server whatever mitmproxy decides about
streaming: the endpoint reads the body to its end (discarding it) and gives the answer, keeping the
connection open for the next routed request.

And it relays (:meth:`AnswerStreams.relay`, :mod:`.resume`): a client's request mcpx sends upstream
itself is routed here with its method, headers and body (read and discarded: mcpx sent its own
copy); the endpoint answers with the status and headers the relay gives once the server's came
(:attr:`AnswerStream.head`), then either a whole body or the chunks the relay puts, chunked, and
keeps the connection open for the next routed request. mitmproxy then streams and rewrites that
answer as it would the server's own: the client's flow is rewritten as any other.
"""

from __future__ import annotations

import asyncio
import http
import logging
import os
from collections.abc import Awaitable, Callable

logger = logging.getLogger("mcpx")
PATH = "/mcpx-answer/"


#: queued by :meth:`AnswerStream.abort`: the endpoint closes its connection without the last chunk
_BROKEN = object()


class AnswerStream:
    """One stream to one client: :meth:`put` chunks (bytes), :meth:`close` ends it, :meth:`abort`
    breaks it off. ``finished``: the bridge or relay ended it (else, once ``closed``, the client went
    away first); ``delivered``: the first ``keep`` bytes put (the flow's body in mitmweb and ``-w``
    files: what the client got)."""

    def __init__(self, token: str, headers: list[tuple[str, str]], on_close: Callable[[], Awaitable[None]] | None,
                 keep: int = 1 << 20, head: asyncio.Future | None = None):
        self.token = token
        #: a relay's head, given later (:meth:`AnswerStreams.relay`): a future of (status, reason,
        #: headers as (name, value) pairs, body) where body is the whole body, or None when the
        #: chunks :meth:`put` follow; None for a bridge's stream (``200`` and ``headers`` at once)
        self.head = head
        self.headers = headers
        self.on_close = on_close
        self.queue: asyncio.Queue = asyncio.Queue()  # bytes, then None (end) or _BROKEN (abort)
        self.closed = False
        self.finished = False
        self.keep = keep
        self._kept: list[bytes] = []
        self._size = 0

    @property
    def delivered(self) -> bytes:
        return b"".join(self._kept)

    def put(self, chunk: bytes) -> None:
        if chunk and not self.closed:
            if self._size < self.keep:
                self._kept.append(chunk[: self.keep - self._size])
                self._size += len(self._kept[-1])
            self.queue.put_nowait(chunk)

    def close(self) -> None:
        if not self.closed:
            self.closed = self.finished = True
            self.queue.put_nowait(None)

    def abort(self) -> None:
        """End the stream broken off: once the chunks put before are written, the endpoint closes
        its connection without the terminating chunk, so mitmproxy sees its "server" break off
        mid-body and fails the client's response as it does when the real server breaks off (the
        client gets the bytes so far, then a broken body: never a truncated body that looks whole).
        For a relay whose own upstream request ended in an error after the client's head went out."""
        if not self.closed:
            self.closed = self.finished = True
            self.queue.put_nowait(_BROKEN)


class AnswerStreams:
    """The endpoint and its open streams. :meth:`open` makes a stream; :meth:`route` sends a flow to it."""

    def __init__(self) -> None:
        self.server: asyncio.base_events.Server | None = None
        self.port: int | None = None
        self.streams: dict[str, AnswerStream] = {}
        #: token -> (status, headers, body) of a fixed answer (:meth:`answer`), served once
        self.fixed: dict[str, tuple[int, tuple[tuple[str, str], ...], bytes]] = {}
        self._closing: set[asyncio.Task] = set()

    async def ensure(self) -> None:
        if self.server is None:
            self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            self.port = self.server.sockets[0].getsockname()[1]

    async def open(self, content_type: str = "text/event-stream",
                   on_close: Callable[[], Awaitable[None]] | None = None) -> AnswerStream:
        await self.ensure()
        return self.make(content_type, on_close)

    def make(self, content_type: str = "text/event-stream", on_close: Callable[[], Awaitable[None]] | None = None,
             keep: int = 1 << 20) -> AnswerStream:
        """:meth:`open` without waiting, once :meth:`ensure` has run (from a callback: a bridge that
        learns in the middle of an upstream answer that its client's answer must stream)."""
        assert self.server is not None, "AnswerStreams.ensure() first"
        token = os.urandom(12).hex()
        s = self.streams[token] = AnswerStream(token, [("content-type", content_type), ("cache-control", "no-cache, no-transform"),
                                                       ("x-accel-buffering", "no")], on_close, keep)
        return s

    def relay(self, flow, on_close: Callable[[], Awaitable[None]] | None = None) -> AnswerStream:
        """Route ``flow`` (in its ``request`` hook, once :meth:`ensure` has run) to a relayed answer:
        its method, headers and body go to this endpoint (which reads the body and discards it), and
        the answer is what the returned stream's :attr:`AnswerStream.head` gives, then its chunks.
        The relay must always set ``head`` (a failed one: an error answer), else the client waits."""
        assert self.port is not None, "AnswerStreams.ensure() first"
        token = os.urandom(12).hex()
        s = self.streams[token] = AnswerStream(token, [], on_close, keep=0,
                                               head=asyncio.get_running_loop().create_future())
        self._point(flow, token)
        return s

    def _point(self, flow, token: str) -> None:
        """Send ``flow``'s request to this endpoint's ``token`` (straight to this process, never through
        an upstream proxy), instead of its server."""
        r = flow.request
        r.scheme, r.host, r.port = "http", "127.0.0.1", self.port
        r.path = PATH + token
        r.headers["host"] = f"127.0.0.1:{self.port}"
        try:
            flow.server_conn.via = None
        except AttributeError:
            pass

    def route(self, flow, stream: AnswerStream) -> None:
        """Send ``flow`` (in its request hook) to ``stream`` instead of the server."""
        self._point(flow, stream.token)
        flow.request.method = "GET"
        flow.request.content = b""

    def answer(self, flow, status: int, body: bytes, headers: tuple[tuple[str, str], ...]) -> Callable[[], None]:
        """Send ``flow`` (in its ``requestheaders`` hook, once :meth:`ensure` has run) to a fixed answer
        instead of the server: its method, headers and body go to this endpoint, which reads the body
        to its end and answers ``status`` with ``headers`` and ``body``. Returns the undo: the request
        goes to its server again, as it was routed before (the answer is forgotten)."""
        assert self.port is not None, "AnswerStreams.ensure() first"
        r = flow.request
        token = os.urandom(12).hex()
        self.fixed[token] = (status, headers, body)
        d = r.data
        before = (d.scheme, d.host, d.port, d.path, d.authority, r.headers.copy(), getattr(flow.server_conn, "via", None))
        self._point(flow, token)

        def undo() -> None:
            self.fixed.pop(token, None)
            d.scheme, d.host, d.port, d.path, d.authority = before[:5]
            r.headers = before[5]
            try:
                flow.server_conn.via = before[6]
            except AttributeError:
                pass
        return undo

    def forget(self, flow) -> None:
        """Drop the fixed answer or stream ``flow`` was routed to, if the endpoint did not give it
        (the client went away first): a stream's ``on_close`` runs (a relay then stops)."""
        if self.fixed or self.streams:
            path = flow.request.path
            if path.startswith(PATH):
                self.fixed.pop(path[len(PATH):], None)
                stream = self.streams.pop(path[len(PATH):], None)
                if stream is not None:
                    task = asyncio.get_running_loop().create_task(_closed(stream))
                    self._closing.add(task)
                    task.add_done_callback(self._closing.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:  # fixed answers and relays keep the connection open (mitmproxy reuses it); a stream ends it
                head = await reader.readuntil(b"\r\n\r\n")
                target = head.split(b"\r\n", 1)[0].split(b" ")[1].decode("latin-1")
                token = target[len(PATH):] if target.startswith(PATH) else ""
                fixed = self.fixed.pop(token, None)
                if fixed is not None:
                    await _discard_body(reader, head)
                    status, headers, body = fixed
                    writer.write(_head(status, None, headers, b"content-length: %d" % len(body)) + body)
                    await writer.drain()
                    continue
                stream = self.streams.pop(token, None)
                if stream is None:
                    writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    await writer.drain()
                    return
                if stream.head is None:
                    await self._stream(reader, writer, stream)
                    return
                await _discard_body(reader, head)
                if not await self._relay(reader, writer, stream):
                    return
        except (ConnectionError, asyncio.IncompleteReadError, IndexError, ValueError, asyncio.LimitOverrunError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    async def _stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stream: AnswerStream) -> None:
        """A bridge's stream: ``200`` with its headers at once, its chunks, then the connection ends."""
        try:
            lines = [b"HTTP/1.1 200 OK"] + [f"{k}: {v}".encode() for k, v in stream.headers] + \
                    [b"transfer-encoding: chunked", b"connection: close", b"", b""]
            writer.write(b"\r\n".join(lines))
            await writer.drain()
            gone = asyncio.ensure_future(reader.read(1))  # the client (mitmproxy) closed the connection
            try:
                await _pump(writer, stream, gone)
            finally:
                gone.cancel()
        finally:
            await _closed(stream)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stream: AnswerStream) -> bool:
        """A relay's answer (see :meth:`relay`). True: it was written whole, the connection can
        serve the next request; False: the client (mitmproxy) went away first, or the relay aborted
        the answer (:meth:`AnswerStream.abort`): the connection closes."""
        assert stream.head is not None
        gone = asyncio.ensure_future(reader.read(1))  # the client (mitmproxy) closed the connection
        try:
            done, _ = await asyncio.wait({stream.head, gone}, return_when=asyncio.FIRST_COMPLETED)
            if stream.head not in done:
                return False
            status, reason, headers, body = stream.head.result()
            if body is not None:
                gone.cancel()  # mitmproxy sends its next request only after this answer: not one byte of it is read here
                writer.write(_head(status, reason, headers, b"content-length: %d" % len(body)) + body)
                await writer.drain()
                stream.finished = True
                return True
            writer.write(_head(status, reason, headers, b"transfer-encoding: chunked"))
            await writer.drain()
            return await _pump(writer, stream, gone)
        finally:
            gone.cancel()
            await asyncio.wait({gone})  # settled before the next request's head is read
            await _closed(stream)

    def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None


def _head(status: int, reason: str | None, headers, framing: bytes) -> bytes:
    """An HTTP/1.1 response head: the status line (``reason``: the server's phrase, None: the
    standard one), ``headers`` (name, value; str or bytes) without their framing fields, then ``framing``."""
    if reason is None:
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = ""
    lines = [f"HTTP/1.1 {status} {reason}".encode("utf-8", "surrogateescape")]
    for k, v in headers:
        k, v = (x if isinstance(x, bytes) else x.encode("utf-8", "surrogateescape") for x in (k, v))
        if k.lower() not in (b"content-length", b"transfer-encoding"):
            lines.append(k + b": " + v)
    lines += [framing, b"", b""]
    return b"\r\n".join(lines)


async def _pump(writer: asyncio.StreamWriter, stream: AnswerStream, gone: asyncio.Future) -> bool:
    """Write the chunks put on ``stream`` (HTTP/1.1 chunked) until it is closed (True: its last chunk
    written), aborted (False, the last chunk not written: the caller closes the connection) or the
    client goes away (``gone`` done first: False)."""
    while True:
        get = asyncio.ensure_future(stream.queue.get())
        done, _ = await asyncio.wait({get, gone}, return_when=asyncio.FIRST_COMPLETED)
        if get not in done:
            get.cancel()
            return False
        chunk = get.result()
        if chunk is _BROKEN:
            return False
        if chunk is None:
            gone.cancel()  # before the last chunk goes: a next request's bytes are never read by it
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return True
        writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        await writer.drain()


async def _closed(stream: AnswerStream) -> None:
    stream.closed = True
    if stream.on_close is not None:
        try:
            await stream.on_close()
        except Exception as e:
            logger.warning(f"mcpx: closing an answer stream: {type(e).__name__}: {e}")


async def _discard_body(reader: asyncio.StreamReader, head: bytes) -> None:
    """Read the body of the request whose head is ``head`` (Content-Length or chunked, as mitmproxy
    sends it upstream; none without either) to its end, keeping nothing."""
    length, chunked = None, False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value.strip())
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers, then the blank line
                    pass
                return
            await _skip(reader, size)
            await reader.readexactly(2)
    elif length:
        await _skip(reader, length)


async def _skip(reader: asyncio.StreamReader, n: int) -> None:
    while n > 0:
        got = await reader.read(min(n, 1 << 16))
        if not got:
            raise asyncio.IncompleteReadError(b"", n)
        n -= len(got)
