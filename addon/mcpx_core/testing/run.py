"""A recorded session replayed as one client revision: per call, what each side was delivered, the
change records, the messages not delivered, and what makes a delivered message invalid for its
receiver's revision (:mod:`.validate`).

The client revision is the recorded one (``"recorded"``), or an older one: every client of the file
that opened a session with ``initialize`` is then pinned to it by its clientInfo.name (the
``mcpx_pin`` option, as a user pins a client), so the server's messages are delivered as that
revision defines them. A 2026-07-28 client has no ``initialize`` to pin: such a file replays only as
recorded (:class:`ReplayError` otherwise). A file recorded through mcpx (``mitmdump -s mcpx.py -w``)
already holds what each side was delivered and mcpx's records: it is read as it is, as recorded only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from mitmproxy import http

from .. import revisions
from ..calls import Call, calls, meta_of, sent_units, session_key
from ..flowlist import describe
from ..view import split_body
from .replay import load, record, replay_flows
from .validate import problems

RECORDED = "recorded"


class ReplayError(Exception):
    """A revision the recording cannot be replayed as (unknown, newer than its server, no client to pin)."""


@dataclass
class CallResult:
    """One call of a replay (or the flows that carry no request: a GET stream, a notification)."""

    call: str  # "tools/call get-resource-links #6", "GET stream", "notifications/initialized"
    session: str | None
    #: the messages as delivered, in order: {"to": "server" | "client", "revision": REV, "message": {...}}
    delivered: list[dict] = field(default_factory=list)
    #: the messages mcpx did not deliver: {"to": ..., "message": "elicitation/create #0", "rule": ..., "detail": ...}
    not_delivered: list[dict] = field(default_factory=list)
    #: the change records (without ``time`` and ``flow``)
    changes: list[dict] = field(default_factory=list)
    #: "to client 2024-11-05: POINTER [RULE] what", one per problem of a delivered message
    invalid: list[str] = field(default_factory=list)
    duration_ms: int | None = None
    flows: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        """The call as golden data: no duration and no flow ids (they differ from recording to recording)."""
        return {"call": self.call, "delivered": self.delivered, "not_delivered": self.not_delivered,
                "changes": self.changes, "invalid": self.invalid}


@dataclass
class Replay:
    """A recording replayed as one client revision."""

    file: str
    revision: str  # as asked: "recorded" or a revision
    calls: list[CallResult]

    @property
    def invalid(self) -> list[str]:
        return [f"{c.call}: {p}" for c in self.calls for p in c.invalid]

    @property
    def not_delivered(self) -> list[str]:
        return [f"{c.call}: {n['message']} to {n['to']} [{n['rule']}]" for c in self.calls for n in c.not_delivered]

    def golden(self) -> list[dict]:
        return [c.as_dict() for c in self.calls]


def client_names(flows: list[http.HTTPFlow]) -> list[str]:
    """The clientInfo.name of every ``initialize`` request of the recording, in order."""
    names: list[str] = []
    for f in flows:
        for u in sent_units(f, "request"):
            if u.kind == "request" and u.message.get("method") == "initialize":
                info = (u.message.get("params") or {}).get("clientInfo") if isinstance(u.message.get("params"), dict) else None
                name = info.get("name") if isinstance(info, dict) else None
                if isinstance(name, str) and name not in names:
                    names.append(name)
    return names


def replay_as(path: str | os.PathLike, revision: str = RECORDED, options: dict[str, Any] | None = None) -> Replay:
    """Replay the flow file ``path`` as ``revision`` clients (see the module docstring)."""
    flows = load(path)
    if any(meta_of(f) for f in flows):
        # recorded through mcpx (mitmdump -s mcpx.py -w): what each side was delivered is the file itself
        if revision != RECORDED:
            raise ReplayError(f"{os.fspath(path)} was recorded through mcpx: it shows only the recorded revision; "
                              "record without mcpx (python -m mcpx tap) to replay it as other revisions")
        return Replay(os.fspath(path), revision, results(flows))
    opts = dict(options or {})
    if revision != RECORDED:
        if not revisions.is_known(revision):
            raise ReplayError(f"unknown revision {revision!r}; known: {', '.join(revisions.REVISIONS)}")
        names = client_names(flows)
        if not names:
            raise ReplayError(f"{os.fspath(path)}: no client opened a session with initialize; only the recorded revision replays")
        opts["mcpx_pin"] = [*opts.get("mcpx_pin", []), *(f"{n}={revision}" for n in names)]
    replayed = replay_flows(flows, opts)
    if revision != RECORDED:
        for f in replayed:
            meta = meta_of(f)
            if meta.get("server_revision") and revisions.older(meta["server_revision"], revision):
                raise ReplayError(f"{os.fspath(path)}: its server speaks {meta['server_revision']}, older than {revision}")
    return Replay(os.fspath(path), revision, results(replayed))


def _delivered(flow: http.HTTPFlow, side: str) -> list:
    msg = flow.request if side == "request" else flow.response
    if msg is None:
        return []
    body = msg.get_content(strict=False)
    if not body:
        return []
    units, error = split_body(body, msg.headers.get("content-type", "").split(";", 1)[0].strip().lower())
    return [] if error else [u.message for u in units if u.kind is not None]


def results(flows: list[http.HTTPFlow]) -> list[CallResult]:
    """Per call (:func:`mcpx_core.calls.calls`) of replayed ``flows``: delivered messages, records, problems."""
    found = calls(flows)
    owner: dict[str, Call] = {}
    for c in found:
        owner.setdefault(c.request_flow, c)
        for t in c.round_trips:
            if t.answer_flow:
                owner.setdefault(t.answer_flow, c)
    methods: dict[tuple, str] = {}  # (session, id) -> method, for the results' schema
    for c in found:
        methods[("s2c", c.session, c.id)] = c.method
    for f in flows:  # the server's requests, for the client's answers to them
        for u in sent_units(f, "response"):
            if u.kind == "request" and isinstance(u.id, (str, int)):
                methods[("c2s", session_key(f), u.id)] = u.message.get("method")
    by_call: dict[int, CallResult] = {}
    out: list[CallResult] = []
    for f in flows:
        c = owner.get(f.id)
        if c is not None and id(c) in by_call:
            res = by_call[id(c)]
        else:
            name = c.name if c is not None else _what(f)
            res = CallResult(name, c.session if c is not None else session_key(f), duration_ms=c.duration_ms if c else None)
            out.append(res)
            if c is not None:
                by_call[id(c)] = res
        _add(res, f, methods)
    return out


def _what(flow: http.HTTPFlow) -> str:
    names = [describe(u.message) for u in sent_units(flow, "request")]
    if names:
        return ", ".join(n for n in names if n)
    return f"{flow.request.method} stream" if flow.request.method == "GET" else flow.request.method


def _add(res: CallResult, flow: http.HTTPFlow, methods: dict) -> None:
    meta = meta_of(flow)
    res.flows.append(flow.id)
    skey = session_key(flow)
    legs = (("request", "server", meta.get("server_revision"), "c2s"), ("response", "client", meta.get("client_revision"), "s2c"))
    asked = {u.id: u.message.get("method") for u in sent_units(flow, "request") if u.kind == "request"}
    for side, to, rev, direction in legs:
        for m in _delivered(flow, side):
            res.delivered.append({"to": to, "revision": rev, "message": m})
            kind = m.get("method")
            method = kind if isinstance(kind, str) else _answered(m.get("id"), skey, asked, methods, direction)
            res.invalid.extend(f"to {to} {rev}: {p}" for p in problems(m, method, rev, direction))
    for r in meta.get("changes") or []:
        if not isinstance(r, dict):
            continue
        res.changes.append(record(r))
        if r.get("action") == "drop-message" and not r.get("pointer") and (r.get("method") or r.get("jsonrpc_id") is not None):
            # (a JSON-RPC message; not an SSE event that held none, such as a priming event)
            what = f"{r.get('method') or '?'}" + (f" #{r['jsonrpc_id']}" if r.get("jsonrpc_id") is not None else "")
            res.not_delivered.append({"to": "client" if r.get("direction") == "s2c" else "server", "message": what,
                                      "rule": r.get("rule"), "detail": r.get("detail")})


def _answered(jid: Any, skey: Any, asked: dict, methods: dict, direction: str) -> str | None:
    """The method a result or error answers: of this flow's request (s2c), else of the request of
    that id the other side sent in the session."""
    if not isinstance(jid, (str, int)):
        return None
    if direction == "s2c" and jid in asked:
        return asked[jid]
    return methods.get((direction, skey, jid))
