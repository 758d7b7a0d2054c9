"""Replay recorded flow files (flows/*.mitm) through mcpx offline, and render golden files.

Two ways, which must give the same golden text byte for byte:

- :func:`replay_in_process`: the installed package's own replay (:func:`mcpx_core.testing.replay.replay`,
  what the pytest plugin uses): ``mitmproxy.io.FlowReader`` loads the flows; a fresh ``MCPX`` in a
  ``mitmproxy.test.taddons.context`` gets each flow's hooks in order, so session state carries from flow to flow.
- :func:`replay_mitmdump`: the real ``mitmdump -nr FLOWS -s addon/mcpx.py -w OUT``; OUT is read back.

The golden rendering (:func:`golden`, :func:`golden_text`, :func:`render_body`, :func:`changes_of`)
is :mod:`mcpx_core.testing.replay`'s; this module adds the checkout's paths and the mitmdump runs.

Loaded flows are not live, so mcpx never contacts a server while replaying (addon/mcpx.py).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mitmproxy import http

from mcpx_core.testing import replay
from mcpx_core.testing.replay import VOLATILE, changes_of, golden, golden_text, load, render_body, sse_events  # noqa: F401  (this module's API)

ROOT = pathlib.Path(__file__).resolve().parents[2]
FLOWS_DIR = ROOT / "flows"
ADDON = ROOT / "addon" / "mcpx.py"


def flow_files() -> list[pathlib.Path]:
    return sorted(FLOWS_DIR.glob("*.mitm"))


def golden_path(flow_file: pathlib.Path) -> pathlib.Path:
    return flow_file.with_name(flow_file.name.removesuffix(".mitm") + ".golden.json")


def replay_in_process(path: pathlib.Path, options: dict[str, Any] | None = None) -> list[http.HTTPFlow]:
    """Load ``path`` and run every flow through a fresh MCPX's hooks, in order. ``options``:
    mitmproxy options (e.g. ``{"mcpx_log": "/tmp/x.jsonl"}``). Returns the replayed flows."""
    return replay.replay(path, options)


def mitmdump_bin() -> str:
    cand = pathlib.Path(sys.executable).with_name("mitmdump")
    return str(cand) if cand.exists() else "mitmdump"


def mitmdump_argv(path: pathlib.Path, out: pathlib.Path, options: dict[str, Any] | None = None) -> list[str]:
    argv = [mitmdump_bin(), "-q", "-n", "-r", str(path), "-s", str(ADDON), "-w", str(out)]
    for k, v in (options or {}).items():
        argv += ["--set", f"{k}={v}"]
    return argv


def replay_mitmdump(path: pathlib.Path, out: pathlib.Path, options: dict[str, Any] | None = None,
                    timeout: float | None = None) -> list[http.HTTPFlow]:
    """``mitmdump -nr PATH -s addon/mcpx.py -w OUT``; returns the flows of OUT, one per flow id.

    mitmproxy's Save addon writes a flow on its ``response`` and again on its ``error`` hook, and
    a replayed flow that has both (e.g. the client disconnected at the end of an SSE response)
    gets both hooks: the last copy of each flow is kept, in the order the flows were written.
    ``timeout`` defaults to MCPX_REPLAY_TIMEOUT seconds, else 60 (scripts/mutation.sh raises it: there
    every mcpx function goes through mutmut's trampoline and a replay runs about 5 times slower).
    """
    if timeout is None:
        timeout = float(os.environ.get("MCPX_REPLAY_TIMEOUT", "60"))
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
