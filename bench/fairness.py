"""Fairness: does a small call wait while another client receives a big result? (issue 30)

A prober (its own process and session) sends a small ``tools/list`` every 0.25 s through the
proxy, while other clients receive large bodies through the same proxy:

- ``1M blocks``: a 32 MB ``tools/call`` result of 1,000,000 text blocks to a 2024-11-05 client
  (:func:`payloads.blocks_body`; through mcpx its ``structuredContent`` becomes a text block, as for
  every client older than 2025-06-18);
- ``5 slow readers``: five clients at once, each receiving that 32 MB result while reading it
  64 KiB every 10 ms (about 6.5 MB/s each);
- ``50 MB``: a 53 MB result of 50,000 text blocks of about 1 KB, to a 2025-03-26 client.

Bare ``mitmdump`` and ``mitmdump -s addon/mcpx.py`` in front of the same :mod:`raw_server`
(prebuilt bodies, so the server costs nothing), rounds interleaved (bare, mcpx, mcpx, bare, ...).
Per case and proxy: the prober's latency p50, p99 and max over every probe sent while the case
ran (all rounds together), and its p50 when idle (the second before the case). Each big reply is
checked after the case (every block arrived; through mcpx, rewritten for its client). Target: the
max through mcpx <= bare mitmdump's max in the same run + 100 ms.

Placement as :mod:`proxy`: the proxies on the last core, the server, this process and the prober on
the others. Run by ``bench.py --parts fairness``.
"""
from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import threading
import time

import orjson

from load import BenchError, Client
from proxy import PEER_CPUS, HERE, Proc, start_proxy, start_raw_server

PROBE_EVERY = 0.25
#: (name, clients, blocks, bytes, client revision, slow read: (bytes per read, pause s) or None)
CASES = [
    ("1M blocks", 1, 1_000_000, 30_000_000, "2024-11-05", None),
    ("5 slow readers", 5, 1_000_000, 30_000_000, "2025-03-26", (64 << 10, 0.01)),
    ("50 MB", 1, 50_000, 50_000_000, "2025-03-26", None),
]


class RevClient(Client):
    """A bench client that can read its answer slowly."""

    async def slow_call(self, args: dict, read: tuple[int, float]) -> tuple[int, bytes]:
        """A tools/call whose JSON answer is read ``read[0]`` bytes at a time, ``read[1]`` s apart."""
        body = orjson.dumps({"jsonrpc": "2.0", "id": next(self.ids), "method": "tools/call",
                             "params": {"name": "blocks", "arguments": args}})
        head = ["POST /mcp HTTP/1.1", f"Host: {self.host_header}", "Content-Type: application/json",
                "Accept: application/json, text/event-stream", f"Content-Length: {len(body)}",
                f"Mcp-Session-Id: {self.session}", f"Mcp-Protocol-Version: {self.revision}"]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
        left, parts = int(headers["content-length"]), []
        while left:
            chunk = await self.reader.read(min(read[0], left))
            if not chunk:
                raise BenchError("connection closed mid-body")
            parts.append(chunk)
            left -= len(chunk)
            await asyncio.sleep(read[1])
        return int(lines[0].split(" ", 2)[1]), b"".join(parts)


def _check(status: int, body: bytes, blocks: int, revision: str, rewritten: bool) -> None:
    if status != 200:
        raise BenchError(f"HTTP {status}: {body[:200]!r}")
    result = orjson.loads(body)["result"]
    sc_text = rewritten  # structuredContent (2025-06-18) delivered as one more text block
    if len(result["content"]) != blocks + sc_text or ("structuredContent" in result) == sc_text:
        raise BenchError(f"{len(result['content'])} blocks arrived of {blocks} (structuredContent "
                         f"{'kept' if 'structuredContent' in result else 'gone'})")


# -- the prober (a process of its own) -------------------------------------------------------------
def probe_main(port: int, host: str) -> None:
    """Print ``sent-time latency`` (seconds) per probe until stdin closes."""
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()

    async def run() -> None:
        c = Client(port, host)
        await c.connect()
        await c.initialize()
        nxt = time.perf_counter()
        while not stop.is_set():
            t0 = time.time()
            p0 = time.perf_counter()
            await c.request("tools/list", {"cursor": "tooldefs:2000"})
            print(f"{t0:.6f} {time.perf_counter() - p0:.6f}", flush=True)
            nxt = max(nxt + PROBE_EVERY, time.perf_counter())
            await asyncio.sleep(nxt - time.perf_counter())
        await c.close()
    asyncio.run(run())


class Prober:
    def __init__(self, px: Proc, host: str):
        self.proc = subprocess.Popen([sys.executable, __file__, "probe", str(px.port), host], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=str(HERE),
                                     preexec_fn=(lambda: os.sched_setaffinity(0, PEER_CPUS)) if PEER_CPUS else None)

    def stop(self) -> list[tuple[float, float]]:
        out, _ = self.proc.communicate("", timeout=120)
        if self.proc.returncode:
            raise BenchError(f"prober exited with {self.proc.returncode}")
        return [(float(a), float(b)) for a, b in (line.split() for line in out.splitlines())]


async def _case(px: Proc, host: str, clients: int, blocks: int, size: int, revision: str, slow) -> list[tuple[int, bytes]]:
    cs = [RevClient(px.port, host, revision) for _ in range(clients)]
    for c in cs:
        await c.connect()
        await c.initialize()
    args = {"count": blocks, "size": size}

    async def one(c: RevClient) -> tuple[int, bytes]:
        if slow:
            return await c.slow_call(args, slow)
        rep = await c.post({"jsonrpc": "2.0", "id": next(c.ids), "method": "tools/call",
                            "params": {"name": "blocks", "arguments": args}})
        return rep.status, rep.body
    try:
        return await asyncio.gather(*(one(c) for c in cs))
    finally:
        for c in cs:
            await c.close()


