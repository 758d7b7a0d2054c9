"""Operating mcpx: ``scripts/replicas.py`` as an operator runs it, in front of the real everything server.

One ``scripts/replicas.py -n 3`` (hashing on Mcp-Session-Id, HAProxy checking each replica's
``/healthz``) serves both tests, with the real released client ``sdk-1.10.2`` (2024-11-05, which
fails on an un-downgraded ``resource_link``):

- a replica killed (SIGKILL) in the middle of a session: every later call of that session passes
  on the other replicas (its sealed token opens there), and the supervisor starts the killed
  replica again within seconds;
- a rolling restart: SIGTERM to the replica that streams a ``trigger-long-running-operation``
  answer: its ``/healthz`` answers 503, a new client is served by the others (the draining
  replica reads no message of it), the call completes with every progress notification, and the
  replica exits within its grace period, then is started again.
"""
from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import orjson
import pytest

import peers_lib as pl
from proxy_lib import ROOT
from replicas_lib import haproxy_missing

pytestmark = pytest.mark.peers

CLIENT = "sdk-1.10.2"
GRACE = 10


def _ports_free(base: int, n: int) -> bool:
    for p in range(base, base + n):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                return False
    return True


def _port_block(n: int) -> int:
    """The first of ``n`` consecutive free loopback ports."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n < 65000 and _ports_free(base, n):
            return base
    raise RuntimeError("no block of free ports")


class Supervised:
    """``scripts/replicas.py`` running; its stdout lines collected."""

    def __init__(self, upstream: str, workdir, n: int = 3):
        self.port = _port_block(n + 1)
        self.metrics = _port_block(n)
        self.workdir = workdir
        self.n = n
        argv = [sys.executable, str(ROOT / "scripts" / "replicas.py"), "--upstream", upstream, "-n", str(n),
                "--port", str(self.port), "--metrics-port", str(self.metrics), "--grace", str(GRACE),
                "--keys", str(workdir / "key"), "--", "--set", f"mcpx_log={workdir / 'changes.jsonl'}"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        assert self.wait_healthy(range(n), 30), self.lines
        time.sleep(1.2)  # HAProxy's checks (inter 500ms, rise 2) mark every replica up

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def pid(self, i: int) -> int:
        """The pid of replica i's latest start."""
        found = [int(m.group(1)) for ln in self.lines if (m := re.match(rf"replicas: mcpx{i} \(pid (\d+)\) started", ln))]
        return found[-1]

    def health(self, i: int) -> int | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics + i}/healthz", timeout=1) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return None

    def scrape(self, i: int) -> dict[str, float]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics + i}/metrics", timeout=2) as r:
            text = r.read().decode()
        return {k: float(v) for k, v in re.findall(r"^(mcpx_\S+) (\S+)$", text, re.M)}

    def wait_healthy(self, which, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.health(i) == 200 for i in which):
                return True
            time.sleep(0.1)
        return False

    def changes(self, i: int) -> list[dict]:
        path = self.workdir / f"changes.jsonl.{i}"
        return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()] if path.exists() else []

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(GRACE + 20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    pl.require(pl.peers_missing() + (["haproxy (Debian package)"] if haproxy_missing() else []))
    with pl.start_everything_server() as ev:
        rp = Supervised(f"http://127.0.0.1:{ev.port}", tmp_path_factory.mktemp("replicas"))
        try:
            yield rp
        finally:
            rp.stop()
    assert rp.proc.returncode == 0, rp.lines
    assert rp.lines[-1] == "replicas: stopped", rp.lines


def test_a_killed_replica_is_restarted_and_its_session_goes_on(replicas):
    rp = replicas
    ops = pl.scenario_ops("everything", CLIENT)
    ops = [op for op in ops if op["id"] in ("listTools", "get-resource-links", "echo")]
    assert len(ops) == 3
    half = rp.workdir / "half"
    # the first calls, the kill between two calls, the same calls again in the same session
    plan = ops + [{"op": "signal", "path": str(half)}, {"op": "sleep", "ms": 1500}] + [{**op, "id": f"again-{op['id']}"} for op in ops]
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(report=pl.run_client(CLIENT, rp.url, plan, timeout=240)))
    t.start()
    deadline = time.monotonic() + 120
    while not half.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert half.exists()
    # the replica that serves the session (hashing on its token): the one whose change log holds its records
    busiest = max(range(rp.n), key=lambda i: len(rp.changes(i)))
    session = {c["session"] for c in rp.changes(busiest) if c["session"]}
    assert len(session) == 1, session
    killed_pid = rp.pid(busiest)
    killed_at = time.monotonic()
    subprocess.run(["kill", "-KILL", str(killed_pid)], check=True)
    t.join(240)
    # the supervisor saw it die and started it again; it serves /healthz again within seconds
    exited = f"replicas: mcpx{busiest} (pid {killed_pid}) exited with status -9"
    assert any(ln.startswith(exited) for ln in rp.lines), rp.lines
    assert rp.pid(busiest) != killed_pid
    assert rp.wait_healthy([busiest], 15)
    back = time.monotonic() - killed_at
    rep = out["report"]
    results = [e for e in rep["results"] if e.get("id")]
    first, again = results[:len(ops)], results[len(ops):]
    assert [e["id"] for e in first if pl.verdict(e) != "ok"] == []
    # every call after the kill passes, in the same session (its token opens on the other replicas)
    assert [(e["id"], e.get("error")) for e in again if pl.verdict(e) != "ok"] == []
    links = [e for e in again if e["id"] == "again-get-resource-links"]
    assert [b["type"] for b in links[0]["result"]["content"]] == ["text", "resource", "resource"]
    others = [c for i in range(rp.n) if i != busiest for c in rp.changes(i)]
    assert any(c["session"] in session and c["rule"] == "CT-resource_link" for c in others)
    assert back < 15, back


