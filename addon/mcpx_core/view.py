"""The "MCP" and "MCP original" content views (mitmproxy 12 contentview API).

Both render one HTTP body of an MCP flow message by message, from the flow alone (the body and
``flow.metadata["mcpx"]``), so they work on live flows, on flows read back with ``-r`` and on
replayed ones:

- **MCP** (chosen automatically for JSON-RPC bodies, ``application/json`` and
  ``text/event-stream``): a header with the session, the client's and the server's revision and
  software (``clientInfo``/``serverInfo``), then each JSON-RPC message with its kind (request,
  result, error, notification), method (for a result or error: the method of the request it
  answers), id and place in the body (batch index, SSE event), the change records mcpx made to
  it (action, JSON Pointer, rule id, before -> after) and the message as it was **delivered**.
- **MCP original** (chosen only by hand): the same layout, with each message as the sender
  **sent** it (``flow.metadata["mcpx"]["original_request"/"original_response"]``, kept up to
  ``mcpx_keep_original`` bytes). Switching between the two views shows a change in place.

The original is kept in metadata rather than with ``flow.backup()``: a backup is one snapshot of
the whole flow taken before the first change, so mitmproxy's "revert" would also undo the
response (the request is rewritten before the response exists) and would mark every rewritten
flow as user-modified; metadata survives ``-w`` files and is per body.

Text shape (exact texts: tests/inspect/test_view.py)::

    MCP response (server -> client): 1 message, 2 changes (2 rewritten for 2024-11-05)
    session: 8077ad25-7c10-4136-96f3-ac7ad6931059
    client:  2024-11-05 (mcpx-js-client 1.10.2)       (", profile NAME" when a host profile applies)
    server:  2024-11-05 (mcp-servers/everything 2.0.0)
    (answered by mcpx: <why>)     only on a flow a bridge answered itself (bridge/legacy_client.py)
    call tools/call x #1: request on this flow, result on this flow, 600 ms    (the console, mitmweb:
        round trip: elicitation/create #0 on this flow, result #0 on flow 3f2a9c1e   calls.lines_for)

    [1] result tools/call id=1 · event 1
        rewrite /result/content/1 [CT-resource_link]
            - {name: "Blob Resource 1", uri: "demo://resource/dynamic/blob/1", ...}
            + {type: "resource", resource: {uri: "demo://resource/dynamic/blob/1", ...}}
        delivered:
        {
          "result": { ...the message as delivered, JSON indented by 2... }
        }

Each change is ``action pointer [rule]`` (no pointer: the whole message or body; a host profile's
action adds `` (profile NAME)``; an ``audit`` record is a finding of the dual-result audit, no
change), then ``- before``
and ``+ after`` (the summaries of the change record, never a whole base64 payload) and
``(detail)``. A message mcpx did not deliver shows ``not delivered`` instead of its JSON; records
that belong to the body as a whole (a split batch, a passthrough) are listed under ``body:``
before the messages. A body that is not JSON (or SSE) raises ValueError: mitmproxy then shows it raw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
from mitmproxy import contentviews, http

from .changes import RECORD, summary_line
from .downgrade import classify
from .framing import json_body
from .framing.sse import SSEParser
from .rewrite import PRIMING_RULE

SNIFF = 4096  # bytes of a body looked at to decide whether it holds JSON-RPC
PRIMING_NOTE = "empty data (priming event)"


@dataclass
class Unit:
    """One JSON-RPC message found in a body (or an SSE event that held none: ``message`` None)."""

    where: str  # "" | "batch[1]" | "event 2" | "event 2 batch[0]"
    message: Any = None
    note: str | None = None  # why an event holds no message
    changes: list[dict] = field(default_factory=list)
    method: str | None = None

    @property
    def kind(self) -> str | None:
        return classify(self.message)

    @property
    def id(self) -> Any:
        return self.message.get("id") if isinstance(self.message, dict) else None


def media_type(metadata: contentviews.Metadata) -> str:
    return (metadata.content_type or "").lower()


def split_body(data: bytes, ctype: str) -> tuple[list[Unit], str | None]:
    """The messages of a body in order, and an error when it could not be framed at all.

    ``text/event-stream``: one or more per SSE event carrying data (a JSON array: a batch);
    anything else: a JSON body (one message or a batch). Never raises.
    """
    if ctype == "text/event-stream":
        parser = SSEParser()
        events = parser.feed(data) + parser.close()[0]
        units: list[Unit] = []
        n = 0
        for ev in events:
            if ev.data is None and not ev.decode_error:
                continue  # comment, retry or id-only block: no message
            n += 1
            where = f"event {n}"
            if ev.decode_error:
                units.append(Unit(where, note="data is not valid UTF-8"))
            elif ev.data.strip() == "":
                units.append(Unit(where, note=PRIMING_NOTE))
            else:
                try:
                    value = orjson.loads(ev.data)
                except orjson.JSONDecodeError:
                    units.append(Unit(where, note="data is not JSON"))
                    continue
                if isinstance(value, list):
                    units.extend(Unit(f"{where} batch[{i}]", m) for i, m in enumerate(value))
                else:
                    units.append(Unit(where, value))
        return units, None
    try:
        parsed = json_body.parse(data)
    except json_body.Unparseable as e:
        return [], e.reason
    if parsed.batch:
        return [Unit(f"batch[{i}]", m) for i, m in enumerate(parsed.messages)], None
    return [Unit("", parsed.messages[0])], None


def looks_like_mcp(data: bytes, ctype: str) -> bool:
    """A cheap test for a JSON-RPC 2.0 body (JSON or SSE) without parsing all of it."""
    if ctype != "text/event-stream" and not (ctype == "application/json" or ctype.endswith("+json")):
        return False
    head = data[:SNIFF]
    return b'"jsonrpc"' in head and b'"2.0"' in head


class _Context:
    """What one rendering knows about the flow: side, direction, mcpx metadata."""

    def __init__(self, metadata: contentviews.Metadata):
        flow = metadata.flow
        msg = metadata.http_message
        self.side: str | None = None
        if isinstance(flow, http.HTTPFlow) and msg is not None:
            self.side = "request" if msg is flow.request else "response" if msg is flow.response else None
        self.flow = flow if isinstance(flow, http.HTTPFlow) else None
        self.direction = {"request": "c2s", "response": "s2c"}.get(self.side or "")
        meta = flow.metadata.get("mcpx") if flow is not None else None
        self.meta: dict = meta if isinstance(meta, dict) else {}
        self.ctype = media_type(metadata)

    def original(self) -> tuple[bytes | None, int | None]:
        """The body as the sender sent it, when mcpx kept it, and its full size if truncated."""
        text = self.meta.get(f"original_{self.side}") if self.side else None
        if not isinstance(text, str):
            return None, None
        return text.encode("utf-8", "surrogateescape"), self.meta.get(f"original_{self.side}_truncated")

    def changes(self) -> list[dict]:
        return [c for c in self.meta.get("changes") or [] if isinstance(c, dict) and c.get("direction") == self.direction]

    def request_methods(self) -> dict:
        """id -> method of the requests in this flow's request body (to name what a result answers)."""
        if self.flow is None or self.side != "response":
            return {}
        body = self.meta.get("original_request")
        raw = body.encode("utf-8", "surrogateescape") if isinstance(body, str) else self.flow.request.get_content(strict=False)
        ctype = (self.flow.request.headers.get("content-type", "").split(";", 1)[0].strip().lower())
        units, _ = split_body(raw or b"", ctype)
        return {u.id: u.message.get("method") for u in units if u.kind == "request" and _hashable(u.id)}


