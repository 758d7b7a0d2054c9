"""Choosing the leg of a client request: its session (initialize, session id, revision header or
``_meta``), whether a bridge takes it, answers mcpx gives itself (an unknown session, a body too
large to bridge, an answer sent without its session), the header edits toward the server, and
the rule pass on each message of its body: one typed :class:`~mcpx_core.disposition.Disposition`."""

from __future__ import annotations

from collections.abc import Mapping

from .. import flowlist, revisions
from ..changes import Change
from ..disposition import AnswerLocally, Bridge, Disposition, Forward, MintSession, NeedEra, SplitBatch
from ..downgrade import classify
from ..framing import json_body
from ..rules.headers import request_headers
from ..seal import PREFIX as TOKEN_PREFIX
from ..session import (SESSION_HEADER, VERSION_HEADER, Named, Session, Unknown, revision_in_header,
                      revision_in_meta)
from .body import _hashable, declares_json
from .exchange import Exchange
from .records import PROFILE_RULE

BATCH_REQUEST_RULE = "RPC-batch-request"

#: JSON-RPC error body of the 404 for a session id mcpx cannot open (the answer of the TypeScript
#: SDK's server for an unknown session; docs/specification/2025-03-26/basic/transports.mdx:200)
UNKNOWN_SESSION = {"code": -32001, "message": "Session not found"}


class RequestLeg:
    """The client request part of :class:`~.rewriter.Rewriter` (a mixin): reads its tracker, era
    cache and rule settings."""

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
            s.saw_message()
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
                s.saw_message()
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

    def session_learned(self, exch: Exchange, upstream_id: str | None, seal: bool = False) -> str | None:
        """The server answered this exchange's initialize (``upstream_id``: its ``Mcp-Session-Id``):
        key the session by it, and seal it when ``seal``. Returns the token for the client or None."""
        if exch.session is None or exch.initialize is None:
            return None
        return self.tracker.learn(exch.session, upstream_id, seal)

    def session_headers(self, exch: Exchange, headers: Mapping[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
        """The header edits toward the server of :meth:`request` (session id, revision headers), with records."""
        return self._request_headers(exch, headers)
