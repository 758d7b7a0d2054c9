"""Sessions: who speaks which revision on each leg, and which request a response answers.

A :class:`Session` has two legs (REVISIONS.md 0 and 2): ``client_rev`` (the revision the client
receives) and ``server_rev`` (the revision the server speaks), learnt from the ``initialize``
request and result (schema/2025-11-25/schema.ts:259, 283). Its immutable facts travel with the
session: mcpx gives the client a sealed token as ``Mcp-Session-Id`` (:mod:`mcpx_core.seal`) and
restores the server's own id toward the server (docs/specification/2025-03-26/basic/transports.mdx:194).
Memory holds only a cache of opened sessions and their mutable state: the method of each
outstanding request id (bounded, oldest forgotten first), counters, a pin set at run time.

:class:`SessionTracker` is the one place that finds a session for a request (:meth:`lookup`),
starts one for an ``initialize`` (:meth:`start`), completes it from the result (:meth:`learn`,
which seals the token) and ends one (:meth:`end`). Lookup order, first match wins:

1. a request that names its revision in ``params._meta["io.modelcontextprotocol/protocolVersion"]``
   (2026-07-28, schema/2026-07-28/schema.ts:76) belongs to no session: :class:`Named` (a revision mcpx
   does not know: no session at all, the request goes untouched);
2. ``Mcp-Session-Id`` (present at all: an empty one binds no session, the request goes untouched): a token opens (cache, else the key) -> its session; one that does not
   open -> :class:`Unknown` (the addon answers 404, docs/specification/2025-03-26/basic/transports.mdx:200).
   A plain id (no token) is looked up in memory: sessions of offline replays (recorded ids) and of
   live sessions started before a key existed; live and unknown -> :class:`Unknown`;
3. ``MCP-Protocol-Version`` (docs/specification/2025-06-18/basic/transports.mdx:242) -> :class:`Named`
   (an unknown value: no session);
4. fallback, only for clients that echo no session id and name no revision: the session started
   from the same client connection, else from the same client host, and only a session a stranger
   can do nothing in (:meth:`Session.guessable`): one whose server keeps no session, that no bridge
   serves, with no server->client request waiting for the client's answer, whose client never
   echoed its token; never for a ``DELETE`` (docs/security.md "The one guess").

A token names where it belongs: the sealed facts hold a digest of the server's origin and path
(:func:`endpoint_digest`); a token presented for another server is :class:`Unknown`. A session
id that is an mcpx token is judged before anything else the request says (a revision in
``_meta``, an ``initialize``): a token never reaches the server.

An ``initialize`` the server does not accept (an HTTP error, a JSON-RPC error, an answer mcpx cannot
read) leaves no session behind (:meth:`SessionTracker.abandon`): its connection and host find nothing.

Bounds: at most ``max_sessions`` sessions in memory, each dropped ``ttl`` seconds after its last
use; a dropped session whose token comes back is opened again (its mutable state starts empty).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from . import revisions
from .seal import ENDPOINT_ONLY, PREFIX, BadToken, Facts, Sealer, TooLarge, trim_caps, trim_info

_UIDS = itertools.count(1)
META_VERSION = "io.modelcontextprotocol/protocolVersion"
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
#: the response header that names a session living in one mcpx process's memory (value: the client's key
#: for it, its sealed token): a load balancer sticks the session's requests to the process that answered
#: with it (deploy/haproxy.cfg stores it and removes it from the client's answer). Sent for the HTTP+SSE
#: transport's stream (transport/http_sse), the upstream HTTP+SSE transport's sessions (transport/
#: upstream_sse) and a session mcpx could not seal; a sealed session opens on any process and gets none.
AFFINITY_HEADER = "mcpx-affinity"
#: outstanding request ids remembered per session (oldest forgotten first): a session whose answers
#: never come costs at most this many entries (~150 bytes each)
MAX_PENDING = 1024
#: audit findings kept per session for mcpx.report (the newest), and tools whose outputSchema is remembered
MAX_FINDINGS = 100
MAX_TOOLS = 4096
#: tokens of sessions the client ended with a DELETE mcpx answered itself, remembered per process (oldest
#: forgotten first) so they get 404 (another replica, or a restart, does not know them)
MAX_ENDED = 10000


@dataclass
class Session:
    """One MCP session. Revisions are strings from :data:`revisions.REVISIONS` or None.

    ``key``: the handle records and commands show (a random ``s-…`` handle for sealed sessions,
    else the id or fallback key it was found under); ``token``: the sealed id the client holds;
    ``upstream_id``: the server's own ``Mcp-Session-Id``; ``profile``: the name of the client's
    host profile (:mod:`mcpx_core.profiles`), chosen at initialize and sealed.
    """

    key: str
    client_rev: str | None = None
    server_rev: str | None = None
    requested_rev: str | None = None
    pinned_rev: str | None = None
    client_info: dict | None = None
    server_info: dict | None = None
    client_caps: dict | None = None
    server_caps: dict | None = None
    upstream_id: str | None = None
    token: str | None = None
    bridge: str = ""
    profile: str | None = None
    #: started to be sealed (its key is a random handle, never renamed)
    sealed: bool = False
    #: why a session started to be sealed got no token (the server's id too long): it lives in memory only
    unsealed: str | None = None
    #: (direction of the request, id) -> method; direction "c2s" = client request
    pending: OrderedDict = field(default_factory=OrderedDict)
    messages: int = 0
    changes: int = 0
    dropped: int = 0
    #: (rule, action) -> count of change records, for reports (audit records are not changes: see ``audits``)
    by_rule: dict = field(default_factory=dict)
    #: dual-result audit findings: their count, and the newest MAX_FINDINGS (audit.Finding.summary())
    audits: int = 0
    findings: deque = field(default_factory=lambda: deque(maxlen=MAX_FINDINGS), repr=False)
    #: tool name -> its declared outputSchema (None: it declares none), from the tools/list results
    #: of this session, kept only for a structured-visible profile (audit.make_structured_visible)
    tools: dict = field(default_factory=dict, repr=False)
    last_seen: float = field(default_factory=time.monotonic)
    #: the keys the tracker finds this session under (token, handle, server id, fallback keys)
    aliases: set = field(default_factory=set, repr=False)
    #: fallback key -> the session it found before this one's initialize took it over (:meth:`SessionTracker.start`),
    #: given back if the server refuses that initialize (:meth:`SessionTracker.abandon`); emptied by
    #: :meth:`SessionTracker.settle` once the server accepted it
    displaced: dict = field(default_factory=dict, repr=False)
    uid: int = field(default_factory=lambda: next(_UIDS), repr=False)
    #: :func:`endpoint_digest` of the server's origin and path the session was opened against ("" unknown)
    endpoint: str = ""
    #: the client sent this session's token (or id) back at least once: a request without one is not it
    echoed: bool = False
    #: held while the counters, ``by_rule`` or ``pending`` change: a large body's rewrite runs in mcpx's
    #: worker thread (addons/worker.py) while the event loop rewrites other flows of the same session
    lock: Any = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def client_leg(self) -> str | None:
        """The revision the client receives (a pin included)."""
        return self.pinned_rev or self.client_rev

    def guessable(self) -> bool:
        """Whether the connection/host fallback may serve this session to a request that carries no
        session id: only where a stranger on the same host could do nothing in it that the
        server would not let it do directly. The server keeps no session (``upstream_id`` None:
        nothing upstream to act in), no bridge serves it (a bridge keeps state on the session's
        behalf: held requests, listen streams), no server->client request waits for the client's
        answer (``pending`` ``s2c`` entries), its client never echoed its token (a client that
        echoes it is never tokenless), and the server accepted its initialize (one still in flight,
        or never answered, serves nobody)."""
        if self.upstream_id is not None or self.bridge or self.echoed or self.server_rev is None:
            return False
        with self.lock:  # (the worker thread may change it meanwhile)
            return not any(d == "s2c" for d, _ in self.pending)

    def remember(self, direction: str, req_id: Any, method: str) -> None:
        if isinstance(req_id, (str, int)) and not isinstance(req_id, bool):
            with self.lock:
                self.pending[(direction, req_id)] = method
                if len(self.pending) > MAX_PENDING:
                    self.pending.popitem(last=False)

    def answer(self, request_direction: str, req_id: Any) -> str | None:
        """The method of the request ``req_id`` sent in ``request_direction``, forgetting it."""
        if isinstance(req_id, (str, int)) and not isinstance(req_id, bool):
            with self.lock:
                return self.pending.pop((request_direction, req_id), None)
        return None

    def saw_message(self) -> None:
        """Count one message of the session."""
        with self.lock:
            self.messages += 1

    def count(self, changes: Any, not_findings: str) -> None:
        """Count the records of one message: ``changes``, ``dropped``, ``by_rule``; an ``audit`` record is a
        finding (``audits``), not a change, unless its rule is ``not_findings`` (a profile choice: neither)."""
        audits = changed = dropped = 0
        rules: dict = {}
        for c in changes:
            action = c.action
            if action == "audit":
                audits += c.rule != not_findings
                continue
            changed += 1
            if action == "drop" or action == "drop-message":
                dropped += 1
            k = (c.rule, action)
            rules[k] = rules.get(k, 0) + 1
        with self.lock:
            by_rule = self.by_rule
            for k, n in rules.items():
                by_rule[k] = by_rule.get(k, 0) + n
            self.changes += changed
            self.audits += audits
            self.dropped += dropped

    def facts(self) -> Facts:
        return Facts(sid=self.key, client_rev=self.client_rev, server_rev=self.server_rev, requested_rev=self.requested_rev,
                     pinned=self.pinned_rev, upstream_id=self.upstream_id, client_info=trim_info(self.client_info),
                     server_info=trim_info(self.server_info), client_caps=trim_caps(self.client_caps),
                     server_caps=trim_caps(self.server_caps), bridge=self.bridge, profile=self.profile, issued=int(time.time()),
                     endpoint=self.endpoint)

    @classmethod
    def from_facts(cls, facts: Facts, token: str) -> "Session":
        return cls(key=facts.sid, sealed=True, client_rev=facts.client_rev, server_rev=facts.server_rev, requested_rev=facts.requested_rev,
                   pinned_rev=facts.pinned, client_info=facts.client_info, server_info=facts.server_info,
                   client_caps=facts.client_caps, server_caps=facts.server_caps, upstream_id=facts.upstream_id,
                   token=token, bridge=facts.bridge, profile=facts.profile, endpoint=facts.endpoint)

    def summary(self) -> dict:
        """The session for mcpx.report; ``profile`` and ``audits``/``findings`` only when there are any."""
        out = {
            "session": self.key, "client_revision": self.client_rev, "server_revision": self.server_rev,
            "requested_revision": self.requested_rev, "pinned": self.pinned_rev,
            "client": self.client_info, "server": self.server_info,
            "messages": self.messages, "changes": self.changes, "dropped": self.dropped,
            "by_rule": [{"rule": r, "action": a, "count": n} for (r, a), n in self._by_rule()],
        }
        if self.profile is not None:
            out["profile"] = self.profile
        if self.audits:
            out["audits"] = self.audits
            out["findings"] = list(self.findings)
        return out

    def _by_rule(self) -> list:
        with self.lock:
            return sorted(self.by_rule.items())

    def learn_tools(self, tools: Any) -> None:
        """Remember the declared outputSchema of each tool of a tools/list result (bounded)."""
        if not isinstance(tools, list):
            return
        for t in tools:
            if isinstance(t, dict) and isinstance(t.get("name"), str):
                if t["name"] not in self.tools and len(self.tools) >= MAX_TOOLS:
                    continue
                self.tools[t["name"]] = t.get("outputSchema")


@dataclass(frozen=True)
class Named:
    """A request that names its revision and belongs to no session (2026-07-28, or a header only)."""

    revision: str
    source: str  # "_meta" | "header"


@dataclass(frozen=True)
class Unknown:
    """A session id that names no session mcpx can open; ``reason`` holds no id bytes."""

    reason: str


Lookup = Session | Named | Unknown | None


class SessionTracker:
    """Finds, starts, learns, seals and ends sessions; bounded in count and age.

    ``sealer``: the :class:`~mcpx_core.seal.Sealer` of ``mcpx_session_keys`` (None: sessions are
    not sealed and live in memory only, keyed by the server's id, as in offline replay).
    Memory: at most ``max_sessions`` sessions (least recently used first out), each found under a
    few keys (its token, its handle, the server's id, fallback keys).
    """

    def __init__(self, max_sessions: int = 10000, ttl: float = 3600.0, sealer: Sealer | None = None):
        self.max_sessions = max_sessions
        self.ttl = ttl
        self.sealer = sealer
        self._lru: OrderedDict[int, Session] = OrderedDict()  # uid -> session, least recently used first
        self._alias: dict[str, Session] = {}  # key -> session
        self.pins: dict[str, str] = {}  # clientInfo.name -> revision
        self.ended: OrderedDict[str, None] = OrderedDict()  # tokens of sessions ended by a DELETE (see terminate)
        #: sessions started by an initialize, and opened again from a token not in memory (metrics.py reads them)
        self.opened = 0
        self.reopened = 0

    def __len__(self) -> int:
        return len(self._lru)

    def __iter__(self):
        """Each session in memory once, least recently used first."""
        return iter(list(self._lru.values()))

    def keys(self) -> dict[str, Session]:
        """Every key in memory -> its session (for tests and probes)."""
        return {k: s for k, s in self._alias.items() if s.uid in self._lru}

    # -- lookup -----------------------------------------------------------------------------
    def lookup(self, session_id: str | None, named: str | None, header_rev: str | None,
               client_keys: tuple[str, ...] = (), live: bool = True, endpoint: str | None = None,
               method: str = "POST") -> Lookup:
        """The session of a client request (see the module docstring for the order).

        ``named``: the revision the request's ``_meta`` names; ``header_rev``: its
        ``MCP-Protocol-Version``; ``client_keys``: fallback keys (connection, host); ``endpoint``:
        the server's ``scheme://host:port/path`` the request goes to (None: not checked, for tools and
        tests); ``method``: its HTTP method (a ``DELETE`` is never served by the fallback).
        """
        if session_id is not None and self.sealer is not None and session_id.startswith(PREFIX):
            # an mcpx token is judged before anything else the request says: it never goes upstream
            return self._token(session_id, endpoint)
        if named is not None:  # a request that names its revision is never bound to a guessed session
            return Named(named, "_meta") if revisions.is_known(named) else None
        if session_id is not None and not session_id.strip():
            return None  # an empty Mcp-Session-Id: never bound by a guess (connection, host); forwarded untouched
        if session_id in self.ended:
            return Unknown("a session the client ended (DELETE)")
        if session_id:
            s = self.get(session_id)
            if s is not None and live and self.sealer is not None and (s.token is not None or session_id != s.upstream_id):
                # live, a plain id names only an unsealed session, by the server's own id: never a key of
                # mcpx's own (a handle, a flow, a connection or host of the guess), nor a sealed session's
                # server id (its client holds its token)
                s = None
            if s is not None:
                s.echoed = True
                return s
            if live and self.sealer is not None:
                return Unknown("not a session id mcpx issued (or one mcpx no longer knows)")
            if header_rev is None:
                return None
        if header_rev is not None:
            return Named(header_rev, "header") if revisions.is_known(header_rev) else None
        if method == "DELETE":
            return None  # never ends a session found by a guess
        for k in client_keys:
            s = self.get(k)
            if s is not None and s.guessable():
                return s
        return None

    def _token(self, token: str, endpoint: str | None) -> Session | Unknown:
        """The session of an mcpx token: in memory, else opened with the keys; :class:`Unknown` for a
        token that is ended, does not open, or belongs to another server than ``endpoint``."""
        if token in self.ended:
            return Unknown("a session the client ended (DELETE)")
        s = self.get(token)
        if s is None:
            try:
                facts = self.sealer.open(token)  # type: ignore[union-attr]
            except BadToken as e:
                return Unknown(e.reason)
            if facts.bridge == ENDPOINT_ONLY:
                return Unknown("an HTTP+SSE endpoint's token, not a session id")
            if endpoint is not None and facts.endpoint != endpoint_digest(endpoint):
                return Unknown("a session of another server (the token names another origin or path)" if facts.endpoint
                               else "a token that names no server (sealed by an earlier mcpx)")
            s = self.get(facts.sid)
            if s is None or s.token is None:
                s = Session.from_facts(facts, token)
                self._put(facts.sid, s)
                self.reopened += 1
            self._put(token, s)
            self.expire()
        elif endpoint is not None and s.endpoint != endpoint_digest(endpoint):
            return Unknown("a session of another server (the token names another origin or path)")
        s.echoed = True
        return s

    def get(self, key: str) -> Session | None:
        """The session in memory under ``key`` (marked as used), or None."""
        s = self._alias.get(key)
        if s is None:
            return None
        if s.uid not in self._lru:  # the session left memory: a stale key
            del self._alias[key]
            return None
        s.last_seen = time.monotonic()
        self._lru.move_to_end(s.uid)
        return s

    # -- start, learn, end ------------------------------------------------------------------
    def create(self, key: str) -> Session:
        """A bare session under ``key`` (revisions unset), for tools and tests that set up a session by hand."""
        s = Session(key)
        self._put(key, s)
        self.expire()
        return s

    def start(self, params: Any, key: str, client_keys: tuple[str, ...] = (), sealed: bool = False,
              endpoint: str = "") -> Session:
        """A session for an ``initialize`` request with ``params``; found under ``key`` and the
        fallback ``client_keys`` until :meth:`learn`. ``sealed``: it will get a token (its
        handle is then a fresh random ``s-…``); ``endpoint``: the server's ``scheme://host:port/path``
        the initialize goes to (sealed as :func:`endpoint_digest`)."""
        params = params if isinstance(params, dict) else {}
        s = Session("s-" + os.urandom(8).hex() if sealed else key, sealed=sealed,
                    endpoint=endpoint_digest(endpoint) if endpoint else "")
        s.requested_rev = params.get("protocolVersion") if isinstance(params.get("protocolVersion"), str) else None
        s.client_info = params.get("clientInfo") if isinstance(params.get("clientInfo"), dict) else None
        s.client_caps = params.get("capabilities") if isinstance(params.get("capabilities"), dict) else None
        pin = self.pins.get((s.client_info or {}).get("name", ""))
        if pin:
            s.pinned_rev = pin
        self.opened += 1
        self._put(key, s)
        self._put(s.key, s)
        for k in client_keys:
            before = self._alias.get(k)
            if before is not None and before is not s:
                s.displaced[k] = before
            self._put(k, s)
        self.expire()
        return s

    def learn(self, s: Session, upstream_id: str | None, seal: bool) -> str | None:
        """The server answered ``initialize`` (revisions and capabilities are on ``s``): key the
        session by the server's id and, when ``seal``, seal it. Returns the token or None (a
        session the server's id makes too long to seal: ``s.unsealed`` says so)."""
        s.upstream_id = upstream_id or None
        if upstream_id:
            before = self._alias.get(upstream_id)
            if before is not None and before is not s:  # held until settled: a refused initialize gives it back
                s.displaced.setdefault(upstream_id, before)
            if not s.sealed and s.key != upstream_id:  # an unsealed session is known by the server's id
                self._unalias(s.key, s)
                s.key = upstream_id
            self._put(upstream_id, s)
        if not (seal and self.sealer is not None and revisions.is_known(s.server_rev)):
            return None
        try:
            s.token = self.sealer.seal(s.facts())
        except TooLarge as e:  # kept in memory under the server's id, which the client then holds
            s.unsealed = f"the server's Mcp-Session-Id ({len(upstream_id or '')} characters) is {e}"
            return None
        self._put(s.token, s)
        return s.token

    def named_session(self, revision: str) -> Session:
        """A session for one request that names its revision (not kept: it has no state)."""
        return Session(f"({revision})", client_rev=revision, server_rev=revision)

    def end(self, s: Session) -> None:
        """Forget ``s`` under every key (an ended session is not found again through its
        client's connection or host)."""
        self._lru.pop(s.uid, None)
        for k in list(s.aliases):
            self._unalias(k, s)

    def terminate(self, s: Session) -> None:
        """The client ended ``s`` (a DELETE mcpx answered itself): :meth:`end` it, and remember its
        token (at most :data:`MAX_ENDED`, in this process only) so that it no longer opens: the
        spec's 404 for an ended session."""
        self.end(s)
        if s.token is not None:
            self.ended[s.token] = None
            while len(self.ended) > MAX_ENDED:
                self.ended.popitem(last=False)

    def abandon(self, s: Session, upstream_id: str | None = None) -> None:
        """The server did not accept the ``initialize`` that started ``s`` (an HTTP error, a JSON-RPC
        error, an answer mcpx could not read: no server revision learnt): forget ``s`` under every key,
        so the client's connection and host are bound to no session it started (to the one they found
        before, if any: below) and its next initialize starts afresh.
        ``upstream_id``: the server's own ``Mcp-Session-Id`` on that answer, which reached the client
        unchanged: ``s`` stays found under it alone (no token, no revisions), so the client's requests
        carrying it go to the server untouched.

        Keys ``s`` took over from another session still in memory (the client's connection and host, bound
        to an earlier session of the same client: :attr:`Session.displaced`), and a server id that is
        that of another session in memory (a server that answers a refused initialize with the id of the
        session it keeps), stay with that session: a refused initialize does not unbind a live one. A key
        another initialize in flight took over from ``s`` meanwhile stays with it, and what that one is to
        give back if it is refused too becomes the session ``s`` took the key from (not ``s``, now gone)."""
        self.end(s)
        for k, before in s.displaced.items():
            taker = self._holder_of(k, s)
            if taker is not None:
                taker.displaced[k] = before
            elif before.uid in self._lru and k not in self._alias:
                self._put(k, before)
        s.displaced.clear()
        if upstream_id:
            s.upstream_id = upstream_id
            other = self._alias.get(upstream_id)
            if other is None or other.uid not in self._lru:
                self._put(upstream_id, s)

    def _holder_of(self, key: str, s: Session) -> Session | None:
        """The session in memory that took ``key`` over from ``s`` (``displaced[key] is s``): the one
        found under ``key``, or one it took ``key`` from in turn (initializes in flight, each taking
        the client's keys from the one before)."""
        x = self._alias.get(key)
        for _ in range(len(self._lru) + 1):  # (a chain, never a cycle: bounded all the same)
            if x is None or x is s:
                return None
            nxt = x.displaced.get(key)
            if nxt is s:
                return x if x.uid in self._lru else None
            x = nxt
        return None

    def settle(self, s: Session, status: int, upstream_id: str | None = None) -> bool:
        """The server answered the ``initialize`` that started ``s`` with HTTP ``status``: accepted when
        the status is 2xx and a server revision was learnt from the answer (``s.server_rev``), then the
        keys ``s`` took are its own (the sessions it displaced are no longer held through it); anything
        else (an HTTP error, a JSON-RPC error, an answer mcpx could not read) is given to :meth:`abandon`,
        with ``upstream_id``, the ``Mcp-Session-Id`` of that answer. Returns whether it was accepted.
        Called once per initialize, whoever sent it (mcpx sealing a session, or the client's own
        forwarded as it is)."""
        if 200 <= status < 300 and s.server_rev is not None:
            s.displaced.clear()
            return True
        self.abandon(s, upstream_id)
        return False

    def drop(self, key: str) -> None:
        s = self._alias.get(key)
        if s is not None:
            self.end(s)

    def _put(self, key: str, s: Session) -> None:
        self._alias[key] = s
        s.aliases.add(key)
        self._lru[s.uid] = s
        self._lru.move_to_end(s.uid)

    def _unalias(self, key: str, s: Session) -> None:
        if self._alias.get(key) is s:
            del self._alias[key]
        s.aliases.discard(key)

    def expire(self, now: float | None = None) -> int:
        """Forget sessions unused for ``ttl`` seconds and the least recently used beyond
        ``max_sessions``. Returns how many left memory."""
        now = time.monotonic() if now is None else now
        n = 0
        while self._lru:
            s = next(iter(self._lru.values()))
            if len(self._lru) > self.max_sessions or now - s.last_seen > self.ttl:
                self.end(s)
                n += 1
            else:
                break
        return n


def endpoint_digest(endpoint: str) -> str:
    """What a token seals of the server a session belongs to: 16 hex digits of the SHA-256 of its
    ``scheme://host:port/path`` (no query; scheme and host lower-cased, no trailing slash), so a token of one
    server's session opens at no other (the token's AEAD protects it; the digest only keeps it short)."""
    scheme, sep, rest = endpoint.partition("://")
    host, slash, path = rest.partition("/")
    # (a trailing slash is the same endpoint: servers redirect /mcp/ to /mcp, and a client that was
    # configured with /mcp/ sends every request there first, its token included)
    norm = f"{scheme.lower()}{sep}{host.lower()}/{path.rstrip('/')}"
    return hashlib.sha256(norm.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def revision_in_meta(message: Any) -> str | None:
    """The revision a 2026-07-28 request names in ``params._meta`` (schema/2026-07-28/schema.ts:76),
    known or not (a string), else None."""
    if isinstance(message, dict):
        params = message.get("params")
        if isinstance(params, dict):
            meta = params.get("_meta")
            if isinstance(meta, dict):
                v = meta.get(META_VERSION)
                if isinstance(v, str):
                    return v
    return None


def revision_in_header(header: str | None) -> str | None:
    """The revision an ``MCP-Protocol-Version`` header names (docs/specification/2025-06-18/basic/transports.mdx:242),
    known or not, else None."""
    return header.strip() if header and header.strip() else None
