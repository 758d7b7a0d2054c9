"""Notifications that reference what their receiver never sent, kept from a strict receiver.

Two notifications name something of the receiver's own:

- ``notifications/progress`` names a ``progressToken`` the receiver put in one of its requests
  (``params._meta.progressToken``): "Progress notifications MUST only reference tokens that were
  provided in an active request" (docs/specification/2025-06-18/basic/utilities/progress.mdx:47;
  ProgressNotification, schema/2025-06-18/schema.ts:1214). A server that invents its own token
  on every call sends progress the client's SDK cannot route (it raises, or drops the session).
- ``notifications/cancelled`` names a ``requestId`` "of a request previously issued in the same
  direction" (docs/specification/2025-06-18/basic/utilities/cancellation.mdx:19; CancelledNotification,
  schema/2025-06-18/schema.ts:189): a request the receiver sent.

:class:`References` remembers, per session mcpx saw start (its initialize), the request ids and
progress tokens each side sent. Toward a strict receiver (``mcpx_policy=strict``, the default) such
a notification whose token or id that side never sent is not delivered: a ``drop-message`` record,
rule ``PROG-token-unknown`` or ``CANCEL-request-unknown``. Lenient: delivered, with a ``keep`` record.

Judged: notifications toward the client on the answer to a request of its (a POST's SSE stream,
whose request this process read: "these messages SHOULD relate to the originating client request",
docs/specification/2025-06-18/basic/transports.mdx:116), in a session mcpx saw whole: from its
initialize, none of its bodies passed through unread (a ``passthrough`` record, a body above
mcpx_max_body), not bridged, and within :data:`MAX_REFS` references a side. Not judged (delivered):
the standalone GET stream and notifications toward the server (behind replicas balanced per request
another process may have carried the request they name), a session reopened from its token after a
restart.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from .changes import Change
from .framing import json_body

PROGRESS_RULE = "PROG-token-unknown"
CANCEL_RULE = "CANCEL-request-unknown"
#: request ids and progress tokens kept per side of a session; past it the session is no longer judged
MAX_REFS = 4096
#: sessions remembered (the oldest forgotten first: then no longer judged)
MAX_SESSIONS = 10_000


class _Sent:
    __slots__ = ("ids", "tokens", "complete")

    def __init__(self) -> None:
        self.ids: dict[str, set] = {"c2s": set(), "s2c": set()}
        self.tokens: dict[str, set] = {"c2s": set(), "s2c": set()}
        self.complete = True


def _key(v: Any) -> Any:
    """A JSON-RPC id or progress token as a set member (a string or an integer; ``1`` and ``1.0`` alike)."""
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        return None
    return int(v) if isinstance(v, float) and v.is_integer() else v


class References:
    """What each side of a session sent (:meth:`start`, :meth:`sent`) and the verdict on a notification (:meth:`judge`)."""

    def __init__(self) -> None:
        self._sessions: OrderedDict[int, _Sent] = OrderedDict()

    def start(self, uid: int) -> None:
        """A session starts (its initialize seen): from now on every message of it is seen."""
        self._sessions[uid] = _Sent()
        self._sessions.move_to_end(uid)
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)

    def incomplete(self, uid: int) -> None:
        """A body of the session passed through unread: it is no longer judged."""
        s = self._sessions.get(uid)
        if s is not None:
            s.complete = False

    def sent(self, uid: int, direction: str, message: dict) -> None:
        """A request ``direction`` carried: its id, and its progress token if any."""
        s = self._sessions.get(uid)
        if s is None or not s.complete:
            return
        rid = _key(message.get("id"))
        if rid is not None:
            s.ids[direction].add(rid)
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and "progressToken" in meta:
            token = _key(meta["progressToken"])
            if token is None:  # a token of a type no notification can match: not judged
                s.complete = False
                return
            s.tokens[direction].add(token)
        if len(s.ids[direction]) > MAX_REFS or len(s.tokens[direction]) > MAX_REFS:
            s.complete = False

    def judge(self, uid: int, direction: str, method: str | None, message: dict, strict: bool) -> Change | None:
        """The record for a notification sent ``direction`` that names what its receiver never sent
        (None: it names what the receiver sent, or the session is not judged). ``strict``: a
        ``drop-message`` record (the message is not delivered), else ``keep``."""
        if method not in ("notifications/progress", "notifications/cancelled"):
            return None
        s = self._sessions.get(uid)
        if s is None or not s.complete:
            return None
        params = message.get("params")
        if not isinstance(params, dict):
            return None
        receiver = "s2c" if direction == "c2s" else "c2s"
        if method == "notifications/progress":
            token = _key(params.get("progressToken"))
            if token is None or token in s.tokens[receiver]:
                return None
            what, rule = f"progressToken {json_body.dumps(params['progressToken']).decode()} that no request of the receiver carried", PROGRESS_RULE
        else:
            if "requestId" not in params:
                return None
            rid = _key(params.get("requestId"))
            if rid is None or rid in s.ids[receiver]:
                return None
            what, rule = f"requestId {json_body.dumps(params['requestId']).decode()} of a request the receiver never sent", CANCEL_RULE
        if strict:
            return Change(pointer="", action="drop-message", rule=rule, before=None,
                          detail=f"{method} names a {what}: not delivered (mcpx_policy=strict)")
        return Change(pointer="", action="keep", rule=rule, detail=f"{method} names a {what}: delivered (mcpx_policy=lenient)")
