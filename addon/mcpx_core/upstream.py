"""Messages mcpx itself sends to the server: single POSTs of a split batch, and JSON-RPC answers
on the client's behalf to server requests the client's revision cannot receive.

Uses the standard library's ``http.client`` in a worker thread (mitmproxy offers addons no HTTP
client), so the proxy's event loop never blocks. Returns the raw response; raises OSError /
http.client.HTTPException on connection failures.
"""

from __future__ import annotations

import asyncio
import http.client
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

#: request headers not copied onto proxy-originated POSTs
_HOP = {"content-length", "host", "connection", "transfer-encoding", "accept-encoding", "keep-alive", "upgrade", "te", "trailer"}


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


def _post(url: str, headers: dict[str, str], body: bytes, timeout: float) -> Reply:
    u = urlsplit(url)
    if u.scheme == "https":
        conn = http.client.HTTPSConnection(u.hostname, u.port or 443, timeout=timeout, context=ssl._create_unverified_context())
    else:
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    try:
        path = u.path or "/"
        if u.query:
            path += "?" + u.query
        conn.request("POST", path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
    finally:
        conn.close()


async def post(url: str, headers: dict[str, str], body: bytes, timeout: float = 300.0) -> Reply:
    """POST ``body`` to ``url`` with ``headers`` (hop-by-hop ones removed)."""
    # header names are case-insensitive: "Content-Type" from the client and a default "content-type"
    # would reach the server as two headers (Express then answers 415)
    clean = {k.lower(): v for k, v in headers.items() if k.lower() not in _HOP}
    clean.setdefault("content-type", "application/json")
    clean.setdefault("accept", "application/json, text/event-stream")
    return await asyncio.to_thread(_post, url, clean, body, timeout)
