"""The Host/Origin check a local MCP server makes, made by mcpx where it answers for the server.

A bridge answers some requests itself (a 2026-07-28 client's ``server/discover``, a legacy client's
``initialize`` in front of a 2026-07-28-only server, ``ping``, ...) and sends others on upstream
sessions of its own. The server never sees those requests as the client sent them, so it cannot
refuse them as it refuses a DNS-rebinding attack on a server bound to the local machine
(docs/specification/2025-11-25/basic/transports.mdx "Security Warning": servers MUST validate the
``Origin`` header; 2025-11-25 basic/security_best_practices "Local MCP Server Compromise"). mcpx
refuses them itself, as the SDKs' servers do (HTTP 403, a JSON-RPC error without an id):

- only where mcpx itself listens on a loopback address (a browser tricked by DNS rebinding reaches a
  local port; a proxy listening elsewhere is reached on purpose);
- ``Origin``, when the request carries one, must name a loopback host (``localhost``, ``127.0.0.1``,
  ``[::1]``, any port): browsers send it on every cross-origin POST;
- ``Host`` is checked the same way only where the client's own value reaches mcpx: in reverse mode
  mitmproxy replaces it with the server's before any addon runs, unless ``keep_host_header`` is set.

A request a bridge only forwards is checked the same way, since the server's own check then sees
mcpx's request, not the client's.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def _loopback_address(host: str) -> bool:
    try:
        ip = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def _loopback_host(hostport: str) -> bool:
    """Whether a ``Host`` value (``host[:port]``) names a loopback host."""
    try:
        host = urlsplit(f"//{hostport}").hostname or ""
    except ValueError:
        return False
    return host.lower() in LOOPBACK_NAMES or _loopback_address(host)


def refusal(listen_address: str | None, origin: str | None, host: str | None) -> str | None:
    """Why a request must be refused (None: it passes). ``listen_address``: the address mcpx accepted
    the client's connection on; ``origin``: its ``Origin`` header; ``host``: its ``Host`` header where
    the client's own value is known (None: not checked)."""
    if not listen_address or not _loopback_address(listen_address):
        return None
    if origin is not None and origin.strip().lower() != "null":
        parts = urlsplit(origin.strip())
        if not parts.scheme or not parts.netloc or not _loopback_host(parts.netloc):
            return "Origin is not a local origin"
    elif origin is not None:
        return "Origin is not a local origin"
    if host is not None and not _loopback_host(host.strip()):
        return "Host is not a local host"
    return None