def test_rolling_restart_finishes_the_call_in_flight(replicas):
    rp = replicas
    assert rp.wait_healthy(range(rp.n), 20)
    time.sleep(1.2)  # HAProxy marks a restarted replica up (rise 2)
    steps = 6
    long_call = [{"id": "long", "op": "callTool", "name": "trigger-long-running-operation",
                  "arguments": {"duration": 6, "steps": steps}, "progress": True}]
    def progress(m: dict) -> float:  # progress notifications the replica read
        return sum(v for k, v in m.items() if k.startswith("mcpx_messages_total") and 'method="notifications/progress"' in k)
    baseline = [progress(rp.scrape(i)) for i in range(rp.n)]
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(report=pl.run_client(CLIENT, rp.url, long_call, timeout=60)))
    t.start()
    # the replica that streams the answer: a request in flight, and progress notifications read (the
    # initialize, in flight for a moment, may have gone to another one: it has no session id to hash)
    streaming, deadline = None, time.monotonic() + 20
    while streaming is None and time.monotonic() < deadline:
        for i in range(rp.n):
            m = rp.scrape(i)
            if m.get("mcpx_requests_in_flight", 0) >= 1 and progress(m) > baseline[i]:
                streaming = i
        time.sleep(0.05)
    assert streaming is not None
    pid = rp.pid(streaming)
    subprocess.run(["kill", "-TERM", str(pid)], check=True)
    sigterm_at = time.monotonic()
    time.sleep(0.3)
    assert rp.health(streaming) == 503
    def listed(m: dict) -> float:  # tools/list messages the replica read
        return sum(v for k, v in m.items() if k.startswith("mcpx_messages_total") and 'method="tools/list"' in k)
    before = rp.scrape(streaming)
    # a new client meanwhile: HAProxy sends it to the others (the draining one refuses connections)
    newcomer = pl.run_client(CLIENT, rp.url, [{"id": "listTools", "op": "listTools"},
                                              {"id": "echo", "op": "callTool", "name": "echo", "arguments": {"message": "m"}}])
    assert [pl.verdict(e) for e in newcomer["results"]] == ["ok", "ok"], newcomer
    during = rp.scrape(streaming)
    assert during["mcpx_draining"] == 1
    assert listed(during) == listed(before)
    # the long call streams on through it: its next progress notification (one a second) is read there
    # (polled: on an idle machine the newcomer's two calls may take less than the second between two)
    deadline = time.monotonic() + 5
    while progress(during) <= progress(before) and time.monotonic() < deadline:
        time.sleep(0.05)
        during = rp.scrape(streaming)
    assert progress(during) > progress(before)
    t.join(60)
    rep = out["report"]
    assert [pl.verdict(e) for e in rep["results"]] == ["ok"], rep
    assert rep["results"][0]["result"]["content"][0]["text"].startswith("Long running operation completed")
    assert [p["progress"] for p in rep["results"][0]["result"]["__progress"]] == list(range(1, steps + 1))
    deadline = time.monotonic() + GRACE + 5
    exited = f"replicas: mcpx{streaming} (pid {pid}) exited with status 0"
    while not any(ln.startswith(exited) for ln in rp.lines) and time.monotonic() < deadline:
        time.sleep(0.05)
    took = time.monotonic() - sigterm_at
    assert any(ln.startswith(exited) for ln in rp.lines), rp.lines
    assert took < GRACE, took
    assert rp.wait_healthy([streaming], 15)
