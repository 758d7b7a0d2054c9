"""The state mcpx's small addons share (one object, made by :func:`mcpx_core.addons.default_addons`).

It holds the session tracker, the rewriter (framing -> session -> downgrade -> records), the
sender of mcpx's own requests, the per-flow exchanges and SSE streams, and the change sink: the
JSON Lines log, mitmproxy's event log and ``flow.metadata["mcpx"]``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

from mitmproxy import http

from .. import profiles, revisions, upstream
from .. import flowlist
from ..identity import credentials_key
from ..terminal import install as install_escapes, printable
from ..auth import Discovery
from ..bridge.client2026 import Client2026Bridge
from ..bridge.legacy_client import LegacyClientBridge
from ..bridge.resume import Resumer
from ..bridge.stream import AnswerStreams
from ..transport.http_sse.serve import HttpSseTransport
from ..transport.upstream_sse.serve import UpstreamSseTransport
from ..changes import Change, ChangeLog, flow_summary, revisions_known, summary_line
from ..framing import json_body
from ..rewrite import Exchange, Rewriter, SSERewriter
from ..settings import Settings
from .framing import UpstreamFraming
from .worker import Worker
from ..session import SESSION_HEADER, VERSION_HEADER, Session, SessionTracker

logger = logging.getLogger("mcpx")


def origin_of(flow: http.HTTPFlow) -> str:
    """The server's origin of a flow, ``scheme://host:port`` (era verdicts are kept per origin)."""
    r = flow.request
    return f"{r.scheme}://{r.host}:{r.port}"


#: client request headers a bridge's request never copies: mcpx sets them itself, or the server's era has none
_BRIDGE_MANAGED = frozenset({"mcp-session-id", "mcp-protocol-version", "mcp-method", "mcp-name", "last-event-id",
                             "content-type", "accept", "host", "x-mcpx-stream"})


class FlowUpstream:
    """:class:`mcpx_core.bridge.Upstream` for one flow: mcpx's own requests to that flow's server,
    on the client's behalf (its credentials, same origin), through :class:`upstream.Sender`.

    The server's URL and ``Host`` are taken when it is made: a bridge may redirect the flow itself
    to mcpx's stream endpoint (:mod:`mcpx_core.bridge.stream`) and still send upstream for it."""

    def __init__(self, sender: upstream.Sender, flow: http.HTTPFlow):
        self.sender, self.flow = sender, flow
        self.url = flow.request.url
        self.host = flow.request.headers.get("host")
        self._copied: dict[str, str] | None = None

    def live(self) -> bool:
        """Whether requests can still be sent for this flow."""
        return self.sender.available(self.flow)

    async def send(self, body: bytes, headers: dict[str, str], purpose: str, *, method: str = "POST",
                   on_chunk=None, stop=None, timeout: float = 600.0, client_headers: bool = False, detached: bool = False,
                   on_broken=None, idle: bool = False, on_undecodable=None):
        """``client_headers``: also the client's other end-to-end headers (a custom API key, say),
        but never its MCP session and routing headers. ``detached``: the flow may have ended
        (:meth:`upstream.Sender.available`); ``on_broken``, ``idle``, ``on_undecodable``: as :meth:`upstream.Sender.send`'s. A
        request other than a POST and without a body (the GET that resumes a call's stream, a
        listen's GET, a DELETE) has no ``Content-Type``."""
        from ..bridge import Reply
        out = self.sender.headers_for(self.flow, headers, on_behalf=True)
        if method != "POST" and not body and "content-type" not in {k.lower() for k in headers}:
            out.pop("content-type", None)
        if self.host:
            out["host"] = self.host
        if client_headers:
            if self._copied is None:
                self._copied = {k: v for k, v in self.sender.copy_headers(self.flow).items()
                                if k not in _BRIDGE_MANAGED and not k.startswith("mcp-param-")}
            for k, v in self._copied.items():
                out.setdefault(k, v)
        r = await self.sender.send(self.flow, method, body, out, purpose, timeout=timeout, on_chunk=on_chunk, stop=stop, url=self.url,
                                   detached=detached, on_broken=on_broken, idle=idle,
                                   on_undecodable=on_undecodable)
        return Reply(r.status, r.headers, r.body, r.flow.id, r.undecoded)

    def abort(self, flow_id: str) -> None:
        self.sender.abort(flow_id)

