"""Where the response hook rewrites a body: on mitmproxy's event loop, or in mcpx's worker thread.

mitmproxy runs every flow on one asyncio event loop. A body of :data:`WORKER_MIN` bytes or more
is rewritten in one worker thread (:class:`Worker`), so the loop goes on serving every other flow
meanwhile: Python's switch interval (:func:`sys.getswitchinterval`, 5 ms) hands the interpreter
back to the loop while the rewrite runs (:data:`SWITCH_INTERVAL` while it does), except inside one
C call, which holds it to its end: a large body is therefore parsed and written in slices of its
long array, and that array freed in steps (:func:`mcpx_core.framing.json_body.loads_sliced`). Smaller
bodies are rewritten on the loop, where they cost less than handing them over.

The same rewrite runs either way (the same code, the same inputs), so the delivered bytes and the
records are the same. One thread, first come first served: at most one body is rewritten outside
the loop at a time, so the memory a rewrite takes stays that of one body, as on the loop. What the
rewrite shares with the loop is safe to touch from the thread: a session's counters and pending
request ids change under the session's lock (:class:`mcpx_core.session.Session`), the change log
writes under its own lock, mitmproxy's log handlers hand entries to the loop themselves, and an
answer mcpx sends on the client's behalf is started on the loop (:meth:`State.on_reply`).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

from ..framing import json_body

T = TypeVar("T")

#: bodies of this many bytes or more are rewritten in the worker thread: a 256 KiB rewrite-heavy
#: body holds the loop about 3-8 ms when rewritten there, the hand-over costs about 0.1 ms
WORKER_MIN = 256 << 10
#: the interpreter's switch interval while the thread rewrites (Python's default: 5 ms): how long the
#: loop may wait for the interpreter each time it wakes up (a small call wakes it several times)
SWITCH_INTERVAL = 0.001


class Worker:
    """One thread that rewrites large bodies, in the order they come (:meth:`run`)."""

    def __init__(self, min_size: int = WORKER_MIN) -> None:
        self.min_size = min_size
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        #: the event loop of the last hand-over: where work the thread must not do itself goes (:meth:`on_loop`)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._running = 0
        self._interval = 0.0
        self._gc = _GCPause()

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcpx-rewrite")
            return self._pool

    async def run(self, size: int, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``: in the worker thread when ``size`` is :attr:`min_size` or more, else here."""
        if size < self.min_size:
            return fn(*args)
        self.loop = asyncio.get_running_loop()
        pool = self._executor()
        held: list = []
        if not self._running:
            self._interval = sys.getswitchinterval()
            sys.setswitchinterval(min(self._interval, SWITCH_INTERVAL))
        self._running += 1
        try:
            return await self.loop.run_in_executor(pool, self._job, held, fn, args)
        finally:
            self._running -= 1
            if not self._running:
                sys.setswitchinterval(self._interval)
            if held:  # the parsed body's long array, freed in steps after the answer went on (json_body.free)
                pool.submit(self._free, held)

    def _job(self, held: list, fn: Callable[..., T], args: tuple) -> T:
        """In the thread: ``fn(*args)`` with the cyclic garbage collector paused, keeping the long arrays
        it parses in ``held`` (:func:`json_body.holding`); the pause lasts until they are freed."""
        self._gc.pause()
        try:
            with json_body.holding() as lists:
                try:
                    return fn(*args)
                finally:
                    held.extend(lists)
        finally:
            if not held:
                self._gc.resume()

    def _free(self, held: list) -> None:
        try:
            json_body.free(held)
        finally:
            self._gc.resume()

    def on_loop(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Called from the worker thread: have ``fn(*args)`` run on the event loop and return True;
        from the loop's own thread (or with no loop known): False, the caller runs it itself."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return False
        try:
            if asyncio.get_running_loop() is loop:
                return False
        except RuntimeError:  # no loop runs in this thread: the worker
            pass
        loop.call_soon_threadsafe(fn, *args)
        return True

    def close(self) -> None:
        """Stop the thread once the rewrite it runs (if any) is done."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


class _GCPause:
    """The cyclic garbage collector paused from the start of a rewrite in the thread until the array it
    parsed is freed (used only in the thread). The rewrite pauses it anyway for a large body
    (``rewrite.GC_PAUSE_MIN``), but until its end only: a million parsed objects still held then would
    make the next collection, on whichever thread sets it off, go through all of them. A collector the
    host process turned off stays off."""

    def __init__(self) -> None:
        self.depth = 0
        self.owned = False

    def pause(self) -> None:
        if not self.depth:
            self.owned = gc.isenabled()
            if self.owned:
                gc.disable()
        self.depth += 1

    def resume(self) -> None:
        self.depth -= 1
        if not self.depth and self.owned:
            self.owned = False
            gc.enable()
