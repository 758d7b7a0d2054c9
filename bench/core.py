"""Rewrite core against the JSON floor, and peak memory for a 50 MB result.

Time: for each body of :mod:`payloads`, the median per-call time of

- ``loads``: ``orjson.loads(body)`` (the floor for a body that needs no change),
- ``loads+dumps``: ``orjson.dumps(orjson.loads(body))`` (the floor for one that needs changes),
- ``mcpx json``: :meth:`Rewriter.response_json` on the body, in a session of 2025-03-26 peers
  whose request was ``tools/call`` (or ``tools/list``), as the addon calls it,
- ``mcpx sse``: the same message as one SSE event through :class:`SSERewriter` (framing included).

Calls are timed in batches of about ``batch`` seconds of this process's CPU time (so that time
the process spends descheduled on a busy machine does not count); the functions are interleaved
batch by batch (their order rotating every round) so that the machine's noise falls on all of them
alike, and the median over the rounds is kept. Nothing is written anywhere.

Memory: a child process reads a 50 MB body from a file, resets its peak RSS (``/proc/self/clear_refs``),
rewrites the body once and reports ``VmHWM`` minus the RSS it had just before (the body itself is
already in memory then, so the figure is what the rewrite adds); a second child does the same
with ``orjson.loads`` alone, for comparison.
"""
from __future__ import annotations

import gc
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
#: the mcpx tree measured (bench.py --addon DIR: another tree's addon/, for a before/after run)
ADDON_DIR = os.environ.get("MCPX_BENCH_ADDON") or str(HERE.parent / "addon")
sys.path[:0] = [str(HERE), ADDON_DIR]

import orjson  # noqa: E402

from mcpx_core.rewrite import Exchange, Rewriter, SSERewriter  # noqa: E402
from mcpx_core.session import SessionTracker  # noqa: E402
from mcpx_core.changes import ChangeLog  # noqa: E402
from payloads import HEAVY_KINDS, HEAVY_METHOD, KINDS, METHOD, REVISION, SIZES, heavy_body, result_body  # noqa: E402


def sse_framed(body: bytes) -> bytes:
    return b"event: message\r\ndata: " + body + b"\r\n\r\n"


class Target:
    """The rewrite of one body, as the addon does it (fresh Exchange per call, shared session)."""

    def __init__(self, kind: str, log: bool = False):
        self.store = SessionTracker()
        self.session = self.store.create("bench")
        self.session.client_rev = self.session.server_rev = REVISION
        self.rewriter = Rewriter(self.store)
        # as the addon runs by default (no mcpx_log, no record lines): records past the flow's kept ones
        # are counted, not described. ``log``: as with mcpx_log set, every record written (to /dev/null)
        self.rewriter.summarize_all = log
        if log:
            sink = ChangeLog(None)
            sink._fh = open(os.devnull, "ab", buffering=0)  # the log's serialisation, nothing kept
            self.rewriter.on_changes = lambda exch, changes: sink.write(changes)
        self.method = {**METHOD, **HEAVY_METHOD}[kind]

    def exchange(self) -> Exchange:
        exch = Exchange(flow_id="bench", session=self.session, is_mcp=True, single_request_id=1)
        exch.request_ids[1] = self.method  # what Rewriter.request records for a POST of one request
        return exch

    def json(self, body: bytes) -> tuple[bytes | None, Exchange]:
        exch = self.exchange()
        return self.rewriter.response_json(exch, body), exch

    def sse(self, body: bytes) -> tuple[bytes, Exchange]:
        exch = self.exchange()
        return SSERewriter(self.rewriter, exch).whole(body), exch


def _timer(fn, arg_for_batch):
    """A batch runner: ``run(n)`` -> seconds per call (setup for the batch is not timed)."""
    def run(n: int) -> float:
        args = arg_for_batch(n)
        gc.collect()
        t0 = time.process_time()
        for a in args:
            fn(a)
        return (time.process_time() - t0) / n
    return run


def interleaved(runners: dict, rounds: int, batch: float) -> dict[str, float]:
    """Median seconds per call of each runner, batches interleaved round by round."""
    sizes = {}
    for name, run in runners.items():
        run(1)  # warm up (schema models, caches)
        t = run(1)
        sizes[name] = max(1, min(20000, int(batch / max(t, 1e-7))))
    times: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            times[name].append(runners[name](sizes[name]))
    return {name: statistics.median(v) for name, v in times.items()}


