"""mcpx: a mitmproxy addon that makes old and new MCP peers understand each other.

    mitmdump -s addon/mcpx.py --mode reverse:http://127.0.0.1:3001 --set mcpx_log=changes.jsonl

Every JSON-RPC message between an MCP client and server (Streamable HTTP: JSON bodies, batches,
SSE events as they stream) is rewritten so that the receiver gets exactly what its revision of
the protocol defines; every dropped or rewritten field is logged (``mcpx_log`` JSON Lines file,
mitmproxy's event log, ``flow.metadata["mcpx"]``, the "MCP" content view). Bodies that cannot be
handled, and non-MCP traffic, pass through byte for byte.

This file only composes the addons; the library lives in ``addon/mcpx_core`` (one module per
stage: framing, session, disposition, downgrade, rules, changes, view; ``addons/`` holds the hooks).

Installed (``pip install .``), this file is the module ``mcpx``; ``python -m mcpx`` prints its path,
for ``mitmdump -s "$(python -m mcpx)" ...`` where no checkout is at hand; ``python -m mcpx check
FILE.mitm`` and ``python -m mcpx log FILE.jsonl`` read a recording and a change log.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mitmproxy import contentviews  # noqa: E402

from mcpx_core import view  # noqa: E402
from mcpx_core.addons import MCPX  # noqa: E402

addons = [MCPX()]
# The "MCP" and "MCP original" content views (mitmproxy 12: scripts register them at import).
contentviews.add(view.mcp_view)
contentviews.add(view.mcp_original_view)

if __name__ == "__main__":  # python -m mcpx: the addon file to give mitmdump/mitmweb/mitmproxy -s
    if len(sys.argv) > 1:  # python -m mcpx check FILE.mitm / log FILE.jsonl (mcpx_core/testing/cli.py)
        from mcpx_core.testing.cli import main

        sys.exit(main(sys.argv[1:]))
    print(os.path.abspath(__file__))
