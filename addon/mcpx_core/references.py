"""Notifications that reference what their receiver never sent, kept from a strict receiver.

Two notifications name something their sender was given or sent before:

- ``notifications/progress`` names a ``progressToken`` the receiver put in one of its requests
  (``params._meta.progressToken``): "Progress notifications MUST only reference tokens that were
  provided in an active request" (docs/specification/2025-06-18/basic/utilities/progress.mdx:47;
  ProgressNotification, schema/2025-06-18/schema.ts:1214). A server that invents its own token
  on every call sends progress the client's SDK cannot route (it raises, or drops the session).
  Judged against the progress tokens of the requests the *receiver* sent.
- ``notifications/cancelled`` names a ``requestId`` "of a request previously issued in the same
  direction" (docs/specification/2025-06-18/basic/utilities/cancellation.mdx:19; CancelledNotification,
  schema/2025-06-18/schema.ts:189): a request the *sender* of the cancellation issued, which its
  receiver is handling. A server's cancellation names one of the server's requests (the TypeScript
  SDK's receiver looks the id up among the handlers of the requests it received:
  ``_requestHandlerAbortControllers.get(notification.params.requestId)``, npm
  @modelcontextprotocol/sdk 1.32.2 dist/esm/shared/protocol.js:173-179; PyPI mcp 1.12.4
  mcp/shared/session.py:383-386, ``self._in_flight``). Judged against the request ids the sender
  sent. A sender whose revision defines no request of its side (a 2026-07-28 server: the schema has
  no ``ServerRequest``, REVISIONS.md 5.19 ``CANCEL-direction``) cancels only the ``subscriptions/listen``
  stream the client opened: "it references the ID of the `subscriptions/listen` request that opened
  the stream. Servers MUST NOT use this notification to cancel any other request"
  (CancelledNotification, schema/2026-07-28/schema.ts:637); judged against the client's listen ids.

A token or id the receiver could route is never judged unknown: the SDKs compare them loosely.
The TypeScript SDK routes progress by ``Number(progressToken)`` (npm @modelcontextprotocol/sdk
1.32.2 dist/esm/shared/protocol.js:452-458; the same in 1.10.2 :175-177 and 1.25.0 :403-405), so
``"1"``, ``"1.0"``, ``" 1 "`` and ``"0x1"`` reach the handler of token ``1``; PyPI mcp 2.3.0 coerces a
string id or token that ``int()`` reads to that integer for both (mcp/shared/dispatcher.py:56-67,
mcp/shared/jsonrpc_dispatcher.py:640-651); PyPI mcp 1.12.4 compares exactly
(mcp/shared/session.py:393). A value is kept as the set of every key one of them reads it as
(:func:`_keys`), and it names what was sent when the two sets meet.

:class:`References` remembers, per session mcpx saw start (its initialize), the request ids and
progress tokens each side sent. Toward a strict receiver (``mcpx_policy=strict``, the default) a
notification that names nothing of that side's is not delivered: a ``drop-message`` record, rule
``PROG-token-unknown`` or ``CANCEL-request-unknown``. Lenient: delivered, with a ``keep`` record.

Judged (``mcpx_check_references``, on by default): notifications toward the client on the answer
to a request of its (a POST's SSE stream, whose request this process read: "these messages SHOULD
relate to the originating client request", docs/specification/2025-06-18/basic/transports.mdx:116),
in a session this process saw whole: from its initialize, none of its bodies passed through unread
(a ``passthrough`` record, a body above mcpx_max_body), not bridged, and within :data:`MAX_REFS`
references a side. Not judged (delivered): the standalone GET stream and notifications toward the
server (behind replicas balanced per request another process may have carried the request they
name), and a session opened from its token (after a restart, or on another replica: this process
did not see its initialize, so it is not here; a session sealed by this process at its initialize
is judged).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

from . import revisions
from .changes import Change
from .framing import json_body

PROGRESS_RULE = "PROG-token-unknown"
CANCEL_RULE = "CANCEL-request-unknown"
#: the one request a sender that issues none may cancel: the receiver's listen (schema/2026-07-28/schema.ts:637)
LISTEN = "subscriptions/listen"
#: keys of request ids and progress tokens kept per side of a session; past it the session is no longer judged
MAX_REFS = 4096
#: sessions remembered (the oldest forgotten first: then no longer judged)
MAX_SESSIONS = 10_000

#: what JavaScript's ``Number(string)`` strips (ECMA-262 StrWhiteSpaceChar: WhiteSpace and LineTerminator)
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_JS_RADIX = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)", re.ASCII)


class _Sent:
    __slots__ = ("ids", "tokens", "listens", "complete")

    def __init__(self) -> None:
        self.ids: dict[str, set] = {"c2s": set(), "s2c": set()}
        self.tokens: dict[str, set] = {"c2s": set(), "s2c": set()}
        #: keys of the ids of the client's subscriptions/listen requests
        self.listens: set = set()
        self.complete = True


def _number(x: int | float) -> int | float | None:
    """A number as a set member: ``1`` and ``1.0`` alike (None: not finite)."""
    if isinstance(x, float):
        if x != x or x in (float("inf"), float("-inf")):
            return None
        return int(x) if x.is_integer() else x
    return x


def _keys(v: Any) -> set | None:
    """Every value a receiver's SDK may read the JSON-RPC id or progress token ``v`` as (see the module
    docstring): ``v`` itself, and for a string what ``Number(v)`` (TypeScript SDK) and ``int(v)``
    (PyPI mcp 2.x) give. None: not an id or token (a boolean, an object, an integer beyond 64 bits)."""
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        return None
    if not isinstance(v, str):
        n = _number(v)
        return set() if n is None else {n}
    keys: set = {v}
    t = v.strip(_JS_SPACE)
    if not t:
        keys.add(0)  # Number("") is 0
    elif _JS_RADIX.fullmatch(t):
        keys.add(int(t, 0))
    elif _JS_DECIMAL.fullmatch(t):
        n = _number(float(t))
        if n is not None:
            keys.add(n)
    try:
        keys.add(int(v))  # (whitespace, a sign, underscores between digits: as Python reads it)
    except ValueError:
        pass
    return keys


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
        rid = _keys(message.get("id"))
        if rid is not None:
            s.ids[direction].update(rid)
            if direction == "c2s" and message.get("method") == LISTEN:
                s.listens.update(rid)
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and "progressToken" in meta:
            token = _keys(meta["progressToken"])
            if token is None:  # a token of a type no notification can match: not judged
                s.complete = False
                return
            s.tokens[direction].update(token)
        if len(s.ids[direction]) > MAX_REFS or len(s.tokens[direction]) > MAX_REFS:
            s.complete = False

    def judge(self, session: Any, direction: str, method: str | None, message: dict, strict: bool,
              sender_rev: str | None = None) -> Change | None:
        """The record for a notification sent ``direction`` in ``session`` (a :class:`~mcpx_core.session.Session`)
        by a peer of revision ``sender_rev`` that names what its receiver cannot route (None: it names
        what was sent, or the session is not judged: bridged, not seen whole, or not seen start here,
        as one opened from its token). ``strict``: a ``drop-message`` record (the message is not
        delivered), else ``keep``."""
        if method not in ("notifications/progress", "notifications/cancelled") or session.bridge:
            return None
        s = self._sessions.get(session.uid)
        if s is None or not s.complete:
            return None
        params = message.get("params")
        if not isinstance(params, dict):
            return None
        receiver = "s2c" if direction == "c2s" else "c2s"
        sender = "server" if direction == "s2c" else "client"
        if method == "notifications/progress":
            token = _keys(params.get("progressToken"))
            if not token or token & s.tokens[receiver]:
                return None
            what, rule = f"progressToken {json_body.dumps(params['progressToken']).decode()} that no request of the receiver carried", PROGRESS_RULE
        else:
            if "requestId" not in params:
                return None
            rid = _keys(params.get("requestId"))
            if not rid:
                return None
            shown = json_body.dumps(params["requestId"]).decode()
            model = revisions.model(sender_rev) if revisions.is_known(sender_rev) else None
            if model is not None and not (model.server_requests if direction == "s2c" else model.client_requests):
                if rid & s.listens:
                    return None
                what = (f"requestId {shown} of no {LISTEN} request of the client (a {sender_rev} {sender} sends no "
                        "requests: its cancellation may only end a listen stream)")
            elif rid & s.ids[direction]:
                return None
            else:
                what = f"requestId {shown} of no request the {sender} sent"
            rule = CANCEL_RULE
        if strict:
            return Change(pointer="", action="drop-message", rule=rule, before=None,
                          detail=f"{method} names a {what}: not delivered (mcpx_policy=strict)")
        return Change(pointer="", action="keep", rule=rule, detail=f"{method} names a {what}: delivered (mcpx_policy=lenient)")
