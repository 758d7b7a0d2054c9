"""Large bodies are rewritten in mcpx's worker thread (addons/worker.py, issue 30): the same bytes
and records as on the event loop, the loop runs meanwhile, and a session's state stays exact when
the loop rewrites other flows of the same session while the worker rewrites a large one.
"""
from __future__ import annotations

import asyncio
import sys
import threading
import time

import orjson
import pytest

from mcpx_core.addons.worker import WORKER_MIN, Worker
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.session import SessionTracker

LINK = {"type": "resource_link", "uri": "file:///a.py", "name": "a.py",
        "annotations": {"audience": ["user"], "lastModified": "2025-01-12T15:00:58Z"}}


def _body(blocks: int, msg_id: int = 1) -> bytes:
    """A tools/call result: a resource_link every sixth block, text otherwise, and structuredContent."""
    content = [LINK if i % 6 == 0 else {"type": "text", "text": f"line {i}"} for i in range(blocks)]
    return orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "result": {"content": content, "structuredContent": {"n": blocks}}})


BIG = _body(24_000)  # about 1.4 MB, 8,001 records
SMALL = _body(12, msg_id=2)


def _session():
    store = SessionTracker()
    s = store.create("k")
    s.server_rev, s.client_rev = "2025-06-18", "2025-03-26"
    rw = Rewriter(store)
    rw.summarize_all = True
    return rw, s


def _exchange(s, flow_id: str, jid: int) -> Exchange:
    exch = Exchange(flow_id=flow_id, session=s, is_mcp=True, single_request_id=jid)
    exch.request_ids[jid] = "tools/call"
    s.remember("c2s", jid, "tools/call")
    return exch


def _records(exch: Exchange) -> list[dict]:
    return [{k: v for k, v in c.as_dict().items() if k != "time"} for c in exch.changes]


def _state(s) -> dict:
    return {"messages": s.messages, "changes": s.changes, "dropped": s.dropped, "audits": s.audits,
            "by_rule": dict(s.by_rule), "pending": list(s.pending)}


def test_a_large_body_goes_to_the_thread_with_the_same_bytes_and_records():
    assert len(BIG) >= WORKER_MIN > len(SMALL)
    rw, s = _session()
    direct = _exchange(s, "direct", 1)
    expected = rw.response_json(direct, BIG)
    threads: list[str] = []

    def rewrite(exch, body):
        threads.append(threading.current_thread().name)
        return rw.response_json(exch, body)

    async def both():
        w = Worker()
        try:
            big = await w.run(len(BIG), rewrite, offloaded := _exchange(s, "offloaded", 1), BIG)
            small = await w.run(len(SMALL), rewrite, small_exch := _exchange(s, "small", 2), SMALL)
        finally:
            w.close()
        return big, offloaded, small, small_exch

    big, offloaded, small, small_exch = asyncio.run(both())
    assert threads[0].startswith("mcpx-rewrite") and threads[1] == threading.main_thread().name
    assert big == expected
    assert orjson.loads(big)["result"]["content"][0] == {"type": "resource", "annotations": {"audience": ["user"]}, "resource": {
        "uri": "file:///a.py", "mimeType": "text/plain", "text": "Resource link (content not embedded): file:///a.py\nname: a.py"}}
    assert _records(offloaded) == [{**r, "flow": "offloaded"} for r in _records(direct)]
    # the flow keeps 1,000 records and counts the rest: 4,000 links and structuredContent, 2 each, and the audit's
    assert len(offloaded.changes) == 1000 and offloaded.changes_omitted == 7003
    assert small == rw.response_json(_exchange(s, "again", 2), SMALL)


def test_the_loop_runs_while_the_thread_rewrites():
    """Ticks of 1 ms on the loop during the rewrite: none when it runs on the loop, many in the thread."""
    rw, s = _session()

    async def ticks_during(min_size: int) -> tuple[int, float]:
        w = Worker(min_size)
        done = False
        count = 0

        async def ticker():
            nonlocal count
            while not done:
                await asyncio.sleep(0.001)
                count += 1
        t = asyncio.ensure_future(ticker())
        await asyncio.sleep(0.01)
        count = 0
        t0 = time.perf_counter()
        try:
            await w.run(len(BIG), rw.response_json, _exchange(s, "f", 1), BIG)
        finally:
            elapsed = time.perf_counter() - t0
            done = True
            await t
            w.close()
        return count, elapsed

    on_loop, loop_time = asyncio.run(ticks_during(len(BIG) + 1))
    in_thread, thread_time = asyncio.run(ticks_during(WORKER_MIN))
    assert on_loop <= 1
    assert in_thread >= 5 and in_thread >= thread_time / 0.005 / 4, (in_thread, thread_time)


