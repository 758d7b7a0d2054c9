"""The 2026-07-28 example messages of the specification (shipped in shared/mcp-schema/2026-07-28/examples,
copied to tests/schema/examples-2026-07-28/), as (file name, MessageType, JSON-RPC message).

A folder is named after the definition its files are instances of. Results, requests and
notifications become JSON-RPC messages; ``*ResultResponse`` files already are; content blocks and
definitions (Tool, Resource, ...) are wrapped in the result that carries them. Folders of other
definitions (capabilities, params, errors) are listed in SKIPPED with the reason.
"""
from __future__ import annotations

import copy
import pathlib

import orjson

from mcpx_core import revisions
from property_lib import MessageType

E = "2026-07-28"
DIR = pathlib.Path(__file__).resolve().parent / "examples-2026-07-28"
WRAP = {
    "Tool": ("tools/list", lambda x: {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "tools": [x]}),
    "Resource": ("resources/list", lambda x: {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "resources": [x]}),
    "TextResourceContents": ("resources/read", lambda x: {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "contents": [x]}),
    "BlobResourceContents": ("resources/read", lambda x: {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "contents": [x]}),
}
for block in ("TextContent", "ImageContent", "AudioContent", "ResourceLink", "EmbeddedResource"):
    WRAP[block] = ("tools/call", lambda x: {"resultType": "complete", "content": [x]})
SKIPPED = {}


def _method_of(name: str) -> tuple[str, str] | None:
    m = revisions.model(E)
    base = name.removesuffix("Response")
    for method, req in m.requests.items():
        if base == req:
            return method, "request"
        if base == req[: -len("Request")] + "Result":
            return method, "result"
    for method, n in m.notifications.items():
        if base == n:
            return method, "notification"
    return None


def example_messages():
    m = revisions.model(E)
    for folder in sorted(p for p in DIR.iterdir() if p.is_dir()):
        name = folder.name
        for f in sorted(folder.glob("*.json")):
            value = orjson.loads(f.read_bytes())
            label = f"{name}/{f.name}"
            if name in WRAP:
                method, wrap = WRAP[name]
                yield label, MessageType(E, "s2c", "result", method, m.result_for(method)), {"jsonrpc": "2.0", "id": 7, "result": wrap(copy.deepcopy(value))}
                continue
            found = _method_of(name)
            if found is None:
                SKIPPED[name] = "not a message, and no result carries it alone"
                continue
            method, kind = found
            if name.endswith("Response"):
                msg = value
            elif kind == "result":
                msg = {"jsonrpc": "2.0", "id": 7, "result": value}
            else:
                msg = {"jsonrpc": "2.0", **value} | ({"id": 7} if kind == "request" else {})
            direction = "c2s" if (kind == "request" and method in m.client_requests) or (kind == "notification" and method in m.client_notifications) \
                or (kind == "result" and method in m.server_requests) else "s2c"
            defn = m.result_for(method) if kind == "result" else (m.requests if kind == "request" else m.notifications)[method]
            yield label, MessageType(E, direction, kind, method, defn), msg
