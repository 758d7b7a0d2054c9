"""An OAuth-logging-in MCP client on PyPI ``mcp``'s own auth support (2025-03-26 discovery in 1.9.x).

    .venvs/mcp-1.9.4/bin/python auth_py_client.py URL

``OAuthClientProvider`` (``mcp/client/auth.py``: RFC 8414 metadata at the MCP server's origin, else
the default endpoints there; dynamic registration) on ``streamablehttp_client``. The headless
redirect handler follows the authorization URL with HTTP GETs until the redirect to
``redirect_uri`` and hands its code and state to the callback handler. Then it lists the tools
and calls ``whoami`` and ``link``. httpx reads ``HTTPS_PROXY`` and ``SSL_CERT_FILE``. Prints ONE
JSON line: {"ok", "error"?, "tools"?, "whoami"?, "link"?, "protocolVersion"?}; never a token,
code or secret.
"""

from __future__ import annotations

import asyncio
import json
import sys
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.auth import OAuthClientMetadata

REDIRECT = "http://127.0.0.1:9/callback"


class Memory:
    def __init__(self):
        self.tokens = self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


async def main(url: str) -> dict:
    got: dict = {}

    async def redirect(auth_url: str) -> None:
        async with httpx.AsyncClient(follow_redirects=False, timeout=30) as http:
            at = auth_url
            for _ in range(5):
                r = await http.get(at)
                loc = r.headers.get("location")
                if not loc:
                    raise RuntimeError(f"authorize answered HTTP {r.status_code} without a redirect")
                if loc.startswith(REDIRECT):
                    q = parse_qs(urlsplit(loc).query)
                    got["code"], got["state"] = q.get("code", [None])[0], q.get("state", [None])[0]
                    return
                at = urljoin(at, loc)
        raise RuntimeError("authorize never redirected to redirect_uri")

    async def callback():
        return got.get("code"), got.get("state")

    meta = OAuthClientMetadata(client_name="mcpx-auth-test mcp", redirect_uris=[REDIRECT],
                               grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                               token_endpoint_auth_method="client_secret_post")
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
    auth = OAuthClientProvider(origin, meta, Memory(), redirect, callback)
    out: dict = {"ok": False}
    async with streamablehttp_client(url, auth=auth) as (read, write, _):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["protocolVersion"] = init.protocolVersion
            out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            out["whoami"] = [c.model_dump(exclude_none=True) for c in (await session.call_tool("whoami", {})).content]
            try:
                out["link"] = [c.model_dump(exclude_none=True, mode="json") for c in (await session.call_tool("link", {})).content]
            except Exception as e:
                out["link"] = {"error": str(e)[:200]}
            out["ok"] = True
    return out


if __name__ == "__main__":
    try:
        rep = asyncio.run(main(sys.argv[1]))
    except BaseException as e:  # an ExceptionGroup from anyio: its first leaf
        while isinstance(e, BaseExceptionGroup) and e.exceptions:
            e = e.exceptions[0]
        rep = {"ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}"}
    print(json.dumps(rep))