def _pct(v: list[float], q: float) -> float:
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * q))]


def rows(rounds: int, log=print, cases=CASES, before=None) -> list[dict]:
    """One row per case: the prober's latencies through bare mitmdump and mcpx, same run (``before``:
    another mcpx script, interleaved as "before")."""
    procs: list[Proc] = []
    try:
        srv = start_raw_server("json")
        procs.append(srv)
        host = f"127.0.0.1:{srv.port}"
        proxies = {"bare": start_proxy("bare-fair", srv, mcpx=False), "mcpx": start_proxy("mcpx-fair", srv, mcpx=True)}
        if before is not None:
            proxies["before"] = start_proxy("before-fair", srv, mcpx=False, script=before)
        procs += proxies.values()
        for _, _, blocks, size, revision, _ in cases:  # the server builds each body once; the proxies warm up
            for px in proxies.values():
                for status, body in asyncio.run(_case(px, host, 1, blocks, size, revision, None)):
                    _check(status, body, blocks, revision, px is not proxies["bare"])
        out = []
        for name, clients, blocks, size, revision, slow in cases:
            during: dict[str, list[float]] = {p: [] for p in proxies}
            idle: dict[str, list[float]] = {p: [] for p in proxies}
            walls: dict[str, list[float]] = {p: [] for p in proxies}
            for r in range(rounds):
                for pname in (list(proxies) if r % 2 == 0 else list(proxies)[::-1]):
                    px = proxies[pname]
                    prober = Prober(px, host)
                    time.sleep(1.5)  # its session, then idle probes
                    t0 = time.time()
                    replies = asyncio.run(_case(px, host, clients, blocks, size, revision, slow))
                    t1 = time.time()
                    time.sleep(0.5)
                    samples = prober.stop()
                    for status, body in replies:
                        _check(status, body, blocks, revision, pname != "bare")
                    during[pname] += [lat for sent, lat in samples if t0 <= sent <= t1]
                    idle[pname] += [lat for sent, lat in samples if t0 - 1.0 <= sent < t0]
                    walls[pname].append(t1 - t0)
            row = {"case": name, "clients": clients, "blocks": blocks, "bytes": len(replies[0][1]), "revision": revision,
                   "rounds": rounds}
            for p in proxies:
                v = during[p] or [float("nan")]
                row[p] = {"probes": len(during[p]), "p50": statistics.median(v), "p99": _pct(v, 0.99), "max": max(v),
                          "idle p50": statistics.median(idle[p] or [float("nan")]), "wall": statistics.median(walls[p])}
            row["max over bare"] = row["mcpx"]["max"] - row["bare"]["max"]
            if "before" in row:
                row["before max over bare"] = row["before"]["max"] - row["bare"]["max"]
            out.append(row)
            log(f"  fairness {name:15}: " + " | ".join(
                f"{p} p50 {row[p]['p50']*1e3:.1f} p99 {row[p]['p99']*1e3:.1f} max {row[p]['max']*1e3:.1f} ms "
                f"({row[p]['probes']} probes, idle p50 {row[p]['idle p50']*1e3:.1f} ms, case {row[p]['wall']:.1f} s)"
                for p in proxies) + f" | mcpx max - bare max {row['max over bare']*1e3:+.0f} ms")
        return out
    finally:
        for p in reversed(procs):
            p.stop()


def table(res: list[dict]) -> list[str]:
    out = ["", "### 5. Fairness: a small call while another client receives a large body", "",
           "A prober sends a small `tools/list` every 0.25 s (its own process and session) while other clients receive the "
           "body of the case (`bench/fairness.py`); latencies in ms of every probe sent during the case, all rounds; idle: "
           "the second before. Target: mcpx max <= bare max + 100 ms.", "",
           "| case | body MB | rounds | bare probes | bare p50 | p99 | max | idle p50 | mcpx probes | mcpx p50 | p99 | max | "
           "idle p50 | mcpx max - bare max | met |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res:
        b, m = r["bare"], r["mcpx"]
        out.append(f"| {r['case']} ({r['revision']} client) | {r['bytes']/1e6:.0f} | {r['rounds']} | {b['probes']} | "
                   f"{b['p50']*1e3:.1f} | {b['p99']*1e3:.1f} | {b['max']*1e3:.1f} | {b['idle p50']*1e3:.1f} | {m['probes']} | "
                   f"{m['p50']*1e3:.1f} | {m['p99']*1e3:.1f} | {m['max']*1e3:.1f} | {m['idle p50']*1e3:.1f} | "
                   f"{r['max over bare']*1e3:+.0f} ms | {'yes' if r['max over bare'] <= 0.1 else '**no**'} |")
    if any("before" in r for r in res):
        out += ["", "The mcpx of `--before` (the tree before this change), in the same rounds:", "",
                "| case | before p50 | p99 | max | idle p50 | before max - bare max |", "|---|---|---|---|---|---|"]
        for r in res:
            if "before" in r:
                b = r["before"]
                out.append(f"| {r['case']} | {b['p50']*1e3:.1f} | {b['p99']*1e3:.1f} | {b['max']*1e3:.1f} | "
                           f"{b['idle p50']*1e3:.1f} | {r['before max over bare']*1e3:+.0f} ms |")
    return out


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "probe":
        probe_main(int(sys.argv[2]), sys.argv[3])
    else:
        sys.argv[1:] = ["--parts", "fairness", *sys.argv[1:]]
        import bench
        sys.exit(bench.main())
