"""The ``response`` hook of the authorization stage (:mod:`mcpx_core.auth`): OAuth discovery across revisions.

It reads the server's response and its request into a :class:`~mcpx_core.auth.Seen`, asks
:meth:`Discovery.answer <mcpx_core.auth.Discovery.answer>` once, and acts on the one answer: keep
the response, serve a document, add ``resource_metadata`` to the challenge, or redirect. mcpx's
own fetches go through :class:`mcpx_core.upstream.Sender` (mitmproxy's core: your TLS and upstream
proxy options apply) as GETs with no credentials of any client. Runs before
:class:`~.responses.ServerResponses`, so a 401 of an MCP request is rewritten as usual after it.
"""

from __future__ import annotations

import asyncio
import logging

from mitmproxy import ctx, http
from mitmproxy.proxy.mode_specs import ReverseMode

from .. import upstream
from ..auth import Challenge, Discovery, FetchError, Fetched, Keep, Redirect, Seen, Serve
from ..changes import Change
from .state import State, origin_of

logger = logging.getLogger("mcpx")
#: seconds one of mcpx's own discovery fetches may take, and all of them for one response together
#: (the client's response waits for them: a slow authorization server costs it this much at most)
FETCH_TIMEOUT = 10.0
#: bytes of a discovery document at most (RFC 8414 and RFC 9728 documents are a few KiB): a larger
#: answer is cut there and not used
DOC_MAX = 256 << 10


class Authorization:
    name = "mcpx.authorization"

    def __init__(self, state: State) -> None:
        self.state = state

    async def response(self, flow: http.HTTPFlow) -> None:
        st = self.state
        resp = flow.response
        if resp is None or upstream.is_own(flow) or not st.settings.auth or not st.sender.available(flow):
            return
        if resp.stream:  # its head (and body) went to the client as it came: nothing of it can change now
            return
        path = flow.request.path.split("?", 1)[0]
        if not Discovery.concerns(flow.request.method, path, resp.status_code):
            return
        exch = st.exchanges.get(flow.id)
        init = exch.initialize if exch is not None else None
        seen = Seen(method=flow.request.method, path=path, status=resp.status_code, server_origin=origin_of(flow),
                    client_origin=client_origin(flow), challenge=resp.headers.get("www-authenticate"),
                    client=_client(flow), mcp=bool(exch is not None and exch.is_mcp) or "mcp-protocol-version" in flow.request.headers,
                    initialize=init is not None, issuer_check=self._issuer_check(flow, init) if init is not None else None)
        try:
            answer = await asyncio.wait_for(st.auth.answer(seen, lambda url: self._fetch(flow, url)), FETCH_TIMEOUT)
        except TimeoutError:
            logger.info(f"mcpx: authorization discovery: no answer within {FETCH_TIMEOUT:g} s: the server's response as it is")
            return
        except Exception as e:  # never lose a message: the server's response goes on as it is
            logger.warning(f"mcpx: authorization discovery failed: {type(e).__name__}: {e}")
            return
        match answer:
            case Keep():
                return
            case Serve(status=status, body=body, headers=headers, changes=changes):
                flow.response = http.Response.make(status, body, dict(headers))
                self._record(flow, changes, "served by mcpx (authorization discovery)")
            case Challenge(value=value, changes=changes):
                resp.headers["www-authenticate"] = value
                self._record(flow, changes, None)
            case Redirect(status=status, location=location, changes=changes):
                query = flow.request.path.split("?", 1)[1] if "?" in flow.request.path else ""
                target = f"{location}{'&' if '?' in location else '?'}{query}" if query else location
                flow.response = http.Response.make(status, b"", {"location": target, "cache-control": "no-store"})
                self._record(flow, changes, "redirected by mcpx (2025-03-26 default endpoint)")

    def _issuer_check(self, flow: http.HTTPFlow, init: dict) -> str | None:
        """The host profile of an initialize's client when it says the client checks the ``issuer`` of
        authorization server metadata (:attr:`Profile.oauth_issuer_check <mcpx_core.profiles.Profile>`)."""
        params = init.get("params") if isinstance(init.get("params"), dict) else {}
        profile = self.state.rewriter.profiles.choose(params.get("clientInfo"), params.get("protocolVersion"),
                                                      params.get("capabilities"), flow.request.headers)
        return profile.name if profile is not None and profile.oauth_issuer_check else None

    async def _fetch(self, flow: http.HTTPFlow, url: str) -> Fetched:
        """One of mcpx's own discovery GETs: ``Accept: application/json`` and the ``Host`` of
        ``url``, never the client's credentials (``on_behalf=False``)."""
        from urllib.parse import urlsplit
        st = self.state
        headers = {"host": urlsplit(url).netloc, "accept": "application/json"}
        try:
            r = await st.sender.send(flow, "GET", None, headers, "authorization discovery", url=url, timeout=FETCH_TIMEOUT,
                                     limit=DOC_MAX)
        except upstream.UpstreamError as e:
            logger.info(f"mcpx: authorization discovery: {url.split('?', 1)[0]} did not answer: {e.reason}")
            raise FetchError(e.reason) from None
        return Fetched(r.status, r.headers, r.body)

    def _record(self, flow: http.HTTPFlow, changes: list[Change], answered_by: str | None) -> None:
        """The records to every sink (log file, terminal line) and to the flow (metadata, comment)."""
        st = self.state
        exch = st.exchanges.get(flow.id) or st.exchange(flow)
        if answered_by:  # mcpx wrote the response: never read again as the server's (responses.py)
            exch.answered, exch.answered_by = True, answered_by
        st.rewriter.record(exch, changes, "s2c", None, None)
        meta = flow.metadata.setdefault("mcpx", {})
        kept = meta.setdefault("changes", [])
        kept.extend(c.as_dict() for c in exch.changes[-len(changes):])
        if answered_by:
            meta["answered_by"] = answered_by
        rules = ", ".join(sorted({c.rule for c in changes}))
        note = f"mcpx: {answered_by or 'challenge rewritten'} ({rules})"
        flow.comment = f"{flow.comment}\n{note}" if flow.comment else note


def client_origin(flow: http.HTTPFlow) -> str:
    """The origin the client used, ``scheme://host:port``: in reverse mode the one it reached mcpx at
    (the scheme of its connection, the host it asked for by TLS SNI or ``Host``, the port it
    connected to; mitmproxy replaced ``Host`` with the server's unless ``keep_host_header``); in any
    other mode the server's own (the client keeps the server's URL)."""
    spec = flow.client_conn.proxy_mode
    if not isinstance(spec, ReverseMode) or getattr(ctx.options, "keep_host_header", False) or not flow.client_conn.sockname:
        return origin_of(flow)
    sock = flow.client_conn.sockname
    scheme = "https" if flow.client_conn.tls_established else "http"
    return f"{scheme}://{(flow.client_conn.sni or sock[0]).lower()}:{sock[1]}"


def _client(flow: http.HTTPFlow) -> str:
    """Who the client is for the issuer decision: its host and the server origin (no credential)."""
    peer = flow.client_conn.peername
    return f"{peer[0] if peer else '?'} {origin_of(flow)}"
