"""Incremental ``text/event-stream`` framing (WHATWG HTML, "Server-sent events", 9.2.6).

Feed network chunks in any cut; get back complete :class:`Event` objects whose ``raw`` bytes are
exactly the bytes of the event block (its lines and the blank line that ends it). Lines end in
CRLF, LF or CR; a CR at the end of a chunk is held back until the next chunk tells whether an LF
follows. Comment lines (``:``), ``id:``, ``event:``, ``retry:`` and unknown fields are kept in
``lines`` so an event can be re-emitted with only its data replaced (:meth:`Event.with_data`).
Concatenating the ``raw`` of every event plus :meth:`SSEParser.close`'s tail gives back the input.

Bounded: with ``max_event``, an event that grows beyond that many bytes is not buffered; it comes
out in parts as it arrives (``Event.oversize``: 1 for the first part, 2 for the next ones), raw.

A CR that is the last byte received ends its line at once (an SSE client dispatches an event on its
blank line's CR, without waiting to see whether an LF follows): when it is an event's blank line,
the event comes out now (``Event.open_cr``), and an LF that then starts the next chunk comes out by
itself (``Event.crlf_rest``: the rest of that CRLF, no line of its own). So a server whose lines end
in CR alone, and that keeps its stream open after an event (a request it waits on the client to
answer), has that event delivered at once, not when its next bytes come.

This module knows nothing of MCP.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from . import json_body

BOM = b"\xef\xbb\xbf"
#: the comment line that stands where an event's message was not delivered (:meth:`Event.with_data`)
NOT_DELIVERED = b": mcpx: message not delivered to this client revision"
_EOL = re.compile(rb"[\r\n]")


_UNDECODED = object()


@dataclass
class Event:
    """One SSE event block.

    ``raw``: its exact bytes; ``lines`` (from ``spans``): (line bytes without terminator,
    terminator) pairs, the final blank line excluded; ``payload``: the joined data buffer as the bytes that arrived (not
    yet decoded; None when the block had no data field); ``data``: the same decoded as UTF-8 (str,
    decoded on first use; None without a data field or when not valid UTF-8: ``decode_error``);
    ``oversize``: 0, or for (a part of) an event larger than the parser's ``max_event``, 1 (first
    part) or 2 (the next).

    The payload stays bytes because JSON parsers read UTF-8 bytes directly (and check them):
    decoding a large event to ``str`` first costs more than parsing it.
    """

    raw: bytes
    #: (start, end, end of terminator) of each line in ``raw`` (a first-line BOM excluded), blank line excluded
    spans: list[tuple[int, int, int]] = field(default_factory=list)
    payload: bytes | None = None
    event_type: str | None = None
    last_id: str | None = None
    terminator: bytes = b"\n"
    oversize: int = 0
    #: the blank line that ended it is a CR that was the last byte received: an LF may follow, as the rest of that line end
    open_cr: bool = False
    #: only the LF that followed an ``open_cr`` event's CR (its line end was CRLF): raw ``b"\n"``, no line, no event
    crlf_rest: bool = False
    _text: object = field(default=_UNDECODED, repr=False, compare=False)

    @property
    def data(self) -> str | None:
        if self._text is _UNDECODED:
            try:
                self._text = None if self.payload is None else self.payload.decode("utf-8")
            except UnicodeDecodeError:
                self._text = None
        return self._text  # type: ignore[return-value]

    @property
    def lines(self) -> list[tuple[bytes, bytes]]:
        raw = self.raw
        return [(raw[a:b], raw[b:c]) for a, b, c in self.spans]

    @property
    def decode_error(self) -> bool:
        """True when a data line was not valid UTF-8."""
        return self.payload is not None and self.data is None

    def blank(self) -> bool:
        """Whether the data buffer is empty or ASCII whitespace only (``bytes.strip``), e.g. a
        priming event. Other characters Python counts as space (U+001C, U+00A0...) are data: such
        an event is not JSON and passes through untouched."""
        p = self.payload
        if p is None or p[:1] in (b"{", b"["):  # a JSON message: not blank, without looking further
            return False
        return not p.strip()

    def with_data(self, payloads: list[bytes], keep_id: bool = True) -> bytes:
        """The event re-emitted with its data fields replaced by ``payloads``.

        One payload -> the same event with one ``data:`` line where the first data line stood.
        Several -> one event per payload, each repeating the event's other fields (the
        ``id:`` only on the last one, so a resuming client does not skip any). None -> a comment
        line, then the event's ``id:`` and ``retry:`` lines as they were (``keep_id``; else the
        comment alone): an event without data updates the client's last event ID (and
        reconnection time) and dispatches nothing (WHATWG HTML 9.2.6, "dispatch the event": the
        last event ID is set before an empty data buffer returns), so ``Last-Event-ID``
        resumption stays exact.
        Every line written ends as the event's blank line does (``terminator``): a kept line that
        ended in a lone CR, written before an LF, would read as one CRLF and swallow the blank line
        that ends the event.
        A UTF-8 BOM that opened the stream (the first event's, stripped by the parser: ``spans``
        start after it) stays in front of what is written.
        """
        nl = self.terminator
        bom = BOM if self.spans and self.spans[0][0] == len(BOM) and self.raw.startswith(BOM) else b""
        if not payloads:
            kept = [line + nl for line, _ in self.lines if line.split(b":", 1)[0] in (b"id", b"retry")] if keep_id else []
            return b"".join([bom, NOT_DELIVERED + nl, *kept, nl])
        out = []
        for i, payload in enumerate(payloads):
            last = i == len(payloads) - 1
            buf = []
            placed = False
            for line, _ in self.lines:
                name = line.split(b":", 1)[0]
                if name == b"data":
                    if not placed:
                        buf.append(b"data: " + payload + nl)
                        placed = True
                    continue
                if name == b"id" and not last:
                    continue
                buf.append(line + nl)
            if not placed:
                buf.append(b"data: " + payload + nl)
            out.append(b"".join(buf) + nl)
        return bom + b"".join(out)


class SSEParser:
    """Incremental SSE parser: ``feed(chunk) -> [Event]``, ``close() -> (events, tail)``."""

    def __init__(self, max_event: int | None = None) -> None:
        self._buf = bytearray()
        self._event_start = 0  # offset in _buf where the current event's raw bytes begin
        self._lines: list[tuple[int, int, int]] = []  # spans of the current event's lines, from _event_start
        self._pos = 0  # scan offset
        self._clean = 0  # _buf[_pos:_clean] holds no CR or LF (not searched again)
        self._first = True
        self.max_event = max_event
        self._skip: tuple[bool, bool] | None = None  # in an oversize event: (at line start, CR just seen)
        self._lf_owed = False  # an oversize event ended in CR at a chunk end: a next LF is its own
        self._cr_end = False  # the last byte scanned was a CR that ended a line: a next LF belongs to that line end

    def feed(self, chunk: bytes) -> list[Event]:
        if not chunk:
            return []
        events: list[Event] = []
        if self._cr_end:
            self._cr_end = False
            if chunk[:1] == b"\n":
                if self._buf and self._lines:  # a line of the unfinished event: its line end is CRLF
                    self._buf += b"\n"
                    self._pos += 1
                    a, b, c = self._lines[-1]
                    self._lines[-1] = (a, b, c + 1)
                else:  # the blank line of an event already out: the rest of its CRLF, by itself
                    events.append(Event(raw=b"\n", crlf_rest=True))
                chunk = chunk[1:]
                if not chunk:
                    return events
        if self._lf_owed:
            self._lf_owed = False
            if chunk[:1] == b"\n":
                events.append(Event(raw=b"\n", oversize=2))
                chunk = chunk[1:]
                if not chunk:
                    return events
        if self._skip is not None:
            end = self._skip_to_end(chunk)
            if end < 0:
                return [Event(raw=bytes(chunk), oversize=2)]
            events.append(Event(raw=bytes(chunk[:end]), oversize=2))
            chunk = chunk[end:]
            if not chunk:
                return events
        if self._buf:
            self._buf += chunk
            events += self._scan(self._buf, final=False)
        else:  # nothing pending: scan the chunk itself; only an unfinished event's bytes are copied
            events += self._scan(chunk if type(chunk) is bytes else bytes(chunk), final=False)
        if self.max_event is not None and len(self._buf) > self.max_event:
            events.append(self._oversize())
        return events

    def _oversize(self) -> Event:
        """The buffered part of an event grown beyond ``max_event``; the rest will pass unbuffered."""
        rest = bytes(self._buf[self._pos:])
        ev = Event(raw=bytes(self._buf), oversize=1)
        self._buf.clear()
        self._event_start = self._pos = self._clean = 0
        self._lines = []
        if rest == b"\r":  # a lone CR at a line start is the blank line: that event is complete
            self._lf_owed = True
        else:
            cr = rest.endswith(b"\r") or (rest == b"" and self._cr_end)  # (a CR just ended its last line)
            self._skip = (rest == b"" or cr, cr)
        self._cr_end = False
        return ev

    def _skip_to_end(self, c: bytes) -> int:
        """In an oversize event: the offset in ``c`` just past its blank line, or -1 (not in ``c``)."""
        at_start, cr = self._skip  # type: ignore[misc]
        i, n = 0, len(c)
        while i < n:
            if cr:  # a CR ended the last line: an LF right after it belongs to it
                cr = False
                if c[i] == 0x0A:
                    i += 1
                continue
            if at_start:
                if c[i] == 0x0A:
                    self._skip = None
                    return i + 1
                if c[i] == 0x0D:
                    self._skip = None
                    self._lf_owed = i + 1 == n
                    return i + 2 if i + 1 < n and c[i + 1] == 0x0A else i + 1
                at_start = False
            m = _EOL.search(c, i)
            if m is None:
                break
            i = m.end()
            at_start, cr = True, c[m.start()] == 0x0D
        self._skip = (at_start, cr)
        return -1

    @property
    def inside_oversize(self) -> bool:
        """Whether the bytes so far end inside an event larger than ``max_event`` (its parts came out raw)."""
        return self._skip is not None

    def close(self) -> tuple[list[Event], bytes]:
        """End of stream: events completed by the final bytes, then bytes of an unterminated event."""
        events = self._scan(self._buf, final=True)
        tail = bytes(self._buf[self._event_start:])
        self._buf.clear()
        self._event_start = self._pos = self._clean = 0
        self._skip = None
        self._lf_owed = self._cr_end = False
        self._lines = []
        return events, tail

    def _scan(self, buf: bytes | bytearray, final: bool) -> list[Event]:
        """Events completed in ``buf`` (``self._buf``, or a new chunk when nothing was pending);
        what remains of ``buf`` is kept in ``self._buf``. Offsets are from ``buf``'s start."""
        events: list[Event] = []
        n = len(buf)
        pos = self._pos
        ev_start = self._event_start
        lines = self._lines
        open_cr = owed = False
        while pos < n:
            open_cr = False
            start = max(pos, self._clean)
            lf = buf.find(b"\n", start)
            cr = buf.find(b"\r", start, lf if lf >= 0 else n)
            if cr >= 0:
                # a CR at the chunk end ends its line now (an LF that starts the next chunk is then the
                # rest of this line end: feed); the loop ends after this line
                open_cr = cr + 1 == n and not final
                end, term_len = cr, (2 if cr + 1 < n and buf[cr + 1] == 0x0A else 1)
            elif lf >= 0:
                end, term_len = lf, 1
            else:
                self._clean = n  # an unfinished line: search only the bytes that come next
                break
            line_start = pos
            pos = end + term_len
            if self._first:
                self._first = False
                if buf.startswith(BOM, line_start, end):
                    line_start += len(BOM)
            if end > line_start:
                lines.append((line_start - ev_start, end - ev_start, pos - ev_start))
                continue
            # blank line: dispatch
            raw = bytes(buf[ev_start:pos])  # no copy when buf is a chunk holding just this event
            if self.max_event is not None and len(raw) > self.max_event:
                events.append(Event(raw=raw, oversize=1))
                owed = open_cr  # an LF that opens the next chunk is one more raw part of it
            else:
                events.append(_make_event(raw, lines, bytes(buf[end:pos])))
                events[-1].open_cr = open_cr
            lines = self._lines = []
            ev_start = pos
        if buf is self._buf:
            if ev_start:
                del buf[:ev_start]
        else:
            self._buf = bytearray(buf[ev_start:])
        pos -= ev_start
        self._clean = max(0, self._clean - ev_start)
        self._event_start = 0
        self._pos = pos
        self._cr_end = open_cr and not owed
        self._lf_owed = self._lf_owed or owed
        return events


