"""Sessions benchmark (issue 11): what a sealed session id costs, and what replicas behind HAProxy give.

    .venv/bin/python bench/sessions.py            # about 2 minutes on 2 cores
    .venv/bin/python bench/sessions.py --quick    # fewer rounds

1. **Token cost**, in-process, per request: opening a client's ``Mcp-Session-Id`` when the session
   is not in memory (AES-256-GCM open + zlib + pydantic validation), sealing a new one (once per
   session), and the lookup when it is cached (every request after the first one a process sees);
   against ``orjson.loads`` of a typical 2 KB request body in the same run (what mcpx does on every
   request anyway).
2. **Replicas**: requests/s and p50 of the same bounded load (``tools/call``, 2 KB JSON answers from
   the real mcp 2.3.0 server of ``bench/server.py``, 16 concurrent sessions) through one mitmdump +
   mcpx without HAProxy, and through HAProxy (``deploy/haproxy.cfg``, hashing on Mcp-Session-Id)
   in front of 1, 2 and 3 replicas; rounds interleaved, medians.

What the replica ratios can and cannot show on this machine: it has 2 cores, shared by the load
client, the server, HAProxy and the replicas. One replica is bounded by one core (mitmproxy is
single-threaded); a second can use the second core, so 2 replicas may show up to about 2x of one
only while the client, server and HAProxy leave that core free, which they do not: the measured
gain is a floor of what separate machines give. A third replica has no core of its own here and
can only add scheduling: its figure shows that it costs little, not how three scale.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import statistics
import sys
import time
import timeit

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT / "tests"), str(ROOT / "addon"), str(ROOT / "scripts")]

import orjson  # noqa: E402

import replicas as replicas_script  # noqa: E402
from load import run_load  # noqa: E402
from mcpx_core import seal  # noqa: E402
from mcpx_core.session import SessionTracker  # noqa: E402
from proxy import Proc, start_server, summary  # noqa: E402
from proxy_lib import ADDON, free_port, mitmdump_bin  # noqa: E402

FACTS = seal.Facts(sid="s-0123456789abcdef", client_rev="2025-03-26", server_rev="2025-03-26", requested_rev="2025-03-26",
                   upstream_id="8077ad25-7c10-4136-96f3-ac7ad6931059", client_info={"name": "mcpx-bench", "version": "1"},
                   server_info={"name": "mcp-servers/everything", "version": "2.0.0"},
                   client_caps={"sampling": {}, "roots": {"listChanged": True}},
                   server_caps={"tools": {"listChanged": True}, "prompts": {"listChanged": True},
                                "resources": {"subscribe": True, "listChanged": True}, "logging": {}, "completions": {}},
                   issued=1764450000)
REQUEST = orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
    "name": "search", "arguments": {"query": "x" * 1800, "limit": 10}, "_meta": {"progressToken": 7}}})


def per_call(fn, number: int) -> float:
    """Median seconds per call over 7 repeats of ``number`` calls."""
    return statistics.median(timeit.repeat(fn, number=number, repeat=7)) / number


def token_costs(number: int) -> list[str]:
    sealer = seal.Sealer([seal.new_key()])
    token = sealer.seal(FACTS)
    tracker = SessionTracker(sealer=sealer)
    tracker.lookup(token, None, None, live=True)
    floor = per_call(lambda: orjson.loads(REQUEST), number)
    rows = [("open a token (session not in memory)", per_call(lambda: sealer.open(token), number)),
            ("seal a token (once per session)", per_call(lambda: sealer.seal(FACTS), number)),
            ("lookup of a cached session (every later request)", per_call(lambda: tracker.lookup(token, None, None, live=True), number))]
    out = [f"Token: {len(token)} characters (this session's facts; bound {seal.MAX_TOKEN}).", "",
           "| per request | us | vs orjson.loads of a 2 KB request |", "|---|---|---|",
           f"| orjson.loads of a 2 KB request (floor) | {floor * 1e6:.2f} | 1.00x |"]
    out += [f"| {name} | {t * 1e6:.2f} | {t / floor:.2f}x |" for name, t in rows]
    return out


class Replicas:
    def __init__(self, upstream: int, n: int, key: pathlib.Path, with_haproxy: bool = True):
        self.procs = []
        ports = []
        for _ in range(n):
            port = free_port()
            argv = [mitmdump_bin(), "-q", "-s", str(ADDON), "--mode", f"reverse:http://127.0.0.1:{upstream}",
                    "--listen-host", "127.0.0.1", "-p", str(port), "--set", f"mcpx_session_keys={key}"]
            self.procs.append(Proc(f"mcpx-{len(self.procs)}", argv, port))
            ports.append(("127.0.0.1", port))
        self.port = ports[0][1]
        if with_haproxy:
            self.port = free_port()
            self.cfg = key.with_name(f"haproxy-{n}.cfg")
            self.cfg.write_text(replicas_script.render(f"127.0.0.1:{self.port}", ports, "hash"))
            self.procs.append(Proc("haproxy", [replicas_script.haproxy_bin(), "-db", "-f", str(self.cfg)], self.port))
            time.sleep(1.2)  # first health checks

    def stop(self) -> None:
        for p in self.procs:
            p.stop()


def replica_rows(rounds: int, calls: int, concurrency: int) -> list[str]:
    server = start_server("json")
    key = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"mcpx-bench-{os.getpid()}.key"
    seal.create_key_file(str(key))
    setups = {"1 mcpx, no HAProxy": (1, False), "HAProxy + 1 replica": (1, True),
              "HAProxy + 2 replicas": (2, True), "HAProxy + 3 replicas": (3, True)}
    runs: dict[str, list[dict]] = {k: [] for k in setups}
    try:
        running = {name: Replicas(server.port, n, key, hp) for name, (n, hp) in setups.items()}
        try:
            for _ in range(rounds):
                for name, rp in running.items():
                    lat, wall = asyncio.run(run_load(rp.port, f"127.0.0.1:{rp.port}", calls, concurrency, "text", {"size": 2000}))
                    runs[name].append(summary(lat, wall))
        finally:
            for rp in running.values():
                rp.stop()
    finally:
        server.stop()
        key.unlink(missing_ok=True)
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("rps", "p50")} for k, v in runs.items()}
    base = med["HAProxy + 1 replica"]
    out = [f"{rounds} rounds of {calls} calls at {concurrency} sessions, 2 KB JSON answers, medians:", "",
           "| setup | req/s | vs HAProxy + 1 | p50 ms |", "|---|---|---|---|"]
    out += [f"| {k} | {v['rps']:.0f} | {v['rps'] / base['rps']:.2f}x | {v['p50'] * 1e3:.1f} |" for k, v in med.items()]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    print("## Sessions (bench/sessions.py)\n")
    print("\n".join(token_costs(2000 if a.quick else 20000)))
    print()
    print("\n".join(replica_rows(2 if a.quick else 5, 600 if a.quick else 1500, 16)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
