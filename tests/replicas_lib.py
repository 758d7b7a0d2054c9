"""N real ``mitmdump -s addon/mcpx.py`` replicas behind a real HAProxy, for tests (issue 11).

    with Replicas(upstream, workdir, n=3, balance="roundrobin") as rp:
        rp.url                      # http://127.0.0.1:PORT/mcp through HAProxy
        rp.changes(), rp.flows()    # every replica's change records (by time) and flows
        rp.kill(i)                  # SIGKILL replica i (HAProxy notices within a second)

The replicas share one session key file (the workdir's); HAProxy's configuration is the shipped
``deploy/haproxy.cfg``, rendered by ``scripts/replicas.py``.
"""
from __future__ import annotations

import pathlib
import signal
import socket
import subprocess
import sys
import time

from proxy_lib import ROOT, Proxy, free_port

sys.path.insert(0, str(ROOT / "scripts"))
import replicas as replicas_script  # noqa: E402


def haproxy_missing() -> bool:
    try:
        replicas_script.haproxy_bin()
        return False
    except SystemExit:
        return True


class Replicas:
    def __init__(self, upstream: str, workdir: pathlib.Path, n: int = 3, balance: str = "roundrobin",
                 options: dict | None = None):
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir, self.upstream, self.options = workdir, upstream, options
        #: the processes of replicas started again (:meth:`restart`): their records and flows still count
        self.restarts: list[Proxy] = []
        self.proxies = [Proxy(upstream, workdir, options=options, tag=f"-r{i}", wait=False) for i in range(n)]
        for px in self.proxies:  # started side by side
            px.wait_ready()
        self.port = free_port()
        self.cfg = workdir / "haproxy.cfg"
        self.cfg.write_text(replicas_script.render(f"127.0.0.1:{self.port}", [("127.0.0.1", p.port) for p in self.proxies], balance))
        check = subprocess.run([replicas_script.haproxy_bin(), "-c", "-f", str(self.cfg)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        self.log = open(workdir / "haproxy.log", "wb")
        self.proc = subprocess.Popen([replicas_script.haproxy_bin(), "-db", "-f", str(self.cfg)], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"haproxy exited: {(workdir / 'haproxy.log').read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        time.sleep(1.2)  # HAProxy's first health checks (inter 500ms, rise 2) mark every replica up
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.dead: set[int] = set()

    def kill(self, i: int) -> None:
        self.proxies[i].proc.send_signal(signal.SIGKILL)
        self.proxies[i].proc.wait(10)
        self.dead.add(i)

    def restart(self, i: int) -> None:
        """Start replica i again (after :meth:`kill`) on its port, with the same options and key file;
        returns once it serves and HAProxy's checks marked it up again (call it after :meth:`wait_down`)."""
        old, needle = self.proxies[i], f"Server mcpx/mcpx{i} is UP"
        ups = (self.workdir / "haproxy.log").read_text(errors="replace").count(needle)
        self.proxies[i] = Proxy(self.upstream, self.workdir, options=self.options, tag=f"-r{i}-{len(self.restarts)}", port=old.port)
        self.restarts.append(old)
        self.dead.discard(i)
        deadline = time.time() + 20
        while (self.workdir / "haproxy.log").read_text(errors="replace").count(needle) <= ups:
            assert time.time() < deadline, f"HAProxy did not mark mcpx{i} UP within 20 s"
            time.sleep(0.05)

    def wait_down(self, i: int, timeout: float = 20) -> None:
        """Wait until HAProxy's health checks mark replica i DOWN (its log says so). Until then a
        request hashed to it is redispatched to a survivor that may differ from the one the hash
        picks afterwards: a session's requests can reach two survivors in that window."""
        deadline = time.time() + timeout
        needle = f"Server mcpx/mcpx{i} is DOWN"
        while needle not in (self.workdir / "haproxy.log").read_text(errors="replace"):
            assert time.time() < deadline, f"HAProxy did not mark mcpx{i} DOWN within {timeout} s"
            time.sleep(0.05)

    def changes(self) -> list[dict]:
        return sorted((c for p in [*self.proxies, *self.restarts] for c in p.changes()), key=lambda c: c["time"])

    def flows(self) -> list:
        out = []
        for i, p in enumerate(self.proxies):
            try:
                out.extend(p.flows())
            except Exception:  # a killed replica's flow file may end mid-record
                if i not in self.dead:
                    raise
        return sorted(out, key=lambda f: f.request.timestamp_start)

    def output(self) -> str:
        return "\n".join(p.output() for p in [*self.restarts, *self.proxies])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.log.close()
        for p in [*self.proxies, *self.restarts]:
            p.stop()

    def __enter__(self) -> "Replicas":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
