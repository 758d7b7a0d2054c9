"""Who a client is beyond its session: the credentials it sends, as a keyed digest.

Whatever mcpx keeps on a client's behalf and could hand to another client (the upstream legacy
session of a 2026-07-28 client, a server's ``server/discover`` answer, the ``x-mcp-header`` maps of
its tools) is keyed by :func:`credentials_key` of the request that made it: a request with other
credentials never uses it. The digest is an HMAC-SHA256 (RFC 2104) under a key made at random for
this process, so it says nothing about the values outside it, and mcpx never stores or logs the
values themselves.

Which headers count (:func:`credential_headers`): ``Authorization`` and ``Cookie`` (the ones mcpx
sends on a client's behalf, :data:`mcpx_core.upstream.ON_BEHALF`), and every other request header
whose name says it carries a secret (``X-API-Key``, ``X-Auth-Token``, ``Api-Key``, ...: a name
holding ``auth``, ``token``, ``key``, ``secret``, ``password``, ``credential`` or ``cookie``), since
a bridge forwards those too. MCP's own headers (``Mcp-*``, ``MCP-Protocol-Version``) never count, nor
headers that change on every request (``Idempotency-Key``) or the cookies a load balancer rotates
(``AWSALB*``, ``AWSELB*``). A credential that itself changes on every request (a signed request, as
AWS SigV4) opens an upstream session per request: such a client gets no reuse (docs/security.md).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from typing import Iterable

_KEY = os.urandom(32)
#: header names that carry a client's credentials besides Authorization and Cookie
_SECRET_NAME = re.compile(r"auth|token|key|secret|password|passwd|credential|cookie", re.IGNORECASE)
#: never credentials: transport headers whose names happen to match, and headers that carry a new value
#: on every request (keyed by them, every request would open a new upstream session and no held round
#: trip could be retried)
_NOT_SECRET = frozenset({"keep-alive", "sec-websocket-key", "idempotency-key", "x-idempotency-key"})
#: cookies a load balancer sets and rotates on every response (stickiness, not who the client is)
_ROTATING_COOKIE = re.compile(r"^\s*(AWSALB[A-Z]*|AWSELB[A-Z]*)=", re.IGNORECASE)


def is_credential(name: str) -> bool:
    """Whether a request header ``name`` carries a client's credentials (see the module docstring)."""
    low = name.lower()
    if low.startswith("mcp-") or low in _NOT_SECRET:
        return False
    return low in ("authorization", "cookie") or _SECRET_NAME.search(low) is not None


def credential_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The credential headers among ``headers`` (name lower-cased, value as sent; a ``Cookie`` without
    the load balancer's rotating cookies), sorted."""
    out = []
    for k, v in headers:
        if not is_credential(k):
            continue
        low = k.lower()
        if low == "cookie":
            v = ";".join(c for c in v.split(";") if not _ROTATING_COOKIE.match(c))
        out.append((low, v))
    return sorted(out)


def credentials_key(headers: Iterable[tuple[str, str]]) -> str:
    """The keyed digest of a request's credentials ("" for a request that sends none): equal for two
    requests exactly when they send the same credential headers with the same values."""
    creds = credential_headers(headers)
    if not creds:
        return ""
    mac = hmac.new(_KEY, digestmod=hashlib.sha256)
    for k, v in creds:
        mac.update(k.encode("latin-1", "replace") + b"\0" + v.encode("utf-8", "surrogateescape") + b"\0")
    return mac.hexdigest()[:32]
