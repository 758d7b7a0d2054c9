"""Metrics and health: what mcpx did, as Prometheus counters, and whether it serves (``mcpx_metrics``).

One :class:`Metrics` per mcpx, fed from the stages' existing outputs only:

- the record sink (:meth:`Metrics.changes`, called with every batch of :class:`~mcpx_core.changes.Change`
  records the rewriter emits, next to the JSON Lines log): change records by action and rule,
  passthroughs by reason;
- the rewriter's message entries (:meth:`Metrics.message`, the entry every message gets on
  ``flow.metadata["mcpx"]["messages"]``): messages by direction, method and revision pair;
- the hooks (:mod:`mcpx_core.addons.metrics`): bridged calls and mcpx's own round trips by bridge,
  errors answered by mcpx, the time mcpx adds, the requests in flight;
- the session tracker, read at each scrape: sessions live, opened, reopened from a token.

Labels are bounded: a method outside every revision's schema is ``other``, a revision outside
:data:`~mcpx_core.revisions.REVISIONS` is ``unknown``, a passthrough's reason is one of
:data:`REASONS`, and at most :data:`MAX_RULES` rule names are told apart (rule names are ids of the
code and of ``revision-delta.json``). No label carries a session id, a JSON-RPC id, a tool name or
argument, a header or a credential.

:class:`Server` serves ``/metrics`` (Prometheus text exposition format 0.0.4, from PyPI
``prometheus-client``) and ``/healthz`` (``200 serving``, ``503 draining``) on ``HOST:PORT`` in a
thread of its own, so a scrape never waits for mitmproxy's event loop.
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
from collections.abc import Callable, Iterable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from socketserver import ThreadingMixIn

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from . import revisions
from .changes import Change

logger = logging.getLogger("mcpx")

#: distinct rule names told apart; any further one is counted as ``other``
MAX_RULES = 1000
#: a passthrough record's reason (its ``detail``), by the first pattern it contains; else ``other``
REASONS: tuple[tuple[str, str], ...] = (
    ("exceeds mcpx_max_body", "too-large"),
    ("streamed by mitmproxy", "streamed"),
    ("could not be reached", "server-unreachable"),
    ("internal error", "internal-error"),
    ("failed:", "internal-error"),
    ("decod", "undecodable"),
    ("encoding", "undecodable"),
    ("not UTF-8", "undecodable"),
    ("pars", "unparsable"),
    ("JSON", "unparsable"),
    ("bridge", "bridge"),
    ("seal", "not-sealed"),
    ("session", "session"),
    ("not sent", "not-sent"),
)
#: seconds buckets of the time mcpx adds to one HTTP message (a request, a response, an SSE chunk)
BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, float("inf"))


@functools.cache
def known_methods() -> frozenset[str]:
    """Every method a request or notification of any revision's schema names."""
    out: set[str] = set()
    for rev in revisions.REVISIONS:
        m = revisions.model(rev)
        out.update(m.requests, m.notifications)
    return frozenset(out)


def method_label(method: object) -> str:
    """A method as a label: itself when some revision defines it, ``none`` for a message without one
    (a result or error whose request mcpx did not see), else ``other``."""
    if method is None:
        return "none"
    return method if isinstance(method, str) and method in known_methods() else "other"


def revision_label(rev: str | None) -> str:
    return rev if revisions.is_known(rev) else "unknown"


def reason_label(detail: str | None) -> str:
    """The class of a passthrough's reason (:data:`REASONS`)."""
    text = detail or ""
    return next((label for pattern, label in REASONS if pattern in text), "other")


class _Tracker:
    """Collector of the session tracker's figures, read at each scrape."""

    def __init__(self, tracker) -> None:
        self.tracker = tracker

    def collect(self) -> Iterable:
        t = self.tracker
        yield GaugeMetricFamily("mcpx_sessions_live", "Sessions in memory.", value=len(t))
        yield CounterMetricFamily("mcpx_sessions_opened", "Sessions started by an initialize.", value=t.opened)
        yield CounterMetricFamily("mcpx_sessions_reopened", "Sessions opened again from a sealed token not in memory.",
                                  value=t.reopened)