def test_one_session_rewritten_on_the_loop_and_in_the_thread_at_once(monkeypatch):
    """The same session: a large body in the worker while the loop rewrites 200 small bodies and
    remembers and answers request ids; the counters, ``by_rule`` and ``pending`` end as after the same
    work done one after the other. A tiny switch interval makes the two threads interleave often."""
    def work(rw, s, run_big):
        for i in range(200):
            _exchange(s, f"p{i}", 1000 + i)  # remembered; answered only by the small bodies' ids below
        exchs = [_exchange(s, f"s{i}", 2) for i in range(200)]
        big = _exchange(s, "big", 1)
        return run_big(big), [rw.response_json(e, SMALL) for e in exchs], big, exchs

    rw, s = _session()
    seq_big, seq_small, seq_big_exch, _ = work(rw, s, lambda e: rw.response_json(e, BIG))
    sequential = _state(s)

    rw2, s2 = _session()
    monkeypatch.setattr(sys, "getswitchinterval", sys.getswitchinterval)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        async def concurrently():
            w = Worker()
            started = threading.Event()

            def big(e):
                started.set()
                return rw2.response_json(e, BIG)
            try:
                for i in range(200):
                    _exchange(s2, f"p{i}", 1000 + i)
                exchs = [_exchange(s2, f"s{i}", 2) for i in range(200)]
                big_exch = _exchange(s2, "big", 1)
                fut = asyncio.ensure_future(w.run(len(BIG), big, big_exch))
                while not started.is_set():
                    await asyncio.sleep(0)
                small = [rw2.response_json(e, SMALL) for e in exchs]
                overlapped = not fut.done()
                return await fut, small, big_exch, overlapped
            finally:
                w.close()
        con_big, con_small, con_big_exch, overlapped = asyncio.run(concurrently())
    finally:
        sys.setswitchinterval(old)
    assert overlapped  # the small bodies were rewritten while the large one was
    assert con_big == seq_big and con_small == seq_small
    assert _records(con_big_exch) == _records(seq_big_exch)
    assert _state(s2) == sequential
    # 4,000 links and 2 per small body, 2 records each; structuredContent 2 more (the audit record is no change)
    assert sequential["messages"] == 201 and sequential["changes"] == 8002 + 200 * 6


def test_on_loop_from_the_thread_runs_on_the_loop():
    """What the worker must not do itself (an answer sent on the client's behalf) runs on the loop."""
    ran: list[str] = []

    async def main():
        w = Worker(0)

        def in_worker():
            assert w.on_loop(lambda: ran.append(threading.current_thread().name))
            return threading.current_thread().name
        try:
            name = await w.run(1, in_worker)
            assert not w.on_loop(lambda: None)  # on the loop's own thread: the caller runs it
            await asyncio.sleep(0)
            return name
        finally:
            w.close()
    assert asyncio.run(main()).startswith("mcpx-rewrite")
    assert ran == [threading.main_thread().name]


@pytest.mark.parametrize("size", [0, WORKER_MIN - 1])
def test_small_bodies_stay_on_the_loop(size):
    async def main():
        w = Worker()
        try:
            return await w.run(size, lambda: threading.current_thread().name)
        finally:
            w.close()
    assert asyncio.run(main()) == threading.main_thread().name


def test_the_switch_interval_is_short_only_while_the_thread_rewrites():
    before = sys.getswitchinterval()
    seen: list[float] = []

    async def main():
        w = Worker(0)
        try:
            await asyncio.gather(w.run(1, lambda: seen.append(sys.getswitchinterval())),
                                 w.run(1, lambda: seen.append(sys.getswitchinterval())))
            return sys.getswitchinterval()
        finally:
            w.close()
    assert asyncio.run(main()) == before
    assert seen == [min(before, 0.001)] * 2


def test_the_collector_stays_paused_until_the_parsed_array_is_freed(monkeypatch):
    """A 2 MiB body parsed in slices: its array is held after the rewrite and freed in steps; the
    collector, paused for the rewrite, runs again only once that is done (and not earlier, while the
    million objects of such an array are still there for it to go through)."""
    import gc
    from mcpx_core.framing import json_body
    body = _body(60_000)
    assert len(body) >= json_body.SLICED_MIN
    rw, s = _session()
    seen: list = []
    real_free = json_body.free

    def free(held):
        seen.append(("free", gc.isenabled(), [len(x) for x in held]))
        real_free(held)
        seen.append(("freed", gc.isenabled(), [len(x) for x in held]))
    monkeypatch.setattr(json_body, "free", free)

    def rewrite():
        out = rw.response_json(_exchange(s, "f", 1), body)
        seen.append(("rewrite", gc.isenabled()))
        return out

    async def main():
        w = Worker()
        try:
            out = await w.run(len(body), rewrite)
        finally:
            w.close()  # waits for the free job
        return out
    assert gc.isenabled()
    out = asyncio.run(main())
    assert orjson.loads(out)["result"]["content"][-1] == {"type": "text", "text": '{"n":60000}'}
    assert seen == [("rewrite", False), ("free", False, [60_001]), ("freed", False, [])]
    assert gc.isenabled()