def _make_event(raw: bytes, spans: list[tuple[int, int, int]], term: bytes) -> Event:
    data_parts: list[bytes] = []
    has_data = False
    ev_type = None
    last_id = None
    for a, b, _ in spans:
        if raw[a:a + 1] == b":":
            continue
        if raw.startswith(b"data:", a, b):  # the common field, sliced once from raw
            has_data = True
            v = a + 5
            data_parts.append(raw[v + 1:b] if raw[v:v + 1] == b" " else raw[v:b])
            continue
        name, sep, value = raw[a:b].partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            has_data = True
            data_parts.append(value)
        elif name == b"event":
            ev_type = value.decode("utf-8", "replace")
        elif name == b"id" and b"\x00" not in value:
            last_id = value.decode("utf-8", "replace")
    payload = b"\n".join(data_parts) if has_data else None  # one data line: that slice itself
    return Event(raw=raw, spans=spans, payload=payload, event_type=ev_type, last_id=last_id,
                 terminator=term or b"\n")


def events_of(body: bytes) -> list[Event]:
    """The events of a whole body, in order, for reading one back (a recorded flow, a trace): the
    bytes after its last blank line (an event the stream ended inside, which an SSE client never
    dispatches) come out as one more event; a blank line with no line before it gives none."""
    parser = SSEParser()
    events = parser.feed(body)
    more, tail = parser.close()
    events += more
    if tail:  # (the same parser, closed: read again as if a blank line ended it)
        events += parser.feed(tail + b"\n\n")
    return [ev for ev in events if ev.spans]


def field_lines(event: Event, errors: str = "replace") -> Iterator[tuple[str, str]]:
    """Each line of ``event`` as (field name, value), decoded from UTF-8 with ``errors``: a field's
    value without the one space after its colon (WHATWG HTML 9.2.6), a comment line's name ``""``
    and its value all that follows the colon. The data lines too: their joined value is ``payload``."""
    for line, _ in event.lines:
        name, _, value = line.decode("utf-8", errors).partition(":")
        yield name, value[1:] if name and value[:1] == " " else value


def json_values(events: Iterable[Event]) -> Iterator[Any]:
    """The JSON value of each event's data, in order: events without data, blank ones (priming,
    keep-alive) and data that is not JSON are skipped. A JSON-RPC batch comes out as one list."""
    for ev in events:
        if ev.payload is None or ev.blank():
            continue
        try:
            yield json_body.loads(ev.payload)
        except orjson.JSONDecodeError:
            continue
