"""Which era an upstream speaks: 2026-07-28 (stateless, per-request ``_meta``), legacy (the
``initialize`` handshake, 2024-11-05..2025-11-25), or both (REVISIONS.md 2.3).

Two facts per origin (``scheme://host:port``), each learnt once and kept ``ttl`` seconds:

- ``speaks_2026``: from a ``server/discover`` probe mcpx sends when the first 2026-07-28 client
  request meets an origin with no verdict (schema/2026-07-28/schema.ts:665): a DiscoverResult whose
  ``supportedVersions`` lists 2026-07-28, or an UnsupportedProtocolVersionError (-32022) whose
  ``data.supported`` does, means yes; anything else (HTTP 4xx without such a body, -32601, a
  session error such as the TypeScript SDK's "Server not initialized") means no
  (docs/specification/2026-07-28/basic/transports/streamable-http.mdx:652, versioning.mdx:159).
  As @modelcontextprotocol/client 2.4.0 does, -32020 and -32021 are not taken as 2026 evidence
  (tests/peers/BRIDGING.md 4.1). An answer that speaks of the client rather than the server (HTTP 401
  or 403 without a JSON-RPC response: an authorization challenge, RFC 9110 15.5.2 and 15.5.4) gives no
  verdict (:func:`about_the_client`): the probe was sent with one client's credentials, and what the
  server thinks of those says nothing of its era for the next client.
- ``speaks_legacy``: from the answer to a legacy client's ``initialize``: an InitializeResult means
  yes; a refusal a 2026-only server gives (HTTP 400 with -32022/-32602/-32020, or 404 with -32601)
  means no.

Cost: one ``server/discover`` round trip per origin per ``ttl`` (default 600 s), only when a
2026-07-28 client shows up; nothing for legacy clients (their ``initialize`` answers the question).
``mcpx_server_era`` forces the verdict (``legacy``, ``2026``, ``dual``) and sends no probe.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from .. import revisions
from ..framing import json_body

LATEST = revisions.LATEST
Forced = Literal["auto", "legacy", "2026", "dual"]
#: JSON-RPC codes a 2026-only server answers a legacy ``initialize`` with
REFUSAL_CODES = frozenset({-32022, -32602, -32020, -32601})


@dataclass
class Verdict:
    speaks_2026: bool | None = None
    speaks_legacy: bool | None = None
    #: the DiscoverResult of the probe, if any (capabilities, instructions, serverInfo)
    discover: dict | None = None
    at: float = 0.0


class EraCache:
    """Verdicts per origin; ``forced`` (the ``mcpx_server_era`` option) overrides every one."""

    def __init__(self, ttl: float = 600.0, forced: Forced = "auto"):
        self.ttl = ttl
        self.forced: Forced = forced
        self._v: dict[str, Verdict] = {}

    def get(self, origin: str) -> Verdict:
        if self.forced != "auto":
            return Verdict(speaks_2026=self.forced in ("2026", "dual"), speaks_legacy=self.forced in ("legacy", "dual"))
        v = self._v.get(origin)
        if v is None or time.monotonic() - v.at > self.ttl:
            v = self._v[origin] = Verdict(at=time.monotonic())
        return v

    def learn(self, origin: str, **facts: Any) -> Verdict:
        v = self.get(origin)
        if self.forced != "auto":
            return v
        for k, val in facts.items():
            setattr(v, k, val)
        v.at = time.monotonic()
        return v


def discover_request(rid: str, client_info: dict | None = None, caps: dict | None = None) -> dict:
    """A ``server/discover`` request with the full 2026 envelope (schema/2026-07-28/schema.ts:76-110)."""
    meta = {"io.modelcontextprotocol/protocolVersion": LATEST, "io.modelcontextprotocol/clientCapabilities": caps or {}}
    if client_info:
        meta["io.modelcontextprotocol/clientInfo"] = client_info
    return {"jsonrpc": "2.0", "id": rid, "method": "server/discover", "params": {"_meta": meta}}


def discover_headers() -> dict[str, str]:
    """The 2026 routing headers of a discover request (streamable-http.mdx:257, :286)."""
    return {"mcp-protocol-version": LATEST, "mcp-method": "server/discover"}


def classify_discover(status: int, content_type: str, body: bytes) -> tuple[bool, dict | None]:
    """(speaks 2026, the DiscoverResult or None) from the answer to a discover probe."""
    msg = first_response(content_type, body)
    if not isinstance(msg, dict):
        return False, None
    result = msg.get("result")
    if isinstance(result, dict) and isinstance(result.get("supportedVersions"), list):
        return LATEST in result["supportedVersions"], result if LATEST in result["supportedVersions"] else None
    err = msg.get("error")
    if isinstance(err, dict) and err.get("code") == -32022:
        data = err.get("data") if isinstance(err.get("data"), dict) else {}
        return LATEST in (data.get("supported") or []), None
    return False, None


def about_the_client(status: int, content_type: str, body: bytes) -> bool:
    """Whether the answer to a probe is about the credentials it carried, not the server's era:
    HTTP 401 or 403 holding no JSON-RPC response (an authorization challenge or refusal). No verdict
    is learnt from it."""
    if status not in (401, 403):
        return False
    msg = first_response(content_type, body)
    return not (isinstance(msg, dict) and msg.get("jsonrpc") == "2.0")


def refuses_legacy(status: int, content_type: str, body: bytes) -> bool:
    """Whether an answer to a legacy ``initialize`` is the refusal of a 2026-only server."""
    if status not in (400, 404):
        return False
    msg = first_response(content_type, body)
    err = msg.get("error") if isinstance(msg, dict) else None
    return isinstance(err, dict) and err.get("code") in REFUSAL_CODES


def first_response(content_type: str, body: bytes) -> Any:
    """The first JSON-RPC response (result or error) of a JSON or SSE body, or None."""
    if not body:
        return None
    if content_type.split(";")[0].strip().lower() == "text/event-stream":
        from ..framing.sse import SSEParser, json_values
        p = SSEParser()
        for m in json_values(p.feed(body) + p.close()[0]):
            if isinstance(m, dict) and ("result" in m or "error" in m):
                return m
        return None
    try:
        m = json_body.loads(body)
    except orjson.JSONDecodeError:
        return None
    return m if isinstance(m, dict) else None
