"""The client2026 bridge's upstream sessions are ended once idle, through the real mitmdump.

mcpx keeps one upstream legacy session per 2026-07-28 client identity (bridge/client2026.py). Before,
they lived as long as the process. Now one unused for ``mcpx_session_ttl`` (no call in progress, no
open listen stream, no held round trip) is forgotten by the expiry loop (addons/expiry.py) and ended
on the server as a legacy client ends a session: ``DELETE`` with its ``Mcp-Session-Id``; one log line
says so; the client's next request makes a new upstream session. An open listen stream keeps its
session: another client's idle session is ended first, the listener's only once its stream closed.

The scripted legacy server numbers its sessions (legacy-1, legacy-2, ...) and signals each DELETE:
the tests wait on those signals, never on a fixed delay.
"""
from __future__ import annotations

import http.client
import io
import itertools
import json
import threading
import time

import orjson
import pytest

from proxy_lib import Proxy, ScriptedMcpHandler, serve

NEW = "2026-07-28"


def meta(name: str) -> dict:
    return {"io.modelcontextprotocol/protocolVersion": NEW, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"}}


class Legacy(ScriptedMcpHandler):
    """A 2025-11-25 server: sessions legacy-1, legacy-2, ...; tools/call answered; GET streams held
    open until ``release``; every request kept in ``seen`` as (HTTP method, Mcp-Session-Id, JSON-RPC method)."""

    seen: list = []
    deletes: list = []
    deleted = threading.Condition()
    release = threading.Event()
    numbers = itertools.count(1)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.seen.append(("POST", self.headers.get("mcp-session-id"), body.get("method")))
        if body.get("method") == "initialize":
            out = orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "legacy", "version": "1"}}})
            self.send_json(out, {"mcp-session-id": f"legacy-{next(self.numbers)}"})
        elif "id" in body:
            self.send_json(orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {"content": [{"type": "text", "text": "ok"}]}}))
        else:
            self.send_accepted()

    def do_DELETE(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
        with self.deleted:
            self.deletes.append((self.headers.get("mcp-session-id"), self.headers.get("mcp-protocol-version")))
            self.deleted.notify_all()

    def do_GET(self):
        self.seen.append(("GET", self.headers.get("mcp-session-id"), None))
        self.start_sse()
        self.release.wait(30)


@pytest.fixture
def server():
    Legacy.release.clear()
    Legacy.numbers = itertools.count(1)
    yield from serve(Legacy, "seen", "deletes")
    Legacy.release.set()


def wait_deletes(n: int, timeout: float = 20) -> list:
    """The DELETEs the server got, once there are ``n`` (fails after ``timeout`` seconds)."""
    with Legacy.deleted:
        assert Legacy.deleted.wait_for(lambda: len(Legacy.deletes) >= n, timeout), Legacy.deletes
        return list(Legacy.deletes)


def wait_output(px: Proxy, text: str, timeout: float = 20) -> str:
    """mitmdump's output once it holds ``text`` (or as it is after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while text not in px.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    return px.output()


def post(port: int, msg: dict, name: str | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": NEW, "mcp-method": msg["method"]}
    if name:
        headers["mcp-name"] = name
    conn.request("POST", "/mcp", orjson.dumps(msg), headers)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, body


def call(rid: int, client: str) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "x", "arguments": {}, "_meta": meta(client)}}


OPTIONS = {"mcpx_server_era": "legacy", "mcpx_session_ttl": "1s"}


def test_an_idle_upstream_session_is_deleted_and_the_next_request_makes_a_new_one(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False, options=OPTIONS) as px:
        status, body = post(px.port, call(1, "raw-2026"), "x")
        assert (status, orjson.loads(body)["result"]["content"]) == (200, [{"type": "text", "text": "ok"}])
        assert wait_deletes(1) == [("legacy-1", "2025-11-25")]  # the server's own id, and the session's revision
        # the log line follows the DELETE's answer (not defined before the server saw the DELETE), and read
        # after the next request the second session, once idle, may be ended too (its own, identical line)
        out = wait_output(px, "DELETE answered")
        status, body = post(px.port, call(2, "raw-2026"), "x")
        assert status == 200
    assert Legacy.seen == [
        ("POST", None, "initialize"), ("POST", "legacy-1", "notifications/initialized"), ("POST", "legacy-1", "tools/call"),
        ("POST", None, "initialize"), ("POST", "legacy-2", "notifications/initialized"), ("POST", "legacy-2", "tools/call")]
    lines = [line.split("] ", 1)[-1] for line in out.splitlines() if "idle for more than" in line]
    assert lines == ["mcpx: client2026: upstream session of 2026-07-28 client 'raw-2026' (2025-11-25) idle for more than 1 s: "
                     "ended (DELETE answered HTTP 200)"]


def test_an_open_listen_stream_keeps_its_upstream_session(server, tmp_path):
    with Proxy(f"http://127.0.0.1:{server}", tmp_path, save=False, options=OPTIONS) as px:
        conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
        listen = {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": {"_meta": meta("listener"), "notifications": {}}}
        conn.request("POST", "/mcp", orjson.dumps(listen), {"content-type": "application/json", "accept": "application/json, text/event-stream",
                                                            "mcp-protocol-version": NEW, "mcp-method": "subscriptions/listen"})
        r = conn.getresponse()
        buf = b""
        while b"\n\n" not in buf:
            buf += r.read1(65536)
        assert r.status == 200 and b"notifications/subscriptions/acknowledged" in buf
        # another client's session, made later and idle: it is ended, the listener's (idle longer) is not
        assert post(px.port, call(1, "caller"), "x")[0] == 200
        assert wait_deletes(1) == [("legacy-2", "2025-11-25")]
        r.close()  # the listen ends (the response holds the socket too): its session is idle from now on
        conn.close()
        assert wait_deletes(2) == [("legacy-2", "2025-11-25"), ("legacy-1", "2025-11-25")]
    # the listener's GET (a task of its own) and the caller's initialize are concurrent: their order on the
    # server is not defined, so the GET is checked apart
    assert Legacy.seen[0] == ("POST", None, "initialize")
    assert [x for x in Legacy.seen if x[0] == "GET"] == [("GET", "legacy-1", None)]


ASK = {"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create",
       "params": {"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}}


class Asking(Legacy):
    """Legacy, but its subclasses answer ``tools/call`` themselves, asking the client :data:`ASK`."""

    def asked(self) -> bool:
        """A ``tools/call`` POST: kept in ``seen``, its SSE answer started (True); any other POST
        answered as :class:`Legacy` does (False)."""
        raw = self.rfile.read(int(self.headers["content-length"]))
        if json.loads(raw).get("method") != "tools/call":
            self.rfile = io.BytesIO(raw)
            self.headers.replace_header("content-length", str(len(raw)))
            Legacy.do_POST(self)
            return False
        self.seen.append(("POST", self.headers.get("mcp-session-id"), "tools/call"))
        self.start_sse()
        return True


class Holding(Asking):
    """Legacy, but tools/call asks the client a question (elicitation/create) on its SSE answer and holds
    the stream open until mcpx closes it (``closed``); DELETE is answered 405 (a server that lets no
    client end its session, 2025-11-25 transports.mdx); nothing else would ever end that stream."""

    closed = threading.Event()
    #: the message it streams before it holds the stream open
    EVENT = ASK

    def do_POST(self):
        if not self.asked():
            return
        self.chunk(b"data: " + orjson.dumps(self.EVENT) + b"\n\n")
        self.connection.settimeout(60)
        try:
            self.connection.recv(1)  # b"": mcpx closed the upstream call
        except OSError:
            pass
        self.closed.set()
        self.close_connection = True

    def do_DELETE(self):
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()
        with self.deleted:
            self.deletes.append((self.headers.get("mcp-session-id"), self.headers.get("mcp-protocol-version")))
            self.deleted.notify_all()


@pytest.fixture
def holding():
    Holding.closed.clear()
    Holding.numbers = itertools.count(1)
    yield from serve(Holding, "seen", "deletes")


def test_a_held_round_trip_that_expires_ends_its_upstream_call(holding, tmp_path):
    """An input_required round trip the client never retries is forgotten after HELD_TTL (here 1 s: a
    script sets it in mitmdump), its session then idle and DELETEd; the server answers 405. Before, the
    upstream call's SSE stream stayed open for as long as the server kept it (here: for ever), with its
    flow and connection; now mcpx ends it when it forgets the round trip."""
    script = tmp_path / "held_ttl.py"
    script.write_text("import mcpx_core.bridge.client2026 as c\nc.HELD_TTL = 1.0\n")
    with Proxy(f"http://127.0.0.1:{holding}", tmp_path, save=False, options=OPTIONS, scripts=(str(script),)) as px:
        msg = call(1, "asked")
        msg["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"elicitation": {}}
        status, body = post(px.port, msg, "x")
        assert status == 200 and orjson.loads(body)["result"]["resultType"] == "input_required"
        with Holding.deleted:
            assert Holding.deleted.wait_for(lambda: Holding.deletes, 20)
        assert Holding.deletes == [("legacy-1", "2025-11-25")]
        assert Holding.closed.wait(20), "the held upstream call is still open"
        out = wait_output(px, "DELETE answered")  # (the log line follows the DELETE's answer)
    lines = [line.split("] ", 1)[-1] for line in out.splitlines() if "idle for more than" in line]
    assert lines == ["mcpx: client2026: upstream session of 2026-07-28 client 'asked' (2025-11-25) idle for more than 1 s: "
                     "ended (DELETE answered HTTP 405)"]


RETRY_MS = 10000


class PollingHolding(Asking):
    """Legacy (DELETE answered 200), but tools/call asks the client a question (elicitation/create) in
    an event with id ``ev-1`` and ``retry: 10000`` (10 s), then ends the stream without the call's
    answer: SSE polling (2025-11-25 basic/transports.mdx:107-115), the call to be resumed with GET and
    ``Last-Event-ID: ev-1`` after 10 s. A GET is kept in ``seen`` and signals ``got``; it is held open
    until ``release``."""

    got = threading.Event()
    #: the message of the event with id ev-1
    EVENT = ASK

    def do_POST(self):
        if not self.asked():
            return
        self.chunk(b"id: ev-1\nretry: %d\ndata: " % RETRY_MS + orjson.dumps(self.EVENT) + b"\n\n")
        self.chunk(b"")
        self.close_connection = True

    def do_GET(self):
        if not self.headers.get("last-event-id"):  # the session's own GET stream (mcpx opens it for a client with sampling
            self.send_response(405)                # or elicitation): this server offers none
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.seen.append(("GET", self.headers.get("mcp-session-id"), self.headers.get("last-event-id")))
        self.got.set()
        self.start_sse()
        self.release.wait(30)


def serve_polling(cls):
    """The body of a fixture of :class:`PollingHolding` or a subclass."""
    cls.got.clear()
    cls.release.clear()
    cls.numbers = itertools.count(1)
    yield from serve(cls, "seen", "deletes")
    cls.release.set()


@pytest.fixture
def polling_holding():
    yield from serve_polling(PollingHolding)


def test_a_held_round_trip_that_expires_before_its_resume_sends_no_get(polling_holding, tmp_path):
    """The server asked for input and closed the call's stream (to be resumed after its 10 s ``retry``);
    the client never retries, and the round trip expires (HELD_TTL 1 s, set by a script) before the
    resume's wait is over: the resume is cancelled, no GET is sent (nobody waits for the call any more),
    no record or line reports a failed resume; the session is then idle and DELETEd. Before, the resume
    went on after the expiry and tried the GET for a call nobody waited for (here it could not go out: the
    client's flow it belonged to had ended, "no live proxy"), then reported a failed resume: a passthrough
    record and a warning line "the call ends with -32603". The DELETE shows the round trip expired (the
    session is idle only without it); the server is then watched until 5 s past the resume's time."""
    script = tmp_path / "held_ttl.py"
    script.write_text("import mcpx_core.bridge.client2026 as c\nc.HELD_TTL = 1.0\n")
    with Proxy(f"http://127.0.0.1:{polling_holding}", tmp_path, save=False, options=OPTIONS, scripts=(str(script),)) as px:
        msg = call(1, "asked")
        msg["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"elicitation": {}}
        status, body = post(px.port, msg, "x")
        closed = time.monotonic()  # (the server closed the call's stream before mcpx answered the client)
        assert status == 200 and orjson.loads(body)["result"]["resultType"] == "input_required"
        with PollingHolding.deleted:
            assert PollingHolding.deleted.wait_for(lambda: PollingHolding.deletes, 20)
        assert PollingHolding.deletes == [("legacy-1", "2025-11-25")]
        assert time.monotonic() < closed + RETRY_MS / 1000, "the round trip expired after the resume's wait: nothing tested"
        assert not PollingHolding.got.wait(closed + RETRY_MS / 1000 + 5 - time.monotonic()), "the resuming GET was sent"
        recs = [(r["action"], r["rule"], r["detail"]) for r in px.changes() if r["rule"] == "TR-sse-priming-polling"]
        out = px.output()
    assert "SSE polling" not in out and "passed through" not in out
    assert PollingHolding.seen == [("POST", None, "initialize"), ("POST", "legacy-1", "notifications/initialized"),
                                   ("POST", "legacy-1", "tools/call")]
    assert recs == [("bridge", "TR-sse-priming-polling", "the server closed the call's SSE stream after event ev-1 without its "
                                                         "answer: resumed with GET and Last-Event-ID (retry 10000 ms)")]


PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}}
#: CALL_IDLE is 600 s; a script sets it to 1 s in mitmdump (as HELD_TTL above)
CALL_IDLE_SCRIPT = "import mcpx_core.bridge.client2026 as c\nc.CALL_IDLE = 1.0\n"
IDLE_TEXT = "no JSON-RPC message from the server for 1 s: mcpx ended the call's upstream request"
#: the same, when the call's stream had ended and its resume waited the server's retry
IDLE_RESUME_TEXT = "no JSON-RPC message from the server for 1 s: mcpx cancelled the resume of the call's SSE stream"


class Silent(Holding):
    """Holding, but what it streams is a progress notification: no question, then nothing."""

    closed = threading.Event()
    EVENT = PROGRESS


@pytest.fixture
def silent():
    Silent.closed.clear()
    Silent.numbers = itertools.count(1)
    yield from serve(Silent, "seen", "deletes")


def sse_messages(body: bytes) -> list[dict]:
    return [orjson.loads(line[6:]) for line in body.splitlines() if line.startswith(b"data: ")]


def test_a_call_without_a_message_for_call_idle_ends_with_why_and_its_upstream_request_ends(silent, tmp_path):
    """The server sends a progress notification, then nothing, and keeps the call's stream open. After
    CALL_IDLE (here 1 s: a script sets it in mitmdump) without a message, the client gets the progress
    notification and -32603 saying why, with one passthrough record and one warning line, and mcpx ends
    the upstream request (the server sees its connection closed). Before, the client got -32603 "the
    server ended the call without an answer" (untrue), and the upstream request went on for nobody."""
    script = tmp_path / "call_idle.py"
    script.write_text(CALL_IDLE_SCRIPT)
    with Proxy(f"http://127.0.0.1:{silent}", tmp_path, save=False, options=OPTIONS, scripts=(str(script),)) as px:
        status, body = post(px.port, call(7, "quiet"), "x")
        assert Silent.closed.wait(20), "the upstream call is still open"
        out = wait_output(px, "the call ends with -32603")
        recs = [(r["action"], r["rule"], r["detail"]) for r in px.changes() if r["action"] == "passthrough"]
    assert status == 200
    assert sse_messages(body) == [PROGRESS, {"jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": f"mcpx: {IDLE_TEXT}"}}]
    assert recs == [("passthrough", "PASSTHROUGH-error", f"{IDLE_TEXT}; the call ends with -32603")]
    lines = [line.split("] ", 1)[-1] for line in out.splitlines() if "the call ends with -32603" in line]
    assert lines == [f"mcpx: client2026: tools/call: {IDLE_TEXT}; the call ends with -32603"]


