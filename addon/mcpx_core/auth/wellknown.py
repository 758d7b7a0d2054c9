"""The discovery documents of OAuth across MCP revisions, sans I/O: paths, URLs, challenges, lifetimes.

Where a client looks for the authorization server changed between revisions:

- 2025-03-26 (``basic/authorization`` §2.3.2, §2.3.3): OAuth 2.0 Authorization Server Metadata
  (RFC 8414) at the MCP server's own origin, ``/.well-known/oauth-authorization-server`` (the path of
  the MCP URL discarded), and, when that answers 404, the default endpoints ``/authorize``,
  ``/token``, ``/register`` at that origin.
- 2025-06-18 and later (``basic/authorization`` "Authorization Server Discovery"): Protected Resource
  Metadata (RFC 9728) at ``/.well-known/oauth-protected-resource`` (with the MCP URL's path after it,
  RFC 9728 §3.1), named by ``WWW-Authenticate: Bearer resource_metadata="..."`` on a 401
  (RFC 9728 §5.1); its ``authorization_servers`` name the issuers, whose metadata is at
  ``/.well-known/oauth-authorization-server`` inserted before the issuer's path (RFC 8414 §3.1).

This module only reads and writes those values; :mod:`.discovery` decides, :mod:`mcpx_core.addons.authorization`
does the HTTP.
"""

from __future__ import annotations

import email.utils
import time
from urllib.parse import urlsplit

from . import challenge

#: RFC 8414 §3: the well-known suffix of authorization server metadata
AS_METADATA = "/.well-known/oauth-authorization-server"
#: OpenID Connect Discovery 1.0 §4 (2025-11-25 clients also try it)
OPENID = "/.well-known/openid-configuration"
#: RFC 9728 §3: the well-known suffix of protected resource metadata
RESOURCE_METADATA = "/.well-known/oauth-protected-resource"
#: 2025-03-26 ``basic/authorization`` §2.3.3: the default endpoints, relative to the origin, and the
#: metadata member (RFC 8414 §2) that names each at the authorization server
DEFAULT_ENDPOINTS = {"/authorize": "authorization_endpoint", "/token": "token_endpoint", "/register": "registration_endpoint"}

#: seconds a document without caching headers is kept (RFC 9111 §4.2.2 leaves the heuristic to the
#: cache); an answer that is not a document (a 404: the origin publishes none) is kept this long
DEFAULT_LIFETIME = 300.0
NEGATIVE_LIFETIME = 60.0
#: the longest any document is kept, whatever its headers say
MAX_LIFETIME = 86400.0


def origin_of(url: str) -> str:
    """``scheme://host:port`` of ``url`` (the port always written, as :func:`mcpx_core.addons.state.origin_of`)."""
    u = urlsplit(url)
    port = u.port or {"http": 80, "https": 443}.get(u.scheme, 0)
    return f"{u.scheme}://{(u.hostname or '').lower()}:{port}"


def is_location(url: object) -> bool:
    """Whether ``url`` may be a ``Location`` mcpx writes: an ``http(s)`` URI naming a host, with no space
    or control character (RFC 3986 §2, §3.2; CR/LF in a header value would split the header block)."""
    if not isinstance(url, str) or any(c <= " " or c == "\x7f" for c in url):
        return False
    try:
        u = urlsplit(url)
    except ValueError:
        return False
    return u.scheme in ("http", "https") and bool(u.hostname)


def as_metadata_urls(issuer: str) -> list[str]:
    """The URLs of an issuer's metadata, in the order current SDKs try them: RFC 8414 §3.1 (the
    well-known suffix inserted between host and path), then OpenID Connect Discovery (``openid-configuration``
    inserted, then appended: 2025-11-25 ``basic/authorization`` "Authorization Server Metadata Discovery")."""
    u = urlsplit(issuer)
    base = f"{u.scheme}://{u.netloc}"
    path = u.path.rstrip("/")
    if not path:
        return [base + AS_METADATA, base + OPENID]
    return [base + AS_METADATA + path, base + OPENID + path, base + path + OPENID]


def resource_metadata_suffix(path: str) -> str | None:
    """The resource path a PRM request names (RFC 9728 §3.1: ``/.well-known/oauth-protected-resource/mcp``
    is the metadata of ``/mcp``; ``""`` for the origin's own); None for any other path."""
    if path == RESOURCE_METADATA or path == RESOURCE_METADATA + "/":
        return ""
    if path.startswith(RESOURCE_METADATA + "/"):
        return path[len(RESOURCE_METADATA):]
    return None


def synthesized_prm(resource: str, issuer: str) -> dict:
    """RFC 9728 §2 metadata for a server that publishes none: ``resource`` is the MCP URL the client
    used (RFC 9728 §3.3: the client checks it against that URL), ``authorization_servers`` the
    issuer the server's own RFC 8414 metadata states (so the client's issuer check, RFC 8414 §3.3,
    compares what the server itself publishes)."""
    return {"resource": resource, "authorization_servers": [issuer], "bearer_methods_supported": ["header"]}


# -- WWW-Authenticate (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1): parsed by .challenge ----------
def resource_metadata_param(value: str | None) -> str | None:
    """The ``resource_metadata`` auth-param of a ``WWW-Authenticate`` value (RFC 9728 §5.1), unquoted;
    None when the value has none (a quoted ``resource_metadata=`` inside another parameter is a value)
    or does not parse."""
    return challenge.param(value, "resource_metadata")


def with_resource_metadata(value: str | None, url: str) -> str | None:
    """``value`` (the server's ``WWW-Authenticate``, or None) with ``resource_metadata="url"`` added
    to its Bearer challenge (RFC 9728 §5.1), or a Bearer challenge of that parameter alone before the
    others; None when the header must stay as it is (:func:`.challenge.with_param`)."""
    return challenge.with_param(value, "Bearer", "resource_metadata", url)


# -- lifetimes (RFC 9111 §4.2.1, §5.2.2) ------------------------------------------------------------
def lifetime(headers: dict[str, str], ok: bool, now: float | None = None) -> float:
    """Seconds a fetched document may be used (``headers``: lower-case names): ``no-store`` or
    ``no-cache`` 0, ``s-maxage``/``max-age`` (minus ``Age``), else ``Expires`` - ``Date``, else
    :data:`DEFAULT_LIFETIME` (``ok``) or :data:`NEGATIVE_LIFETIME`; never over :data:`MAX_LIFETIME`."""
    cc = {k.strip().lower(): v.strip().strip('"') for k, _, v in
          (part.partition("=") for part in headers.get("cache-control", "").split(",")) if k.strip()}
    if "no-store" in cc or "no-cache" in cc or "private" in cc:
        return 0.0
    age = _int(headers.get("age")) or 0
    for name in ("s-maxage", "max-age"):
        if name in cc and _int(cc[name]) is not None:
            return float(max(0, min(_int(cc[name]) - age, MAX_LIFETIME)))
    if "expires" in headers:
        exp = _date(headers["expires"])
        if exp is None:
            return 0.0  # RFC 9111 §5.3: an invalid Expires means already expired
        date = _date(headers.get("date", "")) or (now if now is not None else time.time())
        return float(max(0.0, min(exp - date, MAX_LIFETIME)))
    return DEFAULT_LIFETIME if ok else NEGATIVE_LIFETIME


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and v.isdigit() else None


def _date(v: str) -> float | None:
    try:
        d = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError, IndexError):
        return None
    return d.timestamp() if d is not None else None
