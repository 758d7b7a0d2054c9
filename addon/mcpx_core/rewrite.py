"""One HTTP exchange, message by message: framing -> session -> downgrade -> repair -> change records.

:class:`Rewriter` is what the mitmproxy addon calls; it knows HTTP only as header values and body
bytes, so tests drive it with plain bytes. For each body it

1. frames it (:mod:`framing.json_body`, :mod:`framing.sse`),
2. looks up and updates the session (:mod:`session`): initialize handshake, request id -> method,
3. downgrades each JSON-RPC message from the sender's to the receiver's revision (:mod:`downgrade`),
   then repairs what the receiver's schema rejects and can mean one thing only (:mod:`repair`;
   ``Rewriter.repair``, option ``mcpx_repair``),
4. returns the bytes to deliver (None: forward the original bytes untouched) and the change records.

Never loses a message: a body or event that cannot be parsed, or whose rewrite raises, is forwarded
byte for byte and one ``passthrough`` record says why.
"""

from __future__ import annotations

import gc
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import orjson

from collections.abc import Mapping

from . import audit, flowlist, profiles, revisions
from . import repair as repair_stage
from .changes import Change
from .references import References
from .bridge.era import EraCache
from .disposition import AnswerLocally, Bridge, Disposition, Forward, MintSession, NeedEra, SplitBatch
from .downgrade import Outcome, classify, downgrade, split_path
from .framing import json_body
from .framing.encoding import DecodeFailed
from .framing.sse import Event, SSEParser
from .rules import ids
from .rules.headers import request_headers
from .seal import PREFIX as TOKEN_PREFIX
from .session import (SESSION_HEADER, VERSION_HEADER, Named, Session, SessionTracker, Unknown, revision_in_header,
                      revision_in_meta)

PRIMING_RULE = "TR-sse-priming-polling"
#: the rule of a host profile's revision (profiles.Profile.revision), told in the initialize result
PROFILE_REVISION_RULE = "MCPX-profile-revision"
#: the record of a host profile choice: which applies, on what evidence, and which matched without applying
PROFILE_RULE = "MCPX-profile"
BATCH_RESPONSE_RULE = "RPC-batch-response"
BATCH_REQUEST_RULE = "RPC-batch-request"
logger = logging.getLogger("mcpx")
#: the record of an initialize result whose revision mcpx told the client as it asked (REVISIONS.md 2.4)
VERSION_BRIDGE_RULE = "MCPX-version-bridge"
#: bodies (or SSE event data) of at least this many bytes that answer a list request (tools/list...)
#: are read an element at a time (json_body.split_array): memory for one element's objects, not the list's
SPLIT_MIN = 16 << 20
#: at most this many message entries and change records are kept per flow (``Exchange.messages``,
#: ``Exchange.changes``), so a long SSE stream does not grow memory; the rest are counted
#: bodies and SSE events of at least this many bytes are rewritten with Python's cyclic garbage
#: collector paused (``gc.disable`` until the rewrite returns; issue 16). Their rewrite allocates
#: hundreds of thousands of containers, which set off collections of older generations, whose
#: cost grows with everything mitmproxy holds. What it leaves behind is collected by the next collection.
#: Measured (1 MB rewrite-heavy result, a heap of 1,000,000 other objects): 35.1 -> 24.7 ms mean.
GC_PAUSE_MIN = 256 << 10
FLOW_KEEP_MAX = 1000


@dataclass
class Exchange:
    """What mcpx knows about one HTTP request/response pair (one mitmproxy flow).

    ``request_ids``: id -> method of every JSON-RPC request in the request body; ``initialize``:
    the initialize request it carries; ``replies``: JSON-RPC messages mcpx would send to the server
    itself (answers on the client's behalf), kept when it cannot send them (offline replay);
    ``late_answers``: errors for batch members mcpx answered itself, appended to the batch's
    answer; ``changes``: every record so far.
    """

    flow_id: str | None = None
    #: the server's origin (scheme://host:port): era verdicts are kept per origin
    origin: str = ""
    #: the server's origin and path (``scheme://host:port/path``, no query): servers seen priming an
    #: SSE stream are kept by it (mcpx_sse_resume=auto, :mod:`mcpx_core.bridge.resume`)
    endpoint: str = ""
    session: Session | None = None
    #: fallback session keys for clients that echo no session id: the client's connection, then its host
    client_keys: tuple[str, ...] = ()
    #: the messages of the client's request body as the flow list names them (:func:`mcpx_core.flowlist.carried`)
    carries: str = ""
    #: the keyed digest of the request's credentials (:func:`mcpx_core.identity.credentials_key`; "" none):
    #: what mcpx keeps on a client's behalf is keyed by it
    credentials: str = ""
    #: the server's origin and the request's whole path, query included (``scheme://host:port/path?query``):
    #: tenants told apart by path, and credentials in the query, scope what mcpx keeps too
    target: str = ""
    is_mcp: bool = False
    request_ids: dict = field(default_factory=dict)
    #: the ids of ``request_ids`` the server answered so far (a result or an error)
    answered_ids: set = field(default_factory=set)
    single_request_id: Any = None
    initialize: dict | None = None
    replies: list[dict] = field(default_factory=list)
    late_answers: list[dict] = field(default_factory=list)
    #: mcpx wrote this flow's response itself (it is already for the client's revision)
    answered: bool = False
    #: ... as a stream it writes over time (bridge/stream.py): mitmproxy must stream it through
    streamed: bool = False
    #: that stream (:class:`mcpx_core.bridge.stream.AnswerStream`): what it delivered is the flow's body
    answer_stream: Any = None
    #: mcpx sent this request's content to the server itself (an action of addons/actions.py): whatever
    #: goes wrong after, mitmproxy must never forward the request as well
    upstream_sent: bool = False
    #: why mcpx answered this flow itself (a bridge), shown in the views and the flow's comment
    answered_by: str | None = None
    #: mcpx relays this flow's request and answer itself (:mod:`mcpx_core.bridge.resume`): what it
    #: resumes, shown in the views and the flow's comment; its answer is rewritten as any other
    relayed: str | None = None
    #: the disposition decided from the headers alone (a request body mitmproxy streams, or may)
    early: Disposition | None = None
    #: records held back (:meth:`Rewriter.flush`): those of a disposition decided from the headers of a
    #: body mitmproxy may or may not stream, logged only once it did (else the body decides, as for any request)
    deferred: list | None = None
    #: what puts such a request back as the client sent it (its headers, its route to the server)
    undo: Callable[[], None] | None = None
    #: request ids mcpx gave the server (RPC-request-id-reuse) -> the client's own, put back on the answer
    id_map: dict = field(default_factory=dict)
    #: the record of a pinned initialize result, logged with that message's other changes
    pin_change: Change | None = None
    #: id -> tool name of the tools/call requests in the request body (named in audit records)
    tool_calls: dict = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)  # per message: kind, method, id, direction, change count
    #: messages and records beyond :data:`FLOW_KEEP_MAX` (not kept on the flow; every record is still logged)
    messages_omitted: int = 0
    changes_omitted: int = 0

    @property
    def client_scope(self) -> tuple[str, str]:
        """What mcpx keeps on a client's behalf is kept for exactly this: the URL the client asked for
        (:attr:`target`, else the origin) and its credentials."""
        return self.target or self.origin, self.credentials

    @property
    def revisions(self) -> tuple[str | None, str | None]:
        s = self.session
        if s is None:
            return None, None
        return s.server_rev, s.client_leg


