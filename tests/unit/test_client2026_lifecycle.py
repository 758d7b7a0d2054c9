"""The client2026 bridge's two lifecycles of a held call (bridge/client2026/lifecycle.py): the
upstream stream's and the client round trip's, driven by events alone (no socket, no task); then
the bridge driven through a call with a scripted Upstream (no HTTP: it feeds the SSE chunks a
legacy server sends) to show the tables move as the call goes, and that a transition the table
refuses keeps the message flowing (the client gets its answer; one warning line; one passthrough
record)."""
from __future__ import annotations

import asyncio
import logging

import orjson
import pytest

from mcpx_core.bridge import Reply
from mcpx_core.bridge.client2026 import Client2026Bridge, Held, Upstream2026Session
from mcpx_core.bridge.client2026.lifecycle import (SE, SS, STREAM, STREAM_ENDS, STREAM_LATE, TE, TRIP, TRIP_ENDS, TRIP_LATE, TS,
                                                   stream_lifecycle, trip_lifecycle)
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.session import Session


def stream_after(*events: SE) -> SS:
    life = stream_lifecycle()
    for ev in events:
        life.fire(ev)
    return life.state


def trip_after(*events: TE) -> TS:
    life = trip_lifecycle()
    for ev in events:
        life.fire(ev)
    return life.state


@pytest.mark.parametrize("events,end", [
    ((SE.RESPONSE, SE.END), SS.ENDED),                                  # the response, then the server closes
    ((SE.END,), SS.ENDED),                                              # closed with no event id (or the whole answer as JSON)
    ((SE.RESUME, SE.RESUMED, SE.RESPONSE, SE.END), SS.ENDED),           # SSE polling: resumed once, then answered
    ((SE.RESUME, SE.RESUMED, SE.RESUME, SE.RESUMED), SS.STREAMING),     # resumed twice (each after a newer id)
    ((SE.RESUME, SE.FAIL), SS.ENDED),                                   # the GET failed, or did not stream
    ((SE.RESUME, SE.RESUMED, SE.FAIL), SS.ENDED),                       # the resumed stream ended with no newer event
    ((SE.RESUME, SE.STOP, SE.STOP), SS.ENDED),                          # CALL_IDLE, then the resume task's not made
    ((SE.RESPONSE, SE.UNDECODABLE, SE.END), SS.UNDECODABLE),            # a fault after the response; a late close
    ((SE.RESUME, SE.UNDECODABLE), SS.UNDECODABLE),                      # the resuming GET stopped decoding
])
def test_stream_sequences(events, end):
    assert stream_after(*events) is end


@pytest.mark.parametrize("events,end", [
    ((TE.ANSWER,), TS.ANSWERED),                                        # the result at once
    ((TE.ASK, TE.RETRY, TE.ANSWER), TS.ANSWERED),                       # one input round
    ((TE.ASK, TE.RETRY, TE.ASK, TE.RETRY, TE.ANSWER), TS.ANSWERED),     # two
    ((TE.ASK_REPLAY, TE.RETRY), TS.RESENT),                             # URL elicitations, or carried server requests
    ((TE.ASK, TE.RETRY, TE.ASK_REPLAY, TE.RETRY), TS.RESENT),           # a URL elicitation on the retry
    ((TE.RESEND,), TS.RESENT),                                          # the upstream session answered 404
    ((TE.ASK, TE.STOP), TS.FORGOTTEN),                                  # HELD_TTL
    ((TE.ASK_REPLAY, TE.STOP), TS.FORGOTTEN),
    ((TE.STOP, TE.ANSWER), TS.FORGOTTEN),                               # CALL_IDLE, then its -32603
    ((TE.ASK, TE.RETRY, TE.STOP, TE.ANSWER), TS.FORGOTTEN),
    ((TE.FAIL,), TS.FAILED),                                            # the send raised
])
def test_trip_sequences(events, end):
    assert trip_after(*events) is end


def test_late_events_change_nothing_and_say_so():
    life = trip_lifecycle(on_refused=lambda d: pytest.fail(d))
    assert life.fire(TE.ANSWER) is True and life.over
    assert life.fire(TE.ANSWER) is False and life.fire(TE.STOP) is False and life.state is TS.ANSWERED
    s = stream_lifecycle(on_refused=lambda d: pytest.fail(d))
    assert s.fire(SE.END) is True and s.fire(SE.END) is False and s.fire(SE.RESPONSE) is False and s.state is SS.ENDED


