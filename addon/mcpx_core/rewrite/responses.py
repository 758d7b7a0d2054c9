"""A server's JSON response body, message by message, for the client's leg: ids mcpx gave the server
put back, the late answers of a batch appended, a large list result read an element at a time."""

from __future__ import annotations

import gc

from ..changes import Change
from ..downgrade import classify
from ..framing import json_body
from .body import GC_PAUSE_MIN, declares_json
from .exchange import Exchange


class Responses:
    """The JSON response part of :class:`~.rewriter.Rewriter` (a mixin)."""

    def response_json(self, exch: Exchange, body: bytes, content_type: str | None = None) -> bytes | None:
        """Rewrite a (JSON) response body; None means forward it unchanged. ``content_type``: the
        response's Content-Type (None: not known, taken for JSON). A body that does not parse gets
        a passthrough record only when the exchange is MCP and the Content-Type declares JSON: an
        HTML error page (a wrong path) is not MCP traffic, and gets no record. A body of
        :data:`GC_PAUSE_MIN` bytes or more is rewritten with the cyclic garbage collector paused."""
        if len(body) >= GC_PAUSE_MIN and gc.isenabled():
            gc.disable()
            try:
                return self._response_json(exch, body, content_type)
            finally:
                gc.enable()
        return self._response_json(exch, body, content_type)

    def _response_json(self, exch: Exchange, body: bytes, content_type: str | None) -> bytes | None:
        split = self._split(exch, body)
        if split is not None:
            out, changed = self._s2c_messages(exch, [split.skeleton], split, body)
            return self._split_out(exch, split, out, body) if changed else None
        looks_mcp = exch.is_mcp and (content_type is None or declares_json(content_type))
        parsed = self._parse(exch, body, "s2c", looks_mcp)
        if parsed is None:
            if not body and looks_mcp and exch.request_ids:  # (a 202 to notifications has nothing to answer)
                self.passthrough(exch, "s2c", "body is empty: holds no JSON-RPC 2.0 message")
            return self._raw_ids_back(exch, body) if exch.id_map and body else None
        if not any(classify(m) for m in parsed.messages) and not (exch.is_mcp and exch.late_answers and parsed.batch):
            if looks_mcp:  # ({}, [], "jsonrpc": "1.0", an HTTP error's own JSON): as for a client POST
                self.passthrough(exch, "s2c", "body holds no JSON-RPC 2.0 message")
            return None
        out, changed = self._s2c_messages(exch, parsed.messages, source=body)
        if exch.late_answers and parsed.batch:
            out.extend(exch.late_answers)
            changed = True
        if not changed:
            return None
        if not parsed.batch and not out:
            return b""
        return self._write(exch, "s2c", out if parsed.batch else out[0], body)

    def _raw_ids_back(self, exch: Exchange, body: bytes) -> bytes | None:
        """A body mcpx cannot parse that names an id mcpx gave the server (``"id":"mcpx-<n>"``, a
        bridge's): the client's own id put back, every other byte as it came (None: it names none)."""
        out = body
        for minted, original in exch.id_map.items():
            ours = b'"id":' + json_body.dumps(minted)
            if ours in out:
                out = out.replace(ours, b'"id":' + json_body.dumps(original))
                self._emit(exch, [Change(pointer="/id", action="rewrite", rule="RPC-request-id-reuse", before=f'"{minted}"',
                                         after=json_body.dumps(original).decode(),
                                         detail="the id mcpx gave the server, mapped back in a body mcpx cannot parse")],
                           "s2c", None, None, *exch.revisions)
        return None if out is body else out

    def _s2c_messages(self, exch: Exchange, messages: list, split: json_body.ArraySplit | None = None,
                      source: bytes | None = None) -> tuple[list, bool]:
        """Downgrade each server message of one body or event (parsed from ``source``): (what to
        deliver, whether anything changed)."""
        from_rev, to_rev = exch.revisions
        out, changed = [], False
        for m in messages:
            res = self._one(exch, m, "s2c", from_rev, to_rev, split, source)
            from_rev, to_rev = exch.revisions  # an initialize result sets them for what follows
            if res is None:
                out.append(m)
            else:
                changed = True
                if res.message is not None:
                    out.append(res.message)
        return out, changed
