#!/usr/bin/env python3
"""Run N mcpx replicas behind HAProxy, and keep them running: the way to scale mcpx beyond one process (one core).

    .venv/bin/python scripts/replicas.py --upstream http://127.0.0.1:3001 -n 3 --port 8080
    # clients use http://127.0.0.1:8080/mcp; Ctrl-C (or SIGTERM) stops everything

Each replica is ``mitmdump -s addon/mcpx.py --mode reverse:UPSTREAM`` on 127.0.0.1:(port+1+i), all
with the same session key file (``--keys``; created on first use, mode 0600), so any replica opens
any client's sealed session, and each with ``mcpx_metrics`` on 127.0.0.1:(metrics-port+i), whose
``/healthz`` HAProxy checks. HAProxy (Debian package ``haproxy``; ``deploy/haproxy.cfg`` is the
configuration, rendered here) listens on ``--port`` and balances on ``Mcp-Session-Id`` with
consistent hashing (``--balance hash``, default) or spreads every request (``--balance
roundrobin``). Arguments after ``--`` go to every mitmdump (e.g. ``-- --set mcpx_log=changes.jsonl``:
each replica appends to its own file, ``changes.jsonl.0`` ...).

Supervision: a replica (or HAProxy) that exits is started again, after 0.5 s, then 1, 2, 4 ... up
to 30 s while it keeps exiting within 30 s of its start; each exit and start is one line on
stdout (``replicas: mcpx1 (pid 123) exited with status -9; starting it again in 0.5s``). The
others serve meanwhile: HAProxy's checks take the dead one out within a second, and a connection
it refuses is retried on another. A rolling restart is SIGTERM to one replica's pid at a time: it
drains (``mcpx_drain_grace``: /healthz 503, its listener closed, calls in flight finish) and exits,
and is started again. SIGTERM or SIGINT to this script stops everything: the replicas drain (at
most ``--grace`` seconds), then HAProxy stops.

What a failover loses: the mutable state of the sessions the dead replica held in memory (methods of
server requests still waiting for the client's answer: those answers are then typed by their shape;
pins set at run time with ``mcpx.pin``); requests in flight on a replica that dies (not one that
drains) fail (the client sees a transport error and goes on). The sessions themselves live in their tokens.
"""
from __future__ import annotations

import argparse
import base64
import dataclasses
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "deploy" / "haproxy.cfg"
BALANCE = {
    "hash": "    balance hdr(Mcp-Session-Id)\n    hash-type consistent",
    "roundrobin": "    balance roundrobin",
}
CHECKS = "    option httpchk GET /healthz\n    http-check expect status 200"
#: back-off of a process that keeps exiting: first delay, factor, largest; a run this long resets it
BACKOFF_FIRST, BACKOFF_MAX, BACKOFF_RESET = 0.5, 30.0, 30.0


def render(listen: str, replicas: list[tuple], balance: str) -> str:
    """deploy/haproxy.cfg with its placeholders filled: ``listen`` ("host:port"), the replicas'
    (host, port) or (host, port, metrics port: HAProxy then checks GET /healthz there) and
    ``balance`` ("hash" or "roundrobin")."""
    lines, checked = [], False
    for i, r in enumerate(replicas):
        h, p = r[0], r[1]
        check = f" port {r[2]}" if len(r) > 2 and r[2] else ""
        checked = checked or bool(check)
        lines.append(f"    server mcpx{i} {h}:{p}{check}")
    return (TEMPLATE.read_text().replace("{listen}", listen).replace("{balance}", BALANCE[balance])
            .replace("{checks}", CHECKS if checked else "    # (TCP checks: the replicas serve no /healthz)")
            .replace("{servers}", "\n".join(lines)))


def haproxy_bin() -> str:
    found = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy") else None)
    if not found:
        sys.exit("replicas: haproxy not found: install Debian's package (apt-get install haproxy)")
    return found


def ensure_key(path: pathlib.Path) -> None:
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(base64.b64encode(os.urandom(32)) + b"\n")


def say(line: str) -> None:
    print(f"replicas: {line}", flush=True)


