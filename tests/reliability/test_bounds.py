"""Bounds, through the real ``mitmdump -s addon/mcpx.py``: the largest body mcpx parses
(``mcpx_max_body``), the session-state limits (``mcpx_max_sessions``, ``mcpx_session_ttl``), and
inputs built to exhaust memory or recursion (a 100 MB result as JSON without Content-Length and as
one SSE event; 100,000-deep nesting).

Memory is mitmdump's own, from /proc (VmHWM: the peak resident set since it started).
"""
from __future__ import annotations

import hashlib
import http.client
import time

import orjson
import pytest

from fault_server import LINK, fs  # noqa: F401 (fixture)
from rel_lib import LONG, Client, count, figure, figures, probe, probed_proxy, rss_kib  # noqa: F401
from test_faults import LINK_2024, assert_no_crash, call

MiB = 1 << 20
BIG = (300 if LONG else 100) * 1000 * 1000  # "a 100 MB result"
MAX_BODY = 8 * MiB


@pytest.fixture(scope="module")
def px(fs, tmp_path_factory):
    proxy = probed_proxy(fs.url, tmp_path_factory.mktemp("bounds"), save=False, options={"mcpx_max_body": MAX_BODY})
    c = Client(proxy.port)
    c.initialize("2024-11-05")  # warm up: schemas loaded, first rewrite done
    c.rpc(call("links", 1))
    c.close()
    yield proxy
    proxy.stop()
    assert_no_crash(proxy.output())


def fetch_digest(port: int, session: str, message: dict) -> tuple[int, dict, str, int, bytes]:
    """POST; read the answer in pieces: (status, headers, sha256, size, first 4 KiB)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", "/mcp", orjson.dumps(message), {"content-type": "application/json", "accept": "application/json, text/event-stream",
                                                         "mcp-session-id": session})
    r = conn.getresponse()
    digest, size, head = hashlib.sha256(), 0, b""
    while True:
        data = r.read(1 << 20)
        if not data:
            break
        digest.update(data)
        size += len(data)
        if len(head) < 4096:
            head += data[:4096]
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, digest.hexdigest(), size, head


def session(px, revision="2024-11-05") -> Client:
    c = Client(px.port)
    c.initialize(revision)
    return c


def records(px, sid: str) -> list[dict]:
    """The session's change records after its initialize."""
    return [r for r in px.session_changes(sid) if r["method"] != "initialize"]


@pytest.mark.parametrize("shape", ["json-chunked", "json-length", "sse"])
def test_100mb_result_streams_untouched_in_bounded_memory(px, fs, shape):
    """A 100 MB tools/call result (with a resource_link a 2024-11-05 client would need rewritten):
    above mcpx_max_body it reaches the client byte for byte as it streams, one passthrough record
    says so, and mitmdump's peak memory grows by far less than the body."""
    c = session(px)
    rss0, hwm0 = rss_kib(px.proc.pid)
    args = {"size": BIG, "sse": shape == "sse", "length": shape == "json-length"}
    t0 = time.monotonic()
    status, headers, digest, size, head = fetch_digest(px.port, c.session, call("big", 21, **args))
    took = time.monotonic() - t0
    rss1, hwm1 = rss_kib(px.proc.pid)
    sent = fs.sent[-1][2]
    assert status == 200 and (size, digest) == (sent["size"], sent["sha256"])
    assert b'"resource_link"' in head  # untouched
    recs = [r for r in records(px, c.session) if r["direction"] == "s2c"]
    assert [r["action"] for r in recs] == ["passthrough"], recs
    growth = max(0, hwm1 - max(hwm0, rss0)) // 1024
    figure(f"100 MB result ({shape}): mitmdump peak RSS growth MiB", growth)
    figure(f"100 MB result ({shape}): seconds", round(took, 2))
    assert growth < 48, f"peak RSS grew by {growth} MiB for a {size >> 20} MiB body"
    count("bound cases held")