def _hashable(v: Any) -> bool:
    return isinstance(v, (str, int)) and not isinstance(v, bool)


def _same(c: dict, unit: Unit) -> bool:
    """Whether record ``c`` was stamped with this message's id and method (a result's method may be unknown)."""
    if _hashable(unit.id):
        return c.get("jsonrpc_id") == unit.id and c.get("method") in (None, unit.method)
    return c.get("jsonrpc_id") is None and c.get("method") == unit.method


def attribute(units: list[Unit], ctx: _Context) -> list[dict]:
    """Give each unit its method and its change records; return the records of the body as a whole.

    ``flow.metadata["mcpx"]["messages"]`` lists, in body order, each message mcpx downgraded with its
    method (for results: of the request answered) and how many records it produced; records are
    stored in the same order. A message's records are the next ``changes`` records of its
    direction that carry its id and method; the others (split batch, priming event, passthrough)
    belong to the body.
    """
    metas = [m for m in ctx.meta.get("messages") or [] if isinstance(m, dict) and m.get("direction") == ctx.direction]
    asked = ctx.request_methods()
    j = 0
    counts: list[int] = []
    for u in units:
        kind = u.kind
        if kind is None:
            counts.append(0)
            continue
        own = u.message.get("method") if kind in ("request", "notification") else None
        meta = None
        if j < len(metas) and metas[j].get("kind") == kind and metas[j].get("id") == (u.id if _hashable(u.id) else None) \
                and (own is None or metas[j].get("method") == own):
            meta = metas[j]
            j += 1
        if own is not None:
            u.method = own
        elif meta is not None and meta.get("method"):
            u.method = meta["method"]
        elif _hashable(u.id):
            u.method = asked.get(u.id)
        counts.append(int(meta.get("changes") or 0) if meta else 0)
    records = ctx.changes()
    taken = [False] * len(records)
    p = 0
    for u, n in zip(units, counts):
        while n and p < len(records):
            if not taken[p] and _same(records[p], u):
                u.changes.append(records[p])
                taken[p] = True
                n -= 1
            p += 1
    # records of a message that produced no count (a rule failed on it): attach by id and method
    for i, c in enumerate(records):
        if taken[i] or (c.get("jsonrpc_id") is None and c.get("method") is None):
            continue
        for u in units:
            if u.kind is not None and _same(c, u):
                u.changes.append(c)
                taken[i] = True
                break
    # a dropped priming event's record belongs to that event
    primings = [u for u in units if u.note == PRIMING_NOTE]
    for i, c in enumerate(records):
        if not taken[i] and primings and c.get("rule") == PRIMING_RULE and c.get("action") == "drop-message":
            primings.pop(0).changes.append(c)
            taken[i] = True
    return [c for i, c in enumerate(records) if not taken[i]]


