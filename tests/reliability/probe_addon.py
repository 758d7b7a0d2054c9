"""Test instrumentation loaded next to the real addon: ``mitmdump -s addon/mcpx.py -s probe_addon.py
--set probe_port=N``.

It serves ``GET /`` on 127.0.0.1:N (its own listener, so probing makes no flow and touches no
session) with the mcpx addon's live state as JSON, read on mitmproxy's event loop: distinct
sessions and keys in its store, the key -> session id map, per-flow state (exchanges, streams,
live flows, own requests), pending tasks, and this process's RSS and peak RSS (KiB, /proc/self/status).
"""
from __future__ import annotations

import asyncio
import gc
import http.server
import json
import pathlib
import threading

from mitmproxy import ctx


def _status_kib() -> dict:
    out = {}
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            out[k] = int(v.split()[0])
    return out


class Probe:
    def __init__(self) -> None:
        self.server: http.server.ThreadingHTTPServer | None = None

    def load(self, loader) -> None:
        loader.add_option("probe_port", int, 0, "Port of the test probe's listener on 127.0.0.1 (0: off).")

    def running(self) -> None:
        if not ctx.options.probe_port or self.server is not None:
            return
        loop = asyncio.get_running_loop()
        probe = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                fut = asyncio.run_coroutine_threadsafe(probe.state("gc=1" in self.path), loop)
                body = json.dumps(fut.result(10)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", ctx.options.probe_port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    async def state(self, collect: bool) -> dict:
        if collect:
            gc.collect()
        st = ctx.master.addons.get("mcpx").state
        bound = st.tracker.keys()
        return {
            "sessions": len({id(s) for s in bound.values()}),
            "keys": len(bound),
            "bound": {k: s.key for k, s in list(bound.items())[:200]},
            "upstream_ids": {k: s.upstream_id for k, s in list(bound.items())[:200]},
            "exchanges": len(st.exchanges),
            "streams": len(st.streams),
            "flows": len(st.flows),
            "own": len(st.sender.own),
            "tasks": len(st.tasks),
            "relays": len(st.resume.tasks),
            "answer_streams": len(st.answers.streams),
            **_status_kib(),
        }

    def done(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server = None


addons = [Probe()]