def test_body_with_length_above_max_body(px, fs):
    """A JSON answer whose Content-Length is above mcpx_max_body: streamed untouched, one record."""
    c = session(px)
    st, _, digest, size, head = fetch_digest(px.port, c.session, call("big", 22, size=MAX_BODY + 10, length=True))
    assert st == 200 and (size, digest) == (fs.sent[-1][2]["size"], fs.sent[-1][2]["sha256"])
    assert [r["detail"] for r in records(px, c.session) if r["direction"] == "s2c"] == [
        f"body of {size} bytes exceeds mcpx_max_body: streamed through untouched"]
    count("bound cases held")


def test_results_below_max_body_still_rewritten(px, fs):
    """Just below the bound, in both framings, the result is parsed and rewritten."""
    c = session(px)
    for sse in (False, True):
        st, h, msgs = c.rpc(call("big", 23, size=MAX_BODY // 2, sse=sse))
        assert st == 200 and msgs[0]["result"]["content"][0] == LINK_2024
    count("bound cases held")


def test_request_body_above_max_body(px, fs):
    """A 2024-11-05 client request bigger than mcpx_max_body reaches the server byte for byte."""
    c = session(px)
    msg = call("digest", 24, blob="B" * (MAX_BODY + 1))
    raw = orjson.dumps(msg)
    st, _, msgs = c.rpc(msg)
    assert "result" in msgs[0], msgs
    assert msgs[0]["result"]["content"][0]["text"] == f"{hashlib.sha256(raw).hexdigest()} {len(raw)}"
    assert [r["detail"] for r in records(px, c.session) if r["direction"] == "c2s"] == [
        f"body of {len(raw)} bytes exceeds mcpx_max_body: passed through untouched"]
    count("bound cases held")


@pytest.mark.parametrize("sse", [False, True])
@pytest.mark.parametrize("depth", [300, 100_000])
def test_deep_nesting(px, fs, depth, sse):
    """structuredContent nested 300 (parsed, but too deep to re-serialise) and 100,000 arrays deep
    (too deep to parse): delivered byte for byte with one passthrough record; mcpx keeps serving."""
    c = session(px)
    st, h, body = c.post(call("deep", 25, depth=depth, sse=sse))
    assert st == 200 and body == fs.sent[-1][3]
    recs = [r for r in records(px, c.session) if r["direction"] == "s2c" and r["method"] != "initialize"]
    assert [r["action"] for r in recs][-1:] == ["passthrough"], recs
    _, _, msgs = c.rpc(call("links", 26))
    assert msgs[0]["result"]["content"][1] == LINK_2024
    count("bound cases held")


def test_max_sessions_bounds_state(fs, tmp_path):
    """mcpx_max_sessions=5 with 12 sessions: mcpx never holds more than 5 sessions in memory; the
    newest are rewritten; one that left memory is opened again from its sealed token and still gets
    its own revision (issue 11: before, it was passed through untouched and the client failed)."""
    with probed_proxy(fs.url, tmp_path, save=False, options={"mcpx_max_sessions": 5}) as px:
        clients = [session(px) for _ in range(12)]
        st = probe(px)
        assert st["sessions"] <= 5 and st["keys"] <= 5 * 8, st
        _, _, msgs = clients[-1].rpc(call("links", 1))
        assert msgs[0]["result"]["content"][1] == LINK_2024
        _, _, msgs = clients[0].rpc(call("links", 2))
        assert msgs[0]["result"]["content"][1] == LINK_2024  # left memory, opened again from its token
        assert probe(px)["sessions"] <= 5
    count("bound cases held")


def test_idle_sessions_expire_without_new_traffic(fs, tmp_path):
    """mcpx_session_ttl=1: sessions idle for a second leave memory even when no new session comes
    (before, expiry only ran when a session was created); their tokens still open (test_sessions.py)."""
    with probed_proxy(fs.url, tmp_path, save=False, options={"mcpx_session_ttl": 1}) as px:
        for _ in range(3):
            session(px).rpc(call("links", 1))
        assert probe(px)["sessions"] >= 3
        deadline = time.monotonic() + 6
        while probe(px)["sessions"] and time.monotonic() < deadline:
            time.sleep(0.25)
        assert probe(px)["sessions"] == 0
        assert "idle sessions left memory, 0 remain" in px.output()
    count("bound cases held")
