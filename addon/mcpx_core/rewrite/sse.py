"""SSE: one event rewritten for the client's leg (priming events, batches one event each, large
events read an element at a time), and :class:`SSERewriter`, the ``flow.response.stream`` callable
that frames a stream into events and delivers each rewritten."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Callable

import orjson

from .. import revisions
from ..changes import Change
from ..downgrade import classify
from ..framing.encoding import DecodeFailed
from ..framing.sse import Event, SSEParser
from .body import GC_PAUSE_MIN
from .exchange import Exchange

if TYPE_CHECKING:
    from .rewriter import Rewriter

PRIMING_RULE = "TR-sse-priming-polling"
BATCH_RESPONSE_RULE = "RPC-batch-response"


class SSEEvents:
    """The SSE event part of :class:`~.rewriter.Rewriter` (a mixin)."""

    def sse(self, exch: Exchange) -> "SSERewriter":
        return SSERewriter(self, exch)

    def sse_event(self, exch: Exchange, ev: Event) -> bytes:
        """The bytes to deliver for one SSE event (one of :data:`GC_PAUSE_MIN` bytes or more: with
        the cyclic garbage collector paused, as :meth:`response_json`)."""
        if ev.payload is not None and len(ev.payload) >= GC_PAUSE_MIN and gc.isenabled():
            gc.disable()
            try:
                return self._sse_event(exch, ev)
            finally:
                gc.enable()
        return self._sse_event(exch, ev)

    def _sse_event(self, exch: Exchange, ev: Event) -> bytes:
        from_rev, to_rev = exch.revisions
        if ev.oversize:
            if ev.oversize == 1:
                self.passthrough(exch, "s2c", "SSE event larger than mcpx_max_body: forwarded untouched as it streams")
            return ev.raw
        if ev.payload is None:
            return ev.raw
        if ev.blank():
            if ev.last_id and self.on_priming is not None:
                self.on_priming(exch)
            if revisions.is_known(to_rev) and to_rev != "2025-11-25":  # the only revision with priming events
                self._emit(exch, [Change(pointer="", action="drop-message", rule=PRIMING_RULE, before=summ_event(ev),
                                         detail="empty-data (priming) event: only 2025-11-25 clients get it")],
                           "s2c", None, None, from_rev, to_rev)
                # not even its id: an id-only event reads as an empty-data event to httpx-sse based clients
                # (older Python SDKs), the very thing this rule keeps from them
                return ev.with_data([], keep_id=False)
            return ev.raw
        split = self._split(exch, ev.payload, one_line=True)
        if split is not None:
            out, changed = self._s2c_messages(exch, [split.skeleton], split, ev.payload)
            if not changed:
                return ev.raw
            data = self._split_out(exch, split, out, ev.payload, "SSE event: ")
            return ev.raw if data is None else ev.with_data([data] if data else [])
        try:
            value = orjson.loads(ev.payload)  # UTF-8 bytes, checked by orjson: no str of a large event
        except orjson.JSONDecodeError:
            if ev.decode_error:
                self.passthrough(exch, "s2c", "SSE event data is not valid UTF-8")
                return ev.raw
            try:
                value = orjson.loads(ev.data)  # the same text: for the error as the str reports it
            except orjson.JSONDecodeError as e:
                self.passthrough(exch, "s2c", f"SSE event data is not valid JSON: {e}")
                return ev.raw
        batch = isinstance(value, list)
        messages = value if batch else [value]
        if not any(classify(m) for m in messages):
            # ({}, [], [5], "jsonrpc": "1.0"): no message, and an array of none is no batch to split (JSON-RPC
            # 2.0: an empty array is an invalid request); the event as it came
            self.passthrough(exch, "s2c", "SSE event data holds no JSON-RPC 2.0 message")
            return ev.raw
        out, changed = self._s2c_messages(exch, messages, source=ev.payload)
        from_rev, to_rev = exch.revisions  # an initialize result in this event may have set them
        # RPC-batch-response: an array of JSON-RPC messages (an array of none returned above), one event each
        one_per_event = batch and to_rev != "2025-03-26" and revisions.is_known(to_rev)
        if not (changed or one_per_event):
            return ev.raw
        if batch and not one_per_event:
            payloads = [self._write(exch, "s2c", out, ev.payload, "SSE event: ")] if out else []
        else:
            payloads = [self._write(exch, "s2c", m, ev.payload, "SSE event: ") for m in out]
        if None in payloads:
            return ev.raw
        if one_per_event:
            self._emit(exch, [Change(pointer="", action="split", rule=BATCH_RESPONSE_RULE, before=f"batch of {len(messages)} messages",
                                     after=f"{len(out)} events")], "s2c", None, None, from_rev, to_rev)
        return ev.with_data(payloads)  # type: ignore[arg-type]



class SSERewriter:
    """A ``flow.response.stream`` callable: feed raw chunks, get rewritten bytes; ``b""`` ends it.

    ``decoder`` (optional) undoes the Content-Encoding chunk by chunk (framing/encoding.py); when a
    chunk does not decode, the events decoded before the fault are delivered and nothing after
    (:meth:`_undecodable`), with one passthrough record. ``original`` and
    ``delivered`` keep up to ``keep`` bytes of each side for inspection.
    """

    def __init__(self, rewriter: Rewriter, exch: Exchange, decoder: Callable[[bytes], bytes] | None = None, keep: int = 4 << 20,
                 max_event: int | None = None):
        self.rewriter = rewriter
        self.exch = exch
        self.decoder = decoder
        self.parser = SSEParser(max_event)  # events above max_event (mcpx_max_body) pass unbuffered
        self.finished = False
        #: the encoding failed (:meth:`_undecodable`): nothing more is delivered
        self.undecodable = False
        self._received = 0  # compressed bytes decoded so far
        self._lf_written = False  # the last event was rewritten with CRLF line ends though only its blank line's CR came
        #: the id of the last event that set one (its ``id:`` field, as the client's last event ID), or None
        self.last_id: str | None = None
        self.keep = keep
        self._original = _Kept(keep)
        self._delivered = _Kept(keep)

    @property
    def original(self) -> bytes:
        """The first ``keep`` bytes of the stream as received (decoded)."""
        return self._original.value()

    @property
    def delivered(self) -> bytes:
        """The first ``keep`` bytes of the stream as delivered."""
        return self._delivered.value()

    @property
    def truncated(self) -> bool:
        """Whether either side had more than ``keep`` bytes."""
        return self._original.truncated or self._delivered.truncated

    def __call__(self, chunk: bytes) -> bytes:
        if self.finished:
            return chunk
        if self.undecodable:  # nothing after a fault in the encoding: the response ends when the server's does
            self.finished = chunk == b""
            return b""
        if chunk == b"":
            self.finished = True
            events, rest = self.parser.close()
            out = self._out(events, rest, b"")
            if rest:  # never dispatched by an SSE client (WHATWG HTML 9.2.6: discarded at the end of the stream)
                self.rewriter.passthrough(self.exch, "s2c", f"SSE stream ends inside an event (no blank line after it): "
                                                            f"its {len(rest)} bytes forwarded untouched")
            return out
        raw = chunk
        if self.decoder is not None:
            try:
                chunk = self.decoder(chunk)
            except Exception as e:  # not the encoding it claims: never crash the connection
                return self._undecodable(e)
            self._received += len(raw)
        return self._out(self.parser.feed(chunk), b"", raw)

    def _undecodable(self, e: Exception) -> bytes:
        """The stream stopped decoding: the complete events of what still decoded (the failing
        chunk's bytes before the fault, :class:`~mcpx_core.framing.encoding.DecodeFailed`), then
        nothing. The client was told the stream is not encoded (``responseheaders`` removed
        Content-Encoding), so the compressed bytes that follow would be garbage to it; an event the
        fault cut short is held back (a direct client's decoder would fail before it too)."""
        failed = e if isinstance(e, DecodeFailed) else DecodeFailed(e)
        self.undecodable = True
        events = self.parser.feed(failed.partial)
        more, rest = self.parser.close()
        out = self._out(events + more, b"", b"")
        self._original.add(rest)
        self.rewriter.passthrough(self.exch, "s2c", undecodable_detail(self._received + failed.at, failed, len(rest)))
        return out

    def _out(self, events: list[Event], rest: bytes, raw: bytes) -> bytes:
        parts = []
        for ev in events:
            if ev.crlf_rest:  # the LF after the CR that ended the last event (framing/sse.py)
                if not self._lf_written:
                    parts.append(ev.raw)
                self._lf_written = False
                continue
            self._lf_written = False
            if ev.last_id is not None:
                self.last_id = ev.last_id
            if ev.open_cr:
                # its blank line's CR came last, an LF may follow: if the event is rewritten, its lines
                # end in CRLF, as when the LF came with it, and that LF is then not written again
                ev.terminator = b"\r\n"
            try:
                out = self.rewriter.sse_event(self.exch, ev)
            except Exception as e:  # never lose an event
                self.rewriter.passthrough(self.exch, "s2c", f"SSE rewrite failed: {type(e).__name__}: {e}")
                out = ev.raw
            self._lf_written = ev.open_cr and out is not ev.raw
            parts.append(out)
        if rest:
            parts.append(rest)
        data = b"".join(parts)
        for ev in events:
            self._original.add(ev.raw)
        self._original.add(rest)
        self._delivered.add(data)
        return data

    def whole(self, body: bytes) -> bytes:
        """Rewrite a complete body (offline replay) with the same code path as streaming."""
        return self(body) + self(b"")

    def chunks(self, chunk: bytes) -> list[bytes]:
        """The callable for ``flow.response.stream``: the output as a list, empty while an event is
        incomplete (mitmproxy sends each returned chunk; an empty one would be the HTTP/1.1 chunked
        terminator ``0\\r\\n\\r\\n`` and end the response before the event)."""
        out = self(chunk)
        return [out] if out else []


class _Kept:
    """The first ``limit`` bytes of a stream, kept as the pieces themselves (bytes are immutable:
    holding them copies nothing) and joined on request; ``truncated`` once more came."""

    __slots__ = ("limit", "size", "pieces", "truncated", "_joined")

    def __init__(self, limit: int):
        self.limit = limit
        self.size = 0
        self.pieces: list[bytes] = []
        self.truncated = False
        self._joined: bytes | None = None

    def add(self, data: bytes) -> None:
        if not data:
            return
        room = self.limit - self.size
        if room <= 0:
            self.truncated = True
            return
        if len(data) > room:
            data = data[:room]
            self.truncated = True
        self.pieces.append(data)
        self.size += len(data)
        self._joined = None

    def value(self) -> bytes:
        if self._joined is None:
            self._joined = b"".join(self.pieces)
            self.pieces = [self._joined]
        return self._joined


def undecodable_detail(at: int, failed: DecodeFailed, unfinished: int) -> str:
    """The passthrough record of an SSE answer that stops decoding (its Content-Encoding) from
    compressed byte ``at`` on, ``unfinished`` decoded bytes of an event held back."""
    held = f"{unfinished} decoded bytes of an unfinished event and " if unfinished else ""
    return (f"content-encoding: SSE stream does not decode from compressed byte {at} on ({type(failed.error).__name__}: "
            f"{failed.error}); delivered: the complete events before it; not delivered: {held}the rest of the stream "
            "(the client was told it is not encoded)")


def summ_event(ev: Event) -> str:
    return f"SSE event id={ev.last_id!r} data={ev.data!r}"[:120]
