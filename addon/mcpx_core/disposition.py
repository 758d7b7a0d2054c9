"""What happens to one client request: a value the core returns and the addon carries out in one place.

- :class:`Forward`: send it to the server, with ``body`` (None: the original bytes) and the header
  edits (``set_headers``, ``remove_headers``; header names as the client sent them).
- :class:`AnswerLocally`: do not forward; answer the client with ``status``, ``body`` and
  ``headers`` (answer-locally and reject rules, an unknown session's 404, a DELETE of a session
  whose server keeps none).
- :class:`SplitBatch`: a JSON-RPC batch the server's revision cannot take (RPC-batch-request):
  POST each of ``members`` (serialised messages) alone; answer the client with one batch.
- :class:`MintSession`: an ``initialize``: mcpx sends it to the server itself (``body``: None for
  the original bytes), learns the session from the result and answers the client with it and a
  sealed ``Mcp-Session-Id`` (the headers of a streamed answer go out before its body, so the
  token cannot be added to a response the server streams through).
- :class:`Hold`: a bridge keeps the request (``key``) and answers it later.
- :class:`Bridge`: the request belongs to a cross-era bridge (``name``, :mod:`mcpx_core.bridge`),
  which answers it or says how it goes on.
- :class:`NeedEra`: which era the server at ``origin`` speaks is not known yet: the addon asks it
  (a ``server/discover`` probe, :mod:`mcpx_core.bridge.era`) and decides again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

JSON = (("content-type", "application/json"),)


@dataclass(frozen=True)
class Forward:
    body: bytes | None = None
    set_headers: dict[str, str] = field(default_factory=dict)
    remove_headers: tuple[str, ...] = ()


@dataclass(frozen=True)
class AnswerLocally:
    status: int
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = JSON


@dataclass(frozen=True)
class SplitBatch:
    members: tuple[bytes, ...]
    set_headers: dict[str, str] = field(default_factory=dict)
    remove_headers: tuple[str, ...] = ()


@dataclass(frozen=True)
class MintSession:
    body: bytes | None = None


@dataclass(frozen=True)
class Hold:
    key: str


@dataclass(frozen=True)
class Bridge:
    name: str


@dataclass(frozen=True)
class NeedEra:
    origin: str


Disposition = Forward | AnswerLocally | SplitBatch | MintSession | Hold | Bridge | NeedEra
