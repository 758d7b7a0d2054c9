"""Draining on SIGTERM: a rolling restart loses no call (``mcpx_drain_grace``).

mitmdump stops at once on SIGTERM (``mitmproxy/tools/main.py`` hands it to ``Master.shutdown``):
every request in flight, an SSE answer that still streams among them, is cut. With a grace period
(default 30 s) this addon takes SIGTERM over once mitmproxy runs, and:

1. marks mcpx as draining: ``/healthz`` on ``mcpx_metrics`` answers 503, so a balancer's health
   check takes the replica out (HAProxy: ``option httpchk GET /healthz``, ``deploy/haproxy.cfg``);
2. closes mitmproxy's listeners (each server instance of the ``proxyserver`` addon is stopped:
   the listening sockets close, the open connections stay), so a new connection is refused and a
   balancer retries it on another replica; each answer then says ``Connection: close`` (HTTP/1.1),
   so an idle connection does not take another request;
3. waits until every client request in flight has its answer ended (a JSON body, an SSE answer to
   a POST; a GET stream is not waited for: it ends with the process and its client reopens it),
   then calls ``Master.shutdown``; when the grace period is over first, it exits all the same and
   says how many were still in flight.

A second SIGTERM (or SIGINT, which mitmproxy keeps) exits at once. ``mcpx_drain_grace=0`` keeps
mitmproxy's own behaviour.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time

from mitmproxy import ctx, http

from .. import upstream
from .state import State

logger = logging.getLogger("mcpx")

#: how often the drain looks at what is still in flight, seconds
POLL = 0.1


class Drain:
    """Tracks the client requests in flight; drains on SIGTERM."""

    name = "mcpx.drain"

    def __init__(self, state: State) -> None:
        self.state = state
        #: client flows whose answer has not ended: flow id -> HTTP method
        self.inflight: dict[str, str] = {}
        self._task: asyncio.Task | None = None

    def waited_for(self) -> int:
        """Requests a drain waits for: those in flight but GET streams."""
        return sum(1 for m in self.inflight.values() if m != "GET")

    def running(self) -> None:
        if not type(ctx.master).__module__.startswith("mitmproxy.tools."):
            return  # not mitmdump, mitmweb or the console (a test's master): signals stay the process's
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self.sigterm)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no such signals
            logger.debug("mcpx: SIGTERM not taken over: mitmproxy's own handling stays")

    def sigterm(self) -> None:
        grace = self.state.settings.drain_grace
        if self.state.draining or grace <= 0:
            if self.state.draining:
                logger.info("mcpx: SIGTERM again while draining: exiting now")
            ctx.master.shutdown()
            return
        self._task = asyncio.get_running_loop().create_task(self.drain(grace))

    async def drain(self, grace: float) -> None:
        st = self.state
        st.draining = True
        deadline = time.monotonic() + grace
        closed = await self._close_listeners()
        logger.info(f"mcpx: SIGTERM: draining: {closed} listener(s) closed, /healthz answers 503; "
                    f"{self.waited_for()} request(s) in flight, exiting when they end or in {grace:g}s")
        while self.waited_for() and time.monotonic() < deadline:
            await asyncio.sleep(POLL)
        left = self.waited_for()
        if left:
            logger.warning(f"mcpx: drain grace period over with {left} request(s) still in flight: exiting")
        else:
            await asyncio.sleep(POLL)  # the last answer's final bytes leave first
            logger.info("mcpx: drained: exiting")
        ctx.master.shutdown()

    async def _close_listeners(self) -> int:
        ps = ctx.master.addons.get("proxyserver")
        closed = 0
        for inst in list(getattr(ps, "servers", ()) or ()):
            if inst.is_running:
                try:
                    await inst.stop()
                    closed += 1
                except Exception as e:  # one that does not stop must not keep mcpx from draining
                    logger.warning(f"mcpx: could not close {inst.mode.description}: {e}")
        return closed

    # -- what is in flight ------------------------------------------------------------------------
    def requestheaders(self, flow: http.HTTPFlow) -> None:
        if flow.live and not upstream.is_own(flow):
            self.inflight[flow.id] = flow.request.method

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if self.state.draining and flow.response is not None and flow.response.http_version == "HTTP/1.1" \
                and not upstream.is_own(flow):
            flow.response.headers["connection"] = "close"

    def response(self, flow: http.HTTPFlow) -> None:
        self.inflight.pop(flow.id, None)

    def error(self, flow: http.HTTPFlow) -> None:
        self.inflight.pop(flow.id, None)
