"""The Streamable HTTP requests mcpx sends to the server for an HTTP+SSE client ("legs"), and what
their answers give the client's stream.

A leg is a new flow run by mitmproxy's client-replay machinery (``ReplayHandler``), like the
requests of :mod:`mcpx_core.upstream`, but not marked as mcpx's own: it goes through every hook
of mcpx as a Streamable HTTP client's request would (the session and its sealed token, the
bridges, the rule pass, repair, records), so an HTTP+SSE client gets downgrades and records as
any session does. Its answer, as mcpx rewrote it for the client's revision, is taken from the
flow: an SSE answer event by event as it streams (:meth:`Legs.responseheaders` wraps the
stream mcpx set), a JSON answer whole (:meth:`Legs.response`); each message becomes an
``event: message`` on the client's stream, in the order the server sent them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from mitmproxy import connection, ctx, http

from ... import flowlist
from . import wire

logger = logging.getLogger("mcpx")

#: client request headers a leg never copies: the transport sets them, or they frame the client's own request
_MANAGED = frozenset({"mcp-session-id", "mcp-protocol-version", "content-type", "accept", "content-length",
                      "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer", "accept-encoding",
                      "proxy-authorization", "proxy-connection", "last-event-id"})


@dataclass(eq=False)
class Leg:
    """One Streamable HTTP request for a transport session. ``kind``: ``initialize``,
    ``initialized`` (the client's ``notifications/initialized``), ``message`` (any other POST),
    ``listen`` (the GET stream), ``delete``; ``ids``: the JSON-RPC request ids it carries (each
    gets an error event when the leg gets no JSON-RPC answer)."""

    kind: str
    ids: list[Any]
    flow: http.HTTPFlow
    on_event: Callable[[bytes], None]
    on_done: Callable[["Leg"], None]
    on_head: Callable[["Leg"], None] | None = None
    reframer: wire.Reframer = field(default_factory=wire.Reframer)
    streamed: bool = False
    answered: bool = False
    handler: Any = None
    task: asyncio.Task | None = None
    #: the answer's messages as delivered (JSON values), for the transport's own reading (initialize)
    messages: list[Any] = field(default_factory=list)
    #: the request ids an answer was delivered for
    got: set = field(default_factory=set)

    def emit(self, events: list[bytes]) -> None:
        for ev in events:
            self.answered = True
            self._keep(ev)
            self.on_event(ev)

    def missing(self) -> list[Any]:
        """The request ids of this leg still owed an answer (a cancelled request's id is not: it left :attr:`ids`)."""
        return [i for i in self.ids if i not in self.got]

    def _keep(self, ev: bytes) -> None:
        data = b"\n".join(line[6:] for line in ev.split(b"\n") if line.startswith(b"data: "))
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        for m in value if isinstance(value, list) else [value]:
            if isinstance(m, dict) and ("result" in m or "error" in m) and isinstance(m.get("id"), (str, int)):
                self.got.add(m["id"])
        if self.kind == "initialize":
            self.messages.append(value)


def leg_headers(client: http.Request) -> dict[str, str]:
    """The client's end-to-end request headers a leg carries (``Host`` as mitmproxy forwards it, its
    credentials, its ``Origin``), without the ones that frame its own request or that the transport sets."""
    out: dict[str, str] = {}
    for k, v in client.headers.items(multi=True):
        lk = k.lower()
        if lk not in _MANAGED and not lk.startswith("x-forwarded-"):
            out[lk] = f"{out[lk]}, {v}" if lk in out else v
    return out


class Legs:
    """The legs in flight, by flow id; the hooks of :mod:`mcpx_core.addons.transport` call in."""

    def __init__(self) -> None:
        self.by_flow: dict[str, Leg] = {}

    def send(self, client_conn: connection.Client, method: str, url: str, body: bytes, headers: dict[str, str],
             kind: str, ids: list[Any], on_event: Callable[[bytes], None], on_done: Callable[[Leg], None],
             on_head: Callable[[Leg], None] | None = None, purpose: str = "") -> Leg:
        from mitmproxy.addons.clientplayback import ReplayHandler

        req = http.Request.make(method, url, body, headers)
        if "host" in headers:
            req.headers["host"] = headers["host"]
        if method != "POST":
            req.headers.pop("content-length", None)
        flow = http.HTTPFlow(client_conn, connection.Server(address=(req.host, req.port)))
        flow.request = req
        flow.is_replay = "request"
        flow.comment = f"mcpx: HTTP+SSE client -> Streamable HTTP server: {purpose or kind}"
        leg = self.by_flow[flow.id] = Leg(kind, ids, flow, on_event, on_done, on_head)
        leg.handler = ReplayHandler(flow, ctx.options)
        leg.task = asyncio.get_running_loop().create_task(leg.handler.replay())
        leg.task.add_done_callback(lambda _t: self._finished(leg))
        return leg

    def abort(self, leg: Leg) -> None:
        """End a leg that still runs (the upstream GET stream of a client that went away)."""
        if leg.task is not None and not leg.task.done():
            for t in list(getattr(leg.handler, "transports", {}).values()):
                if t.handler is not None:
                    t.handler.cancel()
            leg.task.cancel()

    def owns(self, flow: http.HTTPFlow) -> bool:
        return flow.id in self.by_flow

    # -- hooks (after mcpx's own response hooks: the answer as rewritten for the client) ------------
    def responseheaders(self, flow: http.HTTPFlow) -> None:
        leg = self.by_flow.get(flow.id)
        if leg is None or flow.response is None:
            return
        if leg.on_head is not None:
            leg.on_head(leg)
        inner = flow.response.stream
        if not inner or "text/event-stream" not in flow.response.headers.get("content-type", "").lower():
            return  # whole: the response hook reads it
        leg.streamed = True

        def tap(chunk: bytes):
            out = inner(chunk) if callable(inner) else chunk
            data = out if isinstance(out, bytes) else b"".join(out)
            try:
                leg.emit(leg.reframer.feed(data))
                if chunk == b"":
                    leg.emit(leg.reframer.close())
            except Exception as e:  # never break mitmproxy's stream
                logger.warning(f"mcpx: HTTP+SSE transport: relaying an SSE answer failed: {type(e).__name__}: {e}")
            return out
        flow.response.stream = tap

    def response(self, flow: http.HTTPFlow) -> None:
        leg = self.by_flow.get(flow.id)
        resp = flow.response
        if leg is not None:
            _both_transports(flow)
        if leg is None or resp is None:
            return
        if leg.streamed:
            self._owed(leg, "mcpx: the server's SSE answer ended without the answer to this request")
            return
        body = resp.get_content(strict=False) or b""
        if "text/event-stream" in resp.headers.get("content-type", "").lower():
            r = wire.Reframer()
            leg.emit(r.feed(body) + r.close())
        elif body.strip() and _is_jsonrpc(body):
            leg.emit([wire.message_event(body)])
        self._owed(leg, f"mcpx: the server's answer (HTTP {resp.status_code}) ended without the answer to this request")

    def error(self, flow: http.HTTPFlow) -> None:
        leg = self.by_flow.get(flow.id)
        if leg is not None:
            _both_transports(flow)
            self._owed(leg, f"mcpx could not reach the server: {flow.error.msg if flow.error else 'no response'}")

    @staticmethod
    def _owed(leg: Leg, why: str) -> None:
        """An error -32603 for each request of the leg whose answer never came (a client never waits in vain)."""
        missing = leg.missing()
        if missing:
            leg.ids = [i for i in leg.ids if i not in missing]
            leg.emit(wire.error_events(missing, why))

    def _finished(self, leg: Leg) -> None:
        self.by_flow.pop(leg.flow.id, None)
        self._owed(leg, "mcpx could not reach the server: the request was ended")
        try:
            leg.on_done(leg)
        except Exception as e:
            logger.warning(f"mcpx: HTTP+SSE transport: {type(e).__name__}: {e}")


#: both legs' transports on a leg's flow (``flow.metadata["mcpx"]["transports"]``)
LEG_TRANSPORTS = {"client": "HTTP+SSE (2024-11-05)", "server": "Streamable HTTP"}
TRANSPORTS = flowlist.transports({"transports": LEG_TRANSPORTS})


def _both_transports(flow: http.HTTPFlow) -> None:
    """The flow list shows both legs' transports on a leg (after mcpx's comment of what it carries)."""
    meta = flow.metadata.setdefault("mcpx", {})
    if isinstance(meta, dict):
        meta["transports"] = dict(LEG_TRANSPORTS)
    if TRANSPORTS not in (flow.comment or ""):
        flow.comment = f"{flow.comment} · {TRANSPORTS}" if flow.comment else f"mcpx: {TRANSPORTS}"
    if not flow.marked:
        flow.marked = ":link:"


def _is_jsonrpc(body: bytes) -> bool:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    members = value if isinstance(value, list) else [value]
    return bool(members) and all(isinstance(m, dict) and m.get("jsonrpc") == "2.0" for m in members)
