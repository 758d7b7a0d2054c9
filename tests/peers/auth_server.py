"""OAuth-protected MCP servers on a released SDK's own auth support, for the authorization tests.

    .venvs/mcp-1.12.4/bin/python auth_server.py current AS_PORT[=ISSUER_URL] RS_PORT=PUBLIC_URL [RS_PORT=PUBLIC_URL ...]
    .venvs/mcp-1.8.1/bin/python auth_server.py legacy PORT

``current`` (a 2025-06-18-era deployment, PyPI ``mcp`` 1.12.4): an authorization server of the
SDK's own routes (``create_auth_routes``: RFC 8414 metadata, ``/authorize``, ``/token``,
``/register``) on ``AS_PORT`` (its issuer ``ISSUER_URL``, default ``http://127.0.0.1:AS_PORT/``: a TLS front's URL), and one resource server per ``RS_PORT`` (``FastMCP`` with
``token_verifier`` and ``AuthSettings.resource_server_url = PUBLIC_URL``: Protected Resource
Metadata, RFC 9728, at its origin and ``WWW-Authenticate: Bearer resource_metadata=...`` on 401).
The verifier refuses a token issued for another resource (RFC 8707 audience).

``legacy`` (a 2025-03-26-era server, PyPI ``mcp`` 1.8.1): one ``FastMCP`` with
``auth_server_provider``: RFC 8414 metadata and the endpoints at its own origin, no PRM.

Both use one small in-memory provider (auto-approving authorize). Besides MCP, the authorization
server answers ``GET /_log`` (each request it got: method, path, the names of its query and form
parameters, never their values) and ``GET /_secrets`` (every token, code and client secret it
issued, for the test that greps mcpx's logs for them). Binds 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
import urllib.parse

import uvicorn
from mcp.server.auth.provider import AccessToken, AuthorizationCode, RefreshToken, construct_redirect_uri
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.fastmcp import FastMCP
from mcp.shared.auth import OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

HOST = "127.0.0.1"
LOG: list[dict] = []
ISSUED: list[str] = []


class Provider:
    """An in-memory OAuthAuthorizationServerProvider that approves every authorization request."""

    def __init__(self) -> None:
        self.clients: dict = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        self.clients[client_info.client_id] = client_info
        ISSUED.extend(s for s in (client_info.client_secret,) if s)

    async def authorize(self, client, params):
        code = "code-" + secrets.token_urlsafe(16)
        ISSUED.append(code)
        extra = {"resource": getattr(params, "resource", None)} if "resource" in AuthorizationCode.model_fields else {}
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, **extra)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, getattr(authorization_code, "resource", None))

    def _issue(self, client_id, scopes, resource):
        access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        ISSUED.extend((access, refresh))
        extra = {"resource": resource} if "resource" in AccessToken.model_fields else {}
        self.tokens[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + 3600, **extra)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(access_token=access, token_type="bearer", expires_in=3600, scope=" ".join(scopes) or None,
                          refresh_token=refresh)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        return self._issue(client.client_id, scopes or refresh_token.scopes, None)

    async def load_access_token(self, token):
        return self.tokens.get(token)

    async def revoke_token(self, token):
        self.tokens.pop(getattr(token, "token", ""), None)


class Verifier:
    """The resource server's TokenVerifier: a token this provider issued, for this resource (RFC 8707 §2)."""

    def __init__(self, provider: Provider, resource: str) -> None:
        self.provider, self.resource = provider, resource.rstrip("/")

    async def verify_token(self, token):
        t = self.provider.tokens.get(token)
        if t is None or (getattr(t, "resource", None) and str(t.resource).rstrip("/") != self.resource):
            return None
        return t


class Logged:
    """ASGI middleware: each request's method, path and parameter names into LOG (values never)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"].startswith("/_"):
            return await self.app(scope, receive, send)
        chunks = []
        more = True
        while more:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        body = b"".join(chunks)
        names = sorted(urllib.parse.parse_qs(scope.get("query_string", b"").decode()).keys())
        if body and dict(scope["headers"]).get(b"content-type", b"").startswith(b"application/x-www-form-urlencoded"):
            names += sorted(f"form:{k}" for k in urllib.parse.parse_qs(body.decode()).keys())
        elif body:
            names.append("json")
        LOG.append({"method": scope["method"], "path": scope["path"], "params": names})
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await self.app(scope, replay, send)


async def _log(_request):
    return JSONResponse(LOG)


async def _secrets(_request):
    return JSONResponse(ISSUED)


def _tools(mcp: FastMCP) -> None:
    @mcp.tool()
    def whoami() -> str:
        """The client id of the token the request carried."""
        from mcp.server.auth.middleware.auth_context import get_access_token
        t = get_access_token()
        return f"client {t.client_id}" if t else "anonymous"

    try:
        from mcp.types import ResourceLink
    except ImportError:  # mcp 1.8.1 (2025-03-26) has no resource_link block
        return

    @mcp.tool()
    def link() -> list:
        """One resource_link block (2025-06-18): what a 2025-03-26 client cannot parse."""
        return [ResourceLink(type="resource_link", uri="file:///tmp/auth-link.txt", name="auth-link")]


def _serve(app, port: int) -> uvicorn.Server:
    return uvicorn.Server(uvicorn.Config(app, host=HOST, port=port, log_level="warning", lifespan="on"))


async def current(as_port: int, issuer: str | None, resources: list[tuple[int, str]]) -> None:
    from mcp.server.auth.routes import create_auth_routes
    provider = Provider()
    issuer = issuer or f"http://{HOST}:{as_port}/"
    routes = create_auth_routes(provider, issuer_url=AnyHttpUrl(issuer), client_registration_options=ClientRegistrationOptions(enabled=True))
    auth_app = Starlette(routes=[*routes, Route("/_log", _log), Route("/_secrets", _secrets)])
    servers = [_serve(Logged(auth_app), as_port)]
    for port, public in resources:
        mcp = FastMCP("auth-current", host=HOST, port=port, token_verifier=Verifier(provider, public),
                      auth=AuthSettings(issuer_url=issuer, resource_server_url=public, required_scopes=[]))
        _tools(mcp)
        servers.append(_serve(mcp.streamable_http_app(), port))
    await asyncio.gather(*(s.serve() for s in servers))


async def legacy(port: int) -> None:
    provider = Provider()
    origin = f"http://{HOST}:{port}/"
    mcp = FastMCP("auth-legacy", host=HOST, port=port, auth_server_provider=provider,
                  auth=AuthSettings(issuer_url=origin, client_registration_options=ClientRegistrationOptions(enabled=True)))
    _tools(mcp)
    app = mcp.streamable_http_app()
    app.router.routes += [Route("/_log", _log), Route("/_secrets", _secrets)]
    await _serve(Logged(app), port).serve()


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "current":
        pairs = [a.split("=", 1) for a in sys.argv[3:]]
        as_port, _, as_issuer = sys.argv[2].partition("=")
        asyncio.run(current(int(as_port), as_issuer or None, [(int(p), u) for p, u in pairs]))
    else:
        asyncio.run(legacy(int(sys.argv[2])))
