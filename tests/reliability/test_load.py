"""Load: many concurrent sessions of different revisions through one mitmdump + mcpx, in front of
the real npm everything server, raw JSON-RPC over keep-alive HTTP/1.1 (stdlib threads).

Every session initializes with its revision (2024-11-05, 2025-03-26, 2025-06-18 or 2025-11-25,
mixed), then makes its calls: ``get-resource-links`` (rewritten for <= 2025-03-26),
``get-structured-content`` (structuredContent dropped for <= 2025-03-26) and every tenth call
``tools/list`` (different for each of the four revisions). All sessions use the same JSON-RPC ids,
so a session mix-up in mcpx would show. Checked for every call: exactly one JSON-RPC message
delivered, with its request's id, equal to what a lone client of that revision gets (recorded
first, one session per revision); and per session, the change log holds exactly the records that
many calls make. Afterwards the sessions expire (short mcpx_session_ttl) and mcpx's state is empty.

Budget: 50 sessions x 100 calls in the normal run (mitmdump handles about 150-250 calls/s on two
shared cores, mitmproxy's own per-flow work being most of it); ``MCPX_LONG=1``: 50 x 200, three
rounds, and memory must plateau (no growth from round to round).
"""
from __future__ import annotations

import collections
import threading
import time

import pytest

import peers_lib as pl
from rel_lib import LONG, Client, count, figure, figures, probe, probed_proxy, rss_kib  # noqa: F401

pytestmark = pytest.mark.peers

REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
SESSIONS, CALLS, ROUNDS = (50, 200, 3) if LONG else (50, 100, 1)
TTL = 3
DEADLINE = 600 if LONG else 120


def expired(px, timeout: float = 60) -> dict:
    """The probe's state once every session and its per-flow state left memory (or as it is after
    ``timeout`` seconds). A session idle for TTL s goes at the expiry loop's next pass (every TTL/2 s),
    up to TTL * 1.5 s after its last request, later on a busy machine: a fixed wait of TTL + 1.5 s
    was no margin."""
    deadline = time.monotonic() + timeout
    while True:
        state = probe(px, collect=True)
        if not any(state[k] for k in ("sessions", "exchanges", "streams", "flows", "tasks")) or time.monotonic() > deadline:
            return state
        time.sleep(0.25)


def op_of(i: int) -> str:
    return "list" if i % 10 == 9 else ("links" if i % 2 == 0 else "structured")


def message(op: str, rid: int) -> dict:
    if op == "list":
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/list"}
    if op == "links":
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "get-resource-links", "arguments": {"count": 2}}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "get-structured-content", "arguments": {"location": "Chicago"}}}


def run_session(port: int, revision: str, calls: int, name: str) -> dict:
    """One client: initialize, then ``calls`` calls; what it got, per call."""
    c = Client(port, timeout=60)
    out: dict = {"revision": revision, "init": c.initialize(revision, name=name), "session": c.session, "got": []}
    for i in range(calls):
        status, _, msgs = c.rpc(message(op_of(i), i + 1))
        out["got"].append((status, msgs))
    c.close()
    return out


def reference(port: int) -> dict:
    """What a lone client of each revision gets for each op (and the records that makes)."""
    ref = {}
    for rev in REVISIONS:
        c = Client(port)
        init = c.initialize(rev, name=f"reference-{rev}")
        got = {}
        for rid, op in ((1, "links"), (2, "structured"), (10, "list")):
            status, _, msgs = c.rpc(message(op, rid))
            assert status == 200 and len(msgs) == 1
            got[op] = msgs[0]
        ref[rev] = {"init": init, "got": got, "session": c.session}
        c.close()
    return ref


