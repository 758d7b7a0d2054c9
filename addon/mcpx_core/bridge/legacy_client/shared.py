"""What every part of the legacy-client bridge shares: its constants, the JSON-RPC error and SSE
event it writes, a server->client request awaiting the client's answer (:class:`Pending`) and a
bridged session's mutable state (:class:`SessionState`)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ... import revisions
from ...framing import json_body
from ...rules.api import escape

if TYPE_CHECKING:
    from .listen import Listen

logger = logging.getLogger("mcpx")

NAME = "legacy-client"
LATEST = revisions.LATEST
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
LOG = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
#: requests whose params are PaginatedRequestParams in 2026 (schema/2026-07-28/schema.ts:1064)
PAGINATED = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
#: rounds of input_required mcpx answers for one request (as @modelcontextprotocol/client 2.4.0: 10 retries)
MAX_ROUNDS = 10
#: seconds mcpx waits for the client to answer the input requests of one round (a human may answer an
#: elicitation; mcp 2.3.0 seals requestState for 600 s: tests/peers/BRIDGING.md 2.5)
INPUT_TIMEOUT = 600.0
#: sessions whose mutable state (log level, subscriptions, listen) is kept at most
MAX_SESSIONS = 10000
NOTE = "bridge legacy-client: the server speaks only 2026-07-28"
JSON_HEADERS = (("content-type", "application/json"),)


def _ptr(*keys: str) -> str:
    return "".join("/" + escape(k) for k in keys)


def _error(rid: Any, code: int, message: str, data: Any = None) -> dict:
    err: dict = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": err}


def sse_event(message: dict) -> bytes:
    """One SSE event carrying ``message`` (``event: message``: mcp 1.x Python clients ignore others)."""
    return b"event: message\ndata: " + json_body.dumps(message) + b"\n\n"


@dataclass
class Pending:
    """A server->client request mcpx sent to the client for one ``inputRequests`` entry."""

    key: str
    method: str
    session: str
    future: asyncio.Future


@dataclass
class SessionState:
    """A bridged session's mutable state (memory only)."""

    log_level: str | None = None
    subscribed: list[str] = field(default_factory=list)
    listen: Listen | None = None
    #: client request id -> its call in flight (for notifications/cancelled)
    calls: dict = field(default_factory=dict)
    caps_2026: tuple[dict, list] | None = None

