"""mcpx as small mitmproxy addons sharing one :class:`~.state.State` (as ``default_addons()``
composes mitmproxy): options, client requests, authorization discovery (OAuth across revisions), server responses, commands, session expiry,
the framing of streamed request bodies for HTTP/1.1 servers.

:class:`MCPX` holds them as sub-addons (mitmproxy registers an addon's ``addons`` attribute too),
so ``addon/mcpx.py`` loads one object and ``ctx.master.addons.get("mcpx").state`` reaches the state.
"""

from __future__ import annotations

from .authorization import Authorization
from .commands import Commands
from .drain import Drain
from .expiry import Expiry
from .metrics import MetricsEnd, MetricsStart
from .options import Options
from .requests import ClientRequests
from .responses import ServerResponses
from .state import State
from .transport import TransportRequests, TransportResponses
from .upstream_sse import UpstreamSse


def default_addons(state: State) -> list:
    """The addons of one mcpx, sharing ``state``. The metrics hooks come before and after the others
    (they time them); the drain tracks every flow; the transport's hooks come before the client
    requests' and after the server responses' (addons/transport.py); the upstream HTTP+SSE
    transport's after the client requests' and before the server responses' (addons/upstream_sse.py)."""
    drain = Drain(state)
    start = MetricsStart(state, drain)
    return [Options(state), start, drain, TransportRequests(state), ClientRequests(state), Authorization(state),
            UpstreamSse(state), ServerResponses(state), TransportResponses(state), Commands(state), Expiry(state), state.framing, MetricsEnd(start)]


class MCPX:
    """One mcpx: :func:`default_addons` over one new :class:`State`."""

    name = "mcpx"

    def __init__(self) -> None:
        self.state = State()
        self.addons = default_addons(self.state)


__all__ = ["MCPX", "default_addons", "State", "Options", "ClientRequests", "ServerResponses", "Commands", "Expiry", "Authorization",
           "Drain", "MetricsStart", "MetricsEnd"]
