"""The rewriter the mitmproxy addon calls: :class:`Rewriter`, its parts put together (requests
:mod:`.leg`, JSON responses :mod:`.responses`, SSE :mod:`.sse`, the rule pass :mod:`.message`)."""

from __future__ import annotations

from typing import Any, Callable

from .. import profiles
from ..bridge.era import EraCache
from ..changes import Change
from ..session import SessionTracker
from .exchange import Exchange
from .leg import RequestLeg
from .message import Rules
from .responses import Responses
from .sse import SSEEvents


class Rewriter(RequestLeg, Responses, SSEEvents, Rules):
    """Rewrites bodies for a :class:`SessionTracker`; ``policy`` is "strict" or "lenient".

    ``profiles``: the host profiles in force (:class:`~mcpx_core.profiles.ProfileSet`; none by
    default); ``audit``: run the dual-result audit on tool results (:mod:`mcpx_core.audit`);
    ``repair``: run the repair stage after the downgrade (:mod:`mcpx_core.repair`)."""

    def __init__(self, tracker: SessionTracker | None = None, policy: str = "strict", options: dict | None = None,
                 on_changes: Callable[[Exchange, list[Change]], None] | None = None,
                 on_reply: Callable[[Exchange, dict], None] | None = None,
                 profile_set: profiles.ProfileSet | None = None, audit_results: bool = True,
                 repair: bool = True):
        Rules.__init__(self, policy, options, on_changes, on_reply, profile_set, audit_results, repair)
        self.tracker = tracker if tracker is not None else SessionTracker()  # an empty tracker is falsy (__len__)
        #: which era each upstream speaks (bridge/era.py)
        self.era = EraCache()
        #: names of the bridges that answer every client POST body themselves and record what they did
        #: with it (a body that does not parse, or holds no JSON-RPC message, included; their class says
        #: ``records_every_body``): the records :meth:`request` holds for such a body are not logged for
        #: their sessions (it never reaches the server as it is)
        self.self_recording: frozenset[str] = frozenset()
        #: called with the exchange of an SSE stream that carries a priming event (an ``id`` and
        #: empty data, 2025-11-25 basic/transports.mdx:107): its server uses SSE polling
        self.on_priming: Callable[[Exchange], None] | None = None
        #: whether a JSON-RPC id is that of a server->client request a bridge holds for a session (mcpx
        #: minted it): a POST without a session token that answers one is answered 400, reaching nobody
        self.held_id: Callable[[Any], bool] = lambda _id: False
