"""Replay recorded flow files (flows/*.mitm) through mcpx offline, and render golden files.

Two ways, which must give the same golden text byte for byte:

- :func:`replay_in_process`: ``mitmproxy.io.FlowReader`` loads the flows; a fresh ``MCPX`` in a
  ``mitmproxy.test.taddons.context`` gets each flow's hooks in order (``tctx.cycle``: requestheaders,
  request, responseheaders, response, or error), so session state carries from flow to flow.
- :func:`replay_mitmdump`: the real ``mitmdump -nr FLOWS -s addon/mcpx.py -w OUT``; OUT is read back.

:func:`golden` renders replayed flows (compared with the recorded ones) as readable JSON: per flow
its request line, the session and revisions, the JSON-RPC messages mcpx saw, the delivered request
and response bodies where mcpx changed them (parsed JSON; SSE bodies as a list of events; with
their size and sha256 so the bytes are pinned too), the change records without their volatile
``time`` and ``flow`` fields, and the answers mcpx would send upstream on the client's behalf.

Loaded flows are not live, so mcpx never contacts a server while replaying (addon/mcpx.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mitmproxy import http, io
from mitmproxy.test import taddons

ROOT = pathlib.Path(__file__).resolve().parents[2]
FLOWS_DIR = ROOT / "flows"
ADDON = ROOT / "addon" / "mcpx.py"
#: change record fields that differ from run to run
VOLATILE = ("time", "flow")


def flow_files() -> list[pathlib.Path]:
    return sorted(FLOWS_DIR.glob("*.mitm"))


def golden_path(flow_file: pathlib.Path) -> pathlib.Path:
    return flow_file.with_name(flow_file.name.removesuffix(".mitm") + ".golden.json")


def load(path: pathlib.Path) -> list[http.HTTPFlow]:
    """The HTTP flows of a flow file, in file order (``mitmproxy.io.FlowReader``)."""
    with open(path, "rb") as fh:
        return [f for f in io.FlowReader(fh).stream() if isinstance(f, http.HTTPFlow)]


def _mcpx_addon():
    """A fresh MCPX instance from addon/mcpx.py (as ``mitmdump -s`` loads it)."""
    addon_dir = str(ADDON.parent)
    if addon_dir not in sys.path:
        sys.path.insert(0, addon_dir)
    import mcpx

    return mcpx.MCPX()


def replay_in_process(path: pathlib.Path, options: dict[str, Any] | None = None) -> list[http.HTTPFlow]:
    """Load ``path`` and run every flow through a fresh MCPX's hooks, in order. ``options``:
    mitmproxy options (e.g. ``{"mcpx_log": "/tmp/x.jsonl"}``). Returns the replayed flows."""
    flows = load(path)

    async def run() -> None:
        addon = _mcpx_addon()
        with taddons.context(addon) as tctx:
            tctx.configure(addon, **(options or {}))
            for f in flows:
                await tctx.cycle(addon, f)
            for a in addon.addons:
                if hasattr(a, "done"):
                    a.done()

    asyncio.run(run())
    return flows


def mitmdump_bin() -> str:
    cand = pathlib.Path(sys.executable).with_name("mitmdump")
    return str(cand) if cand.exists() else "mitmdump"


def mitmdump_argv(path: pathlib.Path, out: pathlib.Path, options: dict[str, Any] | None = None) -> list[str]:
    argv = [mitmdump_bin(), "-q", "-n", "-r", str(path), "-s", str(ADDON), "-w", str(out)]
    for k, v in (options or {}).items():
        argv += ["--set", f"{k}={v}"]
    return argv


def replay_mitmdump(path: pathlib.Path, out: pathlib.Path, options: dict[str, Any] | None = None,
                    timeout: float = 60) -> list[http.HTTPFlow]:
    """``mitmdump -nr PATH -s addon/mcpx.py -w OUT``; returns the flows of OUT, one per flow id.

    mitmproxy's Save addon writes a flow on its ``response`` and again on its ``error`` hook, and
    a replayed flow that has both (e.g. the client disconnected at the end of an SSE response)
    gets both hooks: the last copy of each flow is kept, in the order the flows were written.
    """
    cp = subprocess.run(mitmdump_argv(path, out, options), capture_output=True, timeout=timeout, cwd=ROOT,
                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if cp.returncode != 0:
        raise RuntimeError(f"mitmdump exited {cp.returncode}: {cp.stdout[-2000:]!r} {cp.stderr[-2000:]!r}")
    last: dict[str, http.HTTPFlow] = {}
    for f in load(out):
        last[f.id] = f  # dict keeps the position of the first copy
    return list(last.values())


def replay_mitmdump_many(paths: list[pathlib.Path], outdir: pathlib.Path,
                         options: Callable[[pathlib.Path], dict[str, Any]] | None = None,
                         workers: int = 4) -> dict[pathlib.Path, list[http.HTTPFlow]]:
    """:func:`replay_mitmdump` for several flow files at once (one mitmdump each, ``workers`` at a
    time); OUT is ``outdir/NAME.mitm``. ``options(path)`` gives each run's options."""
    outdir.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {p: pool.submit(replay_mitmdump, p, outdir / p.name, options(p) if options else None) for p in paths}
        return {p: fut.result() for p, fut in futures.items()}


# -- golden rendering --------------------------------------------------------------------------
def sse_events(body: bytes) -> list[dict[str, Any]]:
    """A text/event-stream body as a list of events ({"event", "id", "retry", "data"}, the
    fields present); ``data`` is parsed JSON where it is JSON. Standard library only, on
    purpose independent of mcpx's own SSE parser."""
    text = body.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    events = []
    for block in text.split("\n\n"):
        if not block.strip("\n"):
            continue
        ev: dict[str, Any] = {}
        data: list[str] = []
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                if line.startswith(":"):
                    ev.setdefault("comments", []).append(line[1:].lstrip(" "))
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            else:
                ev[name] = value
        if data:
            ev["data"] = _json_or_text("\n".join(data))
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


def _record(change: dict[str, Any]) -> dict[str, Any]:
    """A change record in the field order of mcpx_core.changes.Change (a -w/-r round trip of
    flow.metadata does not keep dict order), without the volatile fields."""
    from mcpx_core.changes import FIELDS

    order = [k for k in FIELDS if k not in VOLATILE]
    rest = sorted(k for k in change if k not in order and k not in VOLATILE)
    return {k: change[k] for k in order + rest if k in change}


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
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
            entry["changes"] = [_record(c) for c in meta["changes"]]
        if meta and meta.get("replies"):
            entry["replies_not_sent"] = [_sorted(r) for r in meta["replies"]]
        out.append(entry)
    return {"flows": out}


def golden_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def changes_of(flows: list[http.HTTPFlow]) -> list[dict[str, Any]]:
    """Every change record on the flows' metadata, in flow order."""
    return [c for f in flows for c in (f.metadata.get("mcpx") or {}).get("changes", [])]
