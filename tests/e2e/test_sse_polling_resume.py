"""SSE polling toward a client older than 2025-11-25, outside the bridges (TR-sse-priming-polling,
mcpx_sse_resume; addon/mcpx_core/bridge/resume.py).

A 2025-11-25 server may close a POST's SSE stream after an event id and before its answer
(docs/specification/2025-11-25/basic/transports.mdx:107-115); a 2025-11-25 client resumes with GET
and Last-Event-ID after the ``retry`` it was given. A 2025-03-26 client does not know this: directly,
or through mcpx before this change, its stream ended and the answer was lost. mcpx now relays such a
call and resumes it itself, so the client gets one HTTP response holding every event.

Through the real mitmdump, against a scripted 2025-11-25 server (it answers initialize with 2025-11-25
and session ``poll-1`` whatever the client asks); raw clients pinned at 2025-03-26 (http.client) and
the released PyPI ``mcp`` 1.9.2 client. Exact bytes on both legs, exact requests the server got,
exact records. Records made by the relay (the resume) and by the rewriting of the client's stream
are written by two tasks: they are compared per origin, each list in order.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import threading

import orjson
import pytest

from proxy_lib import ROOT, Client, Proxy, ScriptedMcpHandler, serve

OLD = "2025-03-26"
NEW = "2025-11-25"
RULE = "TR-sse-priming-polling"
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1, "total": 2}}
PRIMING = b"id: e1\nretry: 50\ndata: \n\n"
#: what a 2025-03-26 client gets of the priming event: a comment line, not even its id (rewrite.py)
NOT_DELIVERED = b": mcpx: message not delivered to this client revision\n\n"
PROGRESS_EVENT = b"id: e2\nevent: message\ndata: " + orjson.dumps(PROGRESS) + b"\n\n"


def result(rid, text="polled") -> dict:
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}],
                                                    "structuredContent": {"t": text}}}


class Poller(ScriptedMcpHandler):
    """A 2025-11-25 server with SSE polling. ``tools/call``:

    - ``poll``: ``e1`` priming (retry 50 ms), ``e2`` progress, close; GET ``Last-Event-ID: e2`` ->
      ``e3`` result, end.
    - ``twice``: ``e1`` priming, close; GET after ``e1`` -> ``e2`` progress, close; GET after ``e2``
      -> ``e3`` result.
    - ``poll`` with ``GET_STATUS`` set: every GET is answered that status (no stream).
    - ``json``: a JSON answer (no stream).
    - ``whole``: ``e1`` priming, ``e2`` result, end (no close before the answer).

    Every request is kept in ``seen`` as (method, headers, body)."""

    REVISION = NEW
    SESSION = "poll-1"
    SERVER_INFO = {"name": "poller", "version": "1"}
    seen: list = []
    calls: list = []
    GET_STATUS: list = []

    def do_POST(self):
        n = int(self.headers["content-length"])
        raw = self.rfile.read(n)
        body = json.loads(raw)
        self.seen.append(("POST", {k.lower(): v for k, v in self.headers.items()}, body))
        if body.get("method") == "initialize":
            out = orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": NEW, "capabilities": {"tools": {}}, "serverInfo": self.SERVER_INFO}})
            self.send_json(out, {"mcp-session-id": self.SESSION})
            return
        if "id" not in body:
            self.send_accepted()
            return
        name = body["params"]["name"]
        self.calls.append((name, body["id"]))
        if name == "json":
            self.send_json(orjson.dumps(result(body["id"], "json")), {"x-served": "json"})
            return
        self.start_sse()
        self.chunk(PRIMING)
        if name == "whole":
            self.chunk(b"id: e2\nevent: message\ndata: " + orjson.dumps(result(body["id"])) + b"\n\n")
        elif name == "poll":
            self.chunk(PROGRESS_EVENT)
        self.chunk(b"")
        self.close_connection = True

    def do_GET(self):
        self.seen.append(("GET", {k.lower(): v for k, v in self.headers.items()}, None))
        last = self.headers.get("last-event-id")
        if last is None:  # a standalone GET stream (an SDK client opens one): not offered
            self.send_response(405)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        name, rid = self.calls[-1]
        if self.GET_STATUS:
            self.send_response(self.GET_STATUS[0])
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.start_sse()
        if name == "twice" and last == "e1":
            self.chunk(PROGRESS_EVENT)
        else:
            self.chunk(b"id: e3\nevent: message\ndata: " + orjson.dumps(result(rid)) + b"\n\n")
        self.chunk(b"")
        self.close_connection = True


@pytest.fixture
def server():
    yield from serve(Poller, "seen", "calls", "GET_STATUS")


def call(rid, name) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": {}, "_meta": {"progressToken": "p"}}}


def result_event(rid, event_id=b"e3") -> bytes:
    """The result as a 2025-03-26 client gets it: structuredContent (2025-06-18) dropped (its text says "polled")."""
    return (b'id: %s\nevent: message\ndata: {"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"polled"}]}}\n\n'
            % (event_id, rid))


def delivered(rid) -> bytes:
    """The bytes a 2025-03-26 client gets of the stream, once resumed: the priming event dropped,
    the progress notification as sent, the result downgraded: one HTTP response."""
    return NOT_DELIVERED + PROGRESS_EVENT + result_event(rid)


PRIMING_DROP = ("s2c", "", "drop-message", RULE, "SSE event id='e1' data=''", "empty-data (priming) event: only 2025-11-25 clients get it")
STRUCTURED = [("s2c", "/result/structuredContent", "drop", "SC-structuredContent")]


def records(px, session, rid=None) -> tuple[list, list]:
    """(records of the relay: rule TR-sse-priming-polling except the priming drop, the others) of the
    session's server->client records (for ``rid``: the call's only)."""
    recs = [r for r in px.session_changes(session) if r["direction"] == "s2c"]
    if rid is not None:  # the records of the call's flow
        flows = {r["flow"] for r in recs if r["jsonrpc_id"] == rid}
        recs = [r for r in recs if r["flow"] in flows]
    mine = [(r["jsonrpc_id"], r["method"], r["action"], r["from_rev"], r["to_rev"], r["detail"]) for r in recs
            if r["rule"] == RULE and r["action"] != "drop-message"]
    rest = [(r["direction"], r["pointer"], r["action"], r["rule"], *((r["before"], r["detail"]) if r["rule"] == RULE else ()))
            for r in recs if not (r["rule"] == RULE and r["action"] != "drop-message")]
    return mine, rest


def resumed(last, retry=50) -> str:
    return (f"the server closed the SSE stream after event {last} before the answer: resumed by mcpx with GET and "
            f"Last-Event-ID after {retry} ms (retry); the 2025-03-26 client's stream stays open")


def start(px) -> Client:
    c = Client(px.port)
    assert c.initialize(OLD)["protocolVersion"] == OLD
    return c


def assert_get(headers: dict, last: str) -> None:
    assert headers["last-event-id"] == last
    assert headers["mcp-session-id"] == "poll-1"  # the server's own id, never mcpx's token
    assert headers["mcp-protocol-version"] == NEW
    assert headers["accept"] == "text/event-stream"
    assert "content-type" not in headers and "content-length" not in headers


def requests_of(seen) -> list:
    return [(m, (b or {}).get("method"), h.get("last-event-id")) for m, h, b in seen]


def test_a_closed_stream_is_resumed_for_a_2025_03_26_client(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_sse_resume": "always"}) as px:
        c = start(px)
        st, h, body = c.post(call(4, "poll"))
        c.close()
    assert (st, h["content-type"]) == (200, "text/event-stream")
    assert body == delivered(4)
    assert requests_of(Poller.seen) == [("POST", "initialize", None), ("POST", "notifications/initialized", None),
                                        ("POST", "tools/call", None), ("GET", None, "e2")]
    assert Poller.seen[2][2] == call(4, "poll")
    assert Poller.seen[2][1]["mcp-session-id"] == "poll-1" and Poller.seen[2][1]["mcp-protocol-version"] == NEW
    assert_get(Poller.seen[3][1], "e2")
    mine, rest = records(px, c.session, 4)
    assert mine == [(4, "tools/call", "rewrite", NEW, OLD, resumed("e2"))]
    assert rest == [PRIMING_DROP, *STRUCTURED]
    flows = px.flows()
    relayed = [f for f in flows if f.request.path.startswith("/mcpx-answer/")]
    assert len(relayed) == 1
    f = relayed[0]
    assert f.metadata["mcpx"]["relay"] == {"server": f"http://127.0.0.1:{server}/mcp", "resumed_after": ["e2"]}
    assert f.comment.startswith("tools/call poll #4 · client 2025-03-26, server 2025-11-25 · mcpx: relayed by mcpx, which resumes the server's SSE polling for a 2025-03-26 client; ")
    assert f.request.method == "POST" and f.request.host == "127.0.0.1" and f.response.content == body
    own = sorted(f.metadata["mcpx"]["purpose"] for f in flows if f.metadata.get("mcpx", {}).get("origin") == "mcpx"
                 and f.request.method in ("GET", "POST") and "SSE polling" in f.metadata["mcpx"]["purpose"])
    assert own == ["GET resuming SSE polling after event e2 (TR-sse-priming-polling)",
                   "request relayed to resume SSE polling (TR-sse-priming-polling)"]


def test_resumed_twice_after_a_newer_id(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_sse_resume": "always"}) as px:
        c = start(px)
        st, h, body = c.post(call(5, "twice"))
        c.close()
    assert (st, body) == (200, delivered(5))
    assert requests_of(Poller.seen)[2:] == [("POST", "tools/call", None), ("GET", None, "e1"), ("GET", None, "e2")]
    assert_get(Poller.seen[3][1], "e1")
    assert_get(Poller.seen[4][1], "e2")
    mine, rest = records(px, c.session, 5)
    assert mine == [(5, "tools/call", "rewrite", NEW, OLD, resumed("e1")), (5, "tools/call", "rewrite", NEW, OLD, resumed("e2"))]
    assert rest == [PRIMING_DROP, *STRUCTURED]


@pytest.mark.parametrize("status", [405, 404])
def test_a_get_refused_ends_the_stream_with_a_record(server, tmp_path, status):
    Poller.GET_STATUS.append(status)
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_sse_resume": "always"}) as px:
        c = start(px)
        st, h, body = c.post(call(6, "poll"))
        c.close()
        out = px.output()
    assert (st, body) == (200, NOT_DELIVERED + PROGRESS_EVENT)
    assert requests_of(Poller.seen)[2:] == [("POST", "tools/call", None), ("GET", None, "e2")]
    failed = (f"the server closed the SSE stream after event e2 before the answer and mcpx could not resume it: the GET with "
              f"Last-Event-ID e2 was answered HTTP {status} (no content-type), not an SSE stream; the client's stream ends without the answer")
    mine, rest = records(px, c.session, 6)
    assert mine == [(6, "tools/call", "rewrite", NEW, OLD, resumed("e2")), (6, "tools/call", "passthrough", NEW, OLD, failed)]
    assert rest == [PRIMING_DROP]
    assert out.count(f"mcpx: SSE polling: {failed}") == 1


EARLY = ("the server closed the SSE stream after event e2 before the answer; a 2025-03-26 client cannot resume it, "
         "so its stream ended without the answer; ")


def test_off_leaves_the_stream_as_the_server_ended_it_with_a_record(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_sse_resume": "off"}) as px:
        c = start(px)
        st, h, body = c.post(call(7, "poll"))
        c.close()
    assert (st, body) == (200, NOT_DELIVERED + PROGRESS_EVENT)
    assert requests_of(Poller.seen)[2:] == [("POST", "tools/call", None)]
    mine, rest = records(px, c.session, 7)
    assert mine == [(7, "tools/call", "passthrough", NEW, OLD, EARLY + "not resumed (mcpx_sse_resume=off)")]
    assert rest == [PRIMING_DROP]
    assert not [f for f in px.flows() if f.request.path.startswith("/mcpx-answer/")]


def test_auto_relays_a_server_once_it_was_seen_priming(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path) as px:  # mcpx_sse_resume=auto, the default
        c = start(px)
        st1, _, body1 = c.post(call(8, "poll"))  # not relayed: this server was never seen priming
        n1 = len(Poller.seen)
        st2, _, body2 = c.post(call(9, "poll"))  # relayed and resumed
        c.close()
    assert (st1, body1) == (200, NOT_DELIVERED + PROGRESS_EVENT)
    assert (st2, body2) == (200, delivered(9))
    assert requests_of(Poller.seen[:n1])[2:] == [("POST", "tools/call", None)]
    assert requests_of(Poller.seen[n1:]) == [("POST", "tools/call", None), ("GET", None, "e2")]
    assert records(px, c.session, 8) == ([(8, "tools/call", "passthrough", NEW, OLD, EARLY + "mcpx relays and resumes this "
                                           "server's later calls (mcpx_sse_resume=auto)")], [PRIMING_DROP])
    assert records(px, c.session, 9)[0] == [(9, "tools/call", "rewrite", NEW, OLD, resumed("e2"))]


def test_auto_learns_from_any_session_and_a_whole_stream_is_not_resumed(server, tmp_path):
    """A stream that holds its answer learns the server (priming seen) and needs no resume; a
    later call of another session is relayed."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path) as px:
        a = start(px)
        st, _, body = a.post(call(1, "whole"))
        b = start(px)
        st2, _, body2 = b.post(call(2, "poll"))
        a.close()
        b.close()
    assert (st, body) == (200, NOT_DELIVERED + result_event(1, b"e2"))
    assert records(px, a.session, 1) == ([], [PRIMING_DROP, *STRUCTURED])
    assert (st2, body2) == (200, delivered(2))
    assert records(px, b.session, 2)[0] == [(2, "tools/call", "rewrite", NEW, OLD, resumed("e2"))]