CLOSED_KEPT = 1000  # ended sessions kept for the mcpx.sessions / mcpx.report commands


class State:
    """Everything mcpx's addons share. Options land here from :class:`~.options.Options`."""

    def __init__(self) -> None:
        install_escapes()  # every line mcpx logs shows wire values as escapes (terminal.py)
        self.tracker = SessionTracker()
        # the shipped host profiles, as the options' defaults give them (mcpx_profiles, mcpx_profile unset)
        self.rewriter = Rewriter(self.tracker, on_changes=self.on_changes, on_reply=self.on_reply,
                                 profile_set=profiles.ProfileSet.build())
        self.sender = upstream.Sender()
        #: the cross-era bridges by name (mcpx_core/bridge), each ``async request(exch, messages,
        #: headers, upstream) -> Answer | Pass``
        #: streams mcpx writes to clients over time (bridge/stream.py)
        self.answers = AnswerStreams()
        self.bridges: dict[str, Any] = {Client2026Bridge.name: Client2026Bridge(self.rewriter, self.answers)}
        self.bridges[LegacyClientBridge.name] = legacy = LegacyClientBridge(self)
        self.rewriter.held_id = legacy.holds
        self.rewriter.self_recording = frozenset(n for n, b in self.bridges.items() if getattr(b, "records_every_body", False))
        #: SSE polling for clients older than 2025-11-25 (bridge/resume.py, mcpx_sse_resume); it learns
        #: which servers poll from the priming events the SSE rewriting sees
        self.resume = Resumer(self.rewriter, self.sender, self.answers)
        self.rewriter.on_priming = self.resume.learn
        #: the 2024-11-05 HTTP+SSE transport for clients of Streamable-HTTP-only servers (transport/http_sse/)
        self.transport = HttpSseTransport(self)
        #: Streamable HTTP clients of an HTTP+SSE-only server (transport/upstream_sse/)
        self.upstream_sse = UpstreamSseTransport(self)
        #: frames a streamed request body of unknown length for an HTTP/1.1 server (an addon too)
        self.framing = UpstreamFraming()
        #: OAuth discovery across revisions (mcpx_core/auth), its documents cached per URL
        self.auth = Discovery()
        #: rewrites large bodies off the event loop (worker.py)
        self.worker = Worker()
        self.log_file: ChangeLog | None = None
        self.exchanges: dict[str, Exchange] = {}
        self.streams: dict[str, SSERewriter] = {}
        #: live flows in progress, by id: the flow an answer on the client's behalf is sent for
        self.flows: dict[str, http.HTTPFlow] = {}
        self.tasks: set[asyncio.Task] = set()
        #: sessions the client ended (HTTP DELETE), newest last, still listed by mcpx.sessions / mcpx.report
        self.closed: deque[Session] = deque(maxlen=CLOSED_KEPT)
        #: the parsed mcpx_* options (:class:`~mcpx_core.settings.Settings`), set by the Options addon
        self.settings = Settings()
        # mcpx_max_body and mcpx_keep_original in bytes, read on every flow (ctx.options copies each value)
        self.max_body = self.settings.max_body
        self.keep_original = self.settings.keep_original
        self.sender.max_body = self.max_body
        #: write every change record to mitmproxy's log (debug level, one entry per message): set by
        #: ``mcpx_record_lines``, or by mitmproxy's own termlog_verbosity / console_eventlog_verbosity "debug"
        self.record_lines = False
        #: SIGTERM came and mcpx drains before it exits (addons/drain.py): /healthz answers 503
        self.draining = False
        #: the counters of mcpx_metrics (:class:`~mcpx_core.metrics.Metrics`), None while it is off
        self.metrics: Any = None
        #: told of each client request handed to a bridge, with the bridge's name (addons/metrics.py)
        self.on_bridge: Any = lambda flow, name: None
        self.sinks_changed()

    def sinks_changed(self) -> None:
        """Tell the rewriter whether every record is read (the JSON Lines log, record lines): if not,
        records past the flow's kept ones (:data:`~mcpx_core.rewrite.FLOW_KEEP_MAX`) are only
        counted, and their before/after summaries are never made."""
        self.rewriter.summarize_all = bool(self.log_file is not None and self.log_file.active) or self.record_lines

    # -- per flow -----------------------------------------------------------------------------
    def exchange(self, flow: http.HTTPFlow) -> Exchange:
        """A new :class:`Exchange` for ``flow`` (fallback session keys: its connection, its host)."""
        if flow.live:  # answers on the client's behalf are sent for it; offline flows get none
            self.flows[flow.id] = flow
        peer = flow.client_conn.peername
        origin = origin_of(flow)
        exch = Exchange(flow_id=flow.id, client_keys=(f"conn:{peer[0]}:{peer[1]}", f"host:{peer[0]}") if peer else (),
                        origin=origin, endpoint=origin + flow.request.path.split("?", 1)[0],
                        credentials=credentials_key(flow.request.headers.items(multi=True)), target=origin + flow.request.path)
        self.exchanges[flow.id] = exch
        return exch

    def forget(self, flow: http.HTTPFlow, live: bool = False) -> tuple[Exchange | None, SSERewriter | None]:
        """Drop the per-flow state of ``flow``; returns what was kept. ``live``: the flow stays
        known as live (answers on the client's behalf can still be sent for it, :meth:`on_reply`)
        until :meth:`done`."""
        if not live:
            self.flows.pop(flow.id, None)
        self.answers.forget(flow)
        return self.exchanges.pop(flow.id, None), self.streams.pop(flow.id, None)

    def done(self, flow: http.HTTPFlow) -> None:
        """The end of :meth:`forget` with ``live``."""
        self.flows.pop(flow.id, None)

    def keep_body(self, flow: http.HTTPFlow, side: str, body: bytes) -> None:
        """Keep up to ``mcpx_keep_original`` bytes of an original body on the flow (the views)."""
        limit = self.keep_original
        if not limit:
            return
        meta = flow.metadata.setdefault("mcpx", {})
        meta[f"original_{side}"] = body[:limit].decode("utf-8", "replace")
        if len(body) > limit:
            meta[f"original_{side}_truncated"] = len(body)

    # -- records ------------------------------------------------------------------------------
    def on_changes(self, exch: Exchange, changes: list[Change]) -> None:
        """The change sink: the JSON Lines log, one summary line per message in mitmproxy's log, and
        (:attr:`record_lines`) one debug entry per message that lists its records.

        Under mitmproxy the root logger is at DEBUG (its handlers filter), and every log record is
        also dispatched to every addon's ``add_log`` hook: a debug entry per record would cost tens
        of microseconds per change even when no handler shows it."""
        if self.metrics is not None:
            self.metrics.changes(changes)
        if self.log_file:
            try:
                self.log_file.write(changes)
            except OSError as e:
                logger.error(f"mcpx: cannot write change log: {e}")
        first = changes[0]
        method = printable(first.method or "", 120)
        where = f"{first.direction} {method} id={printable(first.jsonrpc_id, 120)}" if first.jsonrpc_id is not None \
            else f"{first.direction} {method}"
        level = logging.WARNING if any(c.action == "passthrough" for c in changes) else logging.INFO
        by_action: dict[str, set[str]] = {}
        for c in changes:
            by_action.setdefault(c.action, set()).add(c.rule)
        rules = "; ".join(f"{a}: {', '.join(sorted(r))}" for a, r in by_action.items())
        logger.log(level, f"mcpx: {where.strip()} {revisions_known(first)}: {summary_line(changes, None)} ({rules})")
        if self.record_lines and logger.isEnabledFor(logging.DEBUG):
            # several lines of mcpx's own: the escape filter (terminal.py) escapes each line, not the newlines
            # (each record's line escaped first: a newline inside a pointer or value stays an escape)
            logger.debug("\n".join(f"mcpx:   {printable(c.line())}" for c in changes), extra={"mcpx_lines": True})

    def annotate(self, flow: http.HTTPFlow, exch: Exchange) -> None:
        """Store what mcpx saw and did on ``flow.metadata["mcpx"]``, the flow's comment and mark."""
        if not exch.is_mcp:
            return
        meta = flow.metadata.setdefault("mcpx", {})
        s = exch.session
        meta["session"] = s.key if s else None
        meta["client_revision"], meta["server_revision"] = (s.client_leg, s.server_rev) if s else (None, None)
        meta["client_info"], meta["server_info"] = (s.client_info, s.server_info) if s else (None, None)
        if s is not None and s.profile is not None:
            meta["profile"] = s.profile  # the client's host profile (mcpx_core.profiles)
        meta["messages"] = exch.messages
        kept = meta.get("changes")
        if not isinstance(kept, list) or len(kept) > len(exch.changes):
            kept = meta["changes"] = []
        kept.extend(c.as_dict() for c in exch.changes[len(kept):])  # records are only appended
        if exch.messages_omitted or exch.changes_omitted:  # a long stream: the rest are only in the change log
            meta["messages_omitted"], meta["changes_omitted"] = exch.messages_omitted, exch.changes_omitted
        if exch.replies:
            meta["replies"] = exch.replies
        if exch.answered_by:
            meta["answered_by"] = exch.answered_by
        if exch.relayed:
            meta["relayed"] = exch.relayed
        # the flow list (flowlist.py): what the flow carries, its revisions, what mcpx did; one mark
        method = flow.request.method
        what = exch.carries or (flowlist.streamed(exch.messages) if method == "GET" else method if method != "POST" else "")
        did = "; ".join(([f"answered by mcpx ({exch.answered_by})"] if exch.answered_by else []) +
                        ([exch.relayed] if exch.relayed else []) + ([flow_summary(exch.changes)] if exch.changes else []))
        flow.comment = flowlist.comment(what, flowlist.revisions_of(meta["client_revision"], meta["server_revision"]), did)
        if (legs := flowlist.transports(meta)):
            flow.comment = f"{flow.comment} · {legs}" if flow.comment else f"mcpx: {legs}"
        answered = bool(exch.answered or exch.answered_by)
        flow.marked = flowlist.mark({c.action for c in exch.changes}, answered,
                                    flow.response is not None and flow.response.status_code >= 400,
                                    bool((s is not None and s.bridge) or exch.relayed)) or flow.marked

    # -- answers on the client's behalf ---------------------------------------------------------
    def on_reply(self, exch: Exchange, reply: dict) -> None:
        """Answer a server request the client's revision cannot receive, on the client's behalf
        (sent at once: the server waits for it); offline, only kept on the flow. Called from the
        worker thread (a large body, :mod:`.worker`), it runs on the event loop instead."""
        if self.worker.on_loop(self.on_reply, exch, reply):
            return
        flow = self.flows.get(exch.flow_id or "")
        if flow is None or not self.sender.available(flow):
            exch.replies.append(reply)
            logger.info(f"mcpx: not sent (flow is not live): answer to server request id={reply.get('id')!r}"
                        f" with error {(reply.get('error') or {}).get('code')}")
            return
        task = asyncio.get_running_loop().create_task(self._send_reply(flow, exch, reply))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _send_reply(self, flow: http.HTTPFlow, exch: Exchange, reply: dict) -> None:
        s = exch.session
        extra: dict[str, str] = {}
        if s is not None and s.upstream_id:
            extra[SESSION_HEADER] = s.upstream_id
        elif s is not None and not s.sealed and s.key and not s.key.startswith(("conn:", "host:", "flow:", "(")):
            extra[SESSION_HEADER] = s.key  # an unsealed session is known by the server's own id
        if s is not None and s.server_rev and not revisions.older(s.server_rev, "2025-06-18"):
            extra[VERSION_HEADER] = s.server_rev
        code = (reply.get("error") or {}).get("code")
        try:
            r = await self.sender.send(flow, "POST", json_body.dumps(reply), self.sender.headers_for(flow, extra, on_behalf=True),
                                       f"answer to server request id={reply.get('id')!r} (error {code})", timeout=30)
            logger.info(f"mcpx: answered server request id={reply.get('id')!r} with error {code} (HTTP {r.status})")
        except upstream.UpstreamError as e:
            logger.warning(f"mcpx: could not answer server request {reply.get('id')!r}: {e.reason}")
            self.rewriter.passthrough(exch, "c2s", f"answer to server request id={reply.get('id')!r} not sent: {e.reason}")
