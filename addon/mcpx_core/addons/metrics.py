"""The hooks that feed :mod:`mcpx_core.metrics` (``mcpx_metrics=HOST:PORT``; off by default).

Two addons around mcpx's own: :class:`MetricsStart` runs before the request and response hooks,
:class:`MetricsEnd` after them (mitmproxy calls the addons of a chain in order, and awaits each), so
the time between them is the time mcpx adds to that message; an SSE answer's chunks are timed one by
one (its ``flow.response.stream`` function wrapped). MetricsStart also starts and stops the server of
``/metrics`` and ``/healthz`` and connects the record and message sinks; MetricsEnd counts what mcpx
decided: requests a bridge served, mcpx's own requests, error answers it wrote itself.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict

from mitmproxy import http

from .. import upstream
from .drain import Drain
from .state import State

logger = logging.getLogger("mcpx")

#: client flows a bridge served, remembered to name the bridge of mcpx's own requests for them
BRIDGED_KEPT = 10000


class MetricsStart:
    name = "mcpx.metrics"

    def __init__(self, state: State, drain: Drain) -> None:
        self.state = state
        self.drain = drain
        self.server = None  # a mcpx_core.metrics.Server while mcpx_metrics is set
        self.started: dict[str, float] = {}

    def configure(self, updated: set[str]) -> None:
        st = self.state
        if "mcpx_metrics" not in updated:
            return
        address = st.settings.metrics
        if self.server is not None and self.server.address == address:
            return
        self.done()
        if not address:
            return
        from ..metrics import Metrics, Server  # prometheus-client is imported only when metrics are on
        if st.metrics is None:
            st.metrics = Metrics(st.tracker)
            st.metrics.inflight.set_function(self.drain.waited_for)
            st.metrics.draining.set_function(lambda: 1 if st.draining else 0)
        try:
            self.server = Server(st.metrics, address, lambda: st.draining)
        except OSError as e:
            from .options import fail
            from ..settings import OptionError
            fail(OptionError("mcpx_metrics", address, f"cannot listen there ({e.strerror or e})"))
            return
        st.rewriter.on_message = st.metrics.message
        logger.info(f"mcpx: metrics at http://{address}/metrics, health at http://{address}/healthz")

    def done(self) -> None:
        st = self.state
        if self.server is not None:
            self.server.close()
            self.server = None
            st.rewriter.on_message = None
            st.metrics = None

    def request(self, flow: http.HTTPFlow) -> None:
        if self.state.metrics is not None:
            self.started[flow.id] = time.perf_counter()

    def response(self, flow: http.HTTPFlow) -> None:
        m = self.state.metrics
        if m is None:
            return
        self.started[flow.id] = time.perf_counter()
        exch = self.state.exchanges.get(flow.id)
        if exch is not None and exch.answered and flow.response is not None and flow.response.status_code >= 400:
            m.errors.labels(str(flow.response.status_code)).inc()

    def error(self, flow: http.HTTPFlow) -> None:
        self.started.pop(flow.id, None)


class MetricsEnd:
    name = "mcpx.metrics.end"

    def __init__(self, start: MetricsStart) -> None:
        self.start = start
        self.state = start.state
        self.bridged: OrderedDict[str, str] = OrderedDict()
        self.state.on_bridge = self.bridged_request

    def _took(self, flow: http.HTTPFlow, stage: str) -> None:
        t0 = self.start.started.pop(flow.id, None)
        m = self.state.metrics
        if t0 is not None and m is not None and not upstream.is_own(flow):
            m.added.labels(stage).observe(time.perf_counter() - t0)

    def request(self, flow: http.HTTPFlow) -> None:
        m = self.state.metrics
        if m is None:
            return
        if flow.response is not None:  # answered in the hook: the time includes mcpx's own round trips, if any
            self.start.started.pop(flow.id, None)
        self._took(flow, "request")
        if upstream.is_own(flow):
            parent = (flow.metadata.get("mcpx") or {}).get("for_flow")
            m.round_trips.labels(self._bridge_of(parent) or "none").inc()
            return

    def bridged_request(self, flow: http.HTTPFlow, name: str) -> None:
        """A client request handed to bridge ``name`` (:attr:`State.on_bridge`)."""
        m = self.state.metrics
        if m is None:
            return
        m.bridged.labels(name).inc()
        self.bridged[flow.id] = name
        if len(self.bridged) > BRIDGED_KEPT:
            self.bridged.popitem(last=False)

    def _bridge_of(self, flow_id: str | None) -> str:
        exch = self.state.exchanges.get(flow_id or "")
        if exch is not None and exch.session is not None and exch.session.bridge:
            return exch.session.bridge
        return self.bridged.get(flow_id or "", "")

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        m = self.state.metrics
        if m is None or flow.response is None or not callable(flow.response.stream) or upstream.is_own(flow):
            return
        inner, hist = flow.response.stream, m.added.labels("sse")

        def timed(chunk: bytes):
            t0 = time.perf_counter()
            out = inner(chunk)
            hist.observe(time.perf_counter() - t0)
            return out
        flow.response.stream = timed

    def response(self, flow: http.HTTPFlow) -> None:
        if self.state.metrics is not None:
            self._took(flow, "response")
