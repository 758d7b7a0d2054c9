"""Deterministic JSON-RPC result bodies for the benchmark (no randomness: same bytes every run).

Three shapes of tool result, each built to a target size in bytes (within a few percent):

- ``text``: a ``tools/call`` result whose ``content`` holds text blocks of up to 8 KB of prose
  (newlines, quotes and some non-ASCII, so the JSON has escapes and multi-byte UTF-8);
- ``image``: a ``tools/call`` result with one short text block and base64 ``image`` blocks of up
  to 1 MB each;
- ``tools``: a ``tools/list`` result with ~1 KB tool definitions (description, an ``inputSchema``
  with several properties, annotations).

``clean`` bodies need no change for a 2025-03-26 session (everything they hold is defined in
schema/2025-03-26). ``changed`` bodies add a handful of fields and blocks that a modern server
sends to such a client anyway (a content block ``_meta`` and ``annotations.lastModified``, a
``resource_link`` block, ``structuredContent``; for tools: ``title``, ``icons``, ``outputSchema``),
so the rewrite makes 5-8 changes whatever the body size.
"""
from __future__ import annotations

import base64
import hashlib
import json

try:
    import orjson
except ImportError:  # the benchmark's server runs in the mcp peer's environment, without orjson
    class orjson:  # type: ignore[no-redef]
        @staticmethod
        def dumps(v) -> bytes:
            return json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode()

KINDS = ("text", "image", "tools")
SIZES = {"2KB": 2_000, "100KB": 100_000, "1MB": 1_000_000, "10MB": 10_000_000}

#: the session the core benchmark rewrites in: a server and client that negotiated 2025-03-26
REVISION = "2025-03-26"
METHOD = {"text": "tools/call", "image": "tools/call", "tools": "tools/list"}

_WORDS = ("proxy revision schema message client server field rule change stream event session "
          "downgrade result content block \"quoted\" café naïve — tab\tline").split(" ")


def prose(n: int, seed: int = 0) -> str:
    """About ``n`` characters of text with line breaks, quotes and non-ASCII letters."""
    out, size, i = [], 0, seed
    while size < n:
        w = _WORDS[(i * 7 + seed) % len(_WORDS)]
        out.append(w)
        size += len(w) + 1
        i += 1
        if i % 12 == 0:
            out.append("\n")
    return " ".join(out)[:n]


def blob(n: int, seed: int = 0) -> str:
    """A base64 string of about ``n`` characters (deterministic bytes)."""
    raw = hashlib.shake_256(seed.to_bytes(8, "little")).digest(n * 3 // 4)
    return base64.b64encode(raw).decode("ascii")


def tool(i: int) -> dict:
    return {
        "name": f"tool_{i:05d}",
        "description": prose(300, i),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for, in plain words."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                "mode": {"type": "string", "enum": ["fast", "thorough", "exact"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "options": {"type": "object", "properties": {"caseSensitive": {"type": "boolean"},
                                                             "region": {"type": "string"}}},
            },
            "required": ["query"],
        },
        "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    }


def _fill(target: int, make, base: int) -> list:
    """Items from ``make(i, room)`` until the JSON reaches ``target`` bytes (``base`` = the rest)."""
    items: list = []
    size = base
    i = 0
    while size < target:
        item = make(i, target - size)
        items.append(item)
        size += len(orjson.dumps(item)) + 1
        i += 1
    return items


def result_body(kind: str, size: int, changed: bool, msg_id: int = 1) -> bytes:
    """The body of a JSON-RPC response of about ``size`` bytes."""
    if kind == "tools":
        base = len(orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "result": {"tools": []}}))
        tools = _fill(size, lambda i, room: tool(i), base)
        if changed:
            for t in tools[:2]:
                t["title"] = f"Tool {t['name']}"
                t["icons"] = [{"src": "https://example.com/icon.png", "mimeType": "image/png"}]
                t["outputSchema"] = {"type": "object", "properties": {"hits": {"type": "integer"}}}
        return orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "result": {"tools": tools}})
    if kind == "text":
        def make(i, room):
            return {"type": "text", "text": prose(max(16, min(8000, room - 40)), i)}
    else:
        def make(i, room):
            if i == 0:
                return {"type": "text", "text": "Rendered pages follow."}
            return {"type": "image", "data": blob(max(16, min(1_000_000, room - 60)), i), "mimeType": "image/png"}
    extra = 0
    if changed:
        extra = 400
    base = len(orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "result": {"content": [], "isError": False}}))
    content = _fill(size - extra, make, base)
    result: dict = {"content": content, "isError": False}
    if changed:
        first = content[-1]
        first["annotations"] = {"audience": ["user"], "lastModified": "2025-01-12T15:00:58Z"}
        first["_meta"] = {"example.com/source": "cache"}
        content.append({"type": "resource_link", "uri": "file:///reports/summary.pdf", "name": "summary.pdf",
                        "mimeType": "application/pdf"})
        result["structuredContent"] = {"pages": len(content), "ok": True}
    return orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result})