def test_a_2025_11_25_client_is_never_relayed(server, tmp_path):
    """Same revision on both legs: mcpx stays invisible; the client resumes itself."""
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_sse_resume": "always"}) as px:
        c = Client(px.port)
        assert c.initialize(NEW)["protocolVersion"] == NEW
        st, h, body = c.post(call(3, "poll"))
        c.conn.request("GET", "/mcp", headers={"accept": "text/event-stream", "mcp-session-id": c.session,
                                               "mcp-protocol-version": NEW, "last-event-id": "e2"})
        r = c.conn.getresponse()
        resumed_body = r.read()
        c.close()
    assert (st, body) == (200, PRIMING + PROGRESS_EVENT)
    assert resumed_body == b"id: e3\nevent: message\ndata: " + orjson.dumps(result(3)) + b"\n\n"
    assert requests_of(Poller.seen)[2:] == [("POST", "tools/call", None), ("GET", None, "e2")]
    assert [r for r in px.session_changes(c.session) if r["direction"] == "s2c"] == []
    assert not [f for f in px.flows() if f.request.path.startswith("/mcpx-answer/")]


def test_a_json_answer_through_the_relay_is_as_without_it(server, tmp_path):
    got = {}
    for mode in ("off", "always"):
        Poller.seen.clear()
        with Proxy(f"http://127.0.0.1:{server}", tmp_path, options={"mcpx_sse_resume": mode}, tag=mode) as px:
            c = start(px)
            st, h, body = c.post(call(11, "json"))
            c.close()
            got[mode] = (st, {k: v for k, v in h.items() if k not in ("date", "mcp-session-id")}, body,
                         records(px, c.session, 11))
            relayed = [f for f in px.flows() if f.request.path.startswith("/mcpx-answer/")] if mode == "always" else None
        assert requests_of(Poller.seen)[2:] == [("POST", "tools/call", None)]
    assert got["always"] == got["off"]
    assert got["off"][2] == b'{"jsonrpc":"2.0","id":11,"result":{"content":[{"type":"text","text":"json"}]}}'
    assert got["off"][1]["x-served"] == "json"
    assert got["off"][3] == ([], STRUCTURED)
    assert relayed and relayed[0].metadata["mcpx"]["relay"]["resumed_after"] == []


