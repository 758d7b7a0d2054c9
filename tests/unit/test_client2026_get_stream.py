"""Where a server request sent outside any call (the upstream session's GET stream) goes, for a
2026-07-28 client (bridge/client2026/get_stream.py): to the call in progress, else to the client's
next call, else -32603 after PENDING_TTL; ping ``{}``; a request without a declared capability or
without a 2026-07-28 equivalent -32601. The bridge with a recording upstream, no HTTP: exact
messages sent to the server, exact answers and records (tests/e2e/test_bridge_get_stream.py shows
the same through mitmdump with the real 2.4.0 client)."""
from __future__ import annotations

import asyncio

import orjson

import mcpx_core.bridge.client2026 as c2026
from mcpx_core.bridge import Reply
from mcpx_core.bridge.client2026 import Client2026Bridge, Held, Upstream2026Session
from mcpx_core.bridge.client2026.lifecycle import SS, TS
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.session import Session

ROOTS = {"jsonrpc": "2.0", "id": 7, "method": "roots/list"}
SAMPLE = {"jsonrpc": "2.0", "id": 8, "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}


class Recording:
    """An Upstream that records what mcpx sends (body, headers, purpose) and answers 202."""

    def __init__(self):
        self.sent: list[dict] = []

    async def send(self, body, headers, purpose, **kw):
        self.sent.append(orjson.loads(body))
        return Reply(202, {}, b"")

    def abort(self, flow_id):
        pass


def bridge_with(caps: dict) -> tuple[Client2026Bridge, Upstream2026Session, Recording, Exchange]:
    b = Client2026Bridge(Rewriter(), answers=None)
    s = Session("(2026 client -> 2025-11-25)", client_rev="2026-07-28", server_rev="2025-11-25", client_caps=caps,
                upstream_id="legacy-1", bridge="client2026")
    up = Upstream2026Session(s)
    exch = Exchange()
    exch.session = s
    up.inbox.exch = exch
    return b, up, Recording(), exch


def rules(exch: Exchange) -> list[tuple[str, str, str, str | None]]:
    return [(c.pointer, c.action, c.rule, c.before) for c in exch.changes]


def test_to_the_call_in_progress_the_first_begun_not_awaiting_a_retry():
    async def go():
        b, up, rec, exch = bridge_with({"roots": {}})
        held_waiting, reading, later = (Held(handle=f"h{i}", upstream=up, method="tools/call", exch=exch) for i in range(3))
        b.held["h0"] = held_waiting  # its input_required awaits the client's retry
        up.inbox.calls.extend([held_waiting, reading, later])
        b._server_request(up, rec, ROOTS)
        await asyncio.sleep(0)
        return b, up, rec, exch, [h.queue.qsize() for h in (held_waiting, reading, later)], reading.queue.get_nowait()
    b, up, rec, exch, sizes, got = asyncio.run(go())
    assert sizes == [0, 1, 0] and got == ROOTS and rec.sent == [] and up.inbox.pending == []
    assert rules(exch) == [("", "bridge", "MRTR-bridge-legacy-server", "roots/list id=7 on the upstream GET stream")]


def test_without_a_call_it_waits_for_the_next_call_which_asks_at_once():
    async def go():
        b, up, rec, exch = bridge_with({"roots": {}, "sampling": {}})
        b._server_request(up, rec, ROOTS)
        b._server_request(up, rec, SAMPLE)
        pending = [m for m, _ in up.inbox.pending]
        call = {"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": {"name": "x"}}
        answer = b._carry(exch, call, up)
        return b, up, rec, exch, pending, answer
    b, up, rec, exch, pending, answer = asyncio.run(go())
    assert pending == [ROOTS, SAMPLE] and up.inbox.pending == [] and rec.sent == []
    body = orjson.loads(answer.body)
    state = body["result"]["requestState"]
    assert body == {"jsonrpc": "2.0", "id": "c1", "result": {"resultType": "input_required", "inputRequests": {
        "mcpx:7": {"method": "roots/list"},
        "mcpx:8": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}}, "requestState": state}}
    held = b.held[state]
    assert held.trip.state is TS.REPLAY and held.stream.state is SS.ENDED and held.waiting == {"mcpx:7": (7, "roots/list"), "mcpx:8": (8, "sampling/createMessage")}
    assert ("/result", "bridge", "MRTR-bridge-legacy-server", "mcpx:7: roots/list, mcpx:8: sampling/createMessage") in rules(exch)
    # nothing waits: the next call is sent as it is
    assert b._carry(exch, {"jsonrpc": "2.0", "id": "c2", "method": "tools/call"}, up) is None


def test_one_no_call_carries_is_answered_after_pending_ttl():
    async def go():
        b, up, rec, exch = bridge_with({"roots": {}})
        c2026.PENDING_TTL = 0.05
        try:
            b._server_request(up, rec, ROOTS)
            await asyncio.sleep(0.2)
        finally:
            c2026.PENDING_TTL = 60.0
        return up, rec, exch
    up, rec, exch = asyncio.run(go())
    assert up.inbox.pending == []
    assert rec.sent == [{"jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": (
        "mcpx: no request of the 2026-07-28 client came within 0.05 s to carry roots/list (a 2026-07-28 client takes "
        "server requests only as input_required of its calls)")}}]
    assert rules(exch) == [("", "passthrough", "MRTR-bridge-legacy-server", None)]


