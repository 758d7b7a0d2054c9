"""The upstream HTTP+SSE transport's wire, sans-IO: which refusal of a client's POST marks an
HTTP+SSE-only server, which path mcpx probes with a GET, the ``endpoint`` URL as the SDKs
resolve it, and the body that answers a client's POST.

Sources: schema/2024-11-05 transports "HTTP with SSE" (the first event is ``endpoint``, its data a
URI the client POSTs to); 2025-03-26 transports "Backwards compatibility" (a client whose POST gets
400, 404 or 405 GETs the URL and expects ``endpoint`` first); measured refusals: PyPI ``mcp``
1.8.1 FastMCP ``transport="sse"`` answers ``POST /sse`` 405 (Starlette ``Route`` for GET only) and
``POST /messages/`` without ``session_id`` 400 "session_id is required".
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urljoin, urlsplit

import orjson

from ..http_sse.wire import KEEPALIVE_COMMENT  # noqa: F401  (the keepalive comment of both directions' streams)

#: the statuses an HTTP+SSE-only server gives a Streamable HTTP client's ``initialize`` POST
REFUSED = (400, 404, 405)


def refused_initialize(method: str, status: int, initialize: bool) -> bool:
    """Whether the server's answer ``status`` to a client's POST (``initialize``: the body is a
    JSON-RPC ``initialize`` request, without ``Mcp-Session-Id``) is the refusal that asks mcpx to
    probe the path for an HTTP+SSE stream (2025-03-26 "Backwards compatibility", client side)."""
    return method == "POST" and initialize and status in REFUSED


def jsonrpc_refusal(body: bytes) -> bool:
    """Whether a refusal's body is a JSON-RPC message: the path speaks JSON-RPC over POST (a Streamable
    HTTP server refusing this ``initialize``, e.g. a 2026-07-28-only server's 400 with a JSON-RPC error,
    or an unknown session's 404), so it is no HTTP+SSE-only server and mcpx does not probe it. The
    measured HTTP+SSE-only refusals are plain text or HTML: PyPI ``mcp`` 1.8.1 ``Method Not Allowed``,
    ``Not Found``, ``session_id is required``; the npm everything server's ``Cannot POST /sse`` page."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    members = value if isinstance(value, list) else [value]
    return any(isinstance(m, dict) and m.get("jsonrpc") == "2.0" for m in members)


def probe_paths(path: str, routes: Mapping[str, str]) -> list[str]:
    """The upstream paths mcpx GETs as SSE, in order, for a refused ``initialize`` POST to ``path``
    (no query). ``routes`` (the option, client path -> the server's SSE path) names it without a
    probe list of its own. Else: ``path`` itself (the client was given the SSE URL, ``…/sse``),
    then ``…/sse`` beside a ``…/mcp`` path (the SDKs' default pair). Each costs one GET that ends at
    the first event (or at ``PROBE_TIMEOUT``); the verdict is cached per origin and path."""
    if path in routes:
        return [routes[path]]
    out = [path]
    trimmed = path.rstrip("/")
    if trimmed.endswith("/mcp"):
        out.append(trimmed[: -len("mcp")] + "sse")
    return out


def is_endpoint(event_type: str | None) -> bool:
    """Whether the stream's first event makes it an HTTP+SSE server (schema/2024-11-05 "HTTP with
    SSE": "the server MUST send an ``endpoint`` event")."""
    return event_type == "endpoint"


def resolve_endpoint(stream_url: str, data: str) -> str | None:
    """The absolute URL the ``endpoint`` event's ``data`` names, resolved against the upstream
    stream's URL as PyPI ``mcp`` ``sse_client`` does (``urljoin``; npm ``SSEClientTransport``'s
    ``new URL(data, url)`` gives the same); None when it is empty or names another origin (both SDKs
    refuse that: a server cannot send the session's messages elsewhere)."""
    data = data.strip()
    if not data:
        return None
    url = urljoin(stream_url, data)
    a, b = urlsplit(stream_url), urlsplit(url)
    if (a.scheme, a.netloc) != (b.scheme, b.netloc):
        return None
    return url


def accepts_sse(headers: Mapping[str, str]) -> bool:
    """Whether a client POST (lower-case header names) takes its answer as an SSE stream
    (2025-03-26 Streamable HTTP 2.1.1: the client lists both ``application/json`` and
    ``text/event-stream``; mcpx streams only to one that names the latter)."""
    return "text/event-stream" in headers.get("accept", "").lower()


class Probe:
    """The probe GET's answer, fed in chunks of any cut: :attr:`verdict` is None until the first
    event with a type or data came (comments and ``retry:`` alone are not events to a client),
    then True with :attr:`endpoint` (the resolved URL) when it was ``endpoint``, else False."""

    def __init__(self, stream_url: str) -> None:
        from ...framing.sse import SSEParser
        self.stream_url = stream_url
        self.parser = SSEParser()
        self.verdict: bool | None = None
        self.endpoint: str | None = None

    def feed(self, chunk: bytes) -> bool | None:
        if self.verdict is not None or not chunk:
            return self.verdict
        for ev in self.parser.feed(chunk):
            if ev.payload is None and ev.event_type is None:
                continue
            url = resolve_endpoint(self.stream_url, ev.data or "") if is_endpoint(ev.event_type) else None
            self.verdict, self.endpoint = url is not None, url
            break
        return self.verdict


def answer(messages: list[dict], sse: bool) -> tuple[str, bytes]:
    """The client POST's answer (content type, body) from its finished :class:`.router.Pending`
    ``out`` (companions in arrival order, then the final answer last): the final answer alone as
    ``application/json``, or every message as one ``event: message`` each on ``text/event-stream``
    when the client accepts it (2025-03-26 transports "Streamable HTTP" 2.1.5)."""
    import orjson
    if not sse:
        return "application/json", orjson.dumps(messages[-1])
    return "text/event-stream", b"".join(b"event: message\ndata: " + orjson.dumps(m) + b"\n\n" for m in messages)
