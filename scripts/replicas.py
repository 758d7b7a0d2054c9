#!/usr/bin/env python3
"""Run N mcpx replicas behind HAProxy: the way to scale mcpx beyond one process (one core).

    .venv/bin/python scripts/replicas.py --upstream http://127.0.0.1:3001 -n 3 --port 8080
    # clients use http://127.0.0.1:8080/mcp; Ctrl-C stops everything

Each replica is ``mitmdump -s addon/mcpx.py --mode reverse:UPSTREAM`` on 127.0.0.1:(port+1+i), all
with the same session key file (``--keys``; created on first use, mode 0600), so any replica opens
any client's sealed session. HAProxy (Debian package ``haproxy``; ``deploy/haproxy.cfg`` is the
configuration, rendered here) listens on ``--port`` and balances on ``Mcp-Session-Id`` with
consistent hashing (``--balance hash``, default) or spreads every request (``--balance
roundrobin``). Arguments after ``--`` go to every mitmdump (e.g. ``-- --set mcpx_log=changes.jsonl``:
each replica appends to its own file, ``changes.jsonl.0`` ...).

What a failover loses: the mutable state of the sessions the dead replica held in memory (methods of
server requests still waiting for the client's answer: those answers are then typed by their shape;
pins set at run time with ``mcpx.pin``); requests in flight on it fail (the client sees a transport
error and goes on). The sessions themselves live in their tokens.
"""
from __future__ import annotations

import argparse
import base64
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


def render(listen: str, replicas: list[tuple[str, int]], balance: str) -> str:
    """deploy/haproxy.cfg with its placeholders filled: ``listen`` ("host:port"), the replicas'
    (host, port) and ``balance`` ("hash" or "roundrobin")."""
    servers = "\n".join(f"    server mcpx{i} {h}:{p}" for i, (h, p) in enumerate(replicas))
    return TEMPLATE.read_text().replace("{listen}", listen).replace("{balance}", BALANCE[balance]).replace("{servers}", servers)


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", required=True, help="the MCP server, e.g. http://127.0.0.1:3001")
    ap.add_argument("-n", type=int, default=2, help="replicas (default 2)")
    ap.add_argument("--port", type=int, default=8080, help="HAProxy listens on 127.0.0.1:PORT; replicas on PORT+1..PORT+N")
    ap.add_argument("--host", default="127.0.0.1", help="address HAProxy listens on (default 127.0.0.1)")
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
    procs = []
    ports = [(a.host if a.host != "0.0.0.0" else "127.0.0.1", a.port + 1 + i) for i in range(a.n)]
    for i, (_, port) in enumerate(ports):
        argv = [mitmdump, "-q", "-s", str(ROOT / "addon" / "mcpx.py"), "--mode", f"reverse:{a.upstream}",
                "--listen-host", "127.0.0.1", "-p", str(port), "--set", f"mcpx_session_keys={keys}"]
        argv += [f"{x}.{i}" if x.startswith("mcpx_log=") else x for x in extra]  # one change log per replica
        procs.append(subprocess.Popen(argv))
    cfg = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"mcpx-haproxy-{os.getpid()}.cfg"
    cfg.write_text(render(f"{a.host}:{a.port}", ports, a.balance))
    procs.append(subprocess.Popen([haproxy_bin(), "-db", "-f", str(cfg)]))
    print(f"replicas: {a.n} x mcpx on {', '.join(str(p) for _, p in ports)}; HAProxy ({a.balance}) on {a.host}:{a.port}", flush=True)
    try:
        while all(p.poll() is None for p in procs):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        cfg.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