# -- rewrite-heavy bodies (issue 16): the cost of a change, not of a byte ---------------------------
#: kinds whose every few blocks (or every tool) need a change for a 2025-03-26 client
HEAVY_KINDS = ("links", "tooldefs")
HEAVY_METHOD = {"links": "tools/call", "tooldefs": "tools/list"}


def link_block(i: int) -> dict:
    """A ``resource_link`` (2025-06-18) with ``annotations.lastModified``: for a 2025-03-26 client
    it becomes an embedded resource (CT-resource_link) whose ``lastModified`` is dropped (2 records)."""
    return {"type": "resource_link", "uri": f"file:///repo/src/pkg_{i // 50:03d}/module_{i:05d}.py",
            "name": f"module_{i:05d}.py", "mimeType": "text/x-python",
            "annotations": {"audience": ["assistant"], "priority": 0.5, "lastModified": "2025-01-12T15:00:58Z"}}


def heavy_tool(i: int) -> dict:
    """A tool with ``title``, ``icons`` and ``outputSchema`` (2025-06-18+): 3 records for 2025-03-26."""
    t = tool(i)
    t["description"] = prose(200, i)
    t["title"] = f"Tool number {i}"
    t["icons"] = [{"src": f"https://example.com/icons/{i}.png", "mimeType": "image/png", "sizes": ["48x48"]}]
    t["outputSchema"] = {"type": "object", "properties": {"hits": {"type": "integer"}, "next": {"type": "string"}}}
    return t


def heavy_body(kind: str, size: int, msg_id: int = 1) -> bytes:
    """A rewrite-heavy result of about ``size`` bytes.

    ``links``: a file search: per file, five short text lines (about 130 bytes each) and one
    ``resource_link`` block (a 1 MB body holds about 7,000 text and 1,400 link blocks), plus
    ``structuredContent``; ``tooldefs``: a ``tools/list`` where every tool (about 1 KB) needs 3 changes."""
    if kind == "tooldefs":
        base = len(orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "result": {"tools": []}}))
        return orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "result": {"tools": _fill(size, lambda i, room: heavy_tool(i), base)}})
    if kind != "links":
        raise ValueError(kind)

    def make(i, room):
        if i % 6 == 0:
            return link_block(i // 6)
        return {"type": "text", "text": f"module_{i // 6:05d}.py:{(i % 6) * 17 + 3}: " + prose(60, i)}
    extra = 60
    base = len(orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "result": {"content": [], "isError": False}}))
    content = _fill(size - extra, make, base)
    if not any(b["type"] == "resource_link" for b in content):
        content.append(link_block(0))
    links = sum(1 for b in content if b["type"] == "resource_link")
    result = {"content": content, "structuredContent": {"files": links, "truncated": False}, "isError": False}
    return orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result})


# -- large results for the fairness part (issue 30) ----------------------------------------------
def blocks_body(count: int, size: int, msg_id: int = 1) -> bytes:
    """A search result of ``count`` text blocks and about ``size`` bytes, with a small
    ``structuredContent`` (for a 2024-11-05 client it becomes a text block: SC-structuredContent).
    1,000,000 blocks of 30 MB: short hits; 50,000 of 50 MB: about 1 KB each."""
    room = max(0, size // count - len('{"type":"text","text":"000000 "},'))
    pad = prose(room, 3) if room else ""
    content = [{"type": "text", "text": f"{i:06d} {pad}" if pad else f"{i:06d}"} for i in range(count)]
    result = {"content": content, "structuredContent": {"hits": count}, "isError": False}
    return orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result})
