"""Incremental ``text/event-stream`` framing (WHATWG HTML, "Server-sent events", 9.2.6).

Feed network chunks in any cut; get back complete :class:`Event` objects whose ``raw`` bytes are
exactly the bytes of the event block (its lines and the blank line that ends it). Lines end in
CRLF, LF or CR; a CR at the end of a chunk is held back until the next chunk tells whether an LF
follows. Comment lines (``:``), ``id:``, ``event:``, ``retry:`` and unknown fields are kept in
``lines`` so an event can be re-emitted with only its data replaced (:meth:`Event.with_data`).
Concatenating the ``raw`` of every event plus :meth:`SSEParser.close`'s tail gives back the input.

Bounded: with ``max_event``, an event that grows beyond that many bytes is not buffered; it comes
out in parts as it arrives (``Event.oversize``: 1 for the first part, 2 for the next ones), raw.

This module knows nothing of MCP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

BOM = b"\xef\xbb\xbf"
_EOL = re.compile(rb"[\r\n]")


@dataclass
class Event:
    """One SSE event block.

    ``raw``: its exact bytes; ``lines``: (line bytes without terminator, terminator) pairs, the
    final blank line excluded; ``data``: the joined data buffer (str) or None when the block had no
    data field; ``decode_error``: True when a data line was not valid UTF-8; ``oversize``: 0, or
    for (a part of) an event larger than the parser's ``max_event``, 1 (first part) or 2 (the next).
    """

    raw: bytes
    lines: list[tuple[bytes, bytes]] = field(default_factory=list)
    data: str | None = None
    event_type: str | None = None
    last_id: str | None = None
    decode_error: bool = False
    terminator: bytes = b"\n"
    oversize: int = 0

    def with_data(self, payloads: list[bytes]) -> bytes:
        """The event re-emitted with its data fields replaced by ``payloads``.

        One payload -> the same event with one ``data:`` line where the first data line stood.
        Several -> one event per payload, each repeating the event's other fields (the
        ``id:`` only on the last one, so a resuming client does not skip any). None -> a comment.
        """
        nl = self.terminator
        if not payloads:
            return b": mcpx: message not delivered to this client revision" + nl + nl
        out = []
        for i, payload in enumerate(payloads):
            last = i == len(payloads) - 1
            buf = []
            placed = False
            for line, term in self.lines:
                name = line.split(b":", 1)[0]
                if name == b"data":
                    if not placed:
                        buf.append(b"data: " + payload + nl)
                        placed = True
                    continue
                if name == b"id" and not last:
                    continue
                buf.append(line + term)
            if not placed:
                buf.append(b"data: " + payload + nl)
            out.append(b"".join(buf) + nl)
        return b"".join(out)

    def data_bytes(self) -> bytes | None:
        """The data buffer as the bytes that were decoded into ``data`` (None: no data field).

        For parsers that take UTF-8 bytes: ``orjson.loads`` of a non-ASCII ``str`` must first
        encode it again, which costs more than the parse of a large event.
        """
        if self.data is None:
            return None
        parts = []
        for line, _ in self.lines:
            if line[:1] == b":":
                continue
            name, sep, value = line.partition(b":")
            if name == b"data":
                parts.append(value[1:] if sep and value[:1] == b" " else value)
        return b"\n".join(parts) if parts else self.data.encode("utf-8")


class SSEParser:
    """Incremental SSE parser: ``feed(chunk) -> [Event]``, ``close() -> (events, tail)``."""

    def __init__(self, max_event: int | None = None) -> None:
        self._buf = bytearray()
        self._event_start = 0  # offset in _buf where the current event's raw bytes begin
        self._lines: list[tuple[bytes, bytes]] = []
        self._pos = 0  # scan offset
        self._clean = 0  # _buf[_pos:_clean] holds no CR or LF (not searched again)
        self._first = True
        self.max_event = max_event
        self._skip: tuple[bool, bool] | None = None  # in an oversize event: (at line start, CR just seen)
        self._lf_owed = False  # an oversize event ended in CR at a chunk end: a next LF is its own

    def feed(self, chunk: bytes) -> list[Event]:
        if not chunk:
            return []
        events: list[Event] = []
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
        self._buf += chunk
        events += self._scan(final=False)
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
            cr = rest.endswith(b"\r")
            self._skip = (rest == b"" or cr, cr)
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

    def close(self) -> tuple[list[Event], bytes]:
        """End of stream: events completed by the final bytes, then bytes of an unterminated event."""
        events = self._scan(final=True)
        tail = bytes(self._buf[self._event_start:])
        self._buf.clear()
        self._event_start = self._pos = self._clean = 0
        self._skip = None
        self._lf_owed = False
        self._lines = []
        return events, tail

    def _scan(self, final: bool) -> list[Event]:
        buf = self._buf
        events: list[Event] = []
        n = len(buf)
        pos = self._pos
        while pos < n:
            start = max(pos, self._clean)
            lf = buf.find(b"\n", start)
            cr = buf.find(b"\r", start, lf if lf >= 0 else n)
            if cr >= 0:
                if cr + 1 == n and not final:
                    break  # a CR at the chunk end: wait to see whether LF follows
                end, term_len = cr, (2 if cr + 1 < n and buf[cr + 1] == 0x0A else 1)
            elif lf >= 0:
                end, term_len = lf, 1
            else:
                self._clean = n  # an unfinished line: search only the bytes that come next
                break
            line = bytes(buf[pos:end])
            term = bytes(buf[end:end + term_len])
            pos = end + term_len
            if self._first:
                self._first = False
                if line.startswith(BOM):
                    line = line[len(BOM):]
            if line:
                self._lines.append((line, term))
                continue
            # blank line: dispatch
            raw = bytes(buf[self._event_start:pos])
            if self.max_event is not None and len(raw) > self.max_event:
                events.append(Event(raw=raw, oversize=1))
            else:
                events.append(_make_event(raw, self._lines, term))
            self._lines = []
            self._event_start = pos
        if self._event_start:
            del buf[:self._event_start]
            pos -= self._event_start
            self._clean = max(0, self._clean - self._event_start)
            self._event_start = 0
        self._pos = pos
        return events


def _make_event(raw: bytes, lines: list[tuple[bytes, bytes]], term: bytes) -> Event:
    data_parts: list[bytes] = []
    has_data = False
    ev_type = None
    last_id = None
    for line, _ in lines:
        if line[:1] == b":":
            continue
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            has_data = True
            data_parts.append(value)
        elif name == b"event":
            ev_type = value.decode("utf-8", "replace")
        elif name == b"id" and b"\x00" not in value:
            last_id = value.decode("utf-8", "replace")
    data = None
    decode_error = False
    if has_data:
        try:
            data = b"\n".join(data_parts).decode("utf-8")
        except UnicodeDecodeError:
            decode_error = True
    return Event(raw=raw, lines=list(lines), data=data, event_type=ev_type, last_id=last_id,
                 decode_error=decode_error, terminator=term or b"\n")
