"""Requests mcpx sends to the server itself, as flows of their own through mitmproxy's proxy core.

mcpx originates requests: the ``initialize`` it forwards itself to mint a sealed session
(:class:`~mcpx_core.disposition.MintSession`), the single POSTs of a split batch, answers on the
client's behalf to server requests its revision cannot receive, and the bridges' requests.
Each one is a new :class:`mitmproxy.http.HTTPFlow` run by mitmproxy's own client-replay machinery
(``mitmproxy.addons.clientplayback.ReplayHandler``), not by a second HTTP stack, so it goes out
exactly as mitmproxy's own upstream connections do, with the user's options: certificate
verification unless ``ssl_insecure``, ``ssl_verify_upstream_trusted_ca``/``_confdir``,
``client_certs``, ``--mode upstream:`` (via the upstream proxy), ALPN/HTTP/2, and every other
addon's hooks. Such flows are marked (``flow.metadata["mcpx"]["origin"] == "mcpx"``, a comment
naming what they are for and the flow they serve) and show in mitmweb and ``-w`` files like any
other flow; mcpx never rewrites them a second time.

Credentials: a request made on the client's behalf (``on_behalf=True``) carries the client's
``Authorization``, ``Cookie`` and ``Origin`` headers, and only to the origin of the flow it serves
(the only origin mcpx ever sends to); other requests carry none. No header value is ever logged.

Errors: :meth:`Sender.send` raises :class:`UpstreamError` (``reason``: e.g. mitmproxy's
"Certificate verify failed" message, a timeout, no live proxy) and never anything else.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mitmproxy import connection, ctx, http

from . import flowlist

logger = logging.getLogger("mcpx")

#: request headers never copied from a client request onto one mcpx originates
_HOP = frozenset({"content-length", "connection", "transfer-encoding", "accept-encoding", "keep-alive", "upgrade",
                  "te", "trailer", "proxy-authorization", "proxy-connection"})
#: the client's headers a request made on its behalf carries (same origin only): its credentials, and
#: its Origin (a server checks it against DNS rebinding: a request mcpx sends must not slip past that)
ON_BEHALF = ("authorization", "cookie", "origin")
ORIGIN = "mcpx"


class UpstreamError(Exception):
    """A request mcpx originated did not get a response; ``reason`` says why (no header values)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Reply:
    """``status``, ``headers`` (lower-case names), ``body`` (the whole body decoded, or what streamed
    so far when the caller stopped early; a whole body whose Content-Encoding decodes to more than
    :attr:`Sender.max_body`: its bytes as received, never decoded further) and the mitmproxy ``flow``
    that carried it. ``undecoded``: None when ``body`` is decoded (or had no Content-Encoding); else
    ``body`` is as received, still in its Content-Encoding (``headers["content-encoding"]``), and this is
    the detail of the passthrough record that says why (as :func:`addons.headers.decoded` words it:
    ``content-encoding: body decodes to more than mcpx_max_body (N bytes); forwarded untouched``)."""

    status: int
    headers: dict[str, str]
    body: bytes
    flow: http.HTTPFlow
    undecoded: str | None = None


@dataclass
class _Own:
    """A flow mcpx sends: the chunk callback for its streamed (SSE) response, if any."""

    on_chunk: Callable[[bytes], None] | None = None
    #: called once when the streamed response stops decoding (its Content-Encoding), instead of the
    #: final ``on_chunk(b"")``: the :class:`~mcpx_core.framing.encoding.DecodeFailed` and the offset
    #: of the compressed byte from which nothing decoded
    on_undecodable: Callable[[Any, int], None] | None = None
    #: called once with the response as soon as its headers came, and whether its body streams to
    #: ``on_chunk`` (a ``text/event-stream`` answer mcpx can decode) or comes whole with the reply
    on_head: Callable[[http.Response, bool], None] | None = None
    #: called once, with why, when the streamed response's flow ends without its end (see :meth:`Sender.send`)
    on_broken: Callable[[str], None] | None = None
    received: list[bytes] = field(default_factory=list)
    streamed: bool = False
    #: the streamed response's end reached ``on_chunk`` (``b""``) or ``on_undecodable``
    ended: bool = False
    #: the response's bytes as received (encoded), while they fit in :attr:`Sender.keep`
    raw: list[bytes] = field(default_factory=list)
    raw_size: int = 0
    handler: Any = None
    task: asyncio.Task | None = None
    #: when the server last sent a byte of the response (``time.monotonic()``, seconds; the request's start before)
    last: float = 0.0
    #: bytes of an unstreamed response body at most (:meth:`Sender.send` ``limit``); ``over``: it came larger
    limit: int | None = None
    over: bool = False


