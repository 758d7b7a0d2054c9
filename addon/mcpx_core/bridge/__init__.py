"""Bridging: a stage of its own between the session and the rules, for peers of different eras.

Where both peers speak a legacy revision (2024-11-05..2025-11-25), or both 2026-07-28, mcpx
rewrites each message in place (:mod:`mcpx_core.downgrade`, :mod:`mcpx_core.rules`). Where one
peer speaks only 2026-07-28 and the other only a legacy revision, there is no 1:1 wire equivalent
(REVISIONS.md 2.4 "cross-era mode"): mcpx answers some messages itself, holds others, and sends
requests of its own (the ``bridge``, ``answer-locally`` and ``synthesize`` records of
revision-delta.json). Modules:

- :mod:`.era`: which era an upstream speaks (a ``server/discover`` probe, cached per origin);
- :mod:`.client2026`: a 2026-07-28 client in front of a legacy server;
- :mod:`.legacy_client`: legacy clients in front of a 2026-07-28-only server.

A bridge never touches HTTP itself: it sends through an :class:`Upstream` (the addon's adapter of
:class:`mcpx_core.upstream.Sender` for one flow: mitmproxy's own connections) and returns what the
client's flow gets (:class:`Answer`) or how it goes on (:class:`Pass`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class Reply:
    """An upstream answer: ``status``, ``headers`` (lower-case names), ``body`` (bytes)."""

    status: int
    headers: dict[str, str]
    body: bytes


class Upstream(Protocol):
    """Sends one request to the flow's server as mcpx's own flow (see :mod:`mcpx_core.upstream`).

    ``headers``: the request's headers beyond content negotiation (e.g. ``mcp-session-id``,
    ``mcp-protocol-version``); the client's credentials are added (same origin). ``on_chunk``:
    called with each chunk of a streamed (SSE) answer; ``stop``: a future that ends the wait early
    (the request runs on). Raises :class:`mcpx_core.upstream.UpstreamError`."""

    async def send(self, body: bytes, headers: dict[str, str], purpose: str, *, method: str = "POST",
                   on_chunk: Callable[[bytes], None] | None = None, stop: Any = None, timeout: float = 600.0) -> Reply: ...


@dataclass
class Answer:
    """The client's flow is answered by mcpx: ``status``, ``body``, ``headers`` (name, value)."""

    status: int
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = (("content-type", "application/json"),)


@dataclass
class Pass:
    """The client's flow goes on to the server with these edits: ``body`` (None: unchanged),
    ``method`` (None: unchanged), header ``set``/``remove``; its answer is rewritten as usual."""

    body: bytes | None = None
    method: str | None = None
    set: dict[str, str] = field(default_factory=dict)
    remove: tuple[str, ...] = ()