def test_concurrent_sessions_of_mixed_revisions(tmp_path):
    with pl.start_everything_server() as srv, probed_proxy(srv.url.rsplit("/mcp", 1)[0], tmp_path, save=False,
                                                           options={"mcpx_session_ttl": TTL}) as px:
        ref = reference(px.port)
        # the four revisions really get four different deliveries
        assert len({repr(ref[r]["got"]["list"]) for r in REVISIONS}) == 4
        assert len({repr(ref[r]["init"]) for r in REVISIONS}) == 4
        assert ref["2024-11-05"]["got"]["links"]["result"]["content"][1]["type"] == "resource"
        assert ref["2025-06-18"]["got"]["links"]["result"]["content"][1]["type"] == "resource_link"
        changes = px.changes()
        per_op: dict = {}
        for rev in REVISIONS:
            by_id = collections.Counter((r["jsonrpc_id"], r["pointer"], r["action"], r["rule"]) for r in changes
                                        if r["session"] == ref[rev]["session"] and r["method"] != "initialize")
            per_op[rev] = {op: collections.Counter({k[1:]: n for k, n in by_id.items() if k[0] == rid})
                           for rid, op in ((1, "links"), (2, "structured"), (10, "list"))}
        base = expired(px)  # the reference sessions expire
        assert (base["sessions"], base["exchanges"], base["streams"], base["flows"]) == (0, 0, 0, 0), base
        rss_before, hwm_before = rss_kib(px.proc.pid)
        figure("load: mitmdump RSS before (MiB)", rss_before // 1024)

        t0 = time.monotonic()
        rounds = []
        for rnd in range(ROUNDS):
            results: list = [None] * SESSIONS
            errors: list = []

            def worker(k: int) -> None:
                try:
                    results[k] = run_session(px.port, REVISIONS[k % 4], CALLS, f"load-{rnd}-{k}")
                except Exception as e:  # reported below
                    errors.append(f"session {k}: {type(e).__name__}: {e}")

            t_round = time.monotonic()
            threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(SESSIONS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(max(1.0, DEADLINE - (time.monotonic() - t0)))
            assert not errors, errors[:5]
            assert all(r is not None for r in results), "sessions did not finish in time"
            took = time.monotonic() - t_round
            _, hwm = rss_kib(px.proc.pid)

            # every call: one message, its own id, exactly its revision's delivery
            lost = dup = wrong = 0
            for r in results:
                rev = r["revision"]
                assert r["init"] == ref[rev]["init"]
                for i, (status, msgs) in enumerate(r["got"]):
                    want = dict(ref[rev]["got"][op_of(i)], id=i + 1)
                    lost += status != 200 or len(msgs) == 0
                    dup += len(msgs) > 1
                    wrong += bool(msgs) and msgs[0] != want
            assert (lost, dup, wrong) == (0, 0, 0)
            # the change log: per session, exactly the records its calls make, each under its own id
            log = collections.defaultdict(collections.Counter)
            sids = {r["session"]: r for r in results}
            for c in px.changes():
                if c["session"] in sids and c["method"] != "initialize":
                    log[c["session"]][(c["jsonrpc_id"], c["pointer"], c["action"], c["rule"])] += 1
            for sid, r in sids.items():
                want = collections.Counter()
                for i in range(CALLS):
                    for k, n in per_op[r["revision"]][op_of(i)].items():
                        want[(i + 1, *k)] += n
                assert log[sid] == want, (r["revision"], sid)

            after = expired(px)  # the sessions end: their state expires
            rss_after, _ = rss_kib(px.proc.pid)
            assert (after["sessions"], after["exchanges"], after["streams"], after["flows"], after["tasks"]) == (0, 0, 0, 0, 0), after
            rounds.append({"seconds": round(took, 1), "calls_per_s": round(SESSIONS * CALLS / took),
                           "peak_rss_mib": hwm // 1024, "rss_after_mib": rss_after // 1024,
                           "records": sum(sum(c.values()) for c in log.values())})
        count("load: sessions", SESSIONS * ROUNDS)
        count("load: calls", SESSIONS * CALLS * ROUNDS)
        figure("load: sessions x calls", f"{SESSIONS} x {CALLS}" + (f" x {ROUNDS} rounds" if ROUNDS > 1 else ""))
        figure("load: messages lost / duplicated / wrong", "0 / 0 / 0")
        figure("load: rounds", rounds)
        figure("load: mitmdump RSS before / peak / after (MiB)",
               f"{rss_before // 1024} / {max(r['peak_rss_mib'] for r in rounds)} / {rounds[-1]['rss_after_mib']}")
        # memory back near its baseline: state is gone; what remains is the allocator's, not per session
        assert rounds[-1]["rss_after_mib"] - rss_before // 1024 < 40, rounds
        if ROUNDS > 1:  # no growth from round to round
            assert rounds[-1]["rss_after_mib"] - rounds[0]["rss_after_mib"] < 8, rounds