def test_end_states_take_only_late_events():
    for table, late, ends in ((STREAM, STREAM_LATE, STREAM_ENDS), (TRIP, TRIP_LATE, TRIP_ENDS)):
        assert not [pair for pair in table if pair[0] in ends]  # nothing leaves an end state
        assert {st for st, _ in late} == set(ends) and not late & table.keys()


@pytest.mark.parametrize("make,events,state", [
    (stream_lifecycle, (SE.RESUMED,), SS.STREAMING),                  # not resuming
    (stream_lifecycle, (SE.RESPONSE, SE.RESUME), SS.RESPONDED),       # a responded stream is never resumed
    (stream_lifecycle, (SE.RESUME, SE.RESUME), SS.RESUMING),
    (stream_lifecycle, (SE.RESUME, SE.RESPONSE), SS.RESUMING),        # the response before the GET streams
    (stream_lifecycle, (SE.END, SE.RESUME), SS.ENDED),
    (trip_lifecycle, (TE.RETRY,), TS.CALLING),                        # a retry of a call never held
    (trip_lifecycle, (TE.ASK, TE.ANSWER), TS.HELD),                   # answered while held
    (trip_lifecycle, (TE.ASK, TE.ASK), TS.HELD),
    (trip_lifecycle, (TE.ANSWER, TE.RETRY), TS.ANSWERED),
    (trip_lifecycle, (TE.ASK_REPLAY, TE.RESEND), TS.REPLAY),
])
def test_a_refused_pair_keeps_the_state_logs_and_reports(make, events, state, caplog):
    said: list[str] = []
    life = make(on_refused=said.append)
    *before, refused = events
    for ev in before:
        assert life.fire(ev) is True
    kept = life.state
    with caplog.at_level(logging.WARNING, logger="mcpx"):
        assert life.fire(refused) is True  # (the caller carries on as the event says)
    assert life.state is kept is state
    detail = f"{life.name} in state {state.value}: no transition on {refused.value} (a bug in mcpx): the state is kept and the message goes on"
    assert said == [detail]
    assert [r.getMessage() for r in caplog.records] == [f"mcpx: client2026: {detail}"]


def test_a_failing_report_never_stops_the_event(caplog):
    def boom(detail):
        raise RuntimeError("no sink")
    life = trip_lifecycle(on_refused=boom)
    with caplog.at_level(logging.WARNING, logger="mcpx"):
        assert life.fire(TE.RETRY) is True
    assert life.state is TS.CALLING
    assert caplog.records[-1].getMessage() == "mcpx: client2026: recording a refused transition failed: RuntimeError: no sink"


# -- the bridge, driven without sockets -------------------------------------------------------------
def result() -> dict:
    return {"content": [{"type": "text", "text": "ok"}]}


#: what the client gets: the result walked to 2026-07-28 (RES-resultType)
DELIVERED = {"content": [{"type": "text", "text": "ok"}], "resultType": "complete"}


class Scripted:
    """An Upstream whose POST streams, as a legacy server's SSE answer, each message of ``script``
    (a function of the id mcpx gave the call), one event each with ids 1, 2, ..., then closes; it
    records what mcpx sends."""

    def __init__(self, script=lambda minted: []):
        self.script, self.sent = script, []

    async def send(self, body, headers, purpose, on_chunk=None, **kw):
        sent = orjson.loads(body)
        self.sent.append(sent)
        for i, m in enumerate(self.script(sent.get("id")), 1):
            on_chunk(b"id: %d\ndata: " % i + orjson.dumps(m) + b"\n\n")
        on_chunk(b"")
        return Reply(200, {"content-type": "text/event-stream"}, b"", flow_id="f1")

    def abort(self, flow_id):
        pass


def bridge() -> tuple[Client2026Bridge, Upstream2026Session, Exchange]:
    b = Client2026Bridge(Rewriter(), answers=None)
    s = Session("(2026 client -> 2025-11-25)", client_rev="2026-07-28", server_rev="2025-11-25", client_caps={},
                upstream_id="legacy-1", bridge="client2026")
    up = Upstream2026Session(s)
    exch = Exchange()
    exch.session = s
    up.inbox.exch = exch
    return b, up, exch


