"""What mcpx prints is mcpx's: every line it gives mitmproxy's log (the terminal of mitmdump, the
event log of mitmweb and the console) shows values from the wire as escapes.

A JSON-RPC id, a method, a tool name, a clientInfo name or a reason comes from a peer, and may hold
ESC sequences (which a terminal obeys: colours, cursor moves, a changed window title), a carriage
return or a newline (which start what looks like another line of mcpx's, ``mcpx: s2c …``), or
Unicode line separators and bidirectional overrides (which make text read otherwise than it is).
:class:`EscapeFilter`, installed once on the ``mcpx`` logger (:func:`install`), rewrites every
record's message before any handler sees it: each such character becomes ``\\xNN`` or ``\\uNNNN``,
and a message longer than :data:`MAX_LINE` characters is cut with a note of how much was left out.
A record logged with ``extra={"mcpx_lines": True}`` is several lines of mcpx's own (the change records
of one message): each line is escaped on its own, and only the newlines between them stay.

:func:`printable` does the same for one value, for text that does not go through the logger (command
output).
"""

from __future__ import annotations

import logging
import re

#: longest line mcpx prints (characters); the rest is cut, with a note
MAX_LINE = 2000
#: DEL, C1 controls, Unicode line/paragraph separators and bidirectional controls (with the C0
#: controls below: every character that moves, colours or reorders what a terminal shows)
_OTHER = "\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069"
_ONE_LINE = re.compile(f"[\x00-\x1f{_OTHER}]")
_KEEP_NL = re.compile(f"[\x00-\x09\x0b-\x1f{_OTHER}]")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(value: object, limit: int = MAX_LINE) -> str:
    """``value`` as text safe to print on one line: unsafe characters escaped, cut at ``limit``."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit} more characters)"
    return _ONE_LINE.sub(_escape, text)


class EscapeFilter(logging.Filter):
    """Escapes every record of the logger it is installed on (see the module docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # a bad format string: say so, safely, rather than lose the line
            msg = f"{record.msg!r} (unformattable arguments)"
        if getattr(record, "mcpx_lines", False):
            safe = "\n".join(printable(line) for line in msg.split("\n"))
        else:
            safe = printable(msg)
        if record.exc_info and not record.exc_text:
            # a traceback's lines are Python's; the exception's text may hold wire values
            record.exc_text = _KEEP_NL.sub(_escape, logging.Formatter().formatException(record.exc_info))
        record.msg, record.args = safe, None
        return True


_FILTER = EscapeFilter()


def install(logger: logging.Logger | None = None) -> None:
    """Install :class:`EscapeFilter` on ``logger`` (default: ``mcpx``), once."""
    target = logger or logging.getLogger("mcpx")
    if _FILTER not in target.filters:
        target.addFilter(_FILTER)
