"""A current fastmcp (4.1.6) server for mcpx tests: Streamable HTTP only, at http://127.0.0.1:PORT/mcp.

    tests/peers/.venvs/fastmcp-4.1.6/bin/python fastmcp_server.py PORT

Tools: add(a, b) -> "a + b = c"; progress(steps) reports each step, then "done in N steps"; echo(text).
"""

import sys

from fastmcp import Context, FastMCP

mcp = FastMCP("fastmcp-current")


@mcp.tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return f"{a} + {b} = {a + b}"


@mcp.tool
async def progress(steps: int, ctx: Context) -> str:
    """Report each step, then say how many."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps)
    return f"done in {steps} steps"


@mcp.tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


if __name__ == "__main__":
    mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), path="/mcp", show_banner=False, log_level="WARNING")
