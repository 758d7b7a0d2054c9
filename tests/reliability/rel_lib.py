"""Helpers of the reliability suite (tests/reliability/): budgets, figures, raw MCP over HTTP.

Budgets: the normal run is bounded (a few hundred fuzz examples per property, 50 sessions x 200
calls under load); ``MCPX_LONG=1`` runs the long version (more examples, a bigger load);
``MCPX_FUZZ_EXAMPLES=N`` sets the examples per property.

Figures: tests add what they measured with :func:`count` / :func:`figure`; the ``figures``
fixture (module scope, autouse where imported) prints them and merges them into
``test-output/reliability-figures.json`` (or ``$MCPX_FIGURES``), which the README's reliability
section quotes.
(No conftest.py here: a second non-package conftest would shadow tests/conftest.py.) The raw MCP
client (``Client``, ``initialize_msg``, ``messages_of``, ``sse_events``) lives in tests/proxy_lib.py.
"""
from __future__ import annotations

import http.client
import json
import os
import pathlib
import threading
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, settings

from proxy_lib import ACCEPT, Client, Proxy, free_port, initialize_msg, messages_of, sse_events  # noqa: F401  (used by the suite)

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROBE = pathlib.Path(__file__).resolve().with_name("probe_addon.py")
FIGURES_FILE = pathlib.Path(os.environ.get("MCPX_FIGURES") or ROOT / "test-output" / "reliability-figures.json")

LONG = os.environ.get("MCPX_LONG", "") not in ("", "0")
EXAMPLES = int(os.environ.get("MCPX_FUZZ_EXAMPLES", 4000 if LONG else 200))

#: hypothesis settings of the fuzz properties: no example database (nothing written to the tree),
#: no per-example deadline (CI machines vary), a bounded number of examples.
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

FIGURES: dict[str, Any] = {}
_lock = threading.Lock()


def count(name: str, n: int = 1) -> None:
    with _lock:
        FIGURES[name] = FIGURES.get(name, 0) + n


def figure(name: str, value: Any) -> None:
    with _lock:
        FIGURES[name] = value


@pytest.fixture(scope="module", autouse=True)
def figures(request):
    """Print this module's figures at its end and merge them into FIGURES_FILE."""
    FIGURES.clear()
    yield FIGURES
    if not FIGURES:
        return
    tr = request.config.pluginmanager.get_plugin("terminalreporter")
    capman = request.config.pluginmanager.get_plugin("capturemanager")
    if tr is not None and capman is not None:
        with capman.global_and_fixture_disabled():
            tr.write_line("")
            for k in sorted(FIGURES):
                tr.write_line(f"  [figure] {k}: {FIGURES[k]}")
    FIGURES_FILE.parent.mkdir(exist_ok=True)
    old = {}
    if FIGURES_FILE.exists():
        try:
            old = json.loads(FIGURES_FILE.read_text())
        except ValueError:
            old = {}
    old.update(FIGURES)
    FIGURES_FILE.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")


def probed_proxy(upstream: str, workdir: pathlib.Path, **kw) -> Proxy:
    """The real mitmdump + mcpx (proxy_lib.Proxy), with probe_addon.py listening on ``.probe_port``."""
    port = free_port()
    px = Proxy(upstream, workdir, scripts=(str(PROBE),), options={**kw.pop("options", {}), "probe_port": port}, **kw)
    px.probe_port = port
    return px


def probe(px: Proxy, collect: bool = False) -> dict:
    """The mcpx addon's state inside a running mitmdump started by :func:`probed_proxy`."""
    c = http.client.HTTPConnection("127.0.0.1", px.probe_port, timeout=10)
    c.request("GET", "/?gc=1" if collect else "/")
    r = c.getresponse()
    data = r.read()
    c.close()
    assert r.status == 200, data
    return orjson.loads(data)


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB, from /proc/PID/status."""
    vals = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            vals[k] = int(v.split()[0])
    return vals["VmRSS"], vals["VmHWM"]

