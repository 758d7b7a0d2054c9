"""Both HTTP+SSE directions through three mcpx replicas behind a real HAProxy (deploy/haproxy.cfg, hashing
on Mcp-Session-Id, as scripts/replicas.py runs it), with default options: what lives in one replica's
memory is stuck to it by the ``Mcpx-Affinity`` header and HAProxy's stick table.

- An HTTP+SSE client (npm ``@modelcontextprotocol/sdk`` 1.10.2 ``SSEClientTransport``) given
  ``http://<haproxy>/sse`` in front of the npm everything server in its Streamable HTTP mode, a replica
  killed (SIGKILL) between two calls and started again. Another replica than the stream's: its POSTs
  stick to the stream's replica, nothing changes. The stream's own: the client's EventSource
  reconnects with the last event id mcpx gave it, another replica resumes the stream (the sealed
  upstream session inside the id: no second initialize), HAProxy stores that replica for the
  endpoint token, and every later POST goes there: the calls after the restart (a plain one, one with
  progress, a list) all succeed. (The SDK's own EventSource fetch drops Last-Event-ID: the test gives
  it the ``eventSourceInit`` that keeps it; docs/transports.md says what a default client gets.)
- Streamable HTTP clients (npm sdk 1.25.0) given ``http://<haproxy>/sse`` in front of the everything
  server in its HTTP+SSE mode: three sessions, whose upstream SSE streams live in the replicas that
  answered their initialize; one replica is killed. The clients whose sessions it held get 404 for
  their next call (the specification's answer: initialize again), the others go on; a client that
  initializes again (a fresh run) works.
About 60 s on 2 cores.
"""
from __future__ import annotations

import concurrent.futures
import time

import orjson
import pytest

import http_sse_lib
import peers_lib as pl
from replicas_lib import Replicas, haproxy_missing

pytestmark = pytest.mark.peers


@pytest.fixture(scope="module")
def servers():
    pl.require(pl.peers_missing() + (["haproxy (Debian package)"] if haproxy_missing() else []))
    with pl.start_everything_server() as streamable, pl.start_everything_server(transport="sse") as sse:
        yield {"streamable": f"http://127.0.0.1:{streamable.port}", "sse": f"http://127.0.0.1:{sse.port}"}


