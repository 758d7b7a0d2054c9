"""Forget idle sessions (``mcpx_session_ttl``) while no new ones arrive, too; end the idle upstream
sessions bridges keep (``expire_idle``: the client2026 bridge sends their DELETE)."""

from __future__ import annotations

import asyncio
import logging

from .state import State

logger = logging.getLogger("mcpx")


class Expiry:
    name = "mcpx.expiry"

    def __init__(self, state: State) -> None:
        self.state = state
        self._task: asyncio.Task | None = None

    def running(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (tests driving the hooks directly)
            return
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._expire())

    async def _expire(self) -> None:
        tracker = self.state.tracker
        while True:
            await asyncio.sleep(max(0.5, min(tracker.ttl / 2, 60)))
            n = tracker.expire()
            if n:
                logger.info(f"mcpx: {n} idle sessions left memory, {len(tracker)} remain (a sealed one is opened again from its token)")
            for bridge in self.state.bridges.values():
                expire_idle = getattr(bridge, "expire_idle", None)
                if expire_idle is not None:  # upstream sessions a bridge keeps (client2026): ended on the server too
                    try:
                        expire_idle(tracker.ttl)
                    except Exception as e:  # never end the loop
                        logger.warning(f"mcpx: expiring a bridge's upstream sessions failed: {type(e).__name__}: {e}")
            try:  # the upstream HTTP+SSE streams of idle client sessions (transport/upstream_sse/)
                self.state.upstream_sse.expire_idle(tracker.ttl)
            except Exception as e:
                logger.warning(f"mcpx: expiring upstream HTTP+SSE streams failed: {type(e).__name__}: {e}")

    def done(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        for bridge in self.state.bridges.values():
            closing = getattr(bridge, "closing", None)
            if closing is not None:
                closing()  # end the streams bridges keep open (listen streams, stream endpoint)
        self.state.upstream_sse.stop()
        if self.state.log_file:
            self.state.log_file.close()
        self.state.answers.stop()