def test_ping_undeclared_and_unknown_requests_are_answered_on_the_clients_behalf():
    async def go():
        b, up, rec, exch = bridge_with({"roots": {}})
        for m in ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, SAMPLE, {"jsonrpc": "2.0", "id": 9, "method": "tasks/list"}):
            b._server_request(up, rec, m)
        await asyncio.sleep(0.01)
        return up, rec, exch
    up, rec, exch = asyncio.run(go())
    assert up.inbox.pending == []
    assert sorted(rec.sent, key=lambda m: m["id"]) == [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 8, "error": {"code": -32601, "message": "Method not found: sampling/createMessage (no 2026-07-28 "
                                                                         "equivalent; answered by mcpx)"}},
        {"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "Method not found: tasks/list (no 2026-07-28 equivalent; "
                                                                         "answered by mcpx)"}}]
    assert [r[2] for r in rules(exch)] == ["LC-ping", "MRTR-server-requests-removed", "MRTR-server-requests-removed"]


def test_a_call_over_hands_what_it_did_not_ask_to_the_next_call():
    async def go():
        b, up, rec, exch = bridge_with({"roots": {}})
        h = Held(handle="h", upstream=up, method="tools/call", exch=exch)
        up.inbox.calls.append(h)
        h.waiting["mcpx:7"] = (7, "roots/list")
        h.queue.put_nowait({**ROOTS, "id": 10})
        b._settled(h, {"mcpx:7": ROOTS})
        return up, h
    up, h = asyncio.run(go())
    assert up.inbox.calls == [] and h.waiting == {} and [m for m, _ in up.inbox.pending] == [ROOTS, {**ROOTS, "id": 10}]


def test_a_flood_outside_any_call_waits_only_up_to_pending_max_the_rest_answered_at_once():
    """A hostile server floods its GET stream with server requests: at most PENDING_MAX wait (for the
    call in progress or the client's next call); each one more is answered -32603 at once, so neither
    mcpx's memory nor the next call's InputRequiredResult grows with the flood."""
    async def go():
        b, up, rec, exch = bridge_with({"roots": {}})
        h = Held(handle="h", upstream=up, method="tools/call", exch=exch)
        up.inbox.calls.append(h)
        n = c2026.PENDING_MAX
        for i in range(3 * n):
            b._server_request(up, rec, {**ROOTS, "id": i})
        await asyncio.sleep(0.05)
        in_call, waiting = h.queue.qsize(), len(up.inbox.pending)
        tasks = len(b._tasks)
        h.done = True  # the call ended: the next call carries what waits
        up.inbox.calls.clear()
        carried = orjson.loads(b._carry(exch, {"jsonrpc": "2.0", "id": "c", "method": "tools/call"}, up).body)
        for t in list(b._tasks):
            t.cancel()
        return n, in_call, waiting, tasks, rec, carried, exch
    n, in_call, waiting, tasks, rec, carried, exch = asyncio.run(go())
    assert (in_call, waiting) == (n, n) and tasks <= n + 1
    assert len(carried["result"]["inputRequests"]) == n
    assert sorted(m["id"] for m in rec.sent) == list(range(2 * n, 3 * n))
    assert rec.sent[0] == {"jsonrpc": "2.0", "id": 2 * n, "error": {"code": -32603, "message": (
        f"mcpx: {n} server requests sent outside any call already wait for the 2026-07-28 client: roots/list refused")}}
    refused = [c for c in exch.changes if c.action == "passthrough"]
    assert len(refused) == n and refused[0].rule == "MRTR-bridge-legacy-server"


class Slow(Recording):
    """An Upstream that holds each POST until ``release`` is set: the peak of POSTs open at once."""

    def __init__(self):
        super().__init__()
        self.open, self.peak, self.release = 0, 0, asyncio.Event()

    async def send(self, body, headers, purpose, **kw):
        self.open += 1
        self.peak = max(self.peak, self.open)
        try:
            await self.release.wait()
            return await super().send(body, headers, purpose, **kw)
        finally:
            self.open -= 1


def test_a_ping_flood_is_answered_a_few_posts_at_a_time_and_queued_only_so_far():
    """A hostile server floods its GET stream with pings it never lets mcpx answer: mcpx sends at most
    ANSWERS_IN_FLIGHT answers at once (not one open request each), queues at most ANSWERS_QUEUED,
    and leaves the rest unanswered with one ``passthrough`` record per flood; once the server takes
    answers again, every queued one goes, once each."""
    async def go():
        b, up, _, exch = bridge_with({})
        slow = Slow()
        n, q = c2026.ANSWERS_IN_FLIGHT, 20  # (ANSWERS_QUEUED made small: the records of a flow are kept up to FLOW_KEEP_MAX)
        saved, c2026.ANSWERS_QUEUED = c2026.ANSWERS_QUEUED, q
        try:
            for i in range(n + q + 50):
                b._server_request(up, slow, {"jsonrpc": "2.0", "id": i, "method": "ping"})
        finally:
            c2026.ANSWERS_QUEUED = saved
        await asyncio.sleep(0.05)
        open_then = slow.open
        slow.release.set()
        for _ in range(200):
            await asyncio.sleep(0.01)
            if not b._tasks:
                break
        return n, q, open_then, slow, exch
    n, q, open_then, slow, exch = asyncio.run(go())
    assert open_then == n and slow.peak == n
    assert sorted(m["id"] for m in slow.sent) == list(range(q)) and all(m["result"] == {} for m in slow.sent)
    left = [c for c in exch.changes if c.action == "passthrough"]
    assert [(c.rule, c.detail) for c in left] == [("MRTR-bridge-legacy-server", (
        f"ping id={q!r} on the upstream GET stream: {q} answers to the server already wait to be sent; left "
        "unanswered (and every one more until they are sent)"))]
