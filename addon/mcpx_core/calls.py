"""Calls, not only flows: each JSON-RPC request paired with the flow that carried its final answer
(views stage).

A call is a client's JSON-RPC request (``tools/call find_note #2``) and the result or error that
answers it, which may arrive on another flow than the request (the GET stream, a resumed stream).
A server's request sent while the call is open (``sampling/createMessage``, ``elicitation/create``,
on the call's stream or the GET stream) and the client's answer to it, on a later POST, are the
call's round trips. Everything is read from the flows alone: the bodies as each sender sent them
(``flow.metadata["mcpx"]["original_*"]`` where mcpx kept them, else the body) and mcpx's records on
the flow, so the pairing works live, on a file read with ``-r`` and on flows recorded without mcpx.

Requests are paired with answers by session and JSON-RPC id (JSON-RPC 2.0 section 5: the response
has the id of the request it answers); a 2026-07-28 client has no session (its requests carry their
revision, schema/2026-07-28/schema.ts ``_meta``), so its calls are keyed by the client's name.

A call's duration runs from the start of its request to the end of the response that carried its
answer (mitmproxy's ``timestamp_start`` / ``timestamp_end``): an SSE event's own arrival time is not
kept on the flow, so for an answer on a stream that went on after it the duration is an upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mitmproxy import http

from .flowlist import describe
from .view import Unit, split_body

CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"  # schema/2026-07-28/schema.ts (RequestMetaObject)
DROPS = frozenset({"drop", "drop-message"})


def _ctype(message: http.Message) -> str:
    return message.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def sent_units(flow: http.HTTPFlow, side: str) -> list[Unit]:
    """The JSON-RPC messages of one side of ``flow`` as their sender sent them (the kept original
    where mcpx changed the body, else the body); [] for a body that holds none."""
    msg = flow.request if side == "request" else flow.response
    if msg is None:
        return []
    meta = flow.metadata.get("mcpx")
    kept = meta.get(f"original_{side}") if isinstance(meta, dict) else None
    raw = kept.encode("utf-8", "surrogateescape") if isinstance(kept, str) else msg.get_content(strict=False)
    if not raw:
        return []
    units, error = split_body(raw, _ctype(msg))
    return [] if error else [u for u in units if u.kind is not None]


def meta_of(flow: http.HTTPFlow) -> dict:
    meta = flow.metadata.get("mcpx")
    return meta if isinstance(meta, dict) else {}


def records_of(flow: http.HTTPFlow) -> list[dict]:
    """The change records mcpx stored on ``flow`` (a flow file's to say: anything but a list of objects is left out)."""
    kept = meta_of(flow).get("changes")
    return [r for r in kept if isinstance(r, dict)] if isinstance(kept, list) else []


def session_key(flow: http.HTTPFlow, requests: list[Unit] | None = None) -> str | None:
    """The session a flow belongs to, as mcpx named it (``(2026-07-28) NAME VERSION`` for a
    2026-07-28 client's flows, which belong to none), else the ``Mcp-Session-Id`` it carries."""
    meta = meta_of(flow)
    key = meta.get("session") if meta else flow.request.headers.get("mcp-session-id")
    if isinstance(key, str) and key.startswith("(") and key.endswith(")"):
        info = client_info_2026(requests if requests is not None else sent_units(flow, "request"))
        if info:
            key += f" {info.get('name', '?')} {info.get('version', '')}".rstrip()
    return key


def info_2026(units: list[Unit], part: str, key: str) -> dict | None:
    """The first object under ``_meta[key]`` of the messages' ``part`` (``params`` or ``result``)."""
    for u in units:
        body = u.message.get(part)
        meta = body.get("_meta") if isinstance(body, dict) else None
        info = meta.get(key) if isinstance(meta, dict) else None
        if isinstance(info, dict):
            return info
    return None


def client_info_2026(units: list[Unit]) -> dict | None:
    """The clientInfo a 2026-07-28 request carries in its ``_meta``."""
    return info_2026(units, "params", CLIENT_INFO_META)


def _plain(jid: Any) -> Any:
    return jid if isinstance(jid, (str, int)) and not isinstance(jid, bool) else repr(jid)


@dataclass
class RoundTrip:
    """A server request sent while a call was open, and the client's answer to it."""

    request: str  # e.g. "elicitation/create #0"
    request_flow: str
    answer: str | None = None  # "result #0" | "error #0"
    answer_flow: str | None = None


@dataclass
class Call:
    """One client request and what became of it (see the module docstring)."""

    session: str | None
    id: Any
    method: str
    name: str  # the flow list's words for the request: "tools/call find_note #2"
    request_flow: str
    started: float | None
    answer: str | None = None  # "result" | "error"; None: no answer seen
    answer_flow: str | None = None
    ended: float | None = None
    round_trips: list[RoundTrip] = field(default_factory=list)
    changes: int = 0
    dropped: int = 0
    not_delivered: int = 0  # messages of the call mcpx did not deliver (drop-message records)

    @property
    def duration_ms(self) -> int | None:
        if self.started is None or self.ended is None:
            return None
        return max(0, round((self.ended - self.started) * 1000))

    def as_dict(self) -> dict:
        return {"session": self.session, "id": self.id, "call": self.name, "method": self.method,
                "request_flow": self.request_flow, "answer": self.answer, "answer_flow": self.answer_flow,
                "duration_ms": self.duration_ms, "changes": self.changes, "dropped": self.dropped,
                "not_delivered": self.not_delivered,
                "round_trips": [{"request": r.request, "request_flow": r.request_flow, "answer": r.answer,
                                 "answer_flow": r.answer_flow} for r in self.round_trips]}


def _end(flow: http.HTTPFlow) -> float | None:
    r = flow.response
    if r is None:
        return None
    return r.timestamp_end or r.timestamp_start


def calls(flows: list[http.HTTPFlow]) -> list[Call]:
    """The calls of ``flows`` (in the order their requests were sent), each paired with its answer
    and round trips; the records of each flow are credited to the call whose id they carry."""
    out: list[Call] = []
    open_calls: dict[tuple, list[Call]] = {}  # (session, id) -> calls waiting for an answer, oldest first
    trips: dict[tuple, list[tuple[Call, RoundTrip]]] = {}  # (session, server request id) -> waiting round trips
    latest: dict[Any, Call] = {}  # session -> the call most recently opened (a GET stream's server request)
    for f in sorted(flows, key=lambda f: f.request.timestamp_start or 0):
        if not isinstance(f, http.HTTPFlow):
            continue
        requests = sent_units(f, "request")
        skey = session_key(f, requests)
        own: list[Call] = []
        for u in requests:
            kind = u.kind
            if kind == "request":
                c = Call(skey, _plain(u.id), str(u.message.get("method")), describe(u.message) or "?", f.id, f.request.timestamp_start)
                out.append(c)
                own.append(c)
                open_calls.setdefault((skey, c.id), []).append(c)
                latest[skey] = c
            elif kind in ("result", "error"):
                waiting = trips.get((skey, _plain(u.id)))
                if waiting:
                    _, trip = waiting.pop(0)
                    trip.answer, trip.answer_flow = describe(u.message), f.id
        for u in sent_units(f, "response"):
            kind = u.kind
            if kind in ("result", "error"):
                waiting = open_calls.get((skey, _plain(u.id)))
                if waiting:
                    c = waiting.pop(0)
                    c.answer, c.answer_flow, c.ended = kind, f.id, _end(f)
            elif kind == "request":
                c = own[0] if own else latest.get(skey)
                if c is not None and c.answer is None:
                    trip = RoundTrip(describe(u.message) or "?", f.id)
                    c.round_trips.append(trip)
                    trips.setdefault((skey, _plain(u.id)), []).append((c, trip))
        _credit(f, skey, own, out)
    return out


def _credit(flow: http.HTTPFlow, skey: Any, own: list[Call], known: list[Call]) -> None:
    """Count the flow's records on the calls they belong to: by the JSON-RPC id a record carries
    (a server request's id: the call it was a round trip of), else the flow's own first call."""
    records = records_of(flow)
    by_id: dict[Any, Call] = {}
    for c in reversed(known):
        if c.session == skey:
            by_id.setdefault(c.id, c)
            for t in c.round_trips:
                tid = t.request.rsplit("#", 1)[-1]
                by_id.setdefault(("trip", tid), c)
    for r in records:
        if not isinstance(r, dict):
            continue
        jid = r.get("jsonrpc_id")
        jid = None if jid is None else _plain(jid)  # (an id a file gives as a list or object: its repr, hashable)
        target = None
        if jid is not None:
            own_hit = next((c for c in own if c.id == jid), None)
            if own_hit is not None:
                target = own_hit
            elif r.get("direction") == "s2c" and r.get("method") and r.get("method") not in {c.method for c in own}:
                target = by_id.get(("trip", str(jid)))
            target = target or by_id.get(jid)
        if target is None and own:
            target = own[0]
        if target is None:
            continue
        target.changes += 1
        if r.get("action") in DROPS:
            target.dropped += 1
        if r.get("action") == "drop-message":
            target.not_delivered += 1


# -- the calls a flow takes part in (the MCP view's header) --------------------------------------
#: call lines shown for one flow (a batch carries many requests)
SHOWN = 5
_cache: dict[str, Any] = {"key": None, "calls": []}


def flow_list() -> list[http.HTTPFlow] | None:
    """Every flow of mitmproxy's flow list (the console, mitmweb), or None where there is none."""
    try:
        from mitmproxy import ctx

        if ctx.master is None or ctx.master.addons.get("view") is None:
            return None
        return list(ctx.master.commands.call("view.flows.resolve", "@all"))
    except Exception:  # no master (a plain script), or its view is gone: no other flows
        return None


def _calls_of(flows: list[http.HTTPFlow]) -> list[Call]:
    """:func:`calls` of the flow list, made again only when a flow came, went or got its response."""
    key = tuple((f.id, f.response.timestamp_end if f.response is not None else None) for f in flows)
    if _cache["key"] != key:
        _cache["key"], _cache["calls"] = key, calls(flows)
    return _cache["calls"]


def _where(flow_id: str | None, here: str) -> str:
    return "this flow" if flow_id == here else f"flow {flow_id[:8]}" if flow_id else "no flow yet"


def lines_for(flow: http.HTTPFlow) -> list[str]:
    """The calls ``flow`` carries a part of, each naming the flows of its other parts and its duration::

        call tools/call find_note #2: request on this flow, result on flow 3f2a9c1e, 1204 ms
            round trip: elicitation/create #0 on this flow, result #0 on flow 77b0e2d4

    [] where mitmproxy keeps no flow list (mitmdump)."""
    flows = flow_list()
    if not flows:
        return []
    out: list[str] = []
    here = flow.id
    for c in _calls_of(flows):
        trips = c.round_trips
        if here not in (c.request_flow, c.answer_flow) and not any(here in (t.request_flow, t.answer_flow) for t in trips):
            continue
        took = f", {c.duration_ms} ms" if c.duration_ms is not None else ""
        answer = f"{c.answer} on {_where(c.answer_flow, here)}" if c.answer else "no answer yet"
        out.append(f"call {c.name}: request on {_where(c.request_flow, here)}, {answer}{took}")
        for t in trips:
            got = f"{t.answer} on {_where(t.answer_flow, here)}" if t.answer else "no answer yet"
            out.append(f"    round trip: {t.request} on {_where(t.request_flow, here)}, {got}")
        if len(out) >= SHOWN:
            break
    return out