@dataclasses.dataclass
class Child:
    """One supervised process: its name, its command, the running process and its back-off."""

    name: str
    argv: list[str]
    what: str = ""
    proc: subprocess.Popen | None = None
    started: float = 0.0
    delay: float = 0.0
    due: float = 0.0

    def start(self) -> None:
        # a session of its own: a Ctrl-C in the terminal reaches this script only, which lets the replicas drain
        self.proc = subprocess.Popen(self.argv, start_new_session=True)
        self.started = time.monotonic()
        say(f"{self.name} (pid {self.proc.pid}) started{self.what}")

    def check(self, now: float) -> None:
        """Start it when it is due; notice that it exited and plan its next start."""
        if self.proc is None:
            if now >= self.due:
                self.start()
            return
        status = self.proc.poll()
        if status is None:
            return
        ran = now - self.started
        self.delay = BACKOFF_FIRST if ran >= BACKOFF_RESET or not self.delay else min(self.delay * 2, BACKOFF_MAX)
        self.due = now + self.delay
        say(f"{self.name} (pid {self.proc.pid}) exited with status {status} after {ran:.1f}s; "
            f"starting it again in {self.delay:g}s")
        self.proc = None

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self, timeout: float) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(max(timeout, 0.1))
        except subprocess.TimeoutExpired:
            say(f"{self.name} (pid {self.proc.pid}) did not stop in time: killed")
            self.proc.kill()
            self.proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", required=True, help="the MCP server, e.g. http://127.0.0.1:3001")
    ap.add_argument("-n", type=int, default=2, help="replicas (default 2)")
    ap.add_argument("--port", type=int, default=8080, help="HAProxy listens on HOST:PORT; replicas on 127.0.0.1:PORT+1..PORT+N")
    ap.add_argument("--host", default="127.0.0.1", help="address HAProxy listens on (default 127.0.0.1)")
    ap.add_argument("--metrics-port", type=int, default=None,
                    help="replica i serves /metrics and /healthz on 127.0.0.1:METRICS_PORT+i (default PORT+101); 0: none")
    ap.add_argument("--grace", type=float, default=30.0, help="mcpx_drain_grace of every replica, seconds (default 30)")
    ap.add_argument("--balance", choices=sorted(BALANCE), default="hash")
    ap.add_argument("--keys", default=str(pathlib.Path.home() / ".mitmproxy" / "mcpx-session.key"),
                    help="session key file shared by every replica (created when missing)")
    ap.add_argument("mitmdump_args", nargs=argparse.REMAINDER, help="after --: passed to every mitmdump")
    a = ap.parse_args()
    extra = a.mitmdump_args[1:] if a.mitmdump_args[:1] == ["--"] else a.mitmdump_args
    keys = pathlib.Path(a.keys).expanduser()
    keys.parent.mkdir(parents=True, exist_ok=True)
    ensure_key(keys)
    mitmdump = str(pathlib.Path(sys.executable).with_name("mitmdump"))
    metrics_base = a.port + 101 if a.metrics_port is None else a.metrics_port
    host = a.host if a.host != "0.0.0.0" else "127.0.0.1"
    replicas = [(host, a.port + 1 + i, metrics_base + i if metrics_base else None) for i in range(a.n)]
    children = []
    for i, (_, port, mport) in enumerate(replicas):
        argv = [mitmdump, "-q", "-s", str(ROOT / "addon" / "mcpx.py"), "--mode", f"reverse:{a.upstream}",
                "--listen-host", "127.0.0.1", "-p", str(port), "--set", f"mcpx_session_keys={keys}",
                "--set", f"mcpx_drain_grace={a.grace:g}s"]
        if mport:
            argv += ["--set", f"mcpx_metrics=127.0.0.1:{mport}"]
        argv += [f"{x}.{i}" if x.startswith("mcpx_log=") else x for x in extra]  # one change log per replica
        children.append(Child(f"mcpx{i}", argv, f" on port {port}" + (f", metrics on {mport}" if mport else "")))
    cfg = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"mcpx-haproxy-{os.getpid()}.cfg"
    cfg.write_text(render(f"{a.host}:{a.port}", replicas, a.balance))
    balancer = Child("haproxy", [haproxy_bin(), "-db", "-f", str(cfg)], f" on {a.host}:{a.port} ({a.balance})")
    stop: list[int] = []

    def stopping(sig, _frame) -> None:
        stop.append(sig)
    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    try:
        for c in [*children, balancer]:
            c.start()
        say(f"{a.n} x mcpx on {', '.join(str(p) for _, p, _ in replicas)}; HAProxy ({a.balance}) on {a.host}:{a.port}")
        while not stop:
            now = time.monotonic()
            for c in [*children, balancer]:
                c.check(now)
            time.sleep(0.2)
        say(f"{signal.Signals(stop[0]).name}: stopping: the replicas drain (at most {a.grace:g}s), then HAProxy stops")
    finally:
        for c in children:
            c.signal(signal.SIGTERM)
        deadline = time.monotonic() + a.grace + 5
        for c in children:
            c.wait(deadline - time.monotonic())
        balancer.signal(signal.SIGTERM)
        balancer.wait(10)
        cfg.unlink(missing_ok=True)
    say("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
