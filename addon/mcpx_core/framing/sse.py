"""Incremental ``text/event-stream`` framing (WHATWG HTML, "Server-sent events", 9.2.6).

Feed network chunks in any cut; get back complete :class:`Event` objects whose ``raw`` bytes are
exactly the bytes of the event block (its lines and the blank line that ends it). Lines end in
CRLF, LF or CR; a CR at the end of a chunk is held back until the next chunk tells whether an LF
follows. Comment lines (``:``), ``id:``, ``event:``, ``retry:`` and unknown fields are kept in
``lines`` so an event can be re-emitted with only its data replaced (:meth:`Event.with_data`).
Concatenating the ``raw`` of every event plus :meth:`SSEParser.close`'s tail gives back the input.

This module knows nothing of MCP.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BOM = b"\xef\xbb\xbf"


@dataclass
class Event:
    """One SSE event block.

    ``raw``: its exact bytes; ``lines``: (line bytes without terminator, terminator) pairs, the
    final blank line excluded; ``data``: the joined data buffer (str) or None when the block had no
    data field; ``decode_error``: True when a data line was not valid UTF-8.
    """

    raw: bytes
    lines: list[tuple[bytes, bytes]] = field(default_factory=list)
    data: str | None = None
    event_type: str | None = None
    last_id: str | None = None
    decode_error: bool = False
    terminator: bytes = b"\n"

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


class SSEParser:
    """Incremental SSE parser: ``feed(chunk) -> [Event]``, ``close() -> (events, tail)``."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._event_start = 0  # offset in _buf where the current event's raw bytes begin
        self._lines: list[tuple[bytes, bytes]] = []
        self._pos = 0  # scan offset
        self._first = True

    def feed(self, chunk: bytes) -> list[Event]:
        if not chunk:
            return []
        self._buf += chunk
        return self._scan(final=False)

    def close(self) -> tuple[list[Event], bytes]:
        """End of stream: events completed by the final bytes, then bytes of an unterminated event."""
        events = self._scan(final=True)
        tail = bytes(self._buf[self._event_start:])
        self._buf.clear()
        self._event_start = self._pos = 0
        self._lines = []
        return events, tail

    def _scan(self, final: bool) -> list[Event]:
        buf = self._buf
        events: list[Event] = []
        n = len(buf)
        pos = self._pos
        while pos < n:
            lf = buf.find(b"\n", pos)
            cr = buf.find(b"\r", pos, lf if lf >= 0 else n)
            if cr >= 0:
                if cr + 1 == n and not final:
                    break  # a CR at the chunk end: wait to see whether LF follows
                end, term_len = cr, (2 if cr + 1 < n and buf[cr + 1] == 0x0A else 1)
            elif lf >= 0:
                end, term_len = lf, 1
            else:
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
            events.append(_make_event(raw, self._lines, term))
            self._lines = []
            self._event_start = pos
        if self._event_start:
            del buf[:self._event_start]
            pos -= self._event_start
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