class Metrics:
    """mcpx's counters, in a registry of their own (not the process-wide default one)."""

    def __init__(self, tracker=None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.messages = Counter("mcpx_messages", "JSON-RPC messages mcpx read, by direction, method and revision pair.",
                                ["direction", "method", "from_revision", "to_revision"], registry=r)
        self.records = Counter("mcpx_change_records", "Change records, by action and rule.", ["action", "rule"], registry=r)
        self.passthroughs = Counter("mcpx_passthroughs", "Bodies or messages forwarded untouched, by reason.", ["reason"], registry=r)
        self.bridged = Counter("mcpx_bridged_requests", "Client requests a bridge served, by bridge.", ["bridge"], registry=r)
        self.round_trips = Counter("mcpx_own_requests", "Requests mcpx sent upstream itself, by the bridge of the session "
                                   "they serve (none: not a bridge's).", ["bridge"], registry=r)
        self.errors = Counter("mcpx_errors_answered", "Error answers mcpx wrote itself (HTTP status >= 400), by status.",
                              ["status"], registry=r)
        self.added = Histogram("mcpx_added_seconds", "Time mcpx adds to one HTTP message: its request and response hooks, "
                               "each SSE chunk it rewrites.", ["stage"], buckets=BUCKETS, registry=r)
        self.inflight = Gauge("mcpx_requests_in_flight", "Client requests whose answer has not ended.", registry=r)
        self.draining = Gauge("mcpx_draining", "1 while mcpx drains before it exits (SIGTERM), else 0.", registry=r)
        self._rules: set[str] = set()
        if tracker is not None:
            r.register(_Tracker(tracker))

    # -- sinks ------------------------------------------------------------------------------------
    def message(self, entry: dict, from_rev: str | None, to_rev: str | None) -> None:
        """One message the rewriter read (its entry on the flow: direction, kind, method, id)."""
        self.messages.labels(entry.get("direction") or "", method_label(entry.get("method")),
                             revision_label(from_rev), revision_label(to_rev)).inc()

    def changes(self, changes: Iterable[Change]) -> None:
        """A batch of stamped change records (the record sink)."""
        for c in changes:
            rule = c.rule
            if rule not in self._rules:
                if len(self._rules) >= MAX_RULES:
                    rule = "other"
                else:
                    self._rules.add(rule)
            self.records.labels(c.action, rule).inc()
            if c.action == "passthrough":
                self.passthroughs.labels(reason_label(c.detail)).inc()


class _Threading(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Threading6(_Threading):
    address_family = socket.AF_INET6


class _Quiet(WSGIRequestHandler):
    def log_message(self, format, *args) -> None:  # noqa: A002 (the base class's name)
        pass


class Server:
    """``/metrics`` and ``/healthz`` on ``address`` (``HOST:PORT``), in a daemon thread.

    ``draining()``: whether mcpx is draining (``/healthz`` then answers 503)."""

    def __init__(self, metrics: Metrics, address: str, draining: Callable[[], bool]) -> None:
        host, _, port = address.rpartition(":")
        self.address = address
        self._draining = draining
        self._scrape = make_wsgi_app(metrics.registry)
        host = host.strip("[]")
        server = _Threading6 if ":" in host else _Threading  # [::1]:9090
        self.httpd = make_server(host, int(port), self._app, server_class=server, handler_class=_Quiet)
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="mcpx-metrics", daemon=True)
        self.thread.start()

    def _app(self, environ, start_response):
        if environ.get("PATH_INFO") == "/healthz":
            draining = self._draining()
            start_response("503 Service Unavailable" if draining else "200 OK",
                           [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store")])
            return [b"draining\n" if draining else b"serving\n"]
        return self._scrape(environ, start_response)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
