"""Drive MCP exchanges through the real addon's hooks (mitmproxy.test.taddons / tflow), offline.

    async with Harness() as h:          # one MCPX addon, its options loaded
        f = await h.exchange({"jsonrpc": "2.0", "id": 0, "method": "initialize", ...},
                             {"jsonrpc": "2.0", "id": 0, "result": {...}}, session_header="sess-1")

Each exchange is one flow (POST /mcp, then the response); the hooks run in mitmproxy's event order
(requestheaders, request, responseheaders, response). Bodies are dicts/lists (sent as JSON) or bytes.
"""
from __future__ import annotations

import json
from typing import Any

from mitmproxy import contentviews, http
from mitmproxy.test import taddons, tflow, tutils

from hooks_lib import hook, hook_sync

import mcpx  # the addon script's module: importing it registers the MCP content views

PEER = ("127.0.0.1", 40000)


def body_bytes(body: Any) -> bytes:
    return body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()


def init_request(rev: str, name: str = "example-client", version: str = "1.0.0", rid: int = 0,
                 capabilities: dict | None = None) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize",
            "params": {"protocolVersion": rev, "capabilities": capabilities or {}, "clientInfo": {"name": name, "version": version}}}


def init_result(rev: str, rid: int = 0) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": rev, "capabilities": {"tools": {}},
                                                    "serverInfo": {"name": "example-server", "version": "2.0.0"}}}


class Harness:
    def __init__(self, **options: Any):
        self.addon = mcpx.MCPX()
        self.options = options
        self.flows: list[http.HTTPFlow] = []

    async def __aenter__(self) -> "Harness":
        self.tctx = taddons.context(self.addon)
        self.tctx.__enter__()
        if self.options:
            self.tctx.configure(self.addon, **self.options)
        return self

    async def __aexit__(self, *exc) -> None:
        self.tctx.__exit__(*exc)

    async def exchange(self, request: Any, response: Any, *, session: str | None = None,
                       session_header: str | None = None, sse: bool = False, status: int = 200,
                       peer: tuple[str, int] = PEER, method: bytes = b"POST",
                       headers: dict[str, str] | None = None) -> http.HTTPFlow:
        """One POST /mcp (or ``method``, e.g. DELETE with ``request`` None) and its answer.

        ``session``: the client's Mcp-Session-Id; ``session_header``: the one the server mints in
        this response; ``sse``: answer as text/event-stream; ``response`` None: an empty 202;
        ``headers``: more request headers (e.g. User-Agent)."""
        req_headers = [(b"content-type", b"application/json"), (b"accept", b"application/json, text/event-stream")]
        req_headers += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
        if session:
            req_headers.append((b"mcp-session-id", session.encode()))
        f = tflow.tflow(req=tutils.treq(method=method, path=b"/mcp", host="127.0.0.1", port=9,
                                        headers=http.Headers(req_headers),
                                        content=body_bytes(request) if request is not None else b""))
        f.client_conn.peername = peer
        resp_body = body_bytes(response) if response is not None else b""
        resp_headers = [(b"content-type", b"text/event-stream" if sse else b"application/json"),
                        (b"content-length", str(len(resp_body)).encode())]
        if session_header:
            resp_headers.append((b"mcp-session-id", session_header.encode()))
        if response is None:
            resp_headers = [(b"content-length", b"0")]
        f.response = tutils.tresp(status_code=status if response is not None or method != b"POST" else 202,
                                  headers=http.Headers(resp_headers), content=resp_body)
        resp = f.response
        f.response = None
        await hook(self.addon, "request", f)
        if f.response is None:  # not answered by mcpx itself
            f.response = resp
            hook_sync(self.addon, "responseheaders", f)
            if callable(f.response.stream):
                # as mitmproxy streams: the body is not stored; chunks go through the callable
                f.response.data.content = None
                cut = len(resp_body) // 2
                for chunk in (resp_body[:cut], resp_body[cut:], b""):
                    f.response.stream(chunk)
            await hook(self.addon, "response", f)
        self.flows.append(f)
        return f

    async def initialize(self, rev: str, session_id: str = "sess-1", name: str = "example-client",
                         server_rev: str | None = None, version: str = "1.0.0", capabilities: dict | None = None,
                         headers: dict[str, str] | None = None) -> http.HTTPFlow:
        f = await self.exchange(init_request(rev, name, version, capabilities=capabilities), init_result(server_rev or rev),
                                session_header=session_id, headers=headers)
        await self.exchange({"jsonrpc": "2.0", "method": "notifications/initialized"}, None, session=session_id)
        return f


def render(f: http.HTTPFlow, side: str = "response", view: str = "auto") -> tuple[str | None, str]:
    """(view name mitmproxy chose, text) for one side of a flow, as mitmproxy's UIs ask for it."""
    r = contentviews.prettify_message(getattr(f, side), f, view_name=view)
    return r.view_name, r.text