def altered(records: list[dict]) -> bool:
    """Whether these records mean the delivered body differs from the one sent.

    A split client batch leaves the flow's request as sent (mcpx POSTs the members itself).
    """
    return any(c.get("action") in ("rewrite", "drop", "drop-message", "repair")
               or (c.get("action") == "split" and c.get("direction") == "s2c") for c in records)


def _change_lines(c: dict, indent: str) -> list[str]:
    where = f" {c['pointer']}" if c.get("pointer") else ""  # "": the whole message or body
    who = f" (profile {c['profile']})" if c.get("profile") else ""  # a host profile's action
    lines = [f"{indent}{c.get('action')}{where} [{c.get('rule')}]{who}"]
    before, after = c.get("before"), c.get("after")
    if before:
        lines.append(f"{indent}    - {before}")
    if after is not None:
        lines.append(f"{indent}    + {after}")
    if c.get("detail"):
        lines.append(f"{indent}    ({c['detail']})")
    return lines


def _json_lines(value: Any, indent: str) -> list[str]:
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    return [indent + line for line in text.split("\n")]


def _who(info: Any) -> str:
    """`` (name version)`` of a clientInfo/serverInfo object, or "" when unknown."""
    if isinstance(info, dict) and info.get("name"):
        return f" ({info.get('name')} {info.get('version') or ''})".replace(" )", ")")
    return ""


