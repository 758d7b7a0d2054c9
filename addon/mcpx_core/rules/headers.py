"""HTTP header rules for client requests toward the server's revision (REVISIONS.md 5.2).

- ``TR-protocol-version-header`` (docs/specification/2025-06-18/basic/transports.mdx:242): after
  initialize, ``MCP-Protocol-Version`` must name the server leg's revision. Where the legs differ
  (a pin or a bridge), a different value sent by the client is replaced by it, and a missing one is
  added toward a 2025-06-18+ server. Where both legs agree the header goes as sent.
- ``TR-mcp-method-name`` / ``TR-mcp-param-headers`` (docs/specification/2026-07-28/basic/transports/streamable-http.mdx:290, 356):
  ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` are removed toward legacy servers.

:func:`request_headers` takes the header names and values as a mapping (case-insensitive names)
and returns what to set and remove, with the change records. Header *values* never enter a record
except the protocol version itself.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping

from .. import revisions
from ..changes import Change

MODERN = ("mcp-method", "mcp-name")


def request_headers(headers: Mapping[str, str], client_rev: str | None, server_rev: str | None) -> tuple[dict[str, str], list[str], list[Change]]:
    """(headers to set, header names to remove, change records) for one client request."""
    sets: dict[str, str] = {}
    removes: list[str] = []
    changes: list[Change] = []
    if not revisions.is_known(server_rev):
        return sets, removes, changes
    lower = {k.lower(): k for k in headers}
    pv = lower.get("mcp-protocol-version")
    if client_rev != server_rev and revisions.is_known(client_rev):
        # the legs differ (a pin, a bridge): the server gets its own revision; when both legs agree
        # the header goes as the client sent it (the server judges a wrong value itself)
        if pv is not None and headers[pv] != server_rev:
            sets[pv] = server_rev
            changes.append(Change(pointer="header:MCP-Protocol-Version", action="rewrite", rule="TR-protocol-version-header",
                                  before=headers[pv], after=server_rev))
        elif pv is None and not revisions.older(server_rev, "2025-06-18"):
            # upgrade direction: a client leg that sends no header facing a 2025-06-18+ server, which
            # would otherwise assume 2025-03-26 (docs/specification/2025-06-18/basic/transports.mdx:253)
            sets["MCP-Protocol-Version"] = server_rev
            changes.append(Change(pointer="header:MCP-Protocol-Version", action="synthesize", rule="TR-protocol-version-header",
                                  after=server_rev))
    if revisions.older(server_rev, "2026-07-28"):
        for low, name in lower.items():
            if low in MODERN:
                removes.append(name)
                changes.append(Change(pointer=f"header:{name}", action="drop", rule="TR-mcp-method-name"))
            elif low.startswith("mcp-param-"):
                removes.append(name)
                changes.append(Change(pointer=f"header:{name}", action="drop", rule="TR-mcp-param-headers"))
    return sets, removes, changes


# -- upgrade direction: the 2026-07-28 routing headers of a request mcpx sends for a legacy client --
#: the methods whose ``Mcp-Name`` mirrors a param (docs/specification/2026-07-28/basic/transports/streamable-http.mdx:290)
NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_SENTINEL = re.compile(r"^=\?base64\?.*\?=$", re.S)
_HEADER_SAFE = re.compile(r"^[\x20-\x7E]*$")
#: RFC 9110 token: the characters an ``x-mcp-header`` value (a header name suffix) may hold
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_SINGLE = frozenset({"items", "contains", "unevaluatedItems", "additionalProperties", "propertyNames",
                     "unevaluatedProperties", "not", "if", "then", "else", "contentSchema"})
_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAP = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})


def encode_header_value(value: str) -> str:
    """A header value for ``value``: as it is when it is visible ASCII (spaces inside allowed) without
    outer whitespace and does not look like the sentinel, else ``=?base64?<base64 of UTF-8>?=``
    (REVISIONS.md TR-mcp-method-name, streamable-http.mdx:495)."""
    if _HEADER_SAFE.match(value) and value == value.strip() and not _SENTINEL.match(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def x_mcp_header_map(input_schema: object) -> dict[tuple[str, ...], str] | None:
    """``{property path: header token}`` of a tool's ``x-mcp-header`` annotations (TR-mcp-param-headers,
    streamable-http.mdx:356, schema/2026-07-28/schema.ts:1997), or None when one annotation is
    invalid (then a 2026 client drops the tool and a server validates nothing, streamable-http.mdx:403).

    Valid: on a property reached from the root by ``properties`` keys only, a non-empty RFC 9110
    token, on a string/integer/boolean property, unique ignoring case."""
    out: dict[tuple[str, ...], str] = {}
    seen: set[str] = set()
    stack: list[tuple[tuple[str, ...] | None, object]] = [((), input_schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        if "x-mcp-header" in node:
            token = node["x-mcp-header"]
            if not path or not isinstance(token, str) or not _TOKEN.match(token) \
                    or node.get("type") not in ("string", "integer", "boolean") or token.lower() in seen:
                return None
            seen.add(token.lower())
            out[path] = token
        for kw, val in node.items():
            if kw == "properties" and isinstance(val, dict):
                stack.extend(((*path, k) if path is not None else None, sub) for k, sub in val.items())
            elif kw in _SINGLE:
                stack.append((None, val))
            elif kw in _LIST and isinstance(val, list):
                stack.extend((None, sub) for sub in val)
            elif kw in _MAP and isinstance(val, dict):
                stack.extend((None, sub) for sub in val.values())
    return out


def _rendered(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)  # as mcp 2.3.0 renders it (mcp/shared/inbound.py _render_header_scalar)
    return None


def upgrade_headers(method: str, params: dict, param_map: dict[tuple[str, ...], str] | None) -> tuple[dict[str, str], list[Change]]:
    """The routing headers a 2026-07-28 server requires on a request (upgrade direction of
    TR-mcp-method-name and TR-mcp-param-headers), consistent with the body, and their records:
    ``Mcp-Method``; ``Mcp-Name`` for tools/call, prompts/get (params.name) and resources/read
    (params.uri); ``Mcp-Param-<token>`` for each annotated tools/call argument present and not
    null (``param_map``: :func:`x_mcp_header_map` of the tool's inputSchema). Header values never
    enter a record."""
    headers = {"Mcp-Method": method}
    changes = [Change(pointer="header:Mcp-Method", action="synthesize", rule="TR-mcp-method-name", after=method)]
    key = NAME_PARAMS.get(method)
    if key and isinstance(params.get(key), str):
        headers["Mcp-Name"] = encode_header_value(params[key])
        changes.append(Change(pointer="header:Mcp-Name", action="synthesize", rule="TR-mcp-method-name",
                              detail=f"mirrors params.{key}"))
    args = params.get("arguments")
    if method == "tools/call" and param_map and isinstance(args, dict):
        for path, token in param_map.items():
            node: object = args
            for k in path:
                node = node.get(k) if isinstance(node, dict) else None
            text = _rendered(node) if node is not None else None
            if text is None:
                continue
            headers[f"Mcp-Param-{token}"] = encode_header_value(text)
            changes.append(Change(pointer=f"header:Mcp-Param-{token}", action="synthesize", rule="TR-mcp-param-headers",
                                  detail=f"mirrors arguments.{'.'.join(path)} (x-mcp-header)"))
    return headers, changes


# -- response headers: a reverse proxy's own origin in the server's Location --------------------------
#: the response headers whose URL names a resource of the server (RFC 9110 10.2.2, 8.8.2 Content-Location)
LOCATION_HEADERS = ("Location", "Content-Location")
_DEFAULT_PORT = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an absolute http(s) URL (host lower case, IPv6 without brackets), else None."""
    from urllib.parse import urlsplit
    try:
        u = urlsplit(url.strip())
        port = u.port
    except ValueError:
        return None
    scheme = u.scheme.lower()
    if scheme not in _DEFAULT_PORT or not u.hostname or not u.netloc:
        return None
    return scheme, u.hostname.lower(), port if port is not None else _DEFAULT_PORT[scheme]


def hostport(scheme: str, host: str, port: int) -> str:
    """``scheme://host[:port]`` (the port left out where it is the scheme's default; IPv6 in brackets)."""
    h = f"[{host}]" if ":" in host else host
    return f"{scheme}://{h}" if _DEFAULT_PORT.get(scheme) == port else f"{scheme}://{h}:{port}"


def response_locations(headers: Mapping[str, str], upstream: tuple[str, str, int], client: tuple[str, str, int]) -> tuple[dict[str, str], list[Change]]:
    """``TR-location``: in reverse mode, a ``Location`` or ``Content-Location`` (any case) that names the
    server's own origin ``upstream`` (scheme, host, port) is rewritten to the origin the client reached
    mcpx at, ``client``, as a reverse proxy does (nginx ``proxy_redirect default``): a client that follows
    the server's redirect (RFC 9110 15.4; Starlette's ``/mcp/`` -> ``/mcp``) stays on mcpx. Path, query
    and fragment are kept. A relative reference, or one naming any other origin, is left as it is.
    Returns (header name -> new value, records)."""
    sets: dict[str, str] = {}
    changes: list[Change] = []
    canonical = {n.lower(): n for n in LOCATION_HEADERS}
    for name, value in headers.items():
        if name.lower() not in canonical or _origin(value) != upstream or upstream == client:
            continue
        v = value.strip()
        rest = v[v.index("//") + 2:]
        cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
        new = hostport(*client) + rest[cut:]
        sets[name] = new
        changes.append(Change(pointer=f"header:{canonical[name.lower()]}", action="rewrite", rule="TR-location", before=value, after=new,
                              detail="the server's own origin, rewritten to the one the client reached mcpx at"))
    return sets, changes
