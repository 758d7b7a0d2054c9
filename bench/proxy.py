"""Proxy overhead and streaming, through the real ``mitmdump`` on loopback.

Processes (all on 127.0.0.1, all ended at the end by their own handles):

- two :mod:`server` instances on PyPI ``mcp==2.3.0``: one answering ``tools/call`` with
  ``application/json``, one with ``text/event-stream``;
- in front of each: bare ``mitmdump --mode reverse:...`` (no script) and
  ``mitmdump -s addon/mcpx.py --mode reverse:...``, default options otherwise; for the streaming
  figures also a bare ``mitmdump --set stream_large_bodies=1`` (bare mitmproxy buffers a response
  unless told to stream it; mcpx streams every SSE response itself).

For JSON responses also ``mitmdump -s bench/noop_addon.py`` (an addon with mcpx's hook methods
that does nothing): mitmproxy's cost of running any addon, so that mcpx's own share shows; and, in
every JSON row (clean and rewrite-heavy), ``mitmdump -s bench/floor_addon.py``, which only parses
and re-serialises each body: the lowest p50 ratio any addon that rewrites a JSON body can reach on it.

Placement: with two or more cores, each proxy runs pinned to the last core and the servers and the
load client to the others (``sched_setaffinity``), the same for every proxy measured.

Throughput: the same bounded load (``calls`` ``tools/call`` at ``concurrency`` sessions) through
each proxy, rounds interleaved (bare, mcpx, mcpx, bare, ...), median over the rounds of requests/s,
p50 and p99 latency, and the proxy process's CPU time per call (user + system, from /proc: less
sensitive than latency to other load on the machine). Streaming: time to first SSE event (median of sequential calls, interleaved)
and the mitmdump process's resident memory sampled every 10 ms during 1,000- and 10,000-event streams.
"""
from __future__ import annotations

import asyncio
import os
import pathlib
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT / "tests")]

from load import BenchError, Client, result_of, run_load  # noqa: E402
from proxy_lib import ADDON, free_port, mitmdump_bin  # noqa: E402  (the same helpers the tests use)

SERVER_PYTHON = ROOT / "tests" / "peers" / ".venvs" / "mcp-2.3.0" / "bin" / "python"


