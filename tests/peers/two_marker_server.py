"""A "two-marker" MCP server on PyPI `mcp==2.3.0` (MCPServer API) for mcpx tests.

    tests/peers/.venvs/mcp-2.3.0/bin/python two_marker_server.py PORT [--stateless] [--json]

Serves Streamable HTTP on http://127.0.0.1:PORT/mcp. Two tools return the same result, in which
the text content and the structuredContent carry DIFFERENT information:

- the text block says "results truncated, use offset=10 MARKER-A";
- structuredContent carries "MARKER-B" in the field ``next_cursor``, which the text never mentions
  (nor the items).

``search_with_schema`` declares an outputSchema (the Page model); ``search_no_schema`` declares
none. So a test can tell whether a peer (or mcpx) kept the text, the structured data, or both:
MARKER-A present means the text survived; MARKER-B present means the structured data survived.

A separate server on purpose: adding these tools to py_server.py would change its tools/list, which
the recorded flows and goldens in flows/ (mcp-1.8.1_py, mcp-1.9.4_py-json, mcp-1.12.4_py,
client-2.4.0-auto_py) and scenarios.json's listTools results were recorded from.
Note: the SDK enables DNS-rebinding protection for 127.0.0.1, so requests must carry
Host: 127.0.0.1:PORT or localhost:PORT.
"""

import sys
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

TEXT = "results truncated, use offset=10 MARKER-A"
ITEMS = [f"doc-{i}" for i in range(1, 11)]
STRUCTURED = {"items": ITEMS, "total": 42, "next_cursor": "MARKER-B"}
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


class Page(BaseModel):
    items: list[str] = Field(description="The first page of results")
    total: int = Field(description="How many results there are")
    next_cursor: str = Field(description="Opaque cursor of the next page")


def _result() -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=TEXT)], structured_content=dict(STRUCTURED))


mcp = MCPServer("mcpx-two-marker", version="1.0.0", log_level="WARNING")


@mcp.tool(annotations=READ_ONLY)
def search_with_schema(query: str = "mcp") -> Annotated[CallToolResult, Page]:
    """Text says MARKER-A; structuredContent (declared by outputSchema) carries MARKER-B in next_cursor."""
    return _result()


@mcp.tool(annotations=READ_ONLY)
def search_no_schema(query: str = "mcp") -> CallToolResult:
    """Text says MARKER-A; structuredContent (no outputSchema) carries MARKER-B in next_cursor."""
    return _result()


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or not args[0].isdigit() or set(args[1:]) - {"--stateless", "--json"}:
        sys.exit("usage: two_marker_server.py PORT [--stateless] [--json]")
    mcp.run("streamable-http", host="127.0.0.1", port=int(args[0]),
            stateless_http="--stateless" in args, json_response="--json" in args)