def _summary(records: list[dict]) -> str:
    changes = []
    for c in records:
        try:
            changes.append(RECORD.validate_python(c))
        except Exception:
            continue
    to_rev = next((c.to_rev for c in changes if c.to_rev), None)
    return summary_line(changes, to_rev) if changes else ""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def render(data: bytes, metadata: contentviews.Metadata, original: bool = False) -> str:
    """The text of the MCP view (``original=False``) or the MCP original view (``original=True``)."""
    ctx = _Context(metadata)
    kept, full_size = ctx.original()
    delivered_units, delivered_error = split_body(data, ctx.ctype)
    notes: list[str] = []
    units, error = delivered_units, delivered_error
    per_message = kept is not None  # the original can be shown message by message
    if kept is not None:
        orig_units, orig_error = split_body(kept, ctx.ctype)
        if orig_error is None:
            units, error = orig_units, None
        else:
            per_message = False
            if not full_size:
                notes.append(f"original body not shown per message: {orig_error}")
        if full_size:
            notes.append(f"original body truncated: first {len(kept)} of {full_size} bytes kept (mcpx_keep_original)")
    elif altered(ctx.changes()):
        notes.append("original body not kept (mcpx_keep_original): messages shown as delivered")
    if error is not None:
        raise ValueError(f"not an MCP body: {error}")
    body_records = attribute(units, ctx)
    records = ctx.changes()

    out: list[str] = []
    arrow = {"c2s": " (client -> server)", "s2c": " (server -> client)"}.get(ctx.direction or "", "")
    n_msgs = sum(1 for u in units if u.kind is not None)
    head = f"MCP {ctx.side or 'body'}{arrow}: {_plural(n_msgs, 'message')}"
    if ctx.meta:
        head += f", {_plural(len(records), 'change')}"
        if records:
            head += f" ({_summary(records)})"
    if original and per_message:
        head += "; as sent"
    elif original and not altered(records):
        head += "; delivered as sent"
    out.append(head)
    if ctx.meta:
        out.append(f"session: {ctx.meta.get('session') or '-'}")
        profile = f", profile {ctx.meta['profile']}" if ctx.meta.get("profile") else ""
        out.append(f"client:  {ctx.meta.get('client_revision') or '?'}{_who(ctx.meta.get('client_info'))}{profile}")
        out.append(f"server:  {ctx.meta.get('server_revision') or '?'}{_who(ctx.meta.get('server_info'))}")
        if ctx.meta.get("answered_by"):  # mcpx answered this flow itself (a bridge): the server never saw it as it is
            out.append(f"answered by mcpx: {ctx.meta['answered_by']}")
    else:
        out.append("no mcpx record on this flow")
    if ctx.flow is not None:
        from .calls import lines_for  # (calls.py reads bodies with split_body: imported when rendering, not at load)
        out.extend(lines_for(ctx.flow))  # where mitmproxy keeps a flow list: the flows of the calls' other parts
    out.extend(f"note: {n}" for n in notes)
    if body_records:
        out.append("body:")
        for c in body_records:
            out.extend(_change_lines(c, "    "))
    # the messages below are shown as sent: from the kept original, or delivered unchanged
    as_sent = original and (per_message or (kept is None and not altered(records)))
    if original and kept is not None and not per_message:
        out.append("sent (as kept):")
        out.extend("    " + line for line in kept.decode("utf-8", "replace").splitlines())

    # pair each (original) unit with its delivered counterpart, in order
    d = 0
    for i, u in enumerate(units, 1):
        out.append("")
        label = [f"[{i}]"]
        if u.kind is None:
            label.append(u.note or "not a JSON-RPC 2.0 message")
            if u.where:
                label.append(f"· {u.where}")
        else:
            label.append(u.kind)
            if u.method:
                label.append(u.method)
            elif u.kind in ("result", "error"):
                label.append("(method unknown)")
            if "id" in u.message:
                label.append(f"id={orjson.dumps(u.message['id']).decode()}")
            if u.where:
                label.append(f"· {u.where}")
        out.append(" ".join(label))
        for c in u.changes:
            out.extend(_change_lines(c, "    "))
        if u.kind is None:
            if not original and any(c.get("action") == "drop-message" for c in u.changes):
                out.append("    not delivered")
            elif u.message is not None:
                out.extend(_json_lines(u.message, "    "))
            continue
        dropped = False
        if as_sent or not per_message:
            shown = u.message
        else:
            dropped = any(c.get("action") == "drop-message" and not c.get("pointer") for c in u.changes)
            shown = None
            if not dropped:
                while d < len(delivered_units) and delivered_units[d].kind is None:
                    d += 1
                if d < len(delivered_units) and delivered_units[d].id == u.id:
                    shown = delivered_units[d].message
                    d += 1
                else:
                    dropped = True
        if dropped:
            out.append("    not delivered")
            continue
        out.append("    sent:" if as_sent else "    delivered:")
        out.extend(_json_lines(shown, "    "))
    return "\n".join(out) + "\n"


class MCPView(contentviews.Contentview):
    """JSON-RPC messages of an MCP body with what mcpx changed in each (as delivered)."""

    @property
    def name(self) -> str:
        return "MCP"

    def prettify(self, data: bytes, metadata: contentviews.Metadata) -> str:
        return render(data, metadata, original=False)

    def render_priority(self, data: bytes, metadata: contentviews.Metadata) -> float:
        # > 1 beats the JSON view (1) for MCP bodies; < 0: not offered automatically otherwise
        return 2 if data and looks_like_mcp(data, media_type(metadata)) else -1


class MCPOriginalView(MCPView):
    """The same messages as the sender sent them (the body before mcpx changed it)."""

    @property
    def name(self) -> str:
        return "MCP original"

    def prettify(self, data: bytes, metadata: contentviews.Metadata) -> str:
        return render(data, metadata, original=True)

    def render_priority(self, data: bytes, metadata: contentviews.Metadata) -> float:
        return -1  # only when chosen by hand


mcp_view = MCPView()
mcp_original_view = MCPOriginalView()
