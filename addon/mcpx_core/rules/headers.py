"""HTTP header rules for client requests toward the server's revision (REVISIONS.md 5.2).

- ``TR-protocol-version-header`` (docs/specification/2025-06-18/basic/transports.mdx:242): after
  initialize, ``MCP-Protocol-Version`` must name the server leg's revision. Where the legs differ
  (a pin or a bridge), a different value sent by the client is replaced by it, and a missing one is
  added toward a 2025-06-18+ server. Where both legs agree the header goes as sent.
- ``TR-mcp-method-name`` / ``TR-mcp-param-headers`` (docs/specification/2026-07-28/basic/transports/streamable-http.mdx:290, 356):
  ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` are removed toward legacy servers.

:func:`request_headers` takes the header names and values as a mapping (case-insensitive names)
and returns what to set and remove, with the change records. Header *values* never enter a record
except the protocol version itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import revisions
from ..changes import Change

MODERN = ("mcp-method", "mcp-name")


def request_headers(headers: Mapping[str, str], client_rev: str | None, server_rev: str | None) -> tuple[dict[str, str], list[str], list[Change]]:
    """(headers to set, header names to remove, change records) for one client request."""
    sets: dict[str, str] = {}
    removes: list[str] = []
    changes: list[Change] = []
    if not revisions.is_known(server_rev):
        return sets, removes, changes
    lower = {k.lower(): k for k in headers}
    pv = lower.get("mcp-protocol-version")
    if client_rev != server_rev and revisions.is_known(client_rev):
        # the legs differ (a pin, a bridge): the server gets its own revision; when both legs agree
        # the header goes as the client sent it (the server judges a wrong value itself)
        if pv is not None and headers[pv] != server_rev:
            sets[pv] = server_rev
            changes.append(Change(pointer="header:MCP-Protocol-Version", action="rewrite", rule="TR-protocol-version-header",
                                  before=headers[pv], after=server_rev))
        elif pv is None and not revisions.older(server_rev, "2025-06-18"):
            # upgrade direction: a client leg that sends no header facing a 2025-06-18+ server, which
            # would otherwise assume 2025-03-26 (docs/specification/2025-06-18/basic/transports.mdx:253)
            sets["MCP-Protocol-Version"] = server_rev
            changes.append(Change(pointer="header:MCP-Protocol-Version", action="synthesize", rule="TR-protocol-version-header",
                                  after=server_rev))
    if revisions.older(server_rev, "2026-07-28"):
        for low, name in lower.items():
            if low in MODERN:
                removes.append(name)
                changes.append(Change(pointer=f"header:{name}", action="drop", rule="TR-mcp-method-name"))
            elif low.startswith("mcp-param-"):
                removes.append(name)
                changes.append(Change(pointer=f"header:{name}", action="drop", rule="TR-mcp-param-headers"))
    return sets, removes, changes
