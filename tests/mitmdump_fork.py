"""A fork server for the tests' mitmdump processes: mitmproxy imported once, each mitmdump forked.

The suite starts several hundred ``mitmdump -s addon/mcpx.py`` processes, and each spends about a
second of CPU importing mitmproxy before it does anything; on 2 cores that was a third of the
suite's CPU time. :func:`spawn` asks one server process per pytest worker, which has imported
mitmproxy's modules (not mcpx's: the child imports them, and loads ``addon/mcpx.py`` with
mitmproxy's script loader, as a fresh ``mitmdump`` does), to fork a child that runs mitmproxy's own
``mitmdump`` entry point (``mitmproxy.tools.main.mitmdump``, what the ``mitmdump`` script calls)
with the test's arguments, working directory, environment and output file. The child is a real
mitmdump in every other way: its own process, signals, exit status.

What differs from a fresh process: the modules imported before the fork (mitmproxy, pydantic,
orjson: none holds per-process secrets; :mod:`random` is reseeded in the child) and the hash seed,
which the children of one server share. ``MCPX_TEST_FORK=0`` starts each mitmdump from its binary.

The server (``python tests/mitmdump_fork.py``) reads one JSON request per line on stdin and answers
the child's pid; it reaps its children itself and writes each exit status to the request's
``rc_path``, which :class:`Child` reads (the child is not the test process's own).
"""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import orjson

ENABLED = os.environ.get("MCPX_TEST_FORK", "1") != "0"


class Child:
    """A forked mitmdump, with the part of :class:`subprocess.Popen` the tests use."""

    def __init__(self, pid: int, rc_path: pathlib.Path, args: list[str]):
        self.pid, self.rc_path, self.args = pid, rc_path, args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and self.rc_path.exists():
            text = self.rc_path.read_text().strip()
            if text:
                self.returncode = int(text)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.01)
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


_server: subprocess.Popen | None = None
_server_pid: int | None = None  # the pytest process that started it (a forked test process starts its own)
_lock = threading.Lock()


def _ensure_server() -> subprocess.Popen:
    global _server, _server_pid
    if _server is None or _server.poll() is not None or _server_pid != os.getpid():
        _server = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
        _server_pid = os.getpid()
        line = _server.stdout.readline()  # type: ignore[union-attr]
        if line.strip() != b"ready":
            raise RuntimeError(f"mitmdump fork server did not start: {line!r}")
    return _server


def spawn(argv: list[str], cwd: str, env: dict[str, str], out_path: pathlib.Path) -> Child:
    """Fork a mitmdump with ``argv`` (``argv[0]``: the binary it stands for) writing to ``out_path``."""
    rc_path = out_path.with_name(out_path.name + ".rc")
    req = {"argv": argv, "cwd": cwd, "env": env, "out": str(out_path), "rc": str(rc_path)}
    with _lock:
        srv = _ensure_server()
        srv.stdin.write(orjson.dumps(req) + b"\n")  # type: ignore[union-attr]
        srv.stdin.flush()  # type: ignore[union-attr]
        answer = srv.stdout.readline()  # type: ignore[union-attr]
    if not answer.strip():
        raise RuntimeError("mitmdump fork server exited")
    return Child(int(answer), rc_path, argv)


def _child(req: dict[str, Any]) -> None:
    """In the forked child: become ``mitmdump ARGS`` (never returns)."""
    code = 1
    try:
        fd = os.open(req["out"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        os.close(null)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        import random
        random.seed()
        sys.argv = list(req["argv"])
        from mitmproxy.tools.main import mitmdump
        code = mitmdump() or 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _serve() -> None:
    """The server: import mitmproxy, then fork a child per request line; reap children."""
    import select
    import mitmproxy.tools.main  # noqa: F401
    import mitmproxy.tools.dump  # noqa: F401
    import mitmproxy.addons  # noqa: F401
    import mitmproxy.tools.cmdline  # noqa: F401
    import pydantic  # noqa: F401
    rc_paths: dict[int, str] = {}
    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    stdin = sys.stdin.buffer
    while True:
        readable, _, _ = select.select([stdin], [], [], 0.02)
        while rc_paths:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            rc = os.waitstatus_to_exitcode(status)
            path = rc_paths.pop(pid, None)
            if path:
                tmp = path + ".tmp"
                with open(tmp, "w") as fh:
                    fh.write(f"{rc}\n")
                os.replace(tmp, path)
        if not readable:
            continue
        line = stdin.readline()
        if not line:
            return  # the pytest worker is gone; the children it started are stopped by their tests
        req = orjson.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(req)
        rc_paths[pid] = req["rc"]
        out.write(f"{pid}\n".encode())
        out.flush()


if __name__ == "__main__":
    _serve()