def is_own(flow: http.HTTPFlow) -> bool:
    """Whether mcpx itself sent ``flow``."""
    meta = flow.metadata.get("mcpx")
    return isinstance(meta, dict) and meta.get("origin") == ORIGIN


def origin(url: str) -> tuple[str, str, int | None]:
    from urllib.parse import urlsplit
    u = urlsplit(url)
    return u.scheme, (u.hostname or "").lower(), u.port or {"http": 80, "https": 443}.get(u.scheme)


class Sender:
    """Sends mcpx's own requests through the running mitmproxy (``ctx.master``)."""

    def __init__(self, keep: int = 1 << 20) -> None:
        self.own: dict[str, _Own] = {}
        self.background: set[asyncio.Task] = set()
        #: bytes of a streamed response kept as the flow's body (``mcpx_keep_original``); a longer
        #: stream (a bridge's listen stream) is not kept, and its flow says so in a comment
        self.keep = keep
        #: decoded bytes of a whole (not streamed) response body at most (``mcpx_max_body``): one that
        #: decodes to more is given as received (:meth:`_reply`), never inflated whole
        self.max_body: int | None = None

    @staticmethod
    def available(parent: http.HTTPFlow, detached: bool = False) -> bool:
        """Whether requests can be sent for ``parent``: a live flow in a running proxy (mitmproxy's
        ``proxyserver`` addon is loaded: not an offline replay, not hooks driven by a test master).
        ``detached``: ``parent`` may have ended (a request mcpx sends later for a flow that was live,
        e.g. the DELETE of an idle upstream session): only the running proxy is asked for."""
        if not (parent.live or detached) or not _running_loop():
            return False
        master = getattr(ctx, "master", None)
        try:
            return master is not None and master.addons.get("proxyserver") is not None
        except AttributeError:
            return False

    def headers_for(self, parent: http.HTTPFlow, extra: dict[str, str], on_behalf: bool) -> dict[str, str]:
        """Headers of a request for ``parent``: its ``Host`` (as mitmproxy forwards it), the MCP
        content negotiation, ``extra``, and the client's credentials when ``on_behalf``."""
        src = parent.request.headers
        out = {"host": src.get("host", parent.request.host_header or parent.request.host),
               "content-type": "application/json", "accept": "application/json, text/event-stream"}
        if on_behalf:
            for name in ON_BEHALF:
                if name in src:
                    out[name] = src[name]
        for k, v in extra.items():
            out[k.lower()] = v
        return out

    def copy_headers(self, parent: http.HTTPFlow) -> dict[str, str]:
        """The client's own request headers, end to end (for a request mcpx sends instead of the
        client's own: the initialize it forwards itself); hop-by-hop and length headers removed."""
        out: dict[str, str] = {}
        for k, v in parent.request.headers.items(multi=True):
            lk = k.lower()
            if lk in _HOP:
                continue
            out[lk] = f"{out[lk]}, {v}" if lk in out else v
        return out

    async def send(self, parent: http.HTTPFlow, method: str, body: bytes | None, headers: dict[str, str], purpose: str,
                   *, timeout: float = 60.0, on_chunk: Callable[[bytes], None] | None = None,
                   stop: asyncio.Future | None = None, url: str | None = None,
                   on_undecodable: Callable[[Any, int], None] | None = None, detached: bool = False,
                   on_head: Callable[[http.Response, bool], None] | None = None,
                   on_broken: Callable[[str], None] | None = None, idle: bool = False, limit: int | None = None) -> Reply:
        """Send ``method`` ``body`` with exactly ``headers`` to ``parent``'s server, as a new flow.

        ``on_chunk``: called with each chunk of a streamed (``text/event-stream``) response as it
        arrives (the body is then not stored on the flow; a stream whose Content-Encoding stops decoding
        ends there for ``on_chunk``: what decoded before the fault, then ``b""``, or, when
        ``on_undecodable`` is given, that instead of ``b""``, with the
        :class:`~mcpx_core.framing.encoding.DecodeFailed` and the compressed byte from which nothing
        decoded; never an exception in mitmproxy's stream); ``on_head``: called with the response
        once its headers came (before any ``on_chunk``), and whether its body streams to ``on_chunk``;
        ``stop``: a future that, once done, ends the wait early (the request runs on in the
        background, up to ``timeout``); ``timeout``: seconds, or None to wait as long as the server
        streams; ``url``: the server's URL when it is not ``parent``'s (a flow redirected since);
        ``detached``: ``parent`` may have ended (see :meth:`available`); ``on_broken``: called once
        with the reason (mitmproxy's error message) when a response streamed to ``on_chunk`` breaks off
        (a connection error before its end: the final ``on_chunk(b"")`` never comes), also after
        ``stop`` ended the wait; never for a request mcpx aborted (:meth:`abort`, ``timeout``);
        ``idle``: ``timeout`` bounds each wait for the server (the request is ended once no byte of its
        response came for ``timeout`` seconds: a stream the server keeps feeding is never cut, as on a
        direct connection), not the whole request (the default: ended ``timeout`` seconds after it was
        sent, or after ``stop``); ``limit``: bytes of the response body at most (a response without
        ``on_chunk``): once more came (or its Content-Length says more), the request is ended and
        :class:`UpstreamError` raised, so a hostile server's endless body costs at most that much.
        Raises :class:`UpstreamError`.
        """
        if not self.available(parent, detached):
            raise UpstreamError("no live proxy to send through (offline replay)")
        from mitmproxy.addons.clientplayback import ReplayHandler

        req = http.Request.make(method, url or parent.request.url, body or b"", headers)
        if "host" in headers:
            req.headers["host"] = headers["host"]
        if method == "GET" and not body and "content-length" not in headers:
            req.headers.pop("content-length", None)  # (Request.make sets one): a GET has no body to frame
        flow = http.HTTPFlow(parent.client_conn, connection.Server(address=(req.host, req.port)))
        flow.request = req
        flow.is_replay = "request"
        flow.metadata["mcpx"] = {"origin": ORIGIN, "purpose": purpose, "for_flow": parent.id}
        flow.comment = flowlist.own(body, purpose, parent.id)  # its messages first, as every flow's
        own = self.own[flow.id] = _Own(on_chunk=on_chunk, on_undecodable=on_undecodable, on_head=on_head, on_broken=on_broken,
                                       limit=limit)
        handler = ReplayHandler(flow, ctx.options)
        task = asyncio.get_running_loop().create_task(handler.replay())
        loop = asyncio.get_running_loop()
        own.handler, own.task, own.last = handler, task, time.monotonic()
        waits = {task} if stop is None else {task, stop}

        def quiet_for() -> float | None:
            """The seconds still to wait before the request is ended for ``timeout`` (None: no limit)."""
            if timeout is None:
                return None
            return timeout - (time.monotonic() - own.last) if idle else 0.0
        try:
            wait = timeout
            while True:
                done, _ = await asyncio.wait(waits, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                wait = quiet_for() if not done and idle else None
                if wait is None or wait <= 0:
                    break
        except asyncio.CancelledError:
            self._abort(handler, task, flow.id)
            raise
        if own.over:
            raise UpstreamError(f"answer larger than {limit} bytes")
        if not done:
            self._abort(handler, task, flow.id)
            raise UpstreamError(f"no response within {timeout:g} s")
        if task not in done:  # stopped early: the rest streams on in the background
            self.background.add(task)

            def finished(t: asyncio.Task) -> None:
                self.background.discard(t)
                if self.own.pop(flow.id, None) is own:  # (not aborted: an abort forgets it first)
                    self._broken(flow, own)
            task.add_done_callback(finished)

            def watch() -> None:  # ends the request once its time is up (idle: re-armed while bytes come)
                if task.done():
                    return
                left = quiet_for() if idle else 0.0
                if left is not None and left > 0:
                    loop.call_later(left, watch)
                    return
                self._abort(handler, task, flow.id)
            if timeout is not None:
                loop.call_later(timeout, watch)
            return self._reply(flow, own)
        self.own.pop(flow.id, None)
        if task.exception() is not None:
            raise UpstreamError(f"{type(task.exception()).__name__}: {task.exception()}")
        if flow.response is None:
            raise UpstreamError(flow.error.msg if flow.error else "no response")
        self._broken(flow, own)
        return self._reply(flow, own)

    @staticmethod
    def _broken(flow: http.HTTPFlow, own: _Own) -> None:
        """``own.on_broken`` when its streamed response ended without its end (``on_chunk(b"")``)."""
        if own.on_broken is None or not own.streamed or own.ended:
            return
        own.ended = True
        try:
            own.on_broken(flow.error.msg if flow.error else "the stream ended before its end")
        except Exception as e:  # a callback must never break mitmproxy's flow
            logger.warning(f"mcpx: own request broken-stream handler failed: {type(e).__name__}: {e}")

    def _reply(self, flow: http.HTTPFlow, own: _Own) -> Reply:
        resp = flow.response
        if resp is None:
            raise UpstreamError(flow.error.msg if flow.error else "no response")
        body, why = (b"".join(own.received), None) if own.streamed else self._whole(resp)
        return Reply(resp.status_code, {k.lower(): v for k, v in resp.headers.items()}, body, flow, why)

    def _whole(self, resp: http.Response) -> tuple[bytes, str | None]:
        """:func:`whole_body`, bounded by :attr:`max_body`."""
        return whole_body(resp, self.max_body)

    def abort(self, flow_id: str) -> None:
        """End a request mcpx sent that still runs (e.g. a stream nobody reads any more)."""
        own = self.own.get(flow_id)
        if own is not None and own.task is not None and not own.task.done():
            self._abort(own.handler, own.task, flow_id)

    def _abort(self, handler: Any, task: asyncio.Task, flow_id: str) -> None:
        self.own.pop(flow_id, None)
        for t in list(getattr(handler, "transports", {}).values()):
            if t.handler is not None:
                t.handler.cancel()
        task.cancel()

    # -- called from the addon's hooks for flows mcpx sent -----------------------------------
    def responseheaders(self, flow: http.HTTPFlow) -> None:
        """Stream an own flow's SSE response to its ``on_chunk`` (decoded), as it arrives; then
        tell ``on_head`` the response's headers came."""
        own = self.own.get(flow.id)
        if own is None or flow.response is None:
            return
        if own.on_chunk is not None:
            self._stream(flow, own)
        elif own.limit is not None:
            _bound(self, flow, own)
        if own.on_head is not None:
            try:
                own.on_head(flow.response, own.streamed)
            except Exception as e:  # a callback must never break mitmproxy's flow
                logger.warning(f"mcpx: own request head handler failed: {type(e).__name__}: {e}")

    def _stream(self, flow: http.HTTPFlow, own: _Own) -> None:
        assert flow.response is not None
        if flow.response.headers.get("content-type", "").split(";")[0].strip().lower() != "text/event-stream":
            return
        from .framing.encoding import DecodeFailed, stream_decoder
        enc = flow.response.headers.get("content-encoding", "").strip().lower()
        try:
            decoder = stream_decoder(enc, self.max_body) if enc and enc != "identity" else None
        except ValueError:  # an encoding mcpx cannot decode: the body is not streamed, on_chunk never called
            return
        own.streamed = True
        state = {"compressed": 0, "failed": False}

        def chunk(data: bytes) -> bytes:
            if data:
                own.last = time.monotonic()
                own.raw_size += len(data)
                if own.raw_size <= self.keep:
                    own.raw.append(data)
                else:
                    own.raw.clear()
            else:  # the end: the flow keeps its body, as an unstreamed one (mitmproxy keeps none of a stream)
                self._keep_body(flow, own)
            if state["failed"]:  # nothing after a fault in the encoding reaches on_chunk
                return data
            try:
                plain = decoder(data) if decoder is not None and data else data
            except DecodeFailed as f:  # never an exception in mitmproxy's stream (its replay would crash)
                state["failed"] = True
                at = state["compressed"] + f.at
                logger.info(f"mcpx: own request's SSE answer does not decode from compressed byte {at} on ({f})")
                own.ended = True
                try:
                    if f.partial:
                        own.received.append(f.partial)
                        own.on_chunk(f.partial)  # type: ignore[misc]
                    if own.on_undecodable is not None:
                        own.on_undecodable(f, at)
                    else:
                        own.on_chunk(b"")  # type: ignore[misc]
                except Exception as e:
                    logger.warning(f"mcpx: own request stream handler failed: {type(e).__name__}: {e}")
                return data
            state["compressed"] += len(data)
            if plain:
                own.received.append(plain)
                try:
                    own.on_chunk(plain)  # type: ignore[misc]
                except Exception as e:  # a callback must never break mitmproxy's stream
                    logger.warning(f"mcpx: own request stream handler failed: {type(e).__name__}: {e}")
            elif data == b"":
                own.ended = True
                try:
                    own.on_chunk(b"")  # type: ignore[misc]
                except Exception:
                    pass
            return data

        flow.response.stream = chunk

    def _keep_body(self, flow: http.HTTPFlow, own: _Own) -> None:
        """Set a streamed own flow's body to the bytes received (views, ``-w`` files, mitmdump's
        flow lines), when they fit in :attr:`keep`; otherwise say on the flow why it has none."""
        if flow.response is None:
            return
        if own.raw_size <= self.keep:
            flow.response.data.content = b"".join(own.raw)
        else:
            note = f"mcpx: response body not kept ({own.raw_size} bytes streamed; mcpx_keep_original is {self.keep})"
            flow.comment = f"{flow.comment}\n{note}" if flow.comment else note
        own.raw.clear()


def _bound(sender: Sender, flow: http.HTTPFlow, own: _Own) -> None:
    """An own flow's response body read to at most ``own.limit`` bytes (:meth:`Sender.send` ``limit``):
    streamed into ``own.received`` (the flow keeps it at its end), the request ended once it is larger."""
    assert flow.response is not None and own.limit is not None
    loop = asyncio.get_running_loop()

    def over() -> None:
        if not own.over:
            own.over = True
            loop.call_soon(sender._abort, own.handler, own.task, flow.id)
    size = flow.response.headers.get("content-length", "")
    if size.isdigit() and int(size) > own.limit:
        over()
    own.streamed = True

    def chunk(data: bytes) -> bytes:
        if own.over:
            return b""
        if not data:
            flow.response.data.content = b"".join(own.received)
            return data
        own.raw_size += len(data)
        if own.raw_size > own.limit:
            over()
            return b""
        own.received.append(data)
        return data
    flow.response.stream = chunk


def whole_body(resp: http.Response, cap: int | None) -> tuple[bytes, str | None]:
    """A whole response body, decoded, but never past ``cap`` decoded bytes (:attr:`Sender.max_body`), and the reason
    it was not decoded (:attr:`Reply.undecoded`; None when it was, or has no Content-Encoding). A body
    that decodes past the limit (a decompression bomb, say) is given as received. gzip, deflate
    (``deflateraw``), br, zstd are decoded strictly; one that does not decode so is read as
    mitmproxy's lenient decoder would (strict=False: gzip or zlib auto-detected, a truncated stream
    taken for whole; deflate zlib-wrapped, else raw; br and zstd as received), bounded the same. Any
    other encoding is given as received: mitmproxy would hand it to Python's codecs (``bz2``,
    ``zlib``), which inflate without a bound."""
    import zlib

    from .framing.encoding import WHOLE, DecodesTooLarge, decode_whole
    raw = resp.raw_content or b""
    ce = resp.headers.get("content-encoding", "").strip().lower()
    ce = "deflate" if ce == "deflateraw" else ce
    if not raw or ce in ("", "identity", "none"):
        return raw, None
    if ce not in WHOLE:
        return raw, f"content-encoding: body does not decode (unsupported content-encoding {ce!r}); forwarded untouched"
    too_large = f"content-encoding: body decodes to more than mcpx_max_body ({cap} bytes); forwarded untouched"
    try:
        return decode_whole(raw, ce, cap), None
    except DecodesTooLarge:
        logger.info(f"mcpx: own request's answer decodes to more than mcpx_max_body ({cap} bytes): not decoded")
        return raw, too_large
    except Exception as e:
        error = f"content-encoding: body does not decode ({type(e).__name__}: {e}); forwarded untouched"
    for wbits in ((47,) if ce == "gzip" else (zlib.MAX_WBITS, -zlib.MAX_WBITS) if ce == "deflate" else ()):
        try:
            out = zlib.decompressobj(wbits).decompress(raw, 0 if cap is None else cap + 1)
        except zlib.error:
            continue
        if cap is not None and len(out) > cap:
            logger.info(f"mcpx: own request's answer decodes to more than mcpx_max_body ({cap} bytes): not decoded")
            return raw, too_large
        return out, None
    return raw, error


def _running_loop() -> bool:
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        return False