SDK = ROOT / "tests" / "peers" / ".venvs" / "mcp-1.9.4" / "bin" / "python"
SDK_CLIENT = r'''
import asyncio, json, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

async def main():
    async with streamablehttp_client(sys.argv[1]) as (r, w, _):
        async with ClientSession(r, w) as s:
            init = await s.initialize()
            res = await asyncio.wait_for(s.call_tool("poll", {}), 20)
            print(json.dumps({"version": init.protocolVersion, "result": res.model_dump(mode="json", exclude_none=True)}))

asyncio.run(main())
'''


@pytest.mark.skipif(not SDK.exists(), reason="PyPI mcp 1.9.4 venv not set up (scripts/setup.sh)")
def test_released_mcp_1_9_4_client_gets_its_answer(server, tmp_path):
    """The released PyPI ``mcp`` 1.9.2 client (2025-03-26) calls a polling tool through mcpx (auto,
    after one call that taught mcpx the server primes): it gets the result."""
    script = tmp_path / "client.py"
    script.write_text(SDK_CLIENT)
    with Proxy(f"http://127.0.0.1:{server}", tmp_path) as px:
        teach = start(px)
        teach.post(call(1, "whole"))
        teach.close()
        p = subprocess.run([str(SDK), str(script), px.url], capture_output=True, timeout=60, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out == {"version": OLD, "result": {"content": [{"type": "text", "text": "polled"}],
                                                  "isError": False}}
    resumes = [h for m, h, _ in Poller.seen if m == "GET" and "last-event-id" in h]
    assert len(resumes) == 1
    assert_get(resumes[0], "e2")
