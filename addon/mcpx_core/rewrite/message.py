"""The rule pass on one JSON-RPC message: :func:`rule_pass` downgrades it from the sender's to the
receiver's revision (:mod:`mcpx_core.downgrade`), repairs what the receiver's schema rejects
(:mod:`mcpx_core.repair`), applies the host profile's dual-result policy and audit
(:mod:`mcpx_core.audit`), and logs its records. Any bridge or transport calls it with a
:class:`Rules` (what the pass reads: policy, options, profiles, references, where records go),
a :class:`~.exchange.Exchange` and the message; a :class:`~.rewriter.Rewriter` is one such
:class:`Rules`."""

from __future__ import annotations

from typing import Any, Callable

from .. import audit, profiles, revisions
from .. import repair as repair_stage
from ..changes import Change
from ..downgrade import Outcome, classify, downgrade
from ..framing import json_body
from ..references import References
from ..rules import ids
from ..session import Session
from .body import Bodies, _hashable
from .exchange import FLOW_KEEP_MAX, Exchange
from .records import Records, _now, _record_id, logger

#: the rule of a host profile's revision (profiles.Profile.revision), told in the initialize result
PROFILE_REVISION_RULE = "MCPX-profile-revision"
#: the record of an initialize result whose revision mcpx told the client as it asked (REVISIONS.md 2.4)
VERSION_BRIDGE_RULE = "MCPX-version-bridge"


class Rules(Records, Bodies):
    """What the rule pass on one message reads, and where its records go: ``policy`` is "strict" or
    "lenient"; ``profiles``: the host profiles in force (:class:`~mcpx_core.profiles.ProfileSet`; none
    by default); ``audit``: run the dual-result audit on tool results (:mod:`mcpx_core.audit`);
    ``repair``: run the repair stage after the downgrade (:mod:`mcpx_core.repair`)."""

    def __init__(self, policy: str = "strict", options: dict | None = None,
                 on_changes: Callable[[Exchange, list[Change]], None] | None = None,
                 on_reply: Callable[[Exchange, dict], None] | None = None,
                 profile_set: profiles.ProfileSet | None = None, audit_results: bool = True,
                 repair: bool = True):
        self.on_reply = on_reply
        self.repair = repair
        #: bridge peers of different revisions and eras (mcpx_bridge); off: only downgrade where both legs agree
        self.bridging = True
        self.policy = policy
        self.options = options or {}
        self.on_changes = on_changes
        self.profiles = profile_set if profile_set is not None else profiles.NONE
        #: what each side of a session sent: progress tokens, request ids (references.py)
        self.references = References()
        #: judge progress and cancellations by what the session sent (mcpx_check_references; on by default)
        self.check_references = True
        self.audit = audit_results
        #: whether every record is read (``on_changes`` writes a log, say): when False, only the records the
        #: flow keeps (:data:`FLOW_KEEP_MAX`) get their before/after summaries; the others are only counted
        self.summarize_all = True
        #: called with each message's entry (direction, kind, method, id) and its revisions (metrics.py)
        self.on_message: Callable[[dict, str | None, str | None], None] | None = None

    def _one(self, exch: Exchange, msg: Any, direction: str, from_rev: str | None, to_rev: str | None,
             split: json_body.ArraySplit | None = None, source: bytes | None = None) -> Outcome | None:
        """:func:`rule_pass` on this object."""
        return rule_pass(self, exch, msg, direction, from_rev, to_rev, split, source)

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


