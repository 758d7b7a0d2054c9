"""The authorization stage: which discovery answer a client of its revision needs from the MCP origin.

One question, :meth:`Discovery.answer`: given the server's response to a client request (a
:class:`Seen`), what does the client get? One typed answer:

- :class:`Keep`: the server's response as it is (both sides agree, or nothing to bridge);
- :class:`Serve`: a discovery document mcpx serves at the origin instead of the server's 404:
  * **old client, new server** (``AUTH-origin-metadata``): ``GET /.well-known/oauth-authorization-server``
    at the MCP origin answered 404 while the origin publishes Protected Resource Metadata (RFC 9728):
    the metadata (RFC 8414) of the PRM's first authorization server, as that server publishes it
    (its ``issuer`` unchanged: see :mod:`mcpx_core.auth`), so a 2025-03-26 client
    (``basic/authorization`` §2.3.2) reaches the real authorization server;
  * **new client, old server** (``AUTH-protected-resource``): ``GET /.well-known/oauth-protected-resource[/path]``
    answered 404 while the origin publishes RFC 8414 metadata itself (a 2025-03-26 deployment): a
    PRM whose ``resource`` is the MCP URL the client used and whose ``authorization_servers`` is
    the issuer that metadata states;
- :class:`Challenge` (``AUTH-resource-metadata``): a 401 whose ``WWW-Authenticate`` lacks
  ``resource_metadata``, from an origin of the second kind: the parameter added (RFC 9728 §5.1),
  naming the PRM above;
- :class:`Redirect` (``AUTH-default-endpoint``): the 2025-03-26 default endpoints (``/authorize``,
  ``/token``, ``/register``, §2.3.3) answered 404 at an origin whose PRM names another
  authorization server: a redirect to that server's endpoint (302 for the authorization request,
  a GET; 307 for the POSTs, RFC 9110 §15.4.8, which keeps method and body), so mcpx never holds a
  code, a token or a client secret: the client sends them to the authorization server itself.

Every served or rewritten document is a change record (``direction`` s2c, ``pointer`` the part of
the document or header, ``before``/``after`` the documents' summaries; never a header value of the
client's, a query string, a code or a token).

mcpx's own fetches (:class:`Fetch`, given by the hook) are GETs of public documents that carry no
credentials of any client; their answers are cached per URL for the lifetime their HTTP caching
headers give (:func:`.wellknown.lifetime`), so one client's answer is never another client's
secret. Sans I/O: tests give a ``fetch`` of their own.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import orjson
from urllib.parse import urlsplit

from ..changes import Change, Summary
from . import wellknown as wk

logger = logging.getLogger("mcpx")
#: documents kept at most (URLs: the metadata of an origin, its PRM, its authorization server)
CACHE_MAX = 1024
JSON_HEADERS = (("content-type", "application/json"), ("cache-control", "no-store"))


@dataclass(frozen=True)
class Seen:
    """What the hook read of one response and its request. ``server_origin``: where the request
    went (``scheme://host:port``); ``client_origin``: the origin the client used (in reverse mode
    mcpx's own address, else the server's); ``path`` without the query; ``challenge``: the
    response's ``WWW-Authenticate`` (None: none); ``client``: who the client is (its host), for
    :attr:`Discovery.strict_issuer`."""

    method: str
    path: str
    status: int
    server_origin: str
    client_origin: str
    challenge: str | None = None
    client: str = ""
    #: the request was MCP traffic: a JSON-RPC request mcpx read, or one carrying ``MCP-Protocol-Version``
    #: (2025-03-26 ``basic/authorization`` §2.3.2: clients send it on metadata discovery too)
    mcp: bool = False
    #: the request was an ``initialize``; ``issuer_check``: its client's host profile, when that profile
    #: says the client rejects metadata whose issuer is not the URL it fetched (None: it does not)
    initialize: bool = False
    issuer_check: str | None = None

    @property
    def client_origin_url(self) -> str:
        return origin_url(self.client_origin)

    @property
    def server_origin_url(self) -> str:
        return origin_url(self.server_origin)


@dataclass(frozen=True)
class Keep:
    pass


@dataclass(frozen=True)
class Serve:
    status: int
    body: bytes
    changes: list[Change]
    headers: tuple[tuple[str, str], ...] = JSON_HEADERS


@dataclass(frozen=True)
class Challenge:
    value: str
    changes: list[Change]


@dataclass(frozen=True)
class Redirect:
    status: int
    location: str
    changes: list[Change]


Answer = Keep | Serve | Challenge | Redirect


@dataclass(frozen=True)
class Fetched:
    """An answer to one of mcpx's own fetches: ``headers`` with lower-case names."""

    status: int
    headers: dict[str, str]
    body: bytes


