"""Replay a flow file offline through mcpx, in this process, and render what it did as golden data.

:func:`replay` loads the flows (``mitmproxy.io.FlowReader``) and runs each through a fresh mcpx
(:class:`mcpx_core.addons.MCPX`) in a ``mitmproxy.test.taddons`` context, hook by hook in order
(``tctx.cycle``: requestheaders, request, responseheaders, response, or error), so session state
carries from flow to flow, as ``mitmdump -nr FILE -s mcpx.py`` does. Loaded flows are not live:
mcpx contacts no server (a batch it would split and an answer it would send on the client's behalf
are only recorded: the ``split`` record, ``flow.metadata["mcpx"]["replies"]``).

:func:`golden` renders replayed flows (against the recorded ones) as readable JSON: per flow its
request line, the session and revisions, the JSON-RPC messages mcpx saw, the delivered bodies where
mcpx changed them (parsed JSON; SSE bodies as a list of events; with their size and sha256 so the
bytes are pinned too), the change records without their volatile ``time`` and ``flow`` fields, and
the answers mcpx would send upstream on the client's behalf.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from typing import Any

from mitmproxy import exceptions, http, io
from mitmproxy.test import taddons

from ..framing.sse import events_of, field_lines

#: change record fields that differ from run to run
VOLATILE = ("time", "flow")


class Unreadable(Exception):
    """A file that is no mitmproxy flow file (or one nested past Python's recursion limit): its path and why."""


def load(path: str | os.PathLike) -> list[http.HTTPFlow]:
    """The HTTP flows of a flow file, in file order; :class:`Unreadable` when it is none."""
    with open(path, "rb") as fh:
        try:
            return [f for f in io.FlowReader(fh).stream() if isinstance(f, http.HTTPFlow)]
        except (exceptions.FlowReadException, RecursionError, ValueError) as e:
            raise Unreadable(f"{os.fspath(path)}: not a mitmproxy flow file ({e})") from None


def replay_flows(flows: list[http.HTTPFlow], options: dict[str, Any] | None = None) -> list[http.HTTPFlow]:
    """Run ``flows`` (changed in place) through a fresh mcpx's hooks, in order; ``options``: mitmproxy
    options (e.g. ``{"mcpx_pin": ["client=2025-03-26"]}``). Returns the flows."""
    from ..addons import MCPX

    async def run() -> None:
        addon = MCPX()
        with taddons.context(addon) as tctx:
            tctx.configure(addon, **(options or {}))
            for f in flows:
                await tctx.cycle(addon, f)
            # every addon's done hook, and the master's log handler removed: it would outlive this
            # loop and fail the next log line of the process (a test's own, another replay's)
            await tctx.master.done()

    asyncio.run(run())
    return flows


def replay(path: str | os.PathLike, options: dict[str, Any] | None = None) -> list[http.HTTPFlow]:
    """Load ``path`` and :func:`replay_flows` it. Returns the replayed flows."""
    return replay_flows(load(path), options)


# -- golden rendering --------------------------------------------------------------------------
def sse_events(body: bytes) -> list[dict[str, Any]]:
    """A text/event-stream body as a list of events ({"event", "id", "retry", "data"}, the
    fields present, and "comments"); ``data`` is parsed JSON where it is JSON. The events and their
    lines are mcpx's SSE framing's (:func:`mcpx_core.framing.sse.events_of`: an unterminated last
    event included); the bytes are pinned apart from it (``sha256``)."""
    events = []
    for event in events_of(body):
        ev: dict[str, Any] = {}
        for name, value in field_lines(event):
            if not name:
                ev.setdefault("comments", []).append(value.lstrip(" "))
            elif name != "data":
                ev[name] = value
        if event.payload is not None:
            ev["data"] = _json_or_text(event.payload.decode("utf-8", "replace"))
        events.append(ev)
    return events


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def render_body(message: http.Message) -> Any:
    body = message.get_content(strict=False) or b""
    if message.headers.get("content-type", "").split(";")[0].strip().lower() == "text/event-stream":
        return sse_events(body)
    return _json_or_text(body.decode("utf-8", "replace"))


def _body_entry(message: http.Message) -> dict[str, Any]:
    raw = message.raw_content or b""
    return {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()[:16], "body": render_body(message)}


def _message_line(m: dict[str, Any]) -> str:
    line = f"{m.get('direction')} {m.get('kind')}"
    if m.get("method"):
        line += f" {m['method']}"
    if m.get("id") is not None:
        line += f" id={m['id']}"
    if m.get("changes"):
        line += f": {m['changes']} change{'s' if m['changes'] != 1 else ''}"
    return line


def _changed(a: http.Message | None, b: http.Message | None) -> bool:
    if (a is None) != (b is None):
        return True
    if a is None or b is None:
        return False
    return (a.raw_content != b.raw_content or a.status_code != b.status_code) if isinstance(a, http.Response) \
        else a.raw_content != b.raw_content


def record(change: dict[str, Any]) -> dict[str, Any]:
    """A change record in the field order of :class:`mcpx_core.changes.Change` (a -w/-r round trip of
    flow.metadata does not keep dict order), without the volatile fields."""
    from ..changes import FIELDS

    order = [k for k in FIELDS if k not in VOLATILE]
    rest = sorted(k for k in change if k not in order and k not in VOLATILE)
    return {k: change[k] for k in order + rest if k in change}


def sorted_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value


def golden(recorded: list[http.HTTPFlow], replayed: list[http.HTTPFlow]) -> dict[str, Any]:
    """The golden data of one flow file: recorded flows and the same flows after mcpx."""
    by_id = {f.id: f for f in recorded}
    if len(replayed) != len(recorded) or any(f.id not in by_id for f in replayed):
        raise AssertionError(f"replay gave {len(replayed)} flows for {len(recorded)} recorded ones")
    out = []
    for i, f in enumerate(replayed, 1):
        orig = by_id[f.id]
        entry: dict[str, Any] = {"flow": i, "request": f"{f.request.method} {f.request.path}"}
        meta = f.metadata.get("mcpx")
        if meta:
            entry["session"] = meta.get("session")
            entry["revisions"] = {"client": meta.get("client_revision"), "server": meta.get("server_revision")}
            entry["messages"] = [_message_line(m) for m in meta.get("messages", [])]
        if _changed(orig.request, f.request):
            entry["request_body"] = _body_entry(f.request)
        if f.response is not None:
            entry["status"] = f.response.status_code
            if _changed(orig.response, f.response):
                entry["response_body"] = _body_entry(f.response)
        if f.error is not None:
            entry["error"] = f.error.msg
        if meta and meta.get("changes"):
            entry["changes"] = [record(c) for c in meta["changes"]]
        if meta and meta.get("replies"):
            entry["replies_not_sent"] = [sorted_keys(r) for r in meta["replies"]]
        out.append(entry)
    return {"flows": out}


def golden_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def changes_of(flows: list[http.HTTPFlow]) -> list[dict[str, Any]]:
    """Every change record on the flows' metadata, in flow order."""
    return [c for f in flows for c in (f.metadata.get("mcpx") or {}).get("changes", [])]
