"""Several mcpx replicas behind a real HAProxy (issue 11): the way to scale mcpx.

- Three replicas, round robin with no affinity at all (every request may meet another replica):
  the real-peer suite of test_peers.py (every SDK client of PEERS.md against both servers) gives the
  same verdicts and the same change records as through one process, and every delivered message
  validates against the client's revision with unknown properties forbidden.
- Hashing on Mcp-Session-Id, and the replica that serves the session killed (SIGKILL) in the middle
  of a run: no message reaches the client un-downgraded (its SDK validates every result and would
  fail on a resource_link), and every call passes or fails with a transport error after which the
  client goes on.
"""
from __future__ import annotations

import os
import threading
import time

import pytest

import peers_lib as pl
from peers_run import run
from replicas_lib import Replicas, haproxy_missing
from schema_check import message_errors
from test_peers import CLIENTS, FIXED, _is_error

pytestmark = pytest.mark.peers


@pytest.fixture(scope="module")
def servers():
    missing = pl.peers_missing() + (["haproxy (Debian package)"] if haproxy_missing() else [])
    if missing:
        if os.environ.get("CI") or os.environ.get("MCPX_REQUIRE_PEERS"):
            pytest.fail(f"missing: {missing}; run scripts/setup.sh")
        pytest.skip(f"missing: {missing}")
    with pl.start_everything_server() as ev, pl.start_py_server() as py:
        yield {"everything": ev, "py": py}


@pytest.mark.parametrize("server", ["everything", "py"])
@pytest.mark.parametrize("client", CLIENTS)
def test_round_robin_replicas_change_nothing(servers, server, client, tmp_path):
    made: list[Replicas] = []

    def factory(upstream, workdir):
        made.append(Replicas(upstream, workdir, n=3, balance="roundrobin"))
        return made[-1]

    expected = pl.expected_verdicts(server, client, direct=False)
    r = run(client, server, servers[server], tmp_path, proxy=factory, direct={"results": []})
    assert r.via.get("protocolVersion") == pl.load_scenarios()["clients"][client]["revision"]
    assert pl.verdicts(r.via) == expected, r.via
    fixed = FIXED.get((server, client), {})
    for op in r.ops:
        v = r.result("via", op["id"])
        if op["id"] in fixed:
            assert v["ok"] and not _is_error(v), op["id"]
            assert r.records.get(op["id"], []) == fixed[op["id"]], op["id"]
    assert not [c for c in r.changes if c["action"] in ("passthrough", "answer-locally")], r.output[-3000:]
    # the requests really were spread: every replica served some of this one session's requests
    per_replica = [sum(1 for f in p.flows() if f.request.method == "POST" and (f.metadata.get("mcpx") or {}).get("session"))
                   for p in made[0].proxies]
    assert all(n > 0 for n in per_replica), per_replica
    invalid = [(d, (m.get("method") or meth), errs[:2]) for rev, m, meth, d in r.delivered
               if (errs := message_errors(rev, m, meth))]
    assert invalid == []


def test_hashed_replicas_survive_a_killed_replica(servers, tmp_path):
    client, server = "sdk-1.10.2", "everything"
    ops = pl.scenario_ops(server, client)
    half = tmp_path / "half"
    plan = ops + [{"op": "signal", "path": str(half)}, {"op": "sleep", "ms": 300}] + [{**op, "id": f"again-{op['id']}"} for op in ops]
    with Replicas(f"http://127.0.0.1:{servers[server].port}", tmp_path / "rp", n=3, balance="hash") as rp:
        out: dict = {}
        t = threading.Thread(target=lambda: out.update(report=pl.run_client(client, rp.url, plan, timeout=240)))
        t.start()
        deadline = time.monotonic() + 120
        while not half.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert half.exists()
        # the replica that served the session: the one whose change log holds its tools/list records
        busiest = max(range(3), key=lambda i: len(rp.proxies[i].changes()))
        assert rp.proxies[busiest].changes(), "no replica rewrote anything"
        rp.kill(busiest)
        t.join(240)
        survivors = [i for i in range(3) if i != busiest]
        after = [c for i in survivors for c in rp.proxies[i].changes()]
    rep = out["report"]
    results = [e for e in rep["results"] if e.get("id")]
    first, again = results[:len(ops)], results[len(ops):]
    assert [e["id"] for e in first if pl.verdict(e) != "ok"] == []
    failed = [e for e in again if not e["ok"]]
    # a call in flight on the killed replica may fail, with a transport error (never a validation
    # error: an un-downgraded resource_link would fail zod's union), and the client goes on
    assert len(failed) <= 2, failed
    for e in failed:
        assert "invalid_union" not in e.get("error", "") and "ZodError" not in e.get("error", ""), e
    assert pl.verdict(again[-1]) == "ok" and sum(pl.verdict(e) == "ok" for e in again) >= len(again) - 2
    links = [e for e in again if e["id"] == "again-get-resource-links" and e["ok"]]
    assert links and [b["type"] for b in links[0]["result"]["content"]] == ["text", "resource", "resource"]
    assert after, "the surviving replicas rewrote nothing after the kill"