def time_rows(rounds: int, batch: float, sizes: dict[str, int] | None = None, kinds=KINDS, log=print) -> list[dict]:
    """One row per (kind, size, case) with median times in seconds and the ratios."""
    rows = []
    for kind in kinds:
        target = Target(kind)
        for label, size in (sizes or SIZES).items():
            for changed in (False, True):
                body = result_body(kind, size, changed)
                sse_body = sse_framed(body)
                out, exch = target.json(body)
                sse_out, sse_exch = target.sse(sse_body)
                n_changes = len(exch.changes)
                if (out is None) == changed or (sse_out == sse_body) == changed or len(sse_exch.changes) != n_changes:
                    raise AssertionError(f"{kind} {label} changed={changed}: unexpected rewrite ({n_changes} changes)")
                runners = {
                    "loads": _timer(orjson.loads, lambda n: [body] * n),
                    "loads+dumps": _timer(lambda b: orjson.dumps(orjson.loads(b)), lambda n: [body] * n),
                    "mcpx json": _timer(lambda e: target.rewriter.response_json(e, body),
                                        lambda n: [target.exchange() for _ in range(n)]),
                    "mcpx sse": _timer(lambda e: SSERewriter(target.rewriter, e).whole(sse_body),
                                       lambda n: [target.exchange() for _ in range(n)]),
                }
                med = interleaved(runners, rounds, batch)
                floor = med["loads+dumps"] if changed else med["loads"]
                row = {"kind": kind, "size": label, "bytes": len(body), "case": "changes" if changed else "no change",
                       "changes": n_changes, **med,
                       "ratio json": med["mcpx json"] / floor, "ratio sse": med["mcpx sse"] / floor,
                       "target": 2.0 if changed else 1.2}
                rows.append(row)
                log(f"  core {kind:5} {label:>5} {row['case']:9}: loads {med['loads']*1e3:8.3f} ms, loads+dumps "
                    f"{med['loads+dumps']*1e3:8.3f} ms, mcpx json {med['mcpx json']*1e3:8.3f} ms ({row['ratio json']:.2f}x), "
                    f"sse {med['mcpx sse']*1e3:8.3f} ms ({row['ratio sse']:.2f}x)")
    return rows


def heavy_rows(rounds: int, batch: float, sizes: dict[str, int] | None = None, kinds=HEAVY_KINDS, log=print) -> list[dict]:
    """Rewrite-heavy bodies (issue 16): one row per (kind, size), times in seconds, the ratio to
    ``loads+dumps`` and the cost per change record beyond that floor.

    ``mcpx json``: :meth:`Rewriter.response_json` as the addon calls it by default; ``+ read``: and
    then every record the flow keeps read as the addon stores it (``as_dict``, what
    ``State.annotate`` does: the summaries made then); ``mcpx_log``: with every record described
    and written as JSON Lines (to /dev/null); ``mcpx sse``: the body as one SSE event."""
    rows = []
    for kind in kinds:
        target, logged = Target(kind), Target(kind, log=True)
        for label, size in (sizes or SIZES).items():
            body = heavy_body(kind, size)
            sse_body = sse_framed(body)
            out, exch = target.json(body)
            n_changes = len(exch.changes) + exch.changes_omitted
            if out is None or n_changes == 0:
                raise AssertionError(f"{kind} {label}: no rewrite")

            def read(e):
                target.rewriter.response_json(e, body)
                for c in e.changes:
                    c.as_dict()

            runners = {
                "loads": _timer(orjson.loads, lambda n: [body] * n),
                "loads+dumps": _timer(lambda b: orjson.dumps(orjson.loads(b)), lambda n: [body] * n),
                "mcpx json": _timer(lambda e: target.rewriter.response_json(e, body), lambda n: [target.exchange() for _ in range(n)]),
                "mcpx json + read": _timer(read, lambda n: [target.exchange() for _ in range(n)]),
                "mcpx_log": _timer(lambda e: logged.rewriter.response_json(e, body), lambda n: [logged.exchange() for _ in range(n)]),
                "mcpx sse": _timer(lambda e: SSERewriter(target.rewriter, e).whole(sse_body), lambda n: [target.exchange() for _ in range(n)]),
            }
            med = interleaved(runners, rounds, batch)
            floor = med["loads+dumps"]
            row = {"kind": kind, "size": label, "bytes": len(body), "case": "rewrite-heavy", "changes": n_changes,
                   "kept": len(exch.changes), **med,
                   **{f"ratio {k}": med[k] / floor for k in ("mcpx json", "mcpx json + read", "mcpx_log", "mcpx sse")},
                   **{f"us per record {k}": (med[k] - floor) / n_changes * 1e6 for k in ("mcpx json", "mcpx json + read", "mcpx_log")},
                   "target": 3.0}
            rows.append(row)
            log(f"  heavy {kind:8} {label:>5}: {n_changes:6} records, loads+dumps {floor*1e3:8.3f} ms, mcpx json "
                f"{med['mcpx json']*1e3:8.3f} ms ({row['ratio mcpx json']:.2f}x, {row['us per record mcpx json']:.2f} us/record), "
                f"+ read {row['ratio mcpx json + read']:.2f}x ({row['us per record mcpx json + read']:.2f} us), "
                f"mcpx_log {row['ratio mcpx_log']:.2f}x ({row['us per record mcpx_log']:.2f} us), sse {row['ratio mcpx sse']:.2f}x")
    return rows


