"""An HTTP+SSE (2024-11-05 transport) client on PyPI `mcp` (`mcp.client.sse.sse_client`), for mcpx tests.

    tests/peers/.venvs/mcp-1.8.1/bin/python sse_client.py URL

URL is the server's SSE endpoint (.../sse). Initializes, lists the tools, calls add(2, 3) and hi;
prints ONE JSON line: {"protocolVersion", "tools": [names], "add": content, "hi": content}.
Exit 2 when it cannot connect or a call fails (the error on stderr).
"""

import json
import sys

import anyio
from mcp import ClientSession
from mcp.client.sse import sse_client


async def main(url: str) -> None:
    async with sse_client(url, timeout=10, sse_read_timeout=20) as (read, write):
        async with ClientSession(read, write) as session:
            with anyio.fail_after(20):
                init = await session.initialize()
                tools = await session.list_tools()
                add = await session.call_tool("add", {"a": 2, "b": 3})
                hi = await session.call_tool("hi", {})
    dump = lambda r: [c.model_dump(mode="json", exclude_none=True) for c in r.content]  # noqa: E731
    print(json.dumps({"protocolVersion": init.protocolVersion, "tools": [t.name for t in tools.tools],
                      "add": dump(add), "hi": dump(hi)}))


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1])
    except BaseException as e:  # noqa: BLE001 (one line for the test, whatever failed)
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)
