"""A minimal loopback MCP server that answers with prebuilt bodies (rewrite-heavy results).

    .venv/bin/python bench/raw_server.py PORT json|sse

An SDK server spends longer serialising a result of thousands of content blocks than a proxy
spends forwarding it (mcp 2.3.0: about 100 ms for the 1 MB body), so in front of it every proxy
looks alike. This one builds each body once (:func:`payloads.heavy_body`) and then only writes
bytes, so the proxy's own cost shows, as in front of a fast server.

Streamable HTTP over HTTP/1.1 keep-alive, stateful: ``initialize`` (any revision the client
names, a new ``Mcp-Session-Id``), notifications (202), and

- ``tools/call`` ``links`` with ``{"size": N}``: the ``links`` body of about N bytes;
- ``tools/list`` with the cursor ``tooldefs:N``: the ``tooldefs`` body of about N bytes.
- ``tools/call`` ``blocks`` with ``{"count": N, "size": B}``: a result of N text blocks and about
  B bytes (:func:`payloads.blocks_body`, the fairness part).

``json``: ``application/json`` responses with Content-Length; ``sse``: one ``text/event-stream``
event per response, chunked. Anything else: a JSON-RPC error.
"""
from __future__ import annotations

import asyncio
import functools
import itertools
import sys
import os

import orjson

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import payloads  # noqa: E402

_sessions = itertools.count(1)


@functools.lru_cache(maxsize=16)
def _result(kind: str, size: int) -> bytes:
    """The ``result`` member of a heavy body, as bytes."""
    return orjson.dumps(orjson.loads(payloads.heavy_body(kind, size))["result"])


@functools.lru_cache(maxsize=4)
def _blocks(count: int, size: int) -> bytes:
    """The ``result`` member of :func:`payloads.blocks_body`, as bytes."""
    body = payloads.blocks_body(count, size)
    return body[body.index(b'"result":') + 9:-1]


def _answer(msg: dict) -> tuple[int, bytes, dict[str, str]]:
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:
        return 202, b"", {}
    head = b'{"jsonrpc":"2.0","id":' + orjson.dumps(mid) + b',"result":'
    params = msg.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-03-26"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "mcpx-bench-raw", "version": "1"}}
        return 200, head + orjson.dumps(result) + b"}", {"mcp-session-id": f"raw-{next(_sessions)}"}
    if method == "tools/call" and params.get("name") == "links":
        return 200, head + _result("links", int((params.get("arguments") or {}).get("size", 2000))) + b"}", {}
    if method == "tools/call" and params.get("name") == "blocks":
        a = params.get("arguments") or {}
        return 200, head + _blocks(int(a.get("count", 1000)), int(a.get("size", 30_000))) + b"}", {}
    if method == "tools/list" and str(params.get("cursor", "")).startswith("tooldefs:"):
        return 200, head + _result("tooldefs", int(params["cursor"].split(":", 1)[1])) + b"}", {}
    error = {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": f"not served: {method}"}}
    return 200, orjson.dumps(error), {}


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, sse: bool) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            status, out, extra = _answer(orjson.loads(body)) if body else (400, b"", {})
            hdrs = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Accepted' if status == 202 else 'Bad Request'}"]
            hdrs += [f"{k}: {v}" for k, v in extra.items()]
            if status == 200 and sse:
                event = b"event: message\r\ndata: " + out + b"\r\n\r\n"
                hdrs += ["content-type: text/event-stream", "cache-control: no-cache", "transfer-encoding: chunked"]
                writer.write(("\r\n".join(hdrs) + "\r\n\r\n").encode() + f"{len(event):x}\r\n".encode() + event
                             + b"\r\n0\r\n\r\n")
            else:
                hdrs += ["content-type: application/json", f"content-length: {len(out)}"]
                writer.write(("\r\n".join(hdrs) + "\r\n\r\n").encode() + out)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int, sse: bool) -> None:
    server = await asyncio.start_server(lambda r, w: _serve(r, w, sse), "127.0.0.1", port, limit=1 << 20)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2] == "sse"))
