"""The benchmark's loopback MCP server, on PyPI ``mcp==2.3.0`` (MCPServer API).

    tests/peers/.venvs/mcp-2.3.0/bin/python bench/server.py PORT json|sse

Serves Streamable HTTP on http://127.0.0.1:PORT/mcp, stateful (one ``Mcp-Session-Id`` per
initialize). ``json``: tool results come back as ``application/json`` bodies (the SDK's
``json_response`` option); ``sse``: as a ``text/event-stream`` response to the POST.

Tools (unstructured results, so nothing in them needs rewriting for a 2025-03-26 client):

- ``text(size)``: one text block of ``size`` characters of prose;
- ``events(count, pause_ms, size)``: ``count`` ``notifications/message`` log events of about
  ``size`` characters on the POST's SSE stream, then a pause, then a short text result.
"""

import asyncio
import functools
import logging
import sys

from mcp.server.mcpserver import Context, MCPServer

WORDS = "proxy revision schema message client server field rule change stream event session downgrade".split()

mcp = MCPServer("mcpx-bench", version="1.0.0", log_level="WARNING")


@functools.lru_cache(maxsize=8)
def prose(size: int) -> str:
    out = []
    n = 0
    i = 0
    while n < size:
        w = WORDS[(i * 7) % len(WORDS)]
        out.append(w)
        n += len(w) + 1
        i += 1
    return " ".join(out)[:size]


@mcp.tool(structured_output=False)
def text(size: int) -> str:
    """A text block of ``size`` characters."""
    return prose(size)


@mcp.tool(structured_output=False)
async def events(count: int, pause_ms: int, ctx: Context, size: int = 100) -> str:
    """``count`` log notifications on the response stream, a pause, then the result."""
    line = prose(size)
    for i in range(count):
        await ctx.info(f"{i} {line}")
    await asyncio.sleep(pause_ms / 1000)
    return f"sent {count} events"


if __name__ == "__main__":
    logging.getLogger("uvicorn.access").disabled = True
    mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), json_response=sys.argv[2] == "json")