#: JSON-RPC error body of the 404 for a session id mcpx cannot open (the answer of the TypeScript
#: SDK's server for an unknown session; docs/specification/2025-03-26/basic/transports.mdx:200)
UNKNOWN_SESSION = {"code": -32001, "message": "Session not found"}


class Rewriter:
    """Rewrites bodies for a :class:`SessionTracker`; ``policy`` is "strict" or "lenient".

    ``profiles``: the host profiles in force (:class:`~mcpx_core.profiles.ProfileSet`; none by
    default); ``audit``: run the dual-result audit on tool results (:mod:`mcpx_core.audit`);
    ``repair``: run the repair stage after the downgrade (:mod:`mcpx_core.repair`)."""

    def __init__(self, tracker: SessionTracker | None = None, policy: str = "strict", options: dict | None = None,
                 on_changes: Callable[[Exchange, list[Change]], None] | None = None,
                 on_reply: Callable[[Exchange, dict], None] | None = None,
                 profile_set: profiles.ProfileSet | None = None, audit_results: bool = True,
                 repair: bool = True):
        self.on_reply = on_reply
        self.repair = repair
        self.tracker = tracker if tracker is not None else SessionTracker()  # an empty tracker is falsy (__len__)
        #: which era each upstream speaks (bridge/era.py); ``bridging``: bridge peers of different
        #: revisions and eras (mcpx_bridge); off: only downgrade where both legs agree
        self.era = EraCache()
        self.bridging = True
        #: names of the bridges that answer every client POST body themselves and record what they did
        #: with it (a body that does not parse, or holds no JSON-RPC message, included; their class says
        #: ``records_every_body``): the records :meth:`request` holds for such a body are not logged for
        #: their sessions (it never reaches the server as it is)
        self.self_recording: frozenset[str] = frozenset()
        self.policy = policy
        self.options = options or {}
        self.on_changes = on_changes
        self.profiles = profile_set if profile_set is not None else profiles.NONE
        #: what each side of a session sent: progress tokens, request ids (references.py)
        self.references = References()
        #: judge notifications by what their receiver sent (mcpx_check_references; off by default)
        self.check_references = False
        self.audit = audit_results
        #: called with the exchange of an SSE stream that carries a priming event (an ``id`` and
        #: empty data, 2025-11-25 basic/transports.mdx:107): its server uses SSE polling
        self.on_priming: Callable[[Exchange], None] | None = None
        #: whether every record is read (``on_changes`` writes a log, say): when False, only the records the
        #: flow keeps (:data:`FLOW_KEEP_MAX`) get their before/after summaries; the others are only counted
        self.summarize_all = True
        #: whether a JSON-RPC id is that of a server->client request a bridge holds for a session (mcpx
        #: minted it): a POST without a session token that answers one is answered 400, reaching nobody
        self.held_id: Callable[[Any], bool] = lambda _id: False

    # -- records ----------------------------------------------------------------------------
    def _emit(self, exch: Exchange, changes: list[Change], direction: str, msg: Any, method: str | None,
              from_rev: str | None, to_rev: str | None, stamped: bool = False) -> None:
        """Deliver records: stamped with their context (unless ``stamped``: built with it, see
        :meth:`_one`), kept on the flow (up to :data:`FLOW_KEEP_MAX`), counted, handed to ``on_changes``."""
        if not changes:
            return
        if exch.deferred is not None:
            exch.deferred.append((changes, direction, msg, method, from_rev, to_rev, stamped))
            return
        s = exch.session
        if not stamped:
            jid = _record_id(msg)
            key = s.key if s else None
            changes = [c.stamped(_now(), exch.flow_id, key, direction, jid, method, from_rev, to_rev) for c in changes]
        room = FLOW_KEEP_MAX - len(exch.changes)
        if room >= len(changes):
            exch.changes.extend(changes)
        else:
            exch.changes.extend(changes[:max(room, 0)])
            exch.changes_omitted += len(changes) - max(room, 0)
        if s is not None:
            audits = 0
            changed = 0
            by_rule = s.by_rule
            dropped = 0
            for c in changes:
                action = c.action
                if action == "audit":  # a finding, not a change (a profile choice is neither)
                    audits += c.rule != PROFILE_RULE
                    continue
                changed += 1
                if action == "drop" or action == "drop-message":
                    dropped += 1
                k = (c.rule, action)
                by_rule[k] = by_rule.get(k, 0) + 1
            s.changes += changed
            s.audits += audits
            s.dropped += dropped
        if self.on_changes:
            self.on_changes(exch, changes)

    def _say(self, exch: Exchange, held: list[str]) -> None:
        """The passthrough records of a client body held back until its session was known (``held``: why)."""
        for reason in held:
            self.passthrough(exch, "c2s", reason)

    def flush(self, exch: Exchange) -> None:
        """Log the records held back on ``exch`` (:attr:`Exchange.deferred`), and hold back no more."""
        held, exch.deferred = exch.deferred, None
        for args in held or ():
            self._emit(exch, *args)

    def record(self, exch: Exchange, changes: list[Change], direction: str, from_rev: str | None, to_rev: str | None,
               msg: Any = None, method: str | None = None) -> None:
        """Log records made outside a message (e.g. header rules); ``msg`` (its ``id``) and
        ``method``: the message they concern, if any."""
        self._emit(exch, changes, direction, msg, method, from_rev, to_rev)

    def passthrough(self, exch: Exchange, direction: str, reason: str, pointer: str = "") -> None:
        if exch.session is not None:  # a body mcpx did not read: what its sender sent is no longer all known
            self.references.incomplete(exch.session.uid)
        from_rev, to_rev = exch.revisions if direction == "s2c" else exch.revisions[::-1]
        self._emit(exch, [Change(pointer=pointer, action="passthrough", rule=ids.PASSTHROUGH, detail=reason)],
                   direction, None, None, from_rev, to_rev)

    def _parse(self, exch: Exchange, body: bytes | None, direction: str, looks_mcp: bool,
               held: list[str] | None = None) -> json_body.Parsed | None:
        """Frame a JSON body; None when it cannot be, with a passthrough record when the body
        ``looks_mcp`` (the exchange is then MCP traffic); ``held``: the record's reason goes there
        instead, to be logged once the session is known (:meth:`_say`)."""
        if not body:
            return None
        try:
            return json_body.parse(body)
        except json_body.Unparseable as e:
            if looks_mcp:
                exch.is_mcp = True
                if held is not None:
                    held.append(e.reason)
                else:
                    self.passthrough(exch, direction, e.reason)
            return None

    # -- requests (client -> server) --------------------------------------------------------
    def request(self, exch: Exchange, method: str, body: bytes | None, headers: Mapping[str, str], live: bool = False,
                all_headers: Mapping[str, str] | None = None) -> Disposition:
        """What to do with one client request (HTTP ``method``, ``body``, ``headers`` as the client
        sent them: names as sent, repeated fields joined). ``live``: the flow is live (not an
        offline replay): sessions are sealed, and mcpx may send requests itself. ``all_headers``:
        every request header (a case-insensitive mapping), read only by host profiles that match
        on a header (:attr:`profiles.ProfileSet.header_names`) of an initialize request."""
        lower = {k.lower(): v for k, v in headers.items()}
        session_id, version_header = lower.get(SESSION_HEADER), lower.get(VERSION_HEADER)
        if session_id or version_header:
            exch.is_mcp = True
        # a POST that says it is JSON is taken for a JSON-RPC message: if it does not parse, it is
        # recorded (passthrough); any other body that does not parse is not MCP traffic
        looks_mcp = exch.is_mcp or declares_json(lower.get("content-type"))
        # the records of a body that does not parse, or holds no JSON-RPC message, are logged once the
        # session is known (the request's session id names it, whatever its body holds): ``held``, :meth:`_say`
        held: list[str] = []
        parsed = self._parse(exch, body, "c2s", looks_mcp, held) if method == "POST" else None
        messages = parsed.messages if parsed is not None else []
        jsonrpc = [m for m in messages if classify(m)]
        if parsed is not None and not jsonrpc and exch.is_mcp:
            # ({}, [], "jsonrpc": "1.0"): not a message, nor a batch, whatever its shape
            held.append("body holds no JSON-RPC 2.0 message")
        if jsonrpc:
            exch.is_mcp = True
            exch.carries = flowlist.carried(jsonrpc, parsed.batch)  # (parsed: jsonrpc comes from its messages)
        if live and jsonrpc and not (session_id and session_id.startswith(TOKEN_PREFIX)) and self._answers_held(jsonrpc):
            # an answer to a server request a bridge holds for a session, without any token (a revision
            # header, a _meta revision, an initialize beside it change nothing): not that session's client
            return self._unrequested(exch, jsonrpc)
        init = next((m for m in jsonrpc if classify(m) == "request" and m.get("method") == "initialize"), None)
        if init is not None and not (live and self.tracker.sealer is not None and session_id and session_id.strip()):
            return self._initialize(exch, init, parsed, session_id, live, all_headers if all_headers is not None else headers)
        # (an initialize with a session id, live: one more request of that session, never a new one; the
        # server gets its own id, never mcpx's token, and answers as it would directly)
        named = next((r for r in map(revision_in_meta, jsonrpc) if r), None)
        found = self.tracker.lookup(session_id, named, revision_in_header(version_header), exch.client_keys, live,
                                    endpoint=exch.endpoint or None, method=method)
        match found:
            case Unknown(reason=reason):
                exch.is_mcp = True  # (answered 404, nothing forwarded: no passthrough record of its body)
                return self._unknown_session(exch, reason, jsonrpc, parsed)
            case Named(revision=rev):
                if rev == revisions.LATEST and self.bridging and exch.origin:
                    verdict = self.era.get(exch.origin)
                    if verdict.speaks_2026 is None and live:
                        # (offline replay: nothing to ask; the request goes as recorded). The request is
                        # decided again, on a new exchange, once the era is known: nothing is logged now
                        return NeedEra(exch.origin)
                    if verdict.speaks_2026 is False:
                        self._say(exch, held)
                        return Bridge("client2026")  # a 2026-07-28 client in front of a legacy server
                exch.session = self.tracker.named_session(rev)
            case Session():
                exch.session = found
                if found.bridge and self.bridging:
                    if found.bridge not in self.self_recording:
                        self._say(exch, held)
                    return Bridge(found.bridge)
            case None:
                exch.session = None
        self._say(exch, held)
        s = exch.session
        sets, removes = self._request_headers(exch, headers)
        if method == "DELETE" and s is not None and s.token is not None and session_id:
            if s.upstream_id is None:  # the server keeps no session: mcpx ends it itself
                self.tracker.terminate(s)
                self._emit(exch, [Change(pointer="", action="answer-locally", rule="TR-session-delete",
                                         detail="session ended by mcpx: the server keeps no session")],
                           "c2s", None, None, s.client_leg, s.server_rev)
                return AnswerLocally(204, b"", ())
        if parsed is None or not jsonrpc:
            return Forward(None, sets, removes)
        return self._messages(exch, parsed, jsonrpc, body, sets, removes)

    def _initialize(self, exch: Exchange, init: dict, parsed: json_body.Parsed, session_id: str | None,
                    live: bool, headers: Mapping[str, str] | None = None) -> Disposition:
        """A session starts: mcpx forwards the initialize itself when it seals sessions (live). Its
        host profile is chosen now, from the request (clientInfo, declared revision, capabilities,
        headers), and sealed with the session."""
        exch.initialize = init
        sealed = live and self.tracker.sealer is not None
        key = session_id if (session_id and not sealed) else f"flow:{exch.flow_id}"
        exch.session = s = self.tracker.start(init.get("params"), key, exch.client_keys, sealed=sealed, endpoint=exch.endpoint)
        params = init.get("params") if isinstance(init.get("params"), dict) else {}
        choice = self.profiles.decide(params.get("clientInfo"), params.get("protocolVersion"), params.get("capabilities"), headers)
        s.profile = choice.profile.name if choice.profile is not None else None
        self.references.start(s.uid)  # every later message of this session is seen here (references.py)
        if choice.detail is not None:  # which profile applies on what evidence (profiles.ProfileSet.decide)
            self._emit(exch, [Change(pointer="/params/clientInfo", action="audit", rule=PROFILE_RULE, detail=choice.detail,
                                     profile=s.profile)], "c2s", init, "initialize", None, None)
        for m in parsed.messages:
            if classify(m) == "request":
                if _hashable(m["id"]):  # an id JSON-RPC allows (true would match the answer with id 1)
                    exch.request_ids[m["id"]] = m.get("method")
                s.remember("c2s", m["id"], m.get("method"))
                self.references.sent(s.uid, "c2s", m)
            s.messages += 1
        if not parsed.batch:
            exch.single_request_id = init.get("id")
        return MintSession() if sealed and not parsed.batch else Forward()

    def _unknown_session(self, exch: Exchange, reason: str, jsonrpc: list, parsed: json_body.Parsed | None) -> Disposition:
        """TR-session-id: a session id mcpx cannot open is never forwarded under a guess; the
        client gets the 404 a server gives an unknown session, and re-initializes."""
        rid = jsonrpc[0].get("id") if parsed is not None and not parsed.batch and jsonrpc and classify(jsonrpc[0]) == "request" else None
        self._emit(exch, [Change(pointer="header:Mcp-Session-Id", action="answer-locally", rule="TR-session-id",
                                 detail=f"unknown session ({reason}): answered 404, nothing forwarded")],
                   "c2s", jsonrpc[0] if len(jsonrpc) == 1 else None, None, None, None)
        if rid is not None and json_body.inexact_number(rid):
            rid = None
        return AnswerLocally(404, json_body.dumps({"jsonrpc": "2.0", "id": rid, "error": UNKNOWN_SESSION}))

    def unbridgeable(self, exch: Exchange) -> AnswerLocally:
        """A request of a bridged session whose body mitmproxy streams (above ``mcpx_max_body``): a bridge
        reads every body whole, and nothing may go to the server past it, so mcpx answers it: HTTP 413
        with a JSON-RPC error, and a record."""
        s = exch.session
        self._emit(exch, [Change(pointer="", action="answer-locally", rule="MCPX-body-limit",
                                 detail="a body larger than mcpx_max_body in a bridged session: answered 413, nothing forwarded")],
                   "c2s", None, None, s.client_leg if s else None, s.server_rev if s else None)
        return AnswerLocally(413, json_body.dumps({"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "Request body too large for mcpx to bridge (above mcpx_max_body)"}}))

    def _answers_held(self, jsonrpc: list) -> bool:
        """Whether a body holds an answer (a result or an error) to a server->client request a bridge
        holds for some session (:attr:`held_id`)."""
        return any(classify(m) in ("result", "error") and _hashable(m.get("id")) and self.held_id(m.get("id")) for m in jsonrpc)

    def _unrequested(self, exch: Exchange, jsonrpc: list) -> Disposition:
        """A POST with no session token answers a server->client request mcpx holds for a session:
        it is not that session's client (whose requests carry its token), so the answer reaches
        nobody. The client gets what a server gives input it cannot accept (HTTP 400 with a JSON-RPC
        error without an id, docs/specification/2025-03-26/basic/transports.mdx:94-99), with a record."""
        exch.is_mcp = True
        self._emit(exch, [Change(pointer="header:Mcp-Session-Id", action="drop-message", rule="TR-session-id",
                                 detail="an answer to a server request of a session, sent without that session's id: "
                                        "delivered to nobody, answered 400")],
                   "c2s", jsonrpc[0] if len(jsonrpc) == 1 else None, None, None, None)
        return AnswerLocally(400, json_body.dumps({"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "Invalid Request: no request of this session has that id (a response needs its session's Mcp-Session-Id)"}}))

    def _request_headers(self, exch: Exchange, headers: Mapping[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
        """Header edits toward the server: the session id the server knows (TR-session-id) and the
        revision headers (rules/headers.py), with their records."""
        s = exch.session
        if s is None:
            return {}, ()
        sets, removes, changes = request_headers(headers, s.client_leg, s.server_rev)
        if changes:
            self.record(exch, changes, "c2s", s.client_leg, s.server_rev)
        name = next((k for k in headers if k.lower() == SESSION_HEADER), None)
        if s.token is not None and name is not None:
            if s.upstream_id:
                sets[name] = s.upstream_id
            else:
                removes.append(name)
        elif s.bridge and s.upstream_id and s.token is None:  # a bridge's own upstream session (no client token)
            sets[name or "Mcp-Session-Id"] = s.upstream_id
        return sets, tuple(removes)

    def _messages(self, exch: Exchange, parsed: json_body.Parsed, jsonrpc: list, body: bytes,
                  sets: dict[str, str], removes: tuple[str, ...]) -> Disposition:
        """Downgrade the JSON-RPC messages of one client POST body for the server's revision."""
        s = exch.session
        for m in parsed.messages:
            if classify(m) == "request":
                if _hashable(m["id"]):
                    exch.request_ids[m["id"]] = m.get("method")
                if _hashable(m["id"]) and m.get("method") == "tools/call" and isinstance(m.get("params"), dict) and isinstance(m["params"].get("name"), str):
                    exch.tool_calls[m["id"]] = m["params"]["name"]
                if s is not None:
                    s.remember("c2s", m["id"], m.get("method"))
                    self.references.sent(s.uid, "c2s", m)  # (every member, also of a batch mcpx splits)
            if s is not None:
                s.messages += 1
        if not parsed.batch and classify(parsed.messages[0]) == "request":
            exch.single_request_id = parsed.messages[0].get("id")
        server_rev = s.server_rev if s else None
        client_rev = s.client_leg if s else None
        if parsed.batch and server_rev != "2025-03-26":
            members = [self._write(exch, "c2s", m, body, "batch member: ") for m in parsed.messages]
            if None in members:
                return Forward(None, sets, removes)
            self._emit(exch, [Change(pointer="", action="split", rule=BATCH_REQUEST_RULE,
                                     before=f"batch of {len(parsed.messages)} messages",
                                     after=f"{len(parsed.messages)} single POSTs", detail="JSON-RPC batch split: the server revision has no batches")],
                       "c2s", None, None, client_rev, server_rev)
            return SplitBatch(tuple(members), sets, removes)  # type: ignore[arg-type]
        if not (server_rev and client_rev):
            return Forward(None, sets, removes)
        changed = False
        out, local = [], []
        for m in parsed.messages:
            res = self._one(exch, m, "c2s", client_rev, server_rev, source=body)
            if res is None:
                out.append(m)
                continue
            changed = True
            if res.message is not None:
                out.append(res.message)
            elif res.reply is not None and classify(m) == "request":
                local.append({"jsonrpc": "2.0", "id": m.get("id"), "error": res.reply})
        if not changed:
            return Forward(None, sets, removes)
        if not out:
            # nothing left for the server: mcpx answers the client itself (answer-locally / reject)
            if local:
                return AnswerLocally(200, json_body.dumps(local if parsed.batch else local[0]))
            return AnswerLocally(202, b"", ())
        new = self._write(exch, "c2s", out if parsed.batch else out[0], body)
        if new is None:
            return Forward(None, sets, removes)
        if local:
            exch.late_answers = local  # errors for dropped members of a batch, appended to the batch answer
        return Forward(new, sets, removes)

    # -- one message ------------------------------------------------------------------------
    def _one(self, exch: Exchange, msg: Any, direction: str, from_rev: str | None, to_rev: str | None,
             split: json_body.ArraySplit | None = None, source: bytes | None = None) -> Outcome | None:
        """Downgrade one message, then repair it (:mod:`mcpx_core.repair`). None: deliver it
        untouched (no change).

        ``split``: ``msg`` is the skeleton of a large body read an element at a time; when that
        fails, ``msg`` becomes the whole parsed body (same object) and is walked again.
        ``source``: the bytes ``msg`` was parsed from (with other messages of a batch), for the
        repair stage's cheap test (None: the message is always validated).

        A result is typed by the request it answers: a server's result by the client request of
        this exchange (or of the session), a client's result by the server request the session
        saw (``Session.remember("s2c", ...)``); by its shape when mcpx saw no such request.
        """
        kind = classify(msg)
        if kind is None:
            return None
        s = exch.session
        method = msg.get("method") if kind in ("request", "notification") else None
        jid = msg.get("id")
        if kind in ("result", "error"):
            asked_by = "c2s" if direction == "s2c" else "s2c"
            known = _hashable(jid)  # another id (true, an object) answers no request
            method = (exch.request_ids.get(jid) if direction == "s2c" and known else None) or (s.answer(asked_by, jid) if s and known else None)
            if direction == "s2c" and known and jid in exch.request_ids:
                exch.answered_ids.add(jid)
                if s is not None:
                    s.answer("c2s", jid)
            if direction == "s2c" and exch.id_map and isinstance(jid, str) and jid in exch.id_map:
                # RPC-request-id-reuse: the server answered the id mcpx gave it; the client gets its own back
                msg["id"] = exch.id_map[jid]
                self._emit(exch, [Change(pointer="/id", action="rewrite", rule="RPC-request-id-reuse", before=f'"{jid}"',
                                         after=json_body.dumps(msg["id"]).decode(), detail="the id mcpx gave the server, mapped back")],
                           direction, msg, method, from_rev, to_rev)
                jid = msg["id"]
        elif kind == "request" and direction == "s2c" and s is not None:
            s.remember("s2c", jid, method)
        if s is not None and kind == "request" and direction == "s2c":  # (client requests: _messages)
            self.references.sent(s.uid, direction, msg)
        if direction == "s2c" and s is not None:
            s.messages += 1
            if method == "initialize" and kind == "result" and exch.initialize is not None:  # (not a repeat in a session)
                from_rev, to_rev = self._learn_initialize(exch, msg)
        entry = {"direction": direction, "kind": kind, "method": method, "id": json_body.plain_id(jid)}
        if len(exch.messages) < FLOW_KEEP_MAX:
            exch.messages.append(entry)
        else:
            exch.messages_omitted += 1
        if not (revisions.is_known(from_rev) and revisions.is_known(to_rev)):
            return None
        if self.check_references and kind == "notification" and s is not None and not s.bridge and direction == "s2c" \
                and exch.request_ids:
            # a progress token or request id the client never sent, on the answer to its request (references.py)
            unknown = self.references.judge(s.uid, direction, method, msg, self.policy == "strict")
            if unknown is not None:
                self._emit(exch, [unknown], direction, msg, method, from_rev, to_rev)
                if unknown.action == "drop-message":
                    entry["changes"] = 1
                    return Outcome(None, [unknown])
        profile = self.profiles.get(s.profile) if s is not None and s.profile is not None and direction == "s2c" else None
        found: list[Change] = []
        if direction == "s2c" and kind == "result" and method in ("tools/call", "tools/list") and s is not None:
            found = self._tool_result(exch, s, msg, method, profile)
        # records beyond what the flow keeps reach nobody unless every record is read: no summaries for them
        summaries = None if self.summarize_all else max(FLOW_KEEP_MAX - len(exch.changes) - (exch.pin_change is not None), 0)
        # the records' context: the walk builds each record once, as it is delivered
        stamp = (exch.flow_id, s.key if s else None, direction, _record_id(msg), method, from_rev, to_rev)
        try:
            try:
                out = downgrade(msg, kind, method, from_rev, to_rev, direction, self.policy, self.options,
                                request_id=exch.single_request_id, split=split, profile=profile,
                                summaries=summaries, stamp=stamp)
            except json_body.SplitFailed:
                if split is None:
                    raise
                whole = json_body.parse(split.body)  # the body as one value, as for any other body
                if whole.batch or not isinstance(whole.messages[0], dict):
                    raise json_body.Unparseable("body changed shape when parsed whole") from None
                split.failed = True
                msg.clear()
                msg.update(whole.messages[0])
                out = downgrade(msg, kind, method, from_rev, to_rev, direction, self.policy, self.options,
                                request_id=exch.single_request_id, profile=profile, summaries=summaries, stamp=stamp)
            extra: list[Change] = []  # records of the stages after the walk, stamped here (the walk's are already)
            if self.repair and out.message is not None and out.reply is None:
                skip = split.sentinel if split is not None and not split.failed else None
                extra += repair_stage.repair(out.message, kind, method, to_rev, direction,  # type: ignore[arg-type]
                                             split.body if split is not None else source, skip)
            if profile is not None and profile.dual_result != "keep" and method == "tools/call" and kind == "result" \
                    and out.message is not None and isinstance(out.message.get("result"), dict):
                extra += self._dual(exch, s, out.message, profile)
            if extra:
                now = _now()
                out.changes.extend(c.stamped(now, *stamp) for c in extra)
        except json_body.Unparseable as e:  # the elements of a split body: forwarded untouched
            self.passthrough(exch, direction, e.reason)
            return None
        except Exception as e:  # a rule failed: never lose the message
            self._emit(exch, [*found, Change(pointer="", action="passthrough", rule=ids.PASSTHROUGH,
                                             detail=f"rule failed: {type(e).__name__}: {e}")], direction, msg, method, from_rev, to_rev)
            return None
        if exch.pin_change is not None:
            out.changes.insert(0, exch.pin_change.stamped(_now(), *stamp))
            exch.pin_change = None
        if found:
            now = _now()
            out.changes[:0] = [c.stamped(now, *stamp) for c in found]
        if out.changes and _record_id(msg) != stamp[3]:  # a rule gave the message its id (RPC-error-id-optional)
            out.changes[:] = [c.stamped(c.time, *stamp[:3], _record_id(msg), *stamp[4:]) for c in out.changes]
        entry["changes"] = len(out.changes)
        if not out.changes:
            return None
        if out.message is msg and all(c.action in ("keep", "audit") for c in out.changes):
            self._emit(exch, out.changes, direction, msg, method, from_rev, to_rev, stamped=True)
            return None  # only "keep" and "audit" records: the message is delivered byte for byte
        if out.reply is not None and kind == "request" and json_body.inexact_number(jid):
            # mcpx would answer this request itself, but cannot write its id back exactly (an integer
            # beyond 64 bits): the receiver gets it untouched and answers it (-32601) itself
            entry["changes"] = 1
            self._emit(exch, [Change(pointer="/id", action="passthrough", rule=ids.PASSTHROUGH,
                                     detail=f"request id {json_body.INEXACT}; not answered by mcpx")],
                       direction, msg, method, from_rev, to_rev)
            return None
        if out.reply is not None and kind == "request" and direction == "s2c":
            reply = {"jsonrpc": "2.0", "id": jid, "error": out.reply}
            if self.on_reply is not None:
                self.on_reply(exch, reply)  # sent at once: the sender is waiting for it
            else:
                exch.replies.append(reply)
        self._emit(exch, out.changes, direction, msg, method, from_rev, to_rev, stamped=True)
        return out

    def _tool_result(self, exch: Exchange, s: Session, msg: dict, method: str, profile: profiles.Profile | None) -> list[Change]:
        """Before the walk, on a tool result as the server sent it: remember a tools/list's
        outputSchemas (for a structured-visible profile), and audit a tools/call result's two
        halves (:func:`audit.audit`). Returns the audit record, if any. An audit that fails
        records nothing: it never stands between a message and its receiver."""
        result = msg.get("result")
        if method == "tools/list":
            if profile is not None and profile.dual_result == "structured-visible" and isinstance(result, dict):
                s.learn_tools(result.get("tools"))
            return []
        if not self.audit:
            return []
        try:
            finding = audit.audit(result)
        except Exception as e:  # noqa: BLE001
            logger.warning(f"mcpx: dual-result audit failed: {type(e).__name__}: {e}")
            return []
        if finding is None:
            return []
        tool = exch.tool_calls.get(msg.get("id")) if _hashable(msg.get("id")) else None
        s.findings.append(finding.summary(tool, msg.get("id") if _hashable(msg.get("id")) else None) | {"profile": s.profile})
        return [audit.audit_change(finding, tool)]

    def _dual(self, exch: Exchange, s: Session | None, message: dict, profile: profiles.Profile) -> list[Change]:
        """A host profile's dual-result policy on a delivered tools/call result (:mod:`audit`)."""
        result = message["result"]
        if profile.dual_result == "text-visible":
            return audit.make_text_visible(result, profile.name)
        jid = message.get("id")
        tool = exch.tool_calls.get(jid) if _hashable(jid) else None
        known = s is not None and tool is not None and tool in s.tools
        return audit.make_structured_visible(result, profile.name, profile.structured_key, known,
                                             s.tools.get(tool) if known and s is not None else None)

    def _learn_initialize(self, exch: Exchange, msg: dict) -> tuple[str | None, str | None]:
        s = exch.session
        result = msg.get("result")
        if s is None or not isinstance(result, dict):
            return None, None
        negotiated = result.get("protocolVersion")
        s.server_rev = s.client_rev = negotiated if revisions.is_known(negotiated) else None
        s.server_info = result.get("serverInfo")
        s.server_caps = result.get("capabilities")
        requested = s.requested_rev
        if s.pinned_rev and s.server_rev and revisions.older(s.pinned_rev, s.server_rev):
            exch.pin_change = Change(pointer="/result/protocolVersion", action="rewrite", rule="MCPX-pin",
                                      before=f'"{negotiated}"', after=f'"{s.pinned_rev}"',
                                      detail="session pinned to an older revision by mcpx.pin")
            result["protocolVersion"] = s.pinned_rev
            s.client_rev = s.pinned_rev
        elif self.bridging and s.server_rev in revisions.LEGACY and requested in revisions.LEGACY \
                and revisions.older(requested, s.server_rev):
            # REVISIONS.md 2.4 pinned mode: the server answered a newer revision than the client asked
            # for (a client that then aborts, PEERS.md): the client is told its own, and every message
            # is translated between the two legs
            s.pinned_rev = None
            exch.pin_change = Change(pointer="/result/protocolVersion", action="rewrite", rule=VERSION_BRIDGE_RULE,
                                      before=f'"{negotiated}"', after=f'"{requested}"',
                                      detail="the server answered a newer revision than the client asked for: the client "
                                             "is told its own and mcpx translates between the two (mcpx_bridge)")
            result["protocolVersion"] = requested
            s.client_rev = requested
        elif s.pinned_rev:
            s.pinned_rev = None
        profile = self.profiles.get(s.profile) if s.profile is not None else None
        if not s.pinned_rev and profile is not None and profile.revision and s.client_rev \
                and revisions.older(profile.revision, s.client_rev):
            # the revision the client parses, older than the one it would be told (the server's, or
            # its own under a version bridge): one record, as for a pin
            exch.pin_change = Change(pointer="/result/protocolVersion", action="rewrite", rule=PROFILE_REVISION_RULE,
                                      before=f'"{negotiated}"', after=f'"{profile.revision}"', profile=profile.name,
                                      detail=f"profile {profile.name}: the client is told the revision it parses")
            result["protocolVersion"] = profile.revision
            s.client_rev = profile.revision
        return s.server_rev, s.client_leg

    def session_learned(self, exch: Exchange, upstream_id: str | None, seal: bool = False) -> str | None:
        """The server answered this exchange's initialize (``upstream_id``: its ``Mcp-Session-Id``):
        key the session by it, and seal it when ``seal``. Returns the token for the client or None."""
        if exch.session is None or exch.initialize is None:
            return None
        return self.tracker.learn(exch.session, upstream_id, seal)

    # -- single messages, for bridges -------------------------------------------------------
    def write(self, exch: Exchange, direction: str, value: Any) -> bytes:
        """``value`` serialised (a passthrough record and orjson's output otherwise never fails here)."""
        return self._write(exch, direction, value, b"") or json_body.dumps(value)

    def c2s_message(self, exch: Exchange, msg: dict, source: bytes | None) -> bytes | None:
        """One client message walked from the session's client leg to its server leg (records
        logged); the bytes to send, or None when nothing changed (and ``source`` is given)."""
        s = exch.session
        if classify(msg) == "request" and _hashable(msg["id"]):
            exch.request_ids[msg["id"]] = msg.get("method")
        res = self._one(exch, msg, "c2s", s.client_leg, s.server_rev) if s is not None else None
        if res is None:
            return None if source else json_body.dumps(msg)
        return self._write(exch, "c2s", res.message, source or b"") if res.message is not None else None

    def s2c_message(self, exch: Exchange, msg: dict, method: str | None, from_rev: str, to_rev: str) -> dict | None:
        """One server message walked from ``from_rev`` to ``to_rev`` (records logged); what to deliver
        (None: not delivered)."""
        if method and classify(msg) in ("result", "error"):
            exch.request_ids.setdefault(msg.get("id"), method)
        res = self._one(exch, msg, "s2c", from_rev, to_rev)
        return msg if res is None else res.message

    def session_headers(self, exch: Exchange, headers: Mapping[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
        """The header edits toward the server of :meth:`request` (session id, revision headers), with records."""
        return self._request_headers(exch, headers)

    # -- responses (server -> client) -------------------------------------------------------
    def _split(self, exch: Exchange, data: bytes | None, one_line: bool = False) -> json_body.ArraySplit | None:
        """A large list result, seen as skeleton + elements (see :data:`SPLIT_MIN`), or None.

        ``one_line``: the data of an SSE event, re-emitted as one ``data:`` line, so a body with a
        line break (several data lines: the break may sit in an element kept as its bytes) is
        not split."""
        if data is None or len(data) < SPLIT_MIN or exch.single_request_id is None or (one_line and b"\n" in data):
            return None
        path = split_path(exch.request_ids.get(exch.single_request_id), exch.revisions[1])
        return json_body.split_array(data, path) if path else None

    def _write(self, exch: Exchange, direction: str, value: Any, source: bytes | memoryview, prefix: str = "") -> bytes | None:
        """``value`` serialised (numbers of ``source`` kept exactly), or None and a passthrough record."""
        try:
            return json_body.dumps_exact(value, source)
        except json_body.Unwritable as e:
            self.passthrough(exch, direction, prefix + e.reason)
            return None

    def _split_out(self, exch: Exchange, split: json_body.ArraySplit, out: list, source: bytes, prefix: str = "") -> bytes | None:
        """The delivered bytes of a rewritten split body (None: passthrough, logged)."""
        if not out:
            return b""
        new = self._write(exch, "s2c", out[0], source, prefix)
        if new is None or split.failed:
            return new
        try:
            return split.assemble(new)
        except json_body.SplitFailed as e:
            self.passthrough(exch, "s2c", f"{prefix}large list result: {e}")
            return None

    def response_json(self, exch: Exchange, body: bytes, content_type: str | None = None) -> bytes | None:
        """Rewrite a (JSON) response body; None means forward it unchanged. ``content_type``: the
        response's Content-Type (None: not known, taken for JSON). A body that does not parse gets
        a passthrough record only when the exchange is MCP and the Content-Type declares JSON: an
        HTML error page (a wrong path) is not MCP traffic, and gets no record. A body of
        :data:`GC_PAUSE_MIN` bytes or more is rewritten with the cyclic garbage collector paused."""
        if len(body) >= GC_PAUSE_MIN and gc.isenabled():
            gc.disable()
            try:
                return self._response_json(exch, body, content_type)
            finally:
                gc.enable()
        return self._response_json(exch, body, content_type)

    def _response_json(self, exch: Exchange, body: bytes, content_type: str | None) -> bytes | None:
        split = self._split(exch, body)
        if split is not None:
            out, changed = self._s2c_messages(exch, [split.skeleton], split, body)
            return self._split_out(exch, split, out, body) if changed else None
        looks_mcp = exch.is_mcp and (content_type is None or declares_json(content_type))
        parsed = self._parse(exch, body, "s2c", looks_mcp)
        if parsed is None:
            if not body and looks_mcp and exch.request_ids:  # (a 202 to notifications has nothing to answer)
                self.passthrough(exch, "s2c", "body is empty: holds no JSON-RPC 2.0 message")
            return self._raw_ids_back(exch, body) if exch.id_map and body else None
        if not any(classify(m) for m in parsed.messages) and not (exch.is_mcp and exch.late_answers and parsed.batch):
            if looks_mcp:  # ({}, [], "jsonrpc": "1.0", an HTTP error's own JSON): as for a client POST
                self.passthrough(exch, "s2c", "body holds no JSON-RPC 2.0 message")
            return None
        out, changed = self._s2c_messages(exch, parsed.messages, source=body)
        if exch.late_answers and parsed.batch:
            out.extend(exch.late_answers)
            changed = True
        if not changed:
            return None
        if not parsed.batch and not out:
            return b""
        return self._write(exch, "s2c", out if parsed.batch else out[0], body)

    def _raw_ids_back(self, exch: Exchange, body: bytes) -> bytes | None:
        """A body mcpx cannot parse that names an id mcpx gave the server (``"id":"mcpx-<n>"``, a
        bridge's): the client's own id put back, every other byte as it came (None: it names none)."""
        out = body
        for minted, original in exch.id_map.items():
            ours = b'"id":' + json_body.dumps(minted)
            if ours in out:
                out = out.replace(ours, b'"id":' + json_body.dumps(original))
                self._emit(exch, [Change(pointer="/id", action="rewrite", rule="RPC-request-id-reuse", before=f'"{minted}"',
                                         after=json_body.dumps(original).decode(),
                                         detail="the id mcpx gave the server, mapped back in a body mcpx cannot parse")],
                           "s2c", None, None, *exch.revisions)
        return None if out is body else out

    def _s2c_messages(self, exch: Exchange, messages: list, split: json_body.ArraySplit | None = None,
                      source: bytes | None = None) -> tuple[list, bool]:
        """Downgrade each server message of one body or event (parsed from ``source``): (what to
        deliver, whether anything changed)."""
        from_rev, to_rev = exch.revisions
        out, changed = [], False
        for m in messages:
            res = self._one(exch, m, "s2c", from_rev, to_rev, split, source)
            from_rev, to_rev = exch.revisions  # an initialize result sets them for what follows
            if res is None:
                out.append(m)
            else:
                changed = True
                if res.message is not None:
                    out.append(res.message)
        return out, changed

    def sse(self, exch: Exchange) -> "SSERewriter":
        return SSERewriter(self, exch)

    def sse_event(self, exch: Exchange, ev: Event) -> bytes:
        """The bytes to deliver for one SSE event (one of :data:`GC_PAUSE_MIN` bytes or more: with
        the cyclic garbage collector paused, as :meth:`response_json`)."""
        if ev.payload is not None and len(ev.payload) >= GC_PAUSE_MIN and gc.isenabled():
            gc.disable()
            try:
                return self._sse_event(exch, ev)
            finally:
                gc.enable()
        return self._sse_event(exch, ev)

    def _sse_event(self, exch: Exchange, ev: Event) -> bytes:
        from_rev, to_rev = exch.revisions
        if ev.oversize:
            if ev.oversize == 1:
                self.passthrough(exch, "s2c", "SSE event larger than mcpx_max_body: forwarded untouched as it streams")
            return ev.raw
        if ev.payload is None:
            return ev.raw
        if ev.blank():
            if ev.last_id and self.on_priming is not None:
                self.on_priming(exch)
            if revisions.is_known(to_rev) and to_rev != "2025-11-25":  # the only revision with priming events
                self._emit(exch, [Change(pointer="", action="drop-message", rule=PRIMING_RULE, before=summ_event(ev),
                                         detail="empty-data (priming) event: only 2025-11-25 clients get it")],
                           "s2c", None, None, from_rev, to_rev)
                # not even its id: an id-only event reads as an empty-data event to httpx-sse based clients
                # (older Python SDKs), the very thing this rule keeps from them
                return ev.with_data([], keep_id=False)
            return ev.raw
        split = self._split(exch, ev.payload, one_line=True)
        if split is not None:
            out, changed = self._s2c_messages(exch, [split.skeleton], split, ev.payload)
            if not changed:
                return ev.raw
            data = self._split_out(exch, split, out, ev.payload, "SSE event: ")
            return ev.raw if data is None else ev.with_data([data] if data else [])
        try:
            value = orjson.loads(ev.payload)  # UTF-8 bytes, checked by orjson: no str of a large event
        except orjson.JSONDecodeError:
            if ev.decode_error:
                self.passthrough(exch, "s2c", "SSE event data is not valid UTF-8")
                return ev.raw
            try:
                value = orjson.loads(ev.data)  # the same text: for the error as the str reports it
            except orjson.JSONDecodeError as e:
                self.passthrough(exch, "s2c", f"SSE event data is not valid JSON: {e}")
                return ev.raw
        batch = isinstance(value, list)
        messages = value if batch else [value]
        if not any(classify(m) for m in messages):
            # ({}, [], [5], "jsonrpc": "1.0"): no message, and an array of none is no batch to split (JSON-RPC
            # 2.0: an empty array is an invalid request); the event as it came
            self.passthrough(exch, "s2c", "SSE event data holds no JSON-RPC 2.0 message")
            return ev.raw
        out, changed = self._s2c_messages(exch, messages, source=ev.payload)
        from_rev, to_rev = exch.revisions  # an initialize result in this event may have set them
        # RPC-batch-response: an array of JSON-RPC messages (an array of none returned above), one event each
        one_per_event = batch and to_rev != "2025-03-26" and revisions.is_known(to_rev)
        if not (changed or one_per_event):
            return ev.raw
        if batch and not one_per_event:
            payloads = [self._write(exch, "s2c", out, ev.payload, "SSE event: ")] if out else []
        else:
            payloads = [self._write(exch, "s2c", m, ev.payload, "SSE event: ") for m in out]
        if None in payloads:
            return ev.raw
        if one_per_event:
            self._emit(exch, [Change(pointer="", action="split", rule=BATCH_RESPONSE_RULE, before=f"batch of {len(messages)} messages",
                                     after=f"{len(out)} events")], "s2c", None, None, from_rev, to_rev)
        return ev.with_data(payloads)  # type: ignore[arg-type]


class SSERewriter:
    """A ``flow.response.stream`` callable: feed raw chunks, get rewritten bytes; ``b""`` ends it.

    ``decoder`` (optional) undoes the Content-Encoding chunk by chunk (framing/encoding.py); when a
    chunk does not decode, the events decoded before the fault are delivered and nothing after
    (:meth:`_undecodable`), with one passthrough record. ``original`` and
    ``delivered`` keep up to ``keep`` bytes of each side for inspection.
    """

    def __init__(self, rewriter: Rewriter, exch: Exchange, decoder: Callable[[bytes], bytes] | None = None, keep: int = 4 << 20,
                 max_event: int | None = None):
        self.rewriter = rewriter
        self.exch = exch
        self.decoder = decoder
        self.parser = SSEParser(max_event)  # events above max_event (mcpx_max_body) pass unbuffered
        self.finished = False
        #: the encoding failed (:meth:`_undecodable`): nothing more is delivered
        self.undecodable = False
        self._received = 0  # compressed bytes decoded so far
        self._lf_written = False  # the last event was rewritten with CRLF line ends though only its blank line's CR came
        #: the id of the last event that set one (its ``id:`` field, as the client's last event ID), or None
        self.last_id: str | None = None
        self.keep = keep
        self._original = _Kept(keep)
        self._delivered = _Kept(keep)

    @property
    def original(self) -> bytes:
        """The first ``keep`` bytes of the stream as received (decoded)."""
        return self._original.value()

    @property
    def delivered(self) -> bytes:
        """The first ``keep`` bytes of the stream as delivered."""
        return self._delivered.value()

    @property
    def truncated(self) -> bool:
        """Whether either side had more than ``keep`` bytes."""
        return self._original.truncated or self._delivered.truncated

    def __call__(self, chunk: bytes) -> bytes:
        if self.finished:
            return chunk
        if self.undecodable:  # nothing after a fault in the encoding: the response ends when the server's does
            self.finished = chunk == b""
            return b""
        if chunk == b"":
            self.finished = True
            events, rest = self.parser.close()
            out = self._out(events, rest, b"")
            if rest:  # never dispatched by an SSE client (WHATWG HTML 9.2.6: discarded at the end of the stream)
                self.rewriter.passthrough(self.exch, "s2c", f"SSE stream ends inside an event (no blank line after it): "
                                                            f"its {len(rest)} bytes forwarded untouched")
            return out
        raw = chunk
        if self.decoder is not None:
            try:
                chunk = self.decoder(chunk)
            except Exception as e:  # not the encoding it claims: never crash the connection
                return self._undecodable(e)
            self._received += len(raw)
        return self._out(self.parser.feed(chunk), b"", raw)

    def _undecodable(self, e: Exception) -> bytes:
        """The stream stopped decoding: the complete events of what still decoded (the failing
        chunk's bytes before the fault, :class:`~mcpx_core.framing.encoding.DecodeFailed`), then
        nothing. The client was told the stream is not encoded (``responseheaders`` removed
        Content-Encoding), so the compressed bytes that follow would be garbage to it; an event the
        fault cut short is held back (a direct client's decoder would fail before it too)."""
        failed = e if isinstance(e, DecodeFailed) else DecodeFailed(e)
        self.undecodable = True
        events = self.parser.feed(failed.partial)
        more, rest = self.parser.close()
        out = self._out(events + more, b"", b"")
        self._original.add(rest)
        self.rewriter.passthrough(self.exch, "s2c", undecodable_detail(self._received + failed.at, failed, len(rest)))
        return out

    def _out(self, events: list[Event], rest: bytes, raw: bytes) -> bytes:
        parts = []
        for ev in events:
            if ev.crlf_rest:  # the LF after the CR that ended the last event (framing/sse.py)
                if not self._lf_written:
                    parts.append(ev.raw)
                self._lf_written = False
                continue
            self._lf_written = False
            if ev.last_id is not None:
                self.last_id = ev.last_id
            if ev.open_cr:
                # its blank line's CR came last, an LF may follow: if the event is rewritten, its lines
                # end in CRLF, as when the LF came with it, and that LF is then not written again
                ev.terminator = b"\r\n"
            try:
                out = self.rewriter.sse_event(self.exch, ev)
            except Exception as e:  # never lose an event
                self.rewriter.passthrough(self.exch, "s2c", f"SSE rewrite failed: {type(e).__name__}: {e}")
                out = ev.raw
            self._lf_written = ev.open_cr and out is not ev.raw
            parts.append(out)
        if rest:
            parts.append(rest)
        data = b"".join(parts)
        for ev in events:
            self._original.add(ev.raw)
        self._original.add(rest)
        self._delivered.add(data)
        return data

    def whole(self, body: bytes) -> bytes:
        """Rewrite a complete body (offline replay) with the same code path as streaming."""
        return self(body) + self(b"")

    def chunks(self, chunk: bytes) -> list[bytes]:
        """The callable for ``flow.response.stream``: the output as a list, empty while an event is
        incomplete (mitmproxy sends each returned chunk; an empty one would be the HTTP/1.1 chunked
        terminator ``0\\r\\n\\r\\n`` and end the response before the event)."""
        out = self(chunk)
        return [out] if out else []


class _Kept:
    """The first ``limit`` bytes of a stream, kept as the pieces themselves (bytes are immutable:
    holding them copies nothing) and joined on request; ``truncated`` once more came."""

    __slots__ = ("limit", "size", "pieces", "truncated", "_joined")

    def __init__(self, limit: int):
        self.limit = limit
        self.size = 0
        self.pieces: list[bytes] = []
        self.truncated = False
        self._joined: bytes | None = None

    def add(self, data: bytes) -> None:
        if not data:
            return
        room = self.limit - self.size
        if room <= 0:
            self.truncated = True
            return
        if len(data) > room:
            data = data[:room]
            self.truncated = True
        self.pieces.append(data)
        self.size += len(data)
        self._joined = None

    def value(self) -> bytes:
        if self._joined is None:
            self._joined = b"".join(self.pieces)
            self.pieces = [self._joined]
        return self._joined


def _hashable(v: Any) -> bool:
    return isinstance(v, (str, int)) and not isinstance(v, bool)


def declares_json(content_type: str | None) -> bool:
    """Whether a Content-Type header value declares JSON (``application/json``, ``*/*+json``;
    parameters such as ``charset`` ignored)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def undecodable_detail(at: int, failed: DecodeFailed, unfinished: int) -> str:
    """The passthrough record of an SSE answer that stops decoding (its Content-Encoding) from
    compressed byte ``at`` on, ``unfinished`` decoded bytes of an event held back."""
    held = f"{unfinished} decoded bytes of an unfinished event and " if unfinished else ""
    return (f"content-encoding: SSE stream does not decode from compressed byte {at} on ({type(failed.error).__name__}: "
            f"{failed.error}); delivered: the complete events before it; not delivered: {held}the rest of the stream "
            "(the client was told it is not encoded)")


def summ_event(ev: Event) -> str:
    return f"SSE event id={ev.last_id!r} data={ev.data!r}"[:120]


def _now() -> float:
    return time.time()


def _record_id(msg: Any) -> int | str | json_body.ExactInt | None:
    """A record's ``jsonrpc_id``: the message's id when it is an int or a str, or an integer beyond
    64 bits read exactly (:class:`~mcpx_core.framing.json_body.ExactInt`, as the bridges read ids:
    the log writes its digits, :meth:`Change.as_dict` gives its int)."""
    jid = msg.get("id") if isinstance(msg, dict) else None
    if jid.__class__ is json_body.ExactInt:
        return jid
    return jid if isinstance(jid, (int, str)) and not isinstance(jid, bool) else None