class SilentPolling(PollingHolding):
    """PollingHolding, but the event with id ``ev-1`` is a progress notification: no question."""

    got = threading.Event()
    EVENT = PROGRESS


@pytest.fixture
def silent_polling():
    yield from serve_polling(SilentPolling)


def test_a_call_that_ends_for_call_idle_while_its_resume_waits_sends_no_get(silent_polling, tmp_path):
    """The server closed the call's stream after event ev-1 (to be resumed after its 10 s ``retry``);
    CALL_IDLE (1 s, set by a script) passes first: the call ends with -32603 saying why (the resume
    cancelled: the call's upstream request was already over), and its resume is cancelled: no GET is
    sent (the client no longer waits for the call), one info line says so. The server is watched until
    5 s past the resume's time."""
    script = tmp_path / "call_idle.py"
    script.write_text(CALL_IDLE_SCRIPT)
    with Proxy(f"http://127.0.0.1:{silent_polling}", tmp_path, save=False, options=OPTIONS, scripts=(str(script),)) as px:
        status, body = post(px.port, call(8, "quiet"), "x")
        closed = time.monotonic()
        assert time.monotonic() < closed + RETRY_MS / 1000
        assert not SilentPolling.got.wait(closed + RETRY_MS / 1000 + 5 - time.monotonic()), "the resuming GET was sent"
        out = wait_output(px, "not made")
        recs = [(r["action"], r["rule"], r["detail"]) for r in px.changes() if r["rule"] in ("TR-sse-priming-polling", "PASSTHROUGH-error")]
    assert status == 200
    assert sse_messages(body) == [PROGRESS, {"jsonrpc": "2.0", "id": 8, "error": {"code": -32603, "message": f"mcpx: {IDLE_RESUME_TEXT}"}}]
    assert SilentPolling.seen == [("POST", None, "initialize"), ("POST", "legacy-1", "notifications/initialized"),
                                  ("POST", "legacy-1", "tools/call")]
    assert recs == [("bridge", "TR-sse-priming-polling", "the server closed the call's SSE stream after event ev-1 without its "
                                                         "answer: resumed with GET and Last-Event-ID (retry 10000 ms)"),
                    ("passthrough", "PASSTHROUGH-error", f"{IDLE_RESUME_TEXT}; the call ends with -32603")]
    lines = [line.split("] ", 1)[-1] for line in out.splitlines() if "not made" in line]
    assert lines == ["mcpx: client2026: the call tools/call ended after 1 s without a message from the server: its resume "
                     "after event ev-1 not made"]