def test_a_call_moves_both_tables():
    """The POST streams a progress notification and the response, then closes: the stream goes
    STREAMING -> RESPONDED -> ENDED, the round trip CALLING -> ANSWERED; the client gets both
    messages as SSE, under its own id."""
    async def go():
        b, up, exch = bridge()
        seen: list[Held] = []
        orig = b._next

        async def spy(exch, rid, minted, held, upstream):
            seen.append(held)
            return await orig(exch, rid, minted, held, upstream)
        b._next = spy
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}
        rec = Scripted(lambda minted: [progress, {"jsonrpc": "2.0", "id": minted, "result": result()}])
        answer = await b._call(exch, {"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": {"name": "t"}}, up, rec)
        return answer, seen[0], rec, exch
    answer, held, rec, exch = asyncio.run(go())
    assert held.stream.state is SS.ENDED and held.trip.state is TS.ANSWERED and held.unanswered is None
    assert [m["method"] for m in rec.sent] == ["tools/call"]
    events = [orjson.loads(line[6:]) for line in answer.body.split(b"\n") if line.startswith(b"data: ")]
    assert events == [{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}},
                      {"jsonrpc": "2.0", "id": "c1", "result": DELIVERED}]
    assert [(c.pointer, c.action, c.rule) for c in exch.changes] == [("/result/resultType", "synthesize", "RES-resultType")]


def test_a_refused_transition_keeps_the_answer_flowing(caplog):
    """A held call whose round trip is (by a bug) already ANSWERED when its result comes: the
    table refuses ANSWER there, and still the client gets the result under its own id, with one
    warning line and one passthrough record saying so."""
    async def go():
        b, up, exch = bridge()
        held = Held(handle="h1", upstream=up, method="tools/call", call_id="mcpx-up-1", exch=exch,
                    record=lambda d: b.rw.passthrough(exch, "s2c", d))
        held.trip.fire(TE.ASK)  # held; and the bug: nothing fires RETRY, so the ANSWER finds HELD
        held.queue.put_nowait({"jsonrpc": "2.0", "id": "mcpx-up-1", "result": result()})
        with caplog.at_level(logging.WARNING, logger="mcpx"):
            answer = await b._next(exch, "c1", "mcpx-up-1", held, Scripted())
        return answer, held, exch
    answer, held, exch = asyncio.run(go())
    assert answer.status == 200 and orjson.loads(answer.body) == {"jsonrpc": "2.0", "id": "c1", "result": DELIVERED}
    assert held.trip.state is TS.HELD
    detail = ("the client's round trip in state held: no transition on answer (a bug in mcpx): the state is kept "
              "and the message goes on")
    assert [r.getMessage() for r in caplog.records] == [f"mcpx: client2026: {detail}"]
    assert [(c.pointer, c.action, c.rule, c.detail) for c in exch.changes] == [
        ("/result/resultType", "synthesize", "RES-resultType", "required by 2026-07-28; a legacy result means this"),
        ("", "passthrough", "PASSTHROUGH-error", f"tools/call: {detail}")]


def test_a_resumed_call_moves_through_resuming():
    """SSE polling (2025-11-25 basic/transports.mdx:107-115): the POST's stream carries a priming
    event (id 1, ``retry: 0``) and closes without the response; mcpx resumes with GET and
    Last-Event-ID 1, whose stream carries the response: the stream goes STREAMING -> RESUMING ->
    STREAMING -> RESPONDED -> ENDED (seen at each send), the round trip CALLING -> ANSWERED."""
    async def go():
        b, up, exch = bridge()
        calls: list[Held] = up.inbox.calls
        seen: list[tuple] = []

        class Polling:
            async def send(self, body, headers, purpose, on_chunk=None, method="POST", **kw):
                held = self.held = calls[0]
                seen.append((method, headers.get("last-event-id"), held.stream.state, held.trip.state))
                if method == "POST":
                    self.minted = orjson.loads(body)["id"]
                    on_chunk(b"id: 1\nretry: 0\ndata: \n\n")
                    on_chunk(b"")
                else:
                    on_chunk(b"id: 2\ndata: " + orjson.dumps({"jsonrpc": "2.0", "id": self.minted, "result": result()}) + b"\n\n")
                    seen.append(("GET streamed", None, held.stream.state, held.trip.state))
                    on_chunk(b"")
                return Reply(200, {"content-type": "text/event-stream"}, b"", flow_id=f"f-{method}")

            def abort(self, flow_id):
                pass
        polling = Polling()
        answer = await b._call(exch, {"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": {"name": "t"}}, up, polling)
        return answer, seen, polling.held
    answer, seen, held = asyncio.run(go())
    assert held.stream.state is SS.ENDED and held.trip.state is TS.ANSWERED and held.unanswered is None
    assert seen == [("POST", None, SS.STREAMING, TS.CALLING), ("GET", "1", SS.RESUMING, TS.CALLING),
                    ("GET streamed", None, SS.RESPONDED, TS.CALLING)]
    assert orjson.loads(answer.body) == {"jsonrpc": "2.0", "id": "c1", "result": DELIVERED}
