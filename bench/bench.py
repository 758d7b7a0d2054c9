"""mcpx benchmark: one command, ratios measured in the same run (issue 7).

    .venv/bin/python bench/bench.py            # full run, about 5 minutes on 2 cores
    .venv/bin/python bench/bench.py --quick    # about 2 minutes: fewer rounds and calls
    .venv/bin/python bench/bench.py --markdown tables.md   # also write the tables to a file

Parts (see core.py and proxy.py for how each figure is taken):

1. rewrite core vs the JSON floor (orjson.loads; orjson.loads + orjson.dumps), 2 KB..10 MB;
2. proxy overhead: bare ``mitmdump`` vs ``mitmdump -s addon/mcpx.py`` in front of a real
   mcp 2.3.0 server, same bounded load, JSON and SSE responses, 2 KB and 1 MB results;
3. streaming: time to first SSE event, and proxy memory over 1,000- to 20,000-event streams;
4. memory: peak RSS the rewrite of a 50 MB result adds.

Loopback only; every process it starts is stopped before it exits. Not a test: the figures depend
on the machine and its load, which is why every ratio compares figures taken in the same run,
interleaved.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import core  # noqa: E402
import proxy  # noqa: E402

TARGETS = {
    "no change": "<= 1.2x orjson.loads",
    "changes": "<= 2x orjson.loads + dumps",
}


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = next(int(line.split()[1]) for line in pathlib.Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal:")) * 1024
    except (OSError, StopIteration):
        mem = 0
    import mitmproxy.version
    import orjson
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(mem / 2**30, 1), "os": platform.platform(),
            "python": platform.python_version(), "mitmproxy": mitmproxy.version.VERSION, "orjson": orjson.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "load_average": os.getloadavg()}


def ms(s: float) -> str:
    return f"{s * 1e3:.3f}" if s < 0.01 else f"{s * 1e3:.1f}"


def mark(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _against(rows: list[dict], ref: str, label: str, delta: bool, intro: str) -> list[str]:
    """Markdown lines comparing mcpx with the proxy ``ref`` of the throughput rows that have it
    (``delta``: also bare mitmdump's CPU per call and mcpx's CPU minus ``ref``'s)."""
    rows = [r for r in rows if f"{ref} rps" in r]
    if not rows:
        return []
    head = f"| result | {label} req/s | mcpx req/s | ratio | {label} p50 | mcpx p50 | ratio | proxy CPU/call "
    head += f"bare | {label} | mcpx | mcpx - {ref} |" if delta else f"{label} | mcpx |"
    out = ["", intro, "", head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        line = (f"| {r['size']} | {r[ref + ' rps']:.0f} | {r['mcpx rps']:.0f} | {r['mcpx rps'] / r[ref + ' rps']:.2f}x | "
                f"{ms(r[ref + ' p50'])} | {ms(r['mcpx p50'])} | {r['mcpx p50'] / r[ref + ' p50']:.2f}x | ")
        if delta:
            line += f"{ms(r['bare cpu'])} | {ms(r[ref + ' cpu'])} | {ms(r['mcpx cpu'])} | {(r['mcpx cpu'] - r[ref + ' cpu']) * 1e3:+.2f} ms |"
        else:
            line += f"{ms(r[ref + ' cpu'])} | {ms(r['mcpx cpu'])} |"
        out.append(line)
    return out


def tables(res: dict) -> str:
    out = []
    m = res["machine"]
    out.append(f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB; {m['os']}; Python {m['python']}, "
               f"mitmproxy {m['mitmproxy']}, orjson {m['orjson']}. Date: {m['date']}. Mode: {res['mode']}. "
               f"Load average at start {m['load_average'][0]:.1f}, at end {res['load_end'][0]:.1f}. "
               f"Run time {res['seconds']:.0f} s.")
    if res.get("core"):
        out += ["", "### 1. Rewrite core vs the JSON floor", "",
                "Median time per message (ms); ratio = mcpx / floor, floor = `orjson.loads` for a message that needs no change, "
                "`orjson.loads` + `orjson.dumps` for one that needs changes. Session: 2025-03-26 peers. "
                "`sse`: the same message as one SSE event (framing included).", "",
                "| kind | size | case | changes | loads | loads+dumps | mcpx json | ratio | mcpx sse | ratio | target | met (json) |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in res["core"]:
            out.append(f"| {r['kind']} | {r['size']} | {r['case']} | {r['changes']} | {ms(r['loads'])} | {ms(r['loads+dumps'])} | "
                       f"{ms(r['mcpx json'])} | {r['ratio json']:.2f}x | {ms(r['mcpx sse'])} | {r['ratio sse']:.2f}x | "
                       f"<= {r['target']}x | {mark(r['ratio json'] <= r['target'])} |")
    if res.get("memory"):
        out += ["", "### 4. Memory: peak RSS to rewrite a 50 MB result", "",
                "Peak RSS the rewrite adds on top of the process that already holds the body (target: <= 3x the body size).", "",
                "| kind | case | body MB | changes | added peak MB | x body | orjson.loads alone MB | time ms | met |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in res["memory"]:
            out.append(f"| {r['kind']} | {r['case']} | {r['bytes']/1e6:.0f} | {r['changes']} | {r['extra']/1e6:.0f} | "
                       f"{r['ratio']:.2f}x | {r['loads extra']/1e6:.0f} | {r['seconds']*1e3:.0f} | {mark(r['ratio'] <= 3)} |")
    if res.get("proxy"):
        out += ["", "### 2. Proxy overhead (real mcp 2.3.0 server, loopback)", "",
                "Medians over the rounds; latencies in ms. Target: p50 <= 1.10x bare at 2 KB, <= 1.25x at 1 MB; "
                "requests/s >= 0.9x bare at 2 KB.", "",
                "| result | response | calls x rounds | direct req/s | bare req/s | mcpx req/s | req/s ratio | direct p50 | bare p50 | mcpx p50 | p50 ratio | bare p99 | mcpx p99 | proxy CPU/call bare | mcpx | met |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in res["proxy"]:
            small = r["size"] == "2KB"
            ok = r["p50 ratio"] <= (1.10 if small else 1.25) and (r["rps ratio"] >= 0.9 if small else True)
            out.append(f"| {r['size']} | {r['transport']} | {r['calls']} x {r['rounds']} | {r['direct rps']:.0f} | {r['bare rps']:.0f} | "
                       f"{r['mcpx rps']:.0f} | {r['rps ratio']:.2f}x | {ms(r['direct p50'])} | {ms(r['bare p50'])} | {ms(r['mcpx p50'])} | "
                       f"{r['p50 ratio']:.2f}x | {ms(r['bare p99'])} | {ms(r['mcpx p99'])} | {ms(r['bare cpu'])} | {ms(r['mcpx cpu'])} | {mark(ok)} |")
        out += _against(res["proxy"], "noop", "noop addon", delta=True, intro=(
            "The same JSON runs through `mitmdump -s bench/noop_addon.py`, an addon with mcpx's hook methods that does "
            "nothing: what mitmproxy charges for running any addon. mcpx against it is mcpx's own work:"))
        out += _against(res["proxy"], "bare stream", "bare streaming", delta=False, intro=(
            "mcpx streams every SSE response (event by event); bare mitmdump buffers it by default. The same SSE runs "
            "through bare mitmdump with streaming on (`--set stream_large_bodies=1`), for the share of mitmproxy's own "
            "streaming mode in the figures above:"))
    if res.get("first_event"):
        f = res["first_event"]
        out += ["", "### 3. Streaming", "",
                f"Time to first SSE event (median of {f['calls']} calls; the server sends one event, waits {f['pause_ms']} ms, then answers):", "",
                "| direct | bare mitmdump, streaming | mcpx | mcpx - bare | bare mitmdump, buffering (default) | met (<= 5 ms) |",
                "|---|---|---|---|---|---|",
                f"| {ms(f['direct ttfe'])} ms | {ms(f['bare stream ttfe'])} ms | {ms(f['mcpx ttfe'])} ms | {f['delta']*1e3:+.2f} ms | "
                f"{ms(f['bare buffered ttfe'])} ms | {mark(f['delta'] <= 0.005)} |"]
    if res.get("stream_memory"):
        out += ["", "Proxy process RSS while it forwards one long SSE response (100-character log events; a fresh, warmed-up "
                    "process for each length; growth = peak during the stream - RSS before it):", "",
                "| proxy | events | RSS before MB | peak MB | growth MB | seconds |", "|---|---|---|---|---|---|"]
        for r in res["stream_memory"]:
            out.append(f"| {r['proxy']} | {r['events']} | {r['before']/1e6:.1f} | {r['peak']/1e6:.1f} | "
                       f"{(r['peak']-r['before'])/1e6:.1f} | {r['seconds']:.2f} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer rounds and calls (about a minute or two)")
    ap.add_argument("--parts", default="core,memory,proxy,stream", help="comma-separated: core,memory,proxy,stream")
    ap.add_argument("--markdown", metavar="PATH", help="also write the tables (markdown) to PATH")
    ap.add_argument("--json", metavar="PATH", help="also write the raw figures (JSON) to PATH")
    args = ap.parse_args(argv)
    parts = set(args.parts.split(","))
    t0 = time.time()
    res: dict = {"machine": machine(), "mode": "quick" if args.quick else "full"}
    def log(line: str) -> None:
        print(f"[{time.time() - t0:5.0f} s] {line}", flush=True)
    if "core" in parts:
        log("1. rewrite core vs orjson")
        res["core"] = core.time_rows(rounds=3 if args.quick else 7, batch=0.02 if args.quick else 0.05, log=log)
    if "memory" in parts:
        log("4. memory: 50 MB result")
        res["memory"] = core.memory_rows(kinds=("text", "image") if args.quick else core.KINDS, log=log)
    if parts & {"proxy", "stream"}:
        with proxy.Bench(log=log) as b:
            if "proxy" in parts:
                log("2. proxy overhead")
                plan = {"2KB": (2000, 200 if args.quick else 500), "1MB": (1_000_000, 20 if args.quick else 50)}
                res["proxy"] = b.throughput(rounds=3 if args.quick else 9, plan=plan)
            if "stream" in parts:
                log("3. streaming")
                res["first_event"] = b.first_event(calls=10 if args.quick else 30)
                res["stream_memory"] = b.stream_memory(counts=(1000, 10000) if args.quick else (1000, 10000, 20000))
    res["seconds"] = time.time() - t0
    res["load_end"] = os.getloadavg()
    text = tables(res)
    print()
    print(text)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(text)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
