"""Bridging: a stage of its own between the session and the rules, for peers of different eras.

Where both peers speak a legacy revision (2024-11-05..2025-11-25), or both 2026-07-28, mcpx
rewrites each message in place (:mod:`mcpx_core.downgrade`, :mod:`mcpx_core.rules`). Where one
peer speaks only 2026-07-28 and the other only a legacy revision, there is no 1:1 wire equivalent
(REVISIONS.md 2.4 "cross-era mode"): mcpx answers some messages itself, holds others, and sends
requests of its own (the ``bridge``, ``answer-locally`` and ``synthesize`` records of
revision-delta.json). Modules:

- :mod:`.era`: which era an upstream speaks (a ``server/discover`` probe, cached per origin);
- :mod:`.client2026`: a 2026-07-28 client in front of a legacy server;
- :mod:`.legacy_client`: legacy clients in front of a 2026-07-28-only server;
- :mod:`.stream`: answers mcpx writes to a client over time (a loopback endpoint the flow is routed to).

A bridge never touches HTTP itself: it sends through an :class:`Upstream` (the addon's adapter of
:class:`mcpx_core.upstream.Sender` for one flow: mitmproxy's own connections) and returns what the
client's flow gets (:class:`Answer`, or :class:`Streamed`: a stream mcpx writes over time, see
:mod:`.stream`) or how it goes on (:class:`Pass`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class Reply:
    """An upstream answer: ``status``, ``headers`` (lower-case names), ``body`` (bytes), and the id of
    mcpx's flow that carried it (for :meth:`Upstream.abort`). ``undecoded``: None, or ``body`` is as
    received, still in its ``content-encoding`` (too large decoded, or not decodable), and this is the
    passthrough record's detail (:attr:`mcpx_core.upstream.Reply.undecoded`): whoever hands ``body``
    to a client keeps that header (:meth:`answer_headers`)."""

    status: int
    headers: dict[str, str]
    body: bytes
    flow_id: str = ""
    undecoded: str | None = None

    def answer_headers(self, keep: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
        """The headers named in ``keep`` (lower case) this reply has, and its ``content-encoding`` when
        ``body`` is still encoded (:attr:`undecoded`): a client must get the body with it."""
        names = keep + ("content-encoding",) if self.undecoded else keep
        return tuple((k, v) for k, v in self.headers.items() if k in names)


class Upstream(Protocol):
    """Sends one request to the flow's server as mcpx's own flow (see :mod:`mcpx_core.upstream`).

    ``headers``: the request's headers beyond content negotiation (e.g. ``mcp-session-id``,
    ``mcp-protocol-version``); the client's credentials are added (same origin). ``on_chunk``:
    called with each chunk of a streamed (SSE) answer; ``stop``: a future that ends the wait early
    (the request runs on); ``detached``: sent after the flow ended (the DELETE of an idle upstream
    session); ``on_broken``: called once with the reason when a streamed answer breaks off before its
    end (``on_chunk(b"")`` then never comes; :meth:`mcpx_core.upstream.Sender.send`); ``timeout``:
    seconds, the whole request's, or with ``idle`` each wait for a byte of the answer's (a stream the
    server keeps feeding is never cut); ``on_undecodable``: called with the
    :class:`~mcpx_core.framing.encoding.DecodeFailed` and the compressed byte offset when a streamed
    answer stops decoding (its Content-Encoding), instead of the final ``on_chunk(b"")`` (so it is not
    taken for the server's close). Raises :class:`mcpx_core.upstream.UpstreamError`."""

    async def send(self, body: bytes, headers: dict[str, str], purpose: str, *, method: str = "POST",
                   on_chunk: Callable[[bytes], None] | None = None, stop: Any = None, timeout: float = 600.0,
                   detached: bool = False, on_broken: Callable[[str], None] | None = None, idle: bool = False,
                   on_undecodable: Callable[[Any, int], None] | None = None) -> Reply: ...

    def abort(self, flow_id: str) -> None:
        """End a request sent with :meth:`send` that still runs."""


@dataclass
class Answer:
    """The client's flow is answered by mcpx: ``status``, ``body``, ``headers`` (name, value);
    ``sent``: the request as mcpx sent it upstream instead (shown on the flow, the client's
    original kept for the views), None when nothing was sent; ``note``: why mcpx answered
    (``flow.metadata["mcpx"]["answered_by"]``, the views)."""

    status: int
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = (("content-type", "application/json"),)
    sent: bytes | None = None
    note: str | None = None


@dataclass
class Streamed:
    """The client's flow is answered by mcpx with a stream it writes over time (:mod:`.stream`);
    ``note``: why (as :attr:`Answer.note`)."""

    stream: Any
    note: str | None = None


@dataclass
class Pass:
    """The client's flow goes on to the server with these edits: ``body`` (None: unchanged),
    ``method`` (None: unchanged), header ``set``/``remove``; its answer is rewritten as usual."""

    body: bytes | None = None
    method: str | None = None
    set: dict[str, str] = field(default_factory=dict)
    remove: tuple[str, ...] = ()
