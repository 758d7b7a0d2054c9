"""What every part of the client2026 bridge shares: its constants, the ids it mints, the time
constants read through the package (:func:`timing`) and small helpers on messages and headers."""

from __future__ import annotations

import itertools
import logging

from ... import revisions
from ...downgrade import classify
from ...framing import json_body
from .. import Reply

logger = logging.getLogger("mcpx")

NAME = "client2026"
LATEST = revisions.LATEST
NEWEST_LEGACY = revisions.LEGACY[-1]
MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
EMBEDDED = frozenset({"sampling/createMessage", "elicitation/create", "roots/list"})
META_KEYS = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
             "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/logLevel")
STATE_PREFIX = "mcpx-rs1."
_IDS = itertools.count(1)
#: no JSON-RPC id in an error mcpx answers (the request it refuses has none to answer)
NO_ID = object()


def _mint() -> str:
    return f"mcpx-{next(_IDS)}"



def timing(name: str) -> float:
    """``HELD_TTL`` or ``CALL_IDLE``, read at each use from :mod:`mcpx_core.bridge.client2026` (the
    package), where tests and scripts loaded into mitmdump set them."""
    from .. import client2026  # (at call time: the package imports this module)
    return getattr(client2026, name)


class Refused(Exception):
    """The server refused what mcpx sent for the client; ``reply`` is its answer."""

    def __init__(self, reply: Reply):
        super().__init__(f"HTTP {reply.status}")
        self.reply = reply


def _header_value(value: str | None) -> str | None:
    """A routing header's value: ``=?base64?...?=`` decoded (streamable-http.mdx:495), else as is."""
    if value and value.startswith("=?base64?") and value.endswith("?="):
        import base64
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
    return value


#: RFC 5424 severities, lowest first (schema/2026-07-28/schema.ts LoggingLevel)
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _log_wanted(asked: str | None, m: dict) -> bool:
    level = (m.get("params") or {}).get("level")
    return asked in LEVELS and level in LEVELS and LEVELS.index(level) >= LEVELS.index(asked)


def _meta_of(msg: dict) -> dict:
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    return params.get("_meta") if isinstance(params.get("_meta"), dict) else {}


#: the client capability each embedded request needs (schema/2026-07-28/schema.ts ClientCapabilities)
CAPABILITY = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}


def _declares(caps: dict | None, method: str) -> bool:
    return isinstance(caps, dict) and isinstance(caps.get(CAPABILITY[method]), dict)


def _batch(body: bytes | None) -> bool:
    """Whether ``body`` is a JSON-RPC batch (a JSON array)."""
    try:
        return bool(body) and json_body.parse(body, exact_ints=True).batch
    except json_body.Unparseable:
        return False


def _single(body: bytes | None) -> dict | None:
    if not body:
        return None
    try:
        parsed = json_body.parse(body, exact_ints=True)
    except json_body.Unparseable:
        return None
    return parsed.messages[0] if not parsed.batch and classify(parsed.messages[0]) else None


__all__ = ["Client2026Bridge", "Listen", "ListenStream", "NAME", "Reply"]