# -- memory --------------------------------------------------------------------------------------
def _status() -> dict[str, int]:
    text = pathlib.Path("/proc/self/status").read_text()
    return {k: int(re.search(k + r":\s+(\d+) kB", text).group(1)) * 1024 for k in ("VmRSS", "VmHWM")}


def memory_child(kind: str, changed: bool, path: str, floor: bool) -> dict:
    """Peak RSS added by one rewrite of the body in ``path`` (``floor``: by ``orjson.loads`` alone)."""
    target = Target(kind)
    target.json(result_body(kind, 2000, changed))  # load schemas and caches first
    body = pathlib.Path(path).read_bytes()
    gc.collect()
    pathlib.Path("/proc/self/clear_refs").write_text("5")
    before = _status()["VmRSS"]
    t0 = time.perf_counter()
    if floor:
        orjson.loads(body)
        out, n_changes = None, 0
    else:
        out, exch = target.json(body)
        n_changes = len(exch.changes)
    elapsed = time.perf_counter() - t0
    peak = _status()["VmHWM"]
    return {"kind": kind, "case": "changes" if changed else "no change", "bytes": len(body), "changed": out is not None,
            "changes": n_changes, "before": before, "peak": peak, "extra": peak - before, "seconds": elapsed}


def memory_rows(size: int = 50_000_000, kinds=KINDS, log=print) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="mcpx-bench-") as tmp:
        for kind in kinds:
            for changed in (False, True):
                path = os.path.join(tmp, f"{kind}-{changed}.json")
                pathlib.Path(path).write_bytes(result_body(kind, size, changed))
                got = []
                for floor in (False, True):
                    cp = subprocess.run([sys.executable, __file__, "--memory-child", kind, str(int(changed)), path,
                                         str(int(floor))], capture_output=True, timeout=600)
                    if cp.returncode != 0:
                        raise RuntimeError(f"memory child failed: {cp.stderr.decode()[-2000:]}")
                    got.append(json.loads(cp.stdout.decode().strip().splitlines()[-1]))
                row, floor_row = got
                row["ratio"] = row["extra"] / row["bytes"]
                row["loads extra"] = floor_row["extra"]
                rows.append(row)
                log(f"  memory {kind:5} {row['case']:9}: {row['bytes']/1e6:.0f} MB body, rewrite adds "
                    f"{row['extra']/1e6:.0f} MB peak RSS ({row['ratio']:.2f}x the body; orjson.loads alone "
                    f"{floor_row['extra']/1e6:.0f} MB), {row['seconds']*1e3:.0f} ms")
                os.unlink(path)
    return rows


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--memory-child":
        print(json.dumps(memory_child(sys.argv[2], sys.argv[3] == "1", sys.argv[4], sys.argv[5] == "1")))
    else:
        time_rows(rounds=5, batch=0.05)
        memory_rows()