def rule_pass(rules: Rules, exch: Exchange, msg: Any, direction: str, from_rev: str | None, to_rev: str | None,
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
            rules._emit(exch, [Change(pointer="/id", action="rewrite", rule="RPC-request-id-reuse", before=f'"{jid}"',
                                     after=json_body.dumps(msg["id"]).decode(), detail="the id mcpx gave the server, mapped back")],
                       direction, msg, method, from_rev, to_rev)
            jid = msg["id"]
    elif kind == "request" and direction == "s2c" and s is not None:
        s.remember("s2c", jid, method)
    if s is not None and kind == "request" and direction == "s2c":  # (client requests: _messages)
        rules.references.sent(s.uid, direction, msg)
    if direction == "s2c" and s is not None:
        s.saw_message()
        if method == "initialize" and kind == "result" and exch.initialize is not None:  # (not a repeat in a session)
            from_rev, to_rev = _learn_initialize(rules, exch, msg)
    entry = {"direction": direction, "kind": kind, "method": method, "id": json_body.plain_id(jid)}
    if rules.on_message is not None:  # metrics.py: messages by direction, method and revisions
        rules.on_message(entry, from_rev, to_rev)
    if len(exch.messages) < FLOW_KEEP_MAX:
        exch.messages.append(entry)
    else:
        exch.messages_omitted += 1
    if not (revisions.is_known(from_rev) and revisions.is_known(to_rev)):
        return None
    if rules.check_references and kind == "notification" and s is not None and direction == "s2c" and exch.request_ids:
        # a progress token the client never sent, a request id the server never sent, on the answer to a
        # client request (references.py)
        unknown = rules.references.judge(s, direction, method, msg, rules.policy == "strict", from_rev)
        if unknown is not None:
            rules._emit(exch, [unknown], direction, msg, method, from_rev, to_rev)
            if unknown.action == "drop-message":
                entry["changes"] = 1
                return Outcome(None, [unknown])
    profile = rules.profiles.get(s.profile) if s is not None and s.profile is not None and direction == "s2c" else None
    found: list[Change] = []
    # the audit and the walk's structuredContent rule compare the same two halves: once (audit.share_comparisons)
    shared = direction == "s2c" and kind == "result" and method == "tools/call"
    if shared:
        audit.share_comparisons(True)
    if direction == "s2c" and kind == "result" and method in ("tools/call", "tools/list") and s is not None:
        found = _tool_result(rules, exch, s, msg, method, profile)
    # records beyond what the flow keeps reach nobody unless every record is read: no summaries for them
    summaries = None if rules.summarize_all else max(FLOW_KEEP_MAX - len(exch.changes) - (exch.pin_change is not None), 0)
    # the records' context: the walk builds each record once, as it is delivered
    stamp = (exch.flow_id, s.key if s else None, direction, _record_id(msg), method, from_rev, to_rev)
    try:
        try:
            out = downgrade(msg, kind, method, from_rev, to_rev, direction, rules.policy, rules.options,
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
            out = downgrade(msg, kind, method, from_rev, to_rev, direction, rules.policy, rules.options,
                            request_id=exch.single_request_id, profile=profile, summaries=summaries, stamp=stamp)
        finally:
            if shared:
                audit.share_comparisons(False)
        extra: list[Change] = []  # records of the stages after the walk, stamped here (the walk's are already)
        if rules.repair and out.message is not None and out.reply is None:
            skip = split.sentinel if split is not None and not split.failed else None
            extra += repair_stage.repair(out.message, kind, method, to_rev, direction,  # type: ignore[arg-type]
                                         split.body if split is not None else source, skip)
        if profile is not None and profile.dual_result != "keep" and method == "tools/call" and kind == "result" \
                and out.message is not None and isinstance(out.message.get("result"), dict):
            extra += _dual(rules, exch, s, out.message, profile)
        if extra:
            now = _now()
            out.changes.extend(c.stamped(now, *stamp) for c in extra)
    except json_body.Unparseable as e:  # the elements of a split body: forwarded untouched
        rules.passthrough(exch, direction, e.reason)
        return None
    except Exception as e:  # a rule failed: never lose the message
        rules._emit(exch, [*found, Change(pointer="", action="passthrough", rule=ids.PASSTHROUGH,
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
        rules._emit(exch, out.changes, direction, msg, method, from_rev, to_rev, stamped=True)
        return None  # only "keep" and "audit" records: the message is delivered byte for byte
    if out.reply is not None and kind == "request" and json_body.inexact_number(jid):
        # mcpx would answer this request itself, but cannot write its id back exactly (an integer
        # beyond 64 bits): the receiver gets it untouched and answers it (-32601) itself
        entry["changes"] = 1
        rules._emit(exch, [Change(pointer="/id", action="passthrough", rule=ids.PASSTHROUGH,
                                 detail=f"request id {json_body.INEXACT}; not answered by mcpx")],
                   direction, msg, method, from_rev, to_rev)
        return None
    if out.reply is not None and kind == "request" and direction == "s2c":
        reply = {"jsonrpc": "2.0", "id": jid, "error": out.reply}
        if rules.on_reply is not None:
            rules.on_reply(exch, reply)  # sent at once: the sender is waiting for it
        else:
            exch.replies.append(reply)
    rules._emit(exch, out.changes, direction, msg, method, from_rev, to_rev, stamped=True)
    return out


def _tool_result(rules: Rules, exch: Exchange, s: Session, msg: dict, method: str, profile: profiles.Profile | None) -> list[Change]:
    """Before the walk, on a tool result as the server sent it: remember a tools/list's
    outputSchemas (for a structured-visible profile), and audit a tools/call result's two
    halves (:func:`audit.audit`). Returns the audit record, if any. An audit that fails
    records nothing: it never stands between a message and its receiver."""
    result = msg.get("result")
    if method == "tools/list":
        if profile is not None and profile.dual_result == "structured-visible" and isinstance(result, dict):
            s.learn_tools(result.get("tools"))
        return []
    if not rules.audit:
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

def _dual(rules: Rules, exch: Exchange, s: Session | None, message: dict, profile: profiles.Profile) -> list[Change]:
    """A host profile's dual-result policy on a delivered tools/call result (:mod:`audit`)."""
    result = message["result"]
    if profile.dual_result == "text-visible":
        return audit.make_text_visible(result, profile.name)
    jid = message.get("id")
    tool = exch.tool_calls.get(jid) if _hashable(jid) else None
    known = s is not None and tool is not None and tool in s.tools
    return audit.make_structured_visible(result, profile.name, profile.structured_key, known,
                                         s.tools.get(tool) if known and s is not None else None)

def _learn_initialize(rules: Rules, exch: Exchange, msg: dict) -> tuple[str | None, str | None]:
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
    elif rules.bridging and s.server_rev in revisions.LEGACY and requested in revisions.LEGACY \
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
    profile = rules.profiles.get(s.profile) if s.profile is not None else None
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