class AskingWithNote(Legacy):
    """Legacy, but tools/call (after ``lead`` seconds of progress notifications, one each 0.25 s) asks the
    client a question (elicitation/create, id ``ask-1``), with a progress notification right after it in the
    same chunk unless ``note`` is False, then waits (up to 20 s) for the answer to ``ask-1`` (a POST of
    its own: ``answered``), ``delay`` seconds more, and answers the call on the same stream (``sent``: it
    could write it). A POST answering ``ask-1`` is kept in ``answers``."""

    answered = threading.Event()
    sent = threading.Event()
    delay = 0.0
    lead = 0.0
    note = True
    answers: list = []

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["content-length"]))
        body = json.loads(raw)
        if body.get("id") == "ask-1" and "method" not in body:
            self.answers.append(body)
            self.send_accepted()
            self.answered.set()
            return
        if body.get("method") != "tools/call":
            self.rfile = io.BytesIO(raw)
            self.headers.replace_header("content-length", str(len(raw)))
            Legacy.do_POST(self)
            return
        self.start_sse()
        start = time.monotonic()
        while time.monotonic() - start < self.lead:
            self.chunk(b"data: " + orjson.dumps(PROGRESS) + b"\n\n")
            time.sleep(0.25)
        self.chunk(b"data: " + orjson.dumps(ASK) + b"\n\n" + (b"data: " + orjson.dumps(PROGRESS) + b"\n\n" if self.note else b""))
        if not self.answered.wait(20):
            return
        time.sleep(self.delay)
        try:
            self.chunk(b"data: " + orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "content": [{"type": "text", "text": "answered"}]}}) + b"\n\n")
            self.chunk(b"")
            self.sent.set()
        except OSError:
            pass
        self.close_connection = True


