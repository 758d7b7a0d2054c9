"""An HTTP+SSE (2024-11-05 transport) MCP server on PyPI `mcp==1.8.1` FastMCP, for mcpx tests.

    tests/peers/.venvs/mcp-1.8.1/bin/python sse_server.py PORT [SSE_PATH]

Serves GET http://127.0.0.1:PORT/sse (the SSE stream; its first event, `endpoint`, names the POST
URL /messages/?session_id=...) and POST /messages/ (schema/2024-11-05 transports: "HTTP with SSE").
With SSE_PATH, the stream is there instead (a deployment no convention names). No Streamable HTTP
endpoint: an SSE-only server. Tools: add(a, b) -> "a + b = c"; hi() -> "hi".
"""

import sys

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("sse-only", host="127.0.0.1", port=int(sys.argv[1]), log_level="WARNING",
              sse_path=sys.argv[2] if len(sys.argv) > 2 else "/sse")


@mcp.tool()
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return f"{a} + {b} = {a + b}"


@mcp.tool()
def hi() -> str:
    """Say hi."""
    return "hi"


if __name__ == "__main__":
    mcp.run(transport="sse")
