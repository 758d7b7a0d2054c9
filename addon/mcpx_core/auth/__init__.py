"""Authorization across revisions: OAuth discovery documents at the MCP origin (a stage of its own).

- :mod:`.wellknown`: the paths, URLs, ``WWW-Authenticate`` parameters and cache lifetimes, sans I/O;
- :mod:`.challenge`: ``WWW-Authenticate`` challenges parsed and written by RFC 9110 §11.6.1, sans I/O;
- :mod:`.discovery`: :class:`Discovery`, the one question (:meth:`Discovery.answer`) and its answers
  :class:`Keep`, :class:`Serve`, :class:`Challenge`, :class:`Redirect`.

The hook is :mod:`mcpx_core.addons.authorization`. Choices (docs/authorization.md):

- **The issuer is never rewritten.** A document mcpx serves at the origin is the authorization
  server's own, ``issuer`` included: its tokens, its RFC 9207 ``iss`` authorization response
  parameter and every check a client makes against them name that issuer, so a rewritten one would
  break them. A client that rejects metadata whose ``issuer`` is not the URL it fetched (RFC 8414
  §3.3) is served none (host profile ``oauth_issuer_check``); none of the measured 2025-03-26-era
  SDKs checks it (npm ``@modelcontextprotocol/sdk`` 1.10.2 ``client/auth.js`` ``discoverOAuthMetadata``
  parses the document only; PyPI ``mcp`` 1.8.1 ``client/auth.py`` likewise).
- **Default endpoints are redirected, not proxied**: mcpx never holds a code, a token or a
  client secret on the client's behalf.
- **The PRM a server publishes is never rewritten**: its ``resource`` is the audience of the
  tokens (RFC 8707 §2); the server must name the URL its clients use (docs/authorization.md).
"""

from .discovery import Answer, Challenge, Discovery, Fetch, FetchError, Fetched, Keep, Redirect, Seen, Serve

__all__ = ["Answer", "Challenge", "Discovery", "Fetch", "FetchError", "Fetched", "Keep", "Redirect", "Seen", "Serve"]
