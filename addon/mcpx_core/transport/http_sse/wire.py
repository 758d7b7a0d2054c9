"""The HTTP+SSE transport's wire, sans-IO: which client request opens it, which upstream path is
the server's Streamable HTTP endpoint, the endpoint URL, and the SSE events mcpx writes.

Sources: schema/2024-11-05 transports "HTTP with SSE" (the ``endpoint`` event first, then each
server message as ``event: message``; the client POSTs each message to the endpoint URL);
2025-03-26 transports "Streamable HTTP" 2.2 (a GET without a session the server does not serve:
405) and "Backwards compatibility" (a client that gets 400, 404 or 405 there tries the old
transport); WHATWG HTML 9.2 "Server-sent events" (``data:`` lines joined by LF, comments).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import orjson

from ...framing.sse import SSEParser

#: a server refuses a sessionless ``GET`` of its path with one of these when it serves no HTTP+SSE
#: stream there: Streamable HTTP servers 400 ("Missing session ID", npm and PyPI SDKs) or 405 (the
#: spec's own answer, stateless servers), a path nobody serves 404 (the 2025-03-26 "Backwards
#: compatibility" list; :func:`mcp_endpoint` says which of them mcpx serves)
REFUSED = (400, 404, 405)
#: the last segment of the endpoint URL mcpx gives, and its query parameter holding the sealed token
MESSAGES = "messages"
PARAM = "mcpx_session"
KEEPALIVE_COMMENT = b": keepalive\n\n"
_PREFIX = re.compile(r"^(/[A-Za-z0-9._~!$&'()*+,;=:@%-]*)+$")


def opens_stream(method: str, headers: Mapping[str, str]) -> bool:
    """Whether a client request (``headers``: lower-case names) is the HTTP+SSE transport's
    opening ``GET``: no ``Mcp-Session-Id`` (a Streamable HTTP client's GET stream has one), and
    ``Accept`` names ``text/event-stream``."""
    return method == "GET" and "mcp-session-id" not in headers \
        and "text/event-stream" in headers.get("accept", "").lower()


def mcp_endpoint(path: str, status: int, routes: Mapping[str, str]) -> str | None:
    """The server's Streamable HTTP endpoint for a client whose SSE URL has ``path`` (no query), given
    the server's ``status`` for a sessionless GET of ``path``; None: mcpx does not serve the transport.

    In order: ``routes`` (the option, SSE path -> MCP path) names it; ``path`` itself refused with
    400 (a stateful Streamable HTTP endpoint refusing a GET without a session, "Missing session ID":
    the client was given the MCP endpoint itself); ``…/sse`` answered 404 (nobody serves it): ``…/mcp``
    beside it, the SDKs' default pair (npm ``SSEServerTransport`` examples, PyPI ``FastMCP``
    ``sse_path``/``streamable_http_path``). A 405 of the path itself is not taken: it is the answer
    the specification gives a GET to a server with no GET stream (2025-03-26 Streamable HTTP 2.2.3;
    a 2026-07-28-only server's to any GET), which a client of that server may be checking for.
    """
    if path in routes:
        return routes[path]
    if status not in REFUSED:
        return None
    if status == 400:
        return path
    trimmed = path.rstrip("/")
    if status == 404 and trimmed.endswith("/sse"):
        return trimmed[: -len("sse")] + "mcp"
    return None


def forwarded_prefix(headers: Mapping[str, str]) -> str:
    """The path prefix a reverse proxy in front of mcpx stripped (``X-Forwarded-Prefix``, first
    value), or "" when none or not a plain absolute path (never trusted to add a host or query)."""
    value = headers.get("x-forwarded-prefix", "").split(",")[0].strip().rstrip("/")
    return value if value and _PREFIX.match(value) and "//" not in value else ""


def endpoint_url(sse_path: str, token: str, prefix: str = "") -> str:
    """The ``endpoint`` event's data: an absolute path beside the client's SSE path, with the
    reverse proxy's ``prefix``, and the sealed ``token``.

    An absolute path, not a relative one, and with every prefix: clients resolve it with ``urljoin``
    (PyPI ``mcp`` ``sse_client``) or ``new URL(data, url)`` (npm ``SSEClientTransport``), which drop
    the SSE URL's directory for a path with a leading slash (the prefix bug of servers that sent
    ``/messages`` behind ``/prefix``), and some clients join the origin and the data as strings."""
    directory = posixpath.dirname(sse_path.rstrip("/") or "/").rstrip("/")
    return f"{prefix}{directory}/{MESSAGES}?{PARAM}={quote(token, safe='')}"


def token_of(method: str, path: str) -> str | None:
    """The sealed token of a ``POST`` to an endpoint URL mcpx gave (:func:`endpoint_url`), else None."""
    if method != "POST":
        return None
    u = urlsplit(path)
    if posixpath.basename(u.path.rstrip("/")) != MESSAGES:
        return None
    values = parse_qs(u.query).get(PARAM)
    return values[0] if values and len(values) == 1 else None


def endpoint_event(url: str, event_id: str = "", retry_ms: int | None = None) -> bytes:
    """The ``endpoint`` event, with an ``id`` (the stream's resumption, :mod:`.resume`) and the
    client's reconnection time (``retry``, WHATWG HTML 9.2.6) when given."""
    head = (f"id: {event_id}\n" if event_id else "") + (f"retry: {retry_ms}\n" if retry_ms is not None else "")
    return head.encode() + b"event: endpoint\ndata: " + url.encode() + b"\n\n"


def with_id(event: bytes, event_id: str) -> bytes:
    """``event`` (one of :func:`message_event`'s) with an ``id`` line first."""
    return f"id: {event_id}\n".encode() + event


def initialize_result(event: bytes) -> dict | None:
    """The ``result`` of an ``initialize`` answer carried by ``event`` (one of :func:`message_event`'s):
    a result holding ``protocolVersion``; None for any other message."""
    data = b"\n".join(line[6:] for line in event.split(b"\n") if line.startswith(b"data: "))
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    result = value.get("result") if isinstance(value, dict) else None
    return result if isinstance(result, dict) and "protocolVersion" in result else None


def message_event(body: bytes) -> bytes:
    """One ``event: message`` holding ``body`` (a JSON-RPC message or batch), a ``data:`` line for
    each of its lines (an SSE client joins them with LF: the same JSON)."""
    lines = body.strip().replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    return b"event: message\n" + b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"


class Reframer:
    """A Streamable HTTP SSE answer (chunks in any cut) -> the HTTP+SSE events of its messages, in
    order: each event's data becomes one ``event: message``; events without data (a 2025-11-25
    server's priming event, ``retry:`` alone), comments and ``id:`` lines are the Streamable HTTP
    transport's own (resumption) and have no HTTP+SSE equivalent."""

    def __init__(self) -> None:
        self.parser = SSEParser()

    def feed(self, chunk: bytes) -> list[bytes]:
        return self._out(self.parser.feed(chunk)) if chunk else []

    def close(self) -> list[bytes]:
        """The events the answer's end completes (an event the stream ends in, before its blank line,
        is not dispatched: WHATWG HTML 9.2.6, as the client itself would not)."""
        return self._out(self.parser.close()[0])

    @staticmethod
    def _out(events) -> list[bytes]:
        return [message_event(ev.payload) for ev in events if ev.payload and ev.payload.strip()]


def request_ids(body: bytes) -> list[Any]:
    """The ids of the JSON-RPC requests in ``body`` (a message or a batch; none when it does not parse)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return []
    members = value if isinstance(value, list) else [value]
    return [m["id"] for m in members if isinstance(m, dict) and "method" in m and m.get("id") is not None]


def error_events(ids: list[Any], why: str) -> list[bytes]:
    """A JSON-RPC error -32603 for each request id, as events: the answer of requests whose
    Streamable HTTP leg got no JSON-RPC answer (an HTTP error without one, a connection error)."""
    return [message_event(orjson.dumps({"jsonrpc": "2.0", "id": i, "error": {"code": -32603, "message": why}})) for i in ids]
