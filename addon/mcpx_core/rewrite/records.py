"""Writing change records: stamped with their message's context, kept on the flow (up to
:data:`~.exchange.FLOW_KEEP_MAX`), counted on the session, handed to ``on_changes``; records held back
until a session is known (:meth:`Records.flush`); passthrough records."""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

from ..changes import Change
from ..framing import json_body
from ..references import References
from ..rules import ids
from .exchange import FLOW_KEEP_MAX, Exchange

#: the record of a host profile choice: which applies, on what evidence, and which matched without applying
PROFILE_RULE = "MCPX-profile"
logger = logging.getLogger("mcpx")


class Records:
    """The records part of a rewriter (a mixin of :class:`~.message.Rules`): reads ``on_changes``
    and ``references`` of the object it is part of."""

    on_changes: Callable[[Exchange, list[Change]], None] | None
    references: References

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
        if s is not None:  # (under the session's lock: a large body is rewritten in the worker thread)
            s.count(changes, PROFILE_RULE)  # an audit is a finding, not a change (a profile choice is neither)
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