@pytest.fixture
def asking_with_note():
    AskingWithNote.answered.clear()
    AskingWithNote.sent.clear()
    AskingWithNote.delay, AskingWithNote.lead, AskingWithNote.note = 0.0, 0.0, True
    AskingWithNote.numbers = itertools.count(1)
    yield from serve(AskingWithNote, "seen", "deletes", "answers")


#: the call's answer as the client gets it (2026-07-28: ``resultType``)
ANSWERED = {"content": [{"type": "text", "text": "answered"}], "resultType": "complete"}


def asked_call(rid: int) -> dict:
    msg = call(rid, "asked")
    msg["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"elicitation": {}}
    return msg


def retry_of(msg: dict, body: bytes) -> dict:
    """The client's retry of ``msg`` after the input_required answer ``body`` (the question answered)."""
    result = sse_messages(body)[-1]["result"] if body.startswith(b"event") else orjson.loads(body)["result"]
    assert result["resultType"] == "input_required" and list(result["inputRequests"]) == ["mcpx:ask-1"]
    again = json.loads(json.dumps(msg))
    again["params"].update(requestState=result["requestState"],
                           inputResponses={"mcpx:ask-1": {"action": "accept", "content": {}}})
    return again


def ask_then_retry(port: int, tmp_path, script: str, rid: int, pause: float = 0.0) -> tuple[int, bytes, str]:
    """Through a mitmdump in front of the :class:`AskingWithNote` server on ``port``, with ``script``
    loaded (constants scaled down): the call ``rid`` (answered input_required), ``pause`` seconds, then
    its retry; (the retry's status, its body, mitmdump's output)."""
    path = tmp_path / "scaled.py"
    path.write_text(script)
    with Proxy(f"http://127.0.0.1:{port}", tmp_path, save=False, options=OPTIONS, scripts=(str(path),)) as px:
        msg = asked_call(rid)
        status, body = post(px.port, msg, "x")
        assert status == 200
        time.sleep(pause)
        status, body = post(px.port, retry_of(msg, body), "x")
        return status, body, px.output()


def test_a_question_followed_by_a_notification_is_asked_and_its_call_is_not_ended_for_call_idle(asking_with_note, tmp_path):
    """The server asks a question and sends a progress notification with it, then waits for the answer
    (as it must). mcpx asks the client (input_required) and keeps the upstream call open for the retry,
    whose answer then comes. Before, mcpx kept reading after the notification, with the question pending,
    until CALL_IDLE (1 s here, 600 s really) passed; then it ended the upstream request (a warning line
    and a record saying the call ends with -32603) and still answered input_required: the retry waited
    CALL_IDLE again for a call mcpx had ended, and got -32603."""
    status, body, out = ask_then_retry(asking_with_note, tmp_path, CALL_IDLE_SCRIPT, 9)
    assert AskingWithNote.answers == [{"jsonrpc": "2.0", "id": "ask-1", "result": {"action": "accept", "content": {}}}]
    assert (status, orjson.loads(body)) == (200, {"jsonrpc": "2.0", "id": 9, "result": ANSWERED})
    assert AskingWithNote.sent.is_set()
    assert "the call ends with -32603" not in out


def test_a_retried_round_trip_is_not_forgotten_while_its_answer_is_awaited(asking_with_note, tmp_path):
    """The client retries at once; the server answers the call 2 s after it got the client's answer. The
    round trip is no longer held once retried (HELD_TTL 1 s here, set by a script, counted from its
    input_required answer): its answer comes. Before, the expiry loop forgot it while the retry waited (its
    upstream request ended), and the retry got -32603 after CALL_IDLE (6 s here: a margin of 4 s over
    the server's 2 s on a busy machine)."""
    AskingWithNote.delay, AskingWithNote.note = 2.0, False
    status, body, out = ask_then_retry(asking_with_note, tmp_path,
                                       "import mcpx_core.bridge.client2026 as c\nc.HELD_TTL = 1.0\nc.CALL_IDLE = 6.0\n", 10)
    assert (status, orjson.loads(body)) == (200, {"jsonrpc": "2.0", "id": 10, "result": ANSWERED})
    assert "the call ends with -32603" not in out and "forgotten" not in out


def test_a_round_trip_asked_after_held_ttl_of_streaming_is_held_for_its_retry(asking_with_note, tmp_path):
    """The server streams progress for 3 s, then asks a question; the client retries 0.6 s later and gets the
    call's answer. HELD_TTL (2 s here, set by a script: a margin of 1.4 s on a busy machine) counts from the
    input_required answer. Before, it counted from the call's start: a round trip asked after HELD_TTL of streaming was forgotten at once,
    and the retry got 400 "Invalid or expired requestState"."""
    AskingWithNote.lead, AskingWithNote.note = 3.0, False
    # (0.6 s: the expiry loop runs every 0.5 s here)
    status, body, _ = ask_then_retry(asking_with_note, tmp_path, "import mcpx_core.bridge.client2026 as c\nc.HELD_TTL = 2.0\n",
                                     11, pause=0.6)
    assert (status, sse_messages(body)[-1] if body.startswith(b"event") else orjson.loads(body)) == (200, {
        "jsonrpc": "2.0", "id": 11, "result": ANSWERED})
