"""What a flow is, in mitmproxy's flow list: the flow's comment and mark (views stage).

Every MCP flow's comment starts with the messages it carries, so that a list of
``POST http://…/mcp`` rows reads as a list of calls:

    tools/call find_note #2 · client 2024-11-05, server 2025-06-18 · mcpx: 1 rewritten for 2024-11-05
    initialize #0 · 2025-06-18
    batch of 3: tools/list #1, ping #2, notifications/roots/list_changed
    GET stream: notifications/message ×2, sampling/createMessage #s-1 · 2025-06-18
    result #5 · client 2025-03-26, server 2025-06-18

- the messages: each JSON-RPC request or notification by its method, for ``tools/call`` and
  ``prompts/get`` the name, for ``resources/read``/``subscribe``/``unsubscribe`` the URI, and a
  request's id after ``#``; a client's answer to a server request as ``result #ID`` or ``error #ID``;
  a batch as ``batch of N:`` and its first members; a ``GET`` by the messages its stream carried;
- the revisions: one when both legs speak it, else the client's and the server's;
- what mcpx did (``mcpx: …``): answered it, relayed it, the summary of its change records.

Wire values are escaped and cut (:func:`mcpx_core.terminal.printable`). The mark (one per flow,
the first that applies):

| mark | when |
|---|---|
| ``:warning:`` ⚠ | mcpx could not handle a message (a ``passthrough`` record), or answered with an HTTP error itself |
| ``:scissors:`` ✂ | something was dropped for the receiver (``drop``, ``drop-message``) |
| ``:robot:`` 🤖 | mcpx answered the request itself (a bridge, a local answer) |
| ``:link:`` 🔗 | a bridged session (the two legs are of different eras), or a relayed stream |
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .downgrade import classify
from .framing import json_body
from .terminal import printable

#: the parameter that names what a request acts on, shown after its method
NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri", "resources/subscribe": "uri",
            "resources/unsubscribe": "uri"}
#: batch members named in the comment (the rest: "…")
BATCH_SHOWN = 3
DROPS = frozenset({"drop", "drop-message"})


def _id(jid: Any) -> str:
    if isinstance(jid, str):
        return printable(jid, 40)
    return printable(json_body.dumps(json_body.plain_id(jid)).decode(), 40)


def describe(msg: Any) -> str | None:
    """One JSON-RPC message as the flow list names it (None: not a JSON-RPC message)."""
    kind = classify(msg)
    if kind is None:
        return None
    if kind in ("result", "error"):
        return f"{kind} #{_id(msg.get('id'))}"
    method = msg.get("method")
    text = printable(method, 80)
    key = NAMED_BY.get(method)
    params = msg.get("params")
    if key and isinstance(params, dict) and isinstance(params.get(key), str):
        text += " " + printable(params[key], 80)
    if kind == "request":
        text += f" #{_id(msg.get('id'))}"
    return text


def carried(messages: list, batch: bool) -> str:
    """The messages of a client's POST body, for the comment."""
    if not batch:
        return (describe(messages[0]) or "") if messages else ""
    n = sum(1 for m in messages if classify(m))  # (only the members shown are described: a batch may be long)
    if not n:
        return ""
    names = [d for d in map(describe, messages[:BATCH_SHOWN * 2]) if d][:BATCH_SHOWN]
    return f"batch of {n}: " + ", ".join(names) + (", …" if n > BATCH_SHOWN else "")


def streamed(entries: list[dict]) -> str:
    """What a GET stream carried (the server's messages of ``Exchange.messages``)."""
    counts: Counter = Counter()
    order: list[str] = []
    for e in entries:
        if e.get("direction") != "s2c":
            continue
        name = printable(e.get("method") or e.get("kind") or "?", 80)
        if e.get("kind") == "request" and e.get("id") is not None:
            name += f" #{_id(e['id'])}"
        if name not in counts:
            order.append(name)
        counts[name] += 1
    if not order:
        return "GET stream"
    return "GET stream: " + ", ".join(n if counts[n] == 1 else f"{n} ×{counts[n]}" for n in order)


def revisions_of(client_rev: str | None, server_rev: str | None) -> str:
    if not client_rev and not server_rev:
        return ""
    if client_rev == server_rev:
        return client_rev or ""
    return f"client {client_rev or '?'}, server {server_rev or '?'}"


def comment(what: str, revs: str, did: str) -> str:
    """The comment: what the flow carries, its revisions, what mcpx did (each part only when known)."""
    return " · ".join(p for p in (what, revs, f"mcpx: {did}" if did else "") if p)


def transports(meta: dict) -> str:
    """``transports: client Streamable HTTP, server HTTP+SSE`` for a flow whose legs' transports differ
    (``flow.metadata["mcpx"]["transports"]``, transport/), else ""."""
    t = meta.get("transports")
    if not isinstance(t, dict) or not isinstance(t.get("client"), str) or not isinstance(t.get("server"), str):
        return ""
    short = {name: value.replace(" (2024-11-05)", "") for name, value in t.items() if isinstance(value, str)}
    return f"transports: client {short['client']}, server {short['server']}"


def mark(actions: set[str], answered: bool, error_status: bool, bridged: bool) -> str:
    """The flow's mark (see the module docstring), or "" for none."""
    if "passthrough" in actions or (answered and error_status):
        return ":warning:"
    if actions & DROPS:
        return ":scissors:"
    if answered:
        return ":robot:"
    if bridged:
        return ":link:"
    return ""


def own(body: bytes | None, purpose: str, parent: str) -> str:
    """The comment of a request mcpx sends itself: the messages of its body first, as any flow's
    (``initialize #0 · mcpx: sent by mcpx: initialize, to seal the session (for flow 3f2a9c1e)``)."""
    what = ""
    if body:
        try:
            parsed = json_body.parse(body)
            what = carried(parsed.messages, parsed.batch)
        except json_body.Unparseable:
            pass
    return comment(what, "", f"sent by mcpx: {purpose} (for flow {parent[:8]})")