class Proc:
    """A child process listening on ``port`` (waited for), stopped with :meth:`stop`."""

    def __init__(self, name: str, argv: list[str], port: int, env: dict | None = None, cpus: set[int] | None = None):
        self.name, self.port = name, port
        pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None  # before exec: every thread inherits it
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=str(ROOT),
                                     env=env or os.environ.copy(), start_new_session=True, preexec_fn=pin)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"{name} exited: {self.proc.stderr.read().decode()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise BenchError(f"{name} did not listen on {port}")

    def cpu(self) -> float:
        """CPU time (user + system, seconds) the process has used so far (Linux /proc)."""
        fields = pathlib.Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss(self) -> int:
        """Resident set size in bytes (Linux /proc)."""
        for line in pathlib.Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_raw_server(transport: str) -> Proc:
    """:mod:`raw_server` (prebuilt rewrite-heavy bodies), in this environment (it needs orjson)."""
    port = free_port()
    return Proc(f"raw-server-{transport}", [sys.executable, str(HERE / "raw_server.py"), str(port), transport], port,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONUNBUFFERED": "1"}, cpus=PEER_CPUS)


def start_server(transport: str) -> Proc:
    if not SERVER_PYTHON.exists():
        raise BenchError(f"{SERVER_PYTHON} is missing: run scripts/setup.sh (it installs the mcp 2.3.0 peer)")
    port = free_port()
    return Proc(f"server-{transport}", [str(SERVER_PYTHON), str(HERE / "server.py"), str(port), transport], port,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONUNBUFFERED": "1"}, cpus=PEER_CPUS)


#: with two or more cores, every proxy measured runs alone on the last core, and the servers and
#: the load client (this process, see :class:`Bench`) share the others: the proxy's latency and CPU
#: time then depend far less on what the client and server happen to do at the same moment
_CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
PROXY_CPUS = {_CPUS[-1]} if len(_CPUS) >= 2 else None
PEER_CPUS = set(_CPUS[:-1]) if len(_CPUS) >= 2 else None


NOOP_ADDON = HERE / "noop_addon.py"
#: parses and re-serialises each JSON response, nothing else: the floor of any rewriting addon
FLOOR_ADDON = HERE / "floor_addon.py"
#: the mcpx script the "mcpx" proxies load (bench.py --addon: another tree's, for a before/after run)
MCPX_SCRIPT = ADDON


def start_proxy(name: str, upstream: Proc, mcpx: bool, stream: bool = False, script: pathlib.Path | None = None) -> Proc:
    port = free_port()
    argv = [mitmdump_bin(), "--mode", f"reverse:http://127.0.0.1:{upstream.port}", "--listen-host", "127.0.0.1",
            "-p", str(port)]
    if mcpx or script:
        argv += ["-s", str(script or MCPX_SCRIPT)]
    if stream:
        argv += ["--set", "stream_large_bodies=1"]
    return Proc(name, argv, port, cpus=PROXY_CPUS)


def summary(lat: list[float], wall: float) -> dict:
    lat = sorted(lat)
    return {"rps": len(lat) / wall, "p50": statistics.median(lat), "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))]}


def _check_text(size: int):
    def check(rep) -> None:
        msg = result_of(rep)
        content = msg["result"]["content"]
        if len(content) != 1 or len(content[0]["text"]) != size:
            raise BenchError(f"unexpected result through the proxy: {str(msg)[:200]}")
    return check


def _check_heavy(kind: str, rewritten: bool):
    """A heavy reply: mcpx's has no block or field a 2025-03-26 client lacks; the others have them."""
    marker = b'"resource_link"' if kind == "links" else b'"icons"'

    def check(rep) -> None:
        result_of(rep)  # a JSON-RPC response is there
        if (marker in rep.body) == rewritten:
            raise BenchError(f"{kind}: {'not ' if rewritten else ''}rewritten: {rep.body[:200]!r}")
    return check


class Bench:
    """The processes of one benchmark run; ``with Bench() as b: ...`` stops them all at the end."""

    def __init__(self, log=print, sdk: bool = True):
        self.log = log
        self.sdk = sdk  # start the mcp 2.3.0 servers and their proxies (parts 2 and 3; not for the heavy part alone)
        self.procs: list[Proc] = []
        self._affinity: set[int] | None = None

    def __enter__(self) -> "Bench":
        self._affinity = os.sched_getaffinity(0) if PEER_CPUS else None
        if PEER_CPUS:
            os.sched_setaffinity(0, PEER_CPUS)  # the load client runs beside the servers, not on the proxy's core
        try:
            if not self.sdk:
                return self
            self.servers = {t: self._add(start_server(t)) for t in ("json", "sse")}
            self.proxies = {}
            for t, srv in self.servers.items():
                self.proxies[("bare", t)] = self._add(start_proxy(f"bare-{t}", srv, mcpx=False))
                self.proxies[("mcpx", t)] = self._add(start_proxy(f"mcpx-{t}", srv, mcpx=True))
            self.proxies[("bare stream", "sse")] = self._add(start_proxy("bare-sse-stream", self.servers["sse"], mcpx=False, stream=True))
            self.proxies[("noop", "json")] = self._add(start_proxy("noop-json", self.servers["json"], mcpx=False, script=NOOP_ADDON))
            self.proxies[("floor", "json")] = self._add(start_proxy("floor-json", self.servers["json"], mcpx=False, script=FLOOR_ADDON))
        except BaseException:
            self.__exit__()
            raise
        return self

    def _add(self, p: Proc) -> Proc:
        self.procs.append(p)
        return p

    def __exit__(self, *exc) -> None:
        for p in reversed(self.procs):
            p.stop()
        if self._affinity:
            os.sched_setaffinity(0, self._affinity)

    # -- throughput -----------------------------------------------------------------------------
    def throughput(self, rounds: int, plan: dict[str, tuple[int, int]], concurrency: int = 8) -> list[dict]:
        """``plan``: size label -> (result characters, calls per run). One row per size, transport, proxy."""
        rows = []
        for label, (size, calls) in plan.items():
            for transport in ("json", "sse"):
                targets = {"direct": self.servers[transport], "bare": self.proxies[("bare", transport)],
                           "mcpx": self.proxies[("mcpx", transport)]}
                if transport == "sse":  # mcpx streams SSE; bare mitmdump buffers it unless told to stream
                    targets["bare stream"] = self.proxies[("bare stream", "sse")]
                else:  # an addon that does nothing: what mitmproxy charges for running any addon; and the floor
                    targets["noop"] = self.proxies[("noop", "json")]
                    targets["floor"] = self.proxies[("floor", "json")]
                runs: dict[str, list[dict]] = {name: [] for name in targets}
                # warm-up: one short run each (imports, schema models, connection pools)
                for name, p in targets.items():
                    asyncio.run(run_load(p.port, f"127.0.0.1:{self.servers[transport].port}", min(calls, 50),
                                         concurrency, "text", {"size": size}, _check_text(size)))
                for r in range(rounds):
                    order = list(targets) if r % 2 == 0 else list(targets)[::-1]
                    for name in order:
                        p = targets[name]
                        cpu0 = p.cpu()
                        lat, wall = asyncio.run(run_load(p.port, f"127.0.0.1:{self.servers[transport].port}", calls,
                                                         concurrency, "text", {"size": size}, _check_text(size)))
                        runs[name].append({**summary(lat, wall), "cpu": (p.cpu() - cpu0) / calls})
                med = {name: {k: statistics.median(x[k] for x in v) for k in ("rps", "p50", "p99", "cpu")} for name, v in runs.items()}
                row = {"size": label, "transport": transport, "calls": calls, "concurrency": concurrency, "rounds": rounds,
                       **{f"{n} {k}": med[n][k] for n in med for k in ("rps", "p50", "p99", "cpu")},
                       "p50 ratio": med["mcpx"]["p50"] / med["bare"]["p50"],
                       "p99 ratio": med["mcpx"]["p99"] / med["bare"]["p99"],
                       "rps ratio": med["mcpx"]["rps"] / med["bare"]["rps"]}
                if "floor" in med:
                    row["floor p50 ratio"] = med["floor"]["p50"] / med["bare"]["p50"]
                    row["floor p50 ratios"] = sorted(f["p50"] / b["p50"] for f, b in zip(runs["floor"], runs["bare"]))
                rows.append(row)
                self.log(f"  proxy {label:>4} {transport:4}: bare {med['bare']['rps']:6.0f} req/s p50 {med['bare']['p50']*1e3:6.2f} ms "
                         f"p99 {med['bare']['p99']*1e3:6.2f} ms | mcpx {med['mcpx']['rps']:6.0f} req/s p50 {med['mcpx']['p50']*1e3:6.2f} ms "
                         f"p99 {med['mcpx']['p99']*1e3:6.2f} ms | p50 {row['p50 ratio']:.2f}x, req/s {row['rps ratio']:.2f}x, "
                         f"proxy CPU/call {med['bare']['cpu']*1e3:.2f} -> {med['mcpx']['cpu']*1e3:.2f} ms "
                         f"(direct {med['direct']['rps']:.0f} req/s, p50 {med['direct']['p50']*1e3:.2f} ms)"
                         + (f"; floor addon: p50 {row['floor p50 ratio']:.2f}x" if "floor" in med else ""))
        return rows

    # -- rewrite-heavy results (issue 16) ------------------------------------------------------
    def heavy(self, rounds: int, plan: list[tuple[str, str, int, int, tuple[str, ...]]], records: dict,
              concurrency: int = 8, before: pathlib.Path | None = None) -> list[dict]:
        """Rewrite-heavy bodies from :mod:`raw_server` through bare mitmdump, the no-op addon and
        mcpx, interleaved as :meth:`throughput`. ``plan``: (kind, size label, bytes, calls per run,
        transports). ``records``: (kind, bytes) -> change records mcpx makes per call (for the
        proxy CPU per record). ``before``: another mcpx script, run interleaved as "before" (a
        before/after comparison in the same run). One row per kind, size and transport."""
        servers = {t: self._add(start_raw_server(t)) for t in sorted({t for *_, ts in plan for t in ts})}
        proxies = {}
        for t, srv in servers.items():
            proxies[("bare", t)] = self._add(start_proxy(f"bare-raw-{t}", srv, mcpx=False))
            proxies[("mcpx", t)] = self._add(start_proxy(f"mcpx-raw-{t}", srv, mcpx=True))
            if before is not None:
                proxies[("before", t)] = self._add(start_proxy(f"before-raw-{t}", srv, mcpx=False, script=before))
            if t == "json":
                proxies[("noop", t)] = self._add(start_proxy(f"noop-raw-{t}", srv, mcpx=False, script=NOOP_ADDON))
                proxies[("floor", t)] = self._add(start_proxy(f"floor-raw-{t}", srv, mcpx=False, script=FLOOR_ADDON))
            else:
                proxies[("bare stream", t)] = self._add(start_proxy(f"bare-raw-{t}-stream", srv, mcpx=False, stream=True))
        rows = []
        for kind, label, size, calls, transports in plan:
            method, args = ("tools/call", {"size": size}) if kind == "links" else ("tools/list", {"cursor": f"tooldefs:{size}"})
            for transport in transports:
                srv = servers[transport]
                targets = {"direct": srv, **{name: p for (name, t), p in proxies.items() if t == transport}}

                def load(name: str, n: int):
                    return asyncio.run(run_load(targets[name].port, f"127.0.0.1:{srv.port}", n, concurrency, "links", args,
                                                _check_heavy(kind, rewritten=name in ("mcpx", "before")), method=method))

                for name in targets:  # warm-up: imports, schema models, connection pools
                    load(name, min(calls, 20))
                runs: dict[str, list[dict]] = {name: [] for name in targets}
                for r in range(rounds):
                    for name in (list(targets) if r % 2 == 0 else list(targets)[::-1]):
                        p = targets[name]
                        cpu0 = p.cpu()
                        lat, wall = load(name, calls)
                        runs[name].append({**summary(lat, wall), "cpu": (p.cpu() - cpu0) / calls})
                med = {name: {k: statistics.median(x[k] for x in v) for k in ("rps", "p50", "p99", "cpu")} for name, v in runs.items()}
                spread = {name: (min(x["p50"] for x in v), max(x["p50"] for x in v)) for name, v in runs.items()}
                n_rec = records[(kind, size)]
                row = {"kind": kind, "size": label, "bytes": size, "transport": transport, "calls": calls, "rounds": rounds,
                       "concurrency": concurrency, "records": n_rec,
                       **{f"{n} {k}": med[n][k] for n in med for k in ("rps", "p50", "p99", "cpu")},
                       **{f"{n} p50 range": spread[n] for n in spread},
                       "p50 ratio": med["mcpx"]["p50"] / med["bare"]["p50"],
                       "p50 ratios": sorted(m["p50"] / b["p50"] for m, b in zip(runs["mcpx"], runs["bare"])),
                       "rps ratio": med["mcpx"]["rps"] / med["bare"]["rps"],
                       "us per record": (med["mcpx"]["cpu"] - med["bare"]["cpu"]) / max(n_rec, 1) * 1e6}
                if "floor" in med:
                    row["floor p50 ratio"] = med["floor"]["p50"] / med["bare"]["p50"]
                    row["floor p50 ratios"] = sorted(f["p50"] / b["p50"] for f, b in zip(runs["floor"], runs["bare"]))
                if "before" in med:
                    row["before p50 ratio"] = med["before"]["p50"] / med["bare"]["p50"]
                    row["before p50 ratios"] = sorted(m["p50"] / b["p50"] for m, b in zip(runs["before"], runs["bare"]))
                    row["before us per record"] = (med["before"]["cpu"] - med["bare"]["cpu"]) / max(n_rec, 1) * 1e6
                rows.append(row)
                self.log(f"  heavy {kind:8} {label:>5} {transport:4}: bare p50 {med['bare']['p50']*1e3:7.2f} ms, mcpx p50 "
                         f"{med['mcpx']['p50']*1e3:7.2f} ms ({row['p50 ratio']:.2f}x; rounds {row['p50 ratios'][0]:.2f}-"
                         f"{row['p50 ratios'][-1]:.2f}x), req/s {row['rps ratio']:.2f}x, proxy CPU/call "
                         f"{med['bare']['cpu']*1e3:.2f} -> {med['mcpx']['cpu']*1e3:.2f} ms ({n_rec} records: "
                         f"{row['us per record']:.1f} us each)"
                         + (f"; floor addon: p50 {row['floor p50 ratio']:.2f}x, CPU/call {med['floor']['cpu']*1e3:.2f} ms"
                            if "floor" in med else "")
                         + (f"; before: p50 {row['before p50 ratio']:.2f}x, CPU/call {med['before']['cpu']*1e3:.2f} ms "
                            f"({row['before us per record']:.1f} us/record)" if "before" in med else ""))
        return rows

    # -- streaming ------------------------------------------------------------------------------
    def first_event(self, calls: int, pause_ms: int = 100) -> dict:
        """Median time from sending a tools/call to holding its first complete SSE event."""
        srv = self.servers["sse"]
        targets = {"direct": srv, "bare stream": self.proxies[("bare stream", "sse")], "mcpx": self.proxies[("mcpx", "sse")],
                   "bare buffered": self.proxies[("bare", "sse")]}

        async def run() -> dict[str, list[float]]:
            clients = {}
            for name, p in targets.items():
                c = Client(p.port, f"127.0.0.1:{srv.port}")
                await c.connect()
                await c.initialize()
                clients[name] = c
            out: dict[str, list[float]] = {name: [] for name in targets}
            names = list(targets)
            for i in range(calls + 2):
                for name in (names if i % 2 == 0 else names[::-1]):
                    t0 = time.perf_counter()
                    rep = await clients[name].call("events", {"count": 1, "pause_ms": pause_ms})
                    if rep.first_event is None:
                        raise BenchError(f"{name}: no SSE event")
                    if i >= 2:  # the first two calls warm up
                        out[name].append(rep.first_event - t0)
            for c in clients.values():
                await c.close()
            return out

        times = asyncio.run(run())
        med = {name: statistics.median(v) for name, v in times.items()}
        row = {"calls": calls, "pause_ms": pause_ms, **{f"{n} ttfe": v for n, v in med.items()},
               "delta": med["mcpx"] - med["bare stream"]}
        self.log(f"  first event: direct {med['direct']*1e3:.2f} ms, bare streaming {med['bare stream']*1e3:.2f} ms, "
                 f"mcpx {med['mcpx']*1e3:.2f} ms (+{row['delta']*1e3:.2f} ms); bare buffered {med['bare buffered']*1e3:.2f} ms")
        return row

    def stream_memory(self, counts=(1000, 10000, 20000), size: int = 100) -> list[dict]:
        """Peak RSS of mcpx (and streaming bare) mitmdump while it forwards one long SSE stream.

        A fresh process for each stream length (warmed up by one 200-event stream), so that what an
        earlier stream left for the garbage collector does not count: the figure is the peak during
        the stream minus the RSS just before it.
        """
        srv = self.servers["sse"]

        async def one(px: Proc, count: int) -> tuple[int, int, float]:
            c = Client(px.port, f"127.0.0.1:{srv.port}")
            await c.connect()
            await c.initialize()
            before = px.rss()
            peak = [before]
            stop = threading.Event()

            def sample():
                while not stop.is_set():
                    peak[0] = max(peak[0], px.rss())
                    time.sleep(0.01)

            th = threading.Thread(target=sample, daemon=True)
            th.start()
            t0 = time.perf_counter()
            try:
                rep = await c.call("events", {"count": count, "pause_ms": 0, "size": size})
            finally:
                stop.set()
                th.join()
                await c.close()
            events = rep.body.count(b"notifications/message")
            if events != count:
                raise BenchError(f"{px.name}: {events} of {count} events arrived")
            return before, peak[0], time.perf_counter() - t0

        rows = []
        for name, mcpx in (("mcpx", True), ("bare stream", False)):
            for count in counts:
                px = self._add(start_proxy(f"{name}-memory", srv, mcpx=mcpx, stream=not mcpx))
                asyncio.run(one(px, 200))  # warm up
                before, peak, secs = asyncio.run(one(px, count))
                px.stop()
                rows.append({"proxy": name, "events": count, "before": before, "peak": peak, "seconds": secs})
                self.log(f"  stream memory {name:11} {count:6} events: RSS {before/1e6:.1f} MB before, peak {peak/1e6:.1f} MB "
                         f"(+{(peak-before)/1e6:.1f} MB), {secs:.2f} s")
        return rows