def _wait(path, fut: concurrent.futures.Future, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while not path.exists():
        if fut.done():
            raise AssertionError(f"the client ended before {path.name}: {fut.result()}")
        assert time.time() < deadline, f"no {path.name} within {timeout} s"
        time.sleep(0.05)


def _streams(px) -> list:
    try:
        return [f for f in px.flows() if f.response is not None and http_sse_lib.is_stream(f.response.content or b"")]
    except Exception:  # a killed replica's flow file may end mid-record
        return []


def _placed(rp: Replicas, names: list[str]) -> dict[str, int]:
    """The replica each client's session lives on: the one its first call (``<name> before``) reached."""
    where = {}
    for k, px in enumerate(rp.proxies):
        for f in px.flows():
            for name in names:
                if f.request.method == "POST" and f"{name} before".encode() in (f.request.content or b""):
                    where[name] = k
    assert sorted(where) == sorted(names), where
    return where


@pytest.mark.parametrize("restarted", ["another", "its own"])
def test_an_http_sse_client_survives_a_replica_restart_between_calls(servers, tmp_path, restarted):
    """``another``: a replica that does not hold the client's stream (sdk 1.10.2 as released): its POSTs
    stick to the stream's replica, nothing changes. ``its own``: the stream's replica; the client's
    EventSource reconnects with Last-Event-ID (sdk 1.10.2 given an ``eventSourceInit`` whose fetch keeps
    the EventSource's headers: its default fetch drops them) and another replica resumes the stream."""
    first, done = tmp_path / "first-call-done", tmp_path / "replica-restarted"
    ops = [{"id": "before", "op": "callTool", "name": "echo", "arguments": {"message": "before the restart"}},
           {"id": "signal", "op": "signal", "path": str(first)},
           {"id": "wait", "op": "waitFor", "path": str(done)},
           {"id": "after", "op": "callTool", "name": "echo", "arguments": {"message": "after the restart"}},
           {"id": "long", "op": "callTool", "name": "trigger-long-running-operation", "arguments": {"duration": 1, "steps": 2},
            "progress": True},
           {"id": "list", "op": "listTools"}]
    options = {"transport": "sse", "lastEventId": restarted == "its own"}
    with Replicas(servers["streamable"], tmp_path / "replicas", n=3, balance="hash") as rp, \
            concurrent.futures.ThreadPoolExecutor(1) as pool:
        fut = pool.submit(pl.run_js_client, "sdk-1.10.2", rp.url.replace("/mcp", "/sse"), ops, 120, options)
        _wait(first, fut)
        holder = [i for i, px in enumerate(rp.proxies) if "/sse: served by mcpx" in px.output()]
        assert len(holder) == 1, rp.output()[-3000:]
        i = holder[0] if restarted == "its own" else (holder[0] + 1) % 3
        rp.kill(i)
        rp.wait_down(i)
        rp.restart(i)
        done.touch()
        got = fut.result(120)
        outputs = [px.output() for px in rp.proxies]
        resumed = [j for j, out in enumerate(outputs) if "/sse: resumed by mcpx" in out]
    # (read once the replicas stopped: a stream's flow is written when it ends)
    streams = [(j, f) for j, px in enumerate(rp.proxies) for f in _streams(px)]
    posts = [(k, orjson.loads(f.request.content)) for k, px in enumerate(rp.proxies) for f in px.flows()
             if f.request.method == "POST" and "mcpx_session=" in f.request.path]
    legs = [f for px in rp.proxies for f in px.flows() if f.request.method == "POST" and f.request.path == "/mcp"]
    results = {r["id"]: r for r in got["results"]}
    assert got["returncode"] == 0 and all(r["ok"] for r in got["results"]), got
    assert results["before"]["result"]["content"] == [{"type": "text", "text": "Echo: before the restart"}]
    assert results["after"]["result"]["content"] == [{"type": "text", "text": "Echo: after the restart"}]
    assert results["long"]["result"]["content"][0]["text"].startswith("Long running operation completed")
    if restarted == "another":
        assert resumed == [] and [j for j, _ in streams] == holder
        # every POST reached the stream's replica (HAProxy stuck the endpoint token to it)
        assert {k for k, _ in posts} == set(holder), posts
        return
    assert len(resumed) == 1, outputs
    (j,) = resumed
    # the resumed stream: the endpoint token the client had, and the id that seals its ready session
    (stream,) = [f for k, f in streams if k == j]
    ep = http_sse_lib.endpoint(stream.response.content)
    assert ep.resume.startswith("~mcpx1."), stream.response.content[:400]
    assert stream.request.headers["last-event-id"] == ep.token + ep.resume
    # every POST after the restart reached the replica that resumed the stream (HAProxy stored it for the token)
    after = [(k, m) for k, m in posts if k == j]
    assert [m.get("method") for _, m in after if "method" in m] == ["tools/call", "tools/call", "tools/list"], posts
    assert {k for k, _ in posts} <= {i, j}, posts  # (the killed replica's flow file may have lost the first ones)
    # and no second initialize: the legs went on with the session of the first replica's initialize
    assert not [f for f in legs if b'"initialize"' in (f.request.content or b"")], [f.request.content for f in legs]


def test_streamable_clients_of_an_sse_only_server_lose_only_the_dead_replicas_sessions(servers, tmp_path):
    go = tmp_path / "replica-killed"
    names = ["c0", "c1", "c2"]

    def ops(name: str) -> list:
        return [{"id": "before", "op": "callTool", "name": "echo", "arguments": {"message": f"{name} before"}},
                {"id": "signal", "op": "signal", "path": str(tmp_path / f"{name}-ready")},
                {"id": "wait", "op": "waitFor", "path": str(go)},
                {"id": "after", "op": "callTool", "name": "echo", "arguments": {"message": f"{name} after"}}]
    with Replicas(servers["sse"], tmp_path / "replicas", n=3, balance="hash") as rp, \
            concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
        url = rp.url.replace("/mcp", "/sse")
        futs = {}
        for name in names:  # one after another: HAProxy gives each initialize the next replica (round robin)
            futs[name] = pool.submit(pl.run_js_client, "sdk-1.25.0", url, ops(name), 120)
            _wait(tmp_path / f"{name}-ready", futs[name])
        placed = _placed(rp, names)
        # the victim: a replica that holds some of the sessions, not all
        victim = next(k for k in range(3) if 0 < sum(1 for n in names if placed.get(n) == k) < len(names))
        rp.kill(victim)
        rp.wait_down(victim)
        go.touch()
        got = {name: f.result(120) for name, f in futs.items()}
        again = pl.run_js_client("sdk-1.25.0", url, ops("again")[:1] + [{"id": "list", "op": "listTools"}], 120)
    on_victim = [n for n in names if placed[n] == victim]
    for name in names:
        results = {r["id"]: r for r in got[name]["results"]}
        assert results["before"]["ok"], got[name]
        if name in on_victim:  # its upstream stream died with the replica: 404, the client initializes again
            assert not results["after"]["ok"] and results["after"].get("code") == 404, got[name]
            assert '{"code":-32001,"message":"Session not found"}' in results["after"]["error"], got[name]
        else:
            assert results["after"]["ok"], got[name]
            assert results["after"]["result"]["content"] == [{"type": "text", "text": f"Echo: {name} after"}]
    assert again["returncode"] == 0 and all(r["ok"] for r in again["results"]), again