class FetchError(Exception):
    """A fetch that got no answer (``reason``: why, no header values)."""


Fetch = Callable[[str], Awaitable[Fetched]]


@dataclass
class _Doc:
    doc: dict | None
    until: float
    url: str = ""


@dataclass
class Discovery:
    """The stage (see the module docstring); one per mcpx, its cache shared by every client."""

    cache: OrderedDict[str, _Doc] = field(default_factory=OrderedDict)
    #: the PRM URL each server origin named in a 401 (RFC 9728 §5.1), learnt as they pass
    named: OrderedDict[str, str] = field(default_factory=OrderedDict)
    #: ``client -> profile name`` of clients whose host profile says they reject metadata whose
    #: ``issuer`` is not the URL they fetched (RFC 8414 §3.3), learnt from their 401'd initialize:
    #: they are served no origin metadata
    strict_issuer: OrderedDict[str, str] = field(default_factory=OrderedDict)
    #: MCP origins: those that answered an MCP request with 401 (an OAuth-protected MCP server), newest last
    origins: OrderedDict[str, None] = field(default_factory=OrderedDict)
    clock: Callable[[], float] = time.monotonic

    @staticmethod
    def concerns(method: str, path: str, status: int) -> bool:
        """Whether a response can get an answer other than :class:`Keep` (no fetch, no cost)."""
        if status == 401:
            return True
        if status != 404:
            return False
        if method == "GET" and (path == wk.AS_METADATA or wk.resource_metadata_suffix(path) is not None):
            return True
        return path in wk.DEFAULT_ENDPOINTS

    async def answer(self, seen: Seen, fetch: Fetch) -> Answer:
        """What the client gets instead of the server's response (see the module docstring)."""
        if not self.concerns(seen.method, seen.path, seen.status):
            return Keep()
        if seen.status == 401:
            if not seen.mcp:
                return Keep()  # another API's 401 (an authorization server's own, say): not MCP's to bridge
            _bounded_set(self.origins, seen.server_origin, None)
            if seen.initialize:  # its discovery follows from the same host
                if seen.issuer_check is not None:
                    _bounded_set(self.strict_issuer, seen.client, seen.issuer_check)
                else:
                    self.strict_issuer.pop(seen.client, None)
            return await self._challenge(seen, fetch)
        if not seen.mcp and seen.server_origin not in self.origins:
            return Keep()  # neither an MCP client's discovery nor an MCP origin: traffic mcpx leaves alone
        if seen.path == wk.AS_METADATA:
            return await self._origin_metadata(seen, fetch)
        suffix = wk.resource_metadata_suffix(seen.path)
        if suffix is not None:
            return await self._protected_resource(seen, suffix, fetch)
        return await self._default_endpoint(seen, fetch)

    # -- old client, new server -----------------------------------------------------------------
    async def _origin_metadata(self, seen: Seen, fetch: Fetch) -> Answer:
        prm = await self._prm(seen.server_origin, fetch)
        if prm is None:
            return Keep()
        issuer = _first_server(prm.doc)
        if issuer is None or wk.origin_of(issuer) == seen.server_origin:
            return Keep()  # the origin is its own authorization server: its 404 is its answer
        asm = await self._as_metadata(issuer, fetch)
        if asm is None:
            return Keep()
        if seen.client in self.strict_issuer:
            # its host profile says it would reject a document whose issuer is not the origin it fetched
            # (RFC 8414 §3.3), and rewriting the issuer would break the RFC 9207 check: the 404 stands
            return Keep()
        detail = (f"the origin publishes no RFC 8414 metadata; its protected resource metadata ({prm.url}) names "
                  f"the authorization server {issuer}: its metadata ({asm.url}) served as published, issuer unchanged")
        change = Change(pointer="", action="synthesize", rule="AUTH-origin-metadata", before="HTTP 404",
                        after=Summary(asm.doc), detail=detail)
        return Serve(200, orjson.dumps(asm.doc), [change])

    async def _default_endpoint(self, seen: Seen, fetch: Fetch) -> Answer:
        member = wk.DEFAULT_ENDPOINTS[seen.path]
        if (seen.method == "GET") != (seen.path == "/authorize"):
            return Keep()
        prm = await self._prm(seen.server_origin, fetch)
        issuer = _first_server(prm.doc) if prm is not None else None
        if issuer is None or wk.origin_of(issuer) == seen.server_origin:
            return Keep()
        asm = await self._as_metadata(issuer, fetch)
        target = asm.doc.get(member) if asm is not None else None
        if not wk.is_location(target):  # (no URI, or one that would split the redirect's header block)
            return Keep()
        status = 302 if seen.method == "GET" else 307
        change = Change(pointer="header:Location", action="synthesize", rule="AUTH-default-endpoint", before="HTTP 404",
                        after=f"HTTP {status} {target}",
                        detail=f"the 2025-03-26 default endpoint {seen.path} at the origin: redirected to the "
                               f"{member} of {issuer} (the query and body go there from the client, unseen)")
        return Redirect(status, target, [change])

    # -- new client, old server -----------------------------------------------------------------
    async def _protected_resource(self, seen: Seen, suffix: str, fetch: Fetch) -> Answer:
        issuer = await self._own_issuer(seen, fetch)
        if issuer is None:
            return Keep()
        resource = seen.client_origin_url + (suffix or "/")
        doc = wk.synthesized_prm(resource, issuer)
        change = Change(pointer="", action="synthesize", rule="AUTH-protected-resource", before="HTTP 404",
                        after=Summary(doc),
                        detail=f"the origin publishes no protected resource metadata but RFC 8414 metadata of its own "
                               f"(issuer {issuer}): RFC 9728 metadata for {resource}")
        return Serve(200, orjson.dumps(doc), [change])

    async def _challenge(self, seen: Seen, fetch: Fetch) -> Answer:
        named = wk.resource_metadata_param(seen.challenge)
        if named is not None:
            _bounded_set(self.named, seen.server_origin, named)
            return Keep()
        if seen.path.startswith("/.well-known/") or seen.path in wk.DEFAULT_ENDPOINTS:
            return Keep()
        if await self._own_issuer(seen, fetch) is None:
            return Keep()
        url = seen.client_origin_url + wk.RESOURCE_METADATA + seen.path.rstrip("/")
        value = wk.with_resource_metadata(seen.challenge, url)
        if value is None:  # a challenge that does not parse (RFC 9110 §11.6.1), or a token68 one: left as sent
            logger.info("mcpx: authorization: a WWW-Authenticate value that cannot take resource_metadata: left as sent")
            return Keep()
        change = Change(pointer="header:WWW-Authenticate", action="synthesize", rule="AUTH-resource-metadata",
                        before=None, after=f'resource_metadata="{url}"',
                        detail="a 401 without resource_metadata from an origin that publishes only RFC 8414 metadata: "
                               "the parameter names the protected resource metadata mcpx serves (RFC 9728 §5.1)")
        return Challenge(value, [change])

    async def _own_issuer(self, seen: Seen, fetch: Fetch) -> str | None:
        """The issuer of the origin's own RFC 8414 metadata, when it publishes no PRM (a 2025-03-26
        deployment) and a client that reads that issuer from a PRM finds this very document: the
        issuer is an origin (the server's, or the one the client used) without a path, so its
        metadata URL (RFC 8414 §3.1) is the one mcpx read. None otherwise: an issuer with a path
        (``http://host/oauth``) sends a current client to ``/.well-known/oauth-authorization-server/oauth``,
        which a 2025-03-26 server does not publish, while its fallback to the origin's metadata works
        as directly (the conformance suite's ``auth/2025-03-26-oauth-metadata-backcompat`` server)."""
        if await self._prm(seen.server_origin, fetch) is not None:
            return None
        asm = await self._get(seen.server_origin_url + wk.AS_METADATA, fetch)
        if asm is None:
            return None
        issuer = asm.doc.get("issuer")
        if not isinstance(issuer, str) or not issuer.startswith(("https://", "http://")):
            return None
        if urlsplit(issuer).path.strip("/") or wk.origin_of(issuer) not in (seen.server_origin, seen.client_origin):
            return None
        return issuer

    # -- documents --------------------------------------------------------------------------------
    async def _prm(self, origin: str, fetch: Fetch) -> _Doc | None:
        """The origin's protected resource metadata: at the URL its 401 named (its path, at this
        origin: in reverse mode the header names the public URL), else at the origin's root."""
        urls = []
        named = self.named.get(origin)
        if named is not None:
            u = urlsplit(named)
            if wk.resource_metadata_suffix(u.path) is not None:
                urls.append(origin_url(origin) + u.path)
        urls.append(origin_url(origin) + wk.RESOURCE_METADATA)
        for url in dict.fromkeys(urls):
            doc = await self._get(url, fetch)
            if doc is not None and isinstance(doc.doc.get("authorization_servers"), list):
                return doc
        return None

    async def _as_metadata(self, issuer: str, fetch: Fetch) -> _Doc | None:
        """The metadata of ``issuer``, only when its ``issuer`` is the one its URL was built from
        (RFC 8414 §3.3: otherwise it MUST NOT be used; a trailing ``/`` aside, as PRMs and metadata
        of one deployment often differ by it): never another server's document under this name."""
        for url in wk.as_metadata_urls(issuer):
            doc = await self._get(url, fetch)
            if doc is None:
                continue
            stated = doc.doc.get("issuer")
            if not isinstance(stated, str) or stated.rstrip("/") != issuer.rstrip("/"):
                logger.info(f"mcpx: authorization: the metadata at {url} states another issuer than {issuer}: not used")
                return None
            return doc
        return None

    async def _get(self, url: str, fetch: Fetch) -> _Doc | None:
        """The JSON object at ``url`` (None: not one), from the cache while its lifetime lasts."""
        now = self.clock()
        hit = self.cache.get(url)
        if hit is not None and hit.until > now:
            self.cache.move_to_end(url)
            return hit if hit.doc is not None else None
        try:
            got = await fetch(url)
        except FetchError:
            return None  # not cached: the next request asks again
        doc = None
        if got.status == 200:
            try:
                parsed = orjson.loads(got.body)
            except orjson.JSONDecodeError:
                parsed = None
            doc = parsed if isinstance(parsed, dict) else None
        ttl = wk.lifetime(got.headers, doc is not None)
        entry = _Doc(doc, now + ttl, url)
        if ttl > 0:
            self.cache[url] = entry
            self.cache.move_to_end(url)
            while len(self.cache) > CACHE_MAX:
                self.cache.popitem(last=False)
        else:
            self.cache.pop(url, None)
        return entry if doc is not None else None


def _bounded_set(table: OrderedDict, key: str, value) -> None:
    """``table[key] = value``, newest last, keeping at most :data:`CACHE_MAX` entries."""
    table[key] = value
    table.move_to_end(key)
    while len(table) > CACHE_MAX:
        table.popitem(last=False)


def origin_url(origin: str) -> str:
    """``scheme://host:port`` without the default port of its scheme (a URL as a client writes it)."""
    for scheme, port in (("http", 80), ("https", 443)):
        if origin.startswith(f"{scheme}://") and origin.endswith(f":{port}"):
            return origin[: -len(f":{port}")]
    return origin


def _first_server(doc: dict | None) -> str | None:
    servers = (doc or {}).get("authorization_servers")
    first = servers[0] if isinstance(servers, list) and servers else None
    return first if isinstance(first, str) and first.startswith(("https://", "http://")) else None
