"""Parsing and writing bodies: a JSON body framed (:mod:`mcpx_core.framing.json_body`), a large list
result seen as skeleton + elements (:data:`SPLIT_MIN`), values serialised with their numbers kept
exactly; whether a Content-Type declares JSON."""

from __future__ import annotations

from typing import Any

from ..downgrade import split_path
from ..framing import json_body
from .exchange import Exchange

#: bodies (or SSE event data) of at least this many bytes that answer a list request (tools/list...)
#: are read an element at a time (json_body.split_array): memory for one element's objects, not the list's
SPLIT_MIN = 16 << 20
#: bodies and SSE events of at least this many bytes are rewritten with Python's cyclic garbage
#: collector paused (``gc.disable`` until the rewrite returns; issue 16). Their rewrite allocates
#: hundreds of thousands of containers, which set off collections of older generations, whose
#: cost grows with everything mitmproxy holds. What it leaves behind is collected by the next collection.
#: Measured (1 MB rewrite-heavy result, a heap of 1,000,000 other objects): 35.1 -> 24.7 ms mean.
GC_PAUSE_MIN = 256 << 10


class Bodies:
    """The body framing part of a rewriter (a mixin of :class:`~.message.Rules`); its records go
    through ``passthrough`` (:class:`~.records.Records`)."""

    def _parse(self, exch: Exchange, body: bytes | None, direction: str, looks_mcp: bool,
               held: list[str] | None = None) -> json_body.Parsed | None:
        """Frame a JSON body; None when it cannot be, with a passthrough record when the body
        ``looks_mcp`` (the exchange is then MCP traffic); ``held``: the record's reason goes there
        instead, to be logged once the session is known (:meth:`_say`)."""
        if not body:
            return None
        try:
            return json_body.parse(body)
        except json_body.Unparseable as e:
            if looks_mcp:
                exch.is_mcp = True
                if held is not None:
                    held.append(e.reason)
                else:
                    self.passthrough(exch, direction, e.reason)
            return None

    def _split(self, exch: Exchange, data: bytes | None, one_line: bool = False) -> json_body.ArraySplit | None:
        """A large list result, seen as skeleton + elements (see :data:`SPLIT_MIN`), or None.

        ``one_line``: the data of an SSE event, re-emitted as one ``data:`` line, so a body with a
        line break (several data lines: the break may sit in an element kept as its bytes) is
        not split."""
        if data is None or len(data) < SPLIT_MIN or exch.single_request_id is None or (one_line and b"\n" in data):
            return None
        path = split_path(exch.request_ids.get(exch.single_request_id), exch.revisions[1])
        return json_body.split_array(data, path) if path else None

    def _write(self, exch: Exchange, direction: str, value: Any, source: bytes | memoryview, prefix: str = "") -> bytes | None:
        """``value`` serialised (numbers of ``source`` kept exactly), or None and a passthrough record."""
        try:
            return json_body.dumps_exact(value, source)
        except json_body.Unwritable as e:
            self.passthrough(exch, direction, prefix + e.reason)
            return None

    def _split_out(self, exch: Exchange, split: json_body.ArraySplit, out: list, source: bytes, prefix: str = "") -> bytes | None:
        """The delivered bytes of a rewritten split body (None: passthrough, logged)."""
        if not out:
            return b""
        new = self._write(exch, "s2c", out[0], source, prefix)
        if new is None or split.failed:
            return new
        try:
            return split.assemble(new)
        except json_body.SplitFailed as e:
            self.passthrough(exch, "s2c", f"{prefix}large list result: {e}")
            return None


def _hashable(v: Any) -> bool:
    return isinstance(v, (str, int)) and not isinstance(v, bool)


def declares_json(content_type: str | None) -> bool:
    """Whether a Content-Type header value declares JSON (``application/json``, ``*/*+json``;
    parameters such as ``charset`` ignored)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))
