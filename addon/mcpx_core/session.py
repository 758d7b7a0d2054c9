"""Session state: who speaks which revision, and which request a response answers.

A :class:`Session` has two legs (REVISIONS.md 0 and 2): ``client_rev`` (the revision the client
receives) and ``server_rev`` (the revision the server speaks). Both are learnt from the
``initialize`` request and result (schema/2025-11-25/schema.ts:259, 283), kept under the
``Mcp-Session-Id`` the server mints (docs/specification/2025-03-26/basic/transports.mdx:194), and
for stateless servers (no session id) under a per-client key. A 2026-07-28 request names its
revision in ``params._meta["io.modelcontextprotocol/protocolVersion"]`` (schema/2026-07-28/schema.ts:76);
a 2025-06-18+ request also sends ``MCP-Protocol-Version``.

Each session remembers, per direction, the method of every outstanding request id so that a result
is typed by the request it answers; the map is bounded (oldest ids forgotten first).
The store is bounded too: at most ``max_sessions`` sessions, each forgotten ``ttl`` seconds after
it was last used (a million flows do not grow memory without bound).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from . import revisions

META_VERSION = "io.modelcontextprotocol/protocolVersion"
#: outstanding request ids remembered per session (oldest forgotten first): a session whose answers
#: never come costs at most this many entries (~150 bytes each)
MAX_PENDING = 1024


@dataclass
class Session:
    """State of one MCP session. Revisions are strings from :data:`revisions.REVISIONS` or None."""

    key: str
    client_rev: str | None = None
    server_rev: str | None = None
    requested_rev: str | None = None
    pinned_rev: str | None = None
    client_info: dict | None = None
    server_info: dict | None = None
    client_caps: dict | None = None
    server_caps: dict | None = None
    #: (direction of the request, id) -> method; direction "c2s" = client request
    pending: OrderedDict = field(default_factory=OrderedDict)
    messages: int = 0
    changes: int = 0
    dropped: int = 0
    #: (rule, action) -> count of change records, for reports
    by_rule: dict = field(default_factory=dict)
    last_seen: float = field(default_factory=time.monotonic)

    def remember(self, direction: str, req_id: Any, method: str) -> None:
        if isinstance(req_id, (str, int)) and not isinstance(req_id, bool):
            self.pending[(direction, req_id)] = method
            if len(self.pending) > MAX_PENDING:
                self.pending.popitem(last=False)

    def answer(self, request_direction: str, req_id: Any) -> str | None:
        """The method of the request ``req_id`` sent in ``request_direction``, forgetting it."""
        if isinstance(req_id, (str, int)) and not isinstance(req_id, bool):
            return self.pending.pop((request_direction, req_id), None)
        return None

    def summary(self) -> dict:
        return {
            "session": self.key, "client_revision": self.client_rev, "server_revision": self.server_rev,
            "requested_revision": self.requested_rev, "pinned": self.pinned_rev,
            "client": self.client_info, "server": self.server_info,
            "messages": self.messages, "changes": self.changes, "dropped": self.dropped,
            "by_rule": [{"rule": r, "action": a, "count": n} for (r, a), n in sorted(self.by_rule.items())],
        }


class SessionStore:
    """Sessions keyed by ``Mcp-Session-Id`` (or a fallback key), bounded in count and age."""

    def __init__(self, max_sessions: int = 10000, ttl: float = 3600.0):
        self.max_sessions = max_sessions
        self.ttl = ttl
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self.pins: dict[str, str] = {}  # clientInfo.name -> revision

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self):
        """Each session once (a session may be reachable under several keys)."""
        seen: dict[int, Session] = {}
        for sess in self._sessions.values():
            seen.setdefault(id(sess), sess)
        return iter(list(seen.values()))

    def get(self, key: str) -> Session | None:
        s = self._sessions.get(key)
        if s is not None:
            s.last_seen = time.monotonic()
            self._sessions.move_to_end(key)
        return s

    def create(self, key: str) -> Session:
        s = Session(key)
        self._sessions[key] = s
        self._sessions.move_to_end(key)
        self.expire()
        return s

    def alias(self, key: str, session: Session) -> None:
        """Make ``session`` reachable under ``key`` too (e.g. once the server mints its id)."""
        old = session.key
        session.key = key
        self._sessions[key] = session
        if old != key and self._sessions.get(old) is session:
            del self._sessions[old]

    def bind(self, key: str, session: Session) -> None:
        """Make ``session`` reachable under a further ``key`` (keeping its own)."""
        self._sessions[key] = session

    def drop(self, key: str) -> None:
        """Forget the session under ``key`` and under every further key bound to it (an ended
        session must not be found again through its client's connection or host)."""
        s = self._sessions.pop(key, None)
        if s is not None:
            for k in [k for k, v in self._sessions.items() if v is s]:
                del self._sessions[k]

    def expire(self, now: float | None = None) -> int:
        """Forget sessions unused for ``ttl`` seconds and the oldest beyond ``max_sessions``."""
        now = time.monotonic() if now is None else now
        n = 0
        while self._sessions:
            key, s = next(iter(self._sessions.items()))
            if len(self._sessions) > self.max_sessions or now - s.last_seen > self.ttl:
                del self._sessions[key]
                n += 1
            else:
                break
        return n


def revision_of_request(message: Any, header: str | None) -> str | None:
    """The revision a single client request or notification names, if any.

    2026-07-28: ``params._meta[io.modelcontextprotocol/protocolVersion]``; else the
    ``MCP-Protocol-Version`` header (docs/specification/2025-06-18/basic/transports.mdx:242).
    """
    if isinstance(message, dict):
        params = message.get("params")
        if isinstance(params, dict):
            meta = params.get("_meta")
            if isinstance(meta, dict):
                v = meta.get(META_VERSION)
                if revisions.is_known(v):
                    return v
    if header and revisions.is_known(header.strip()):
        return header.strip()
    return None
