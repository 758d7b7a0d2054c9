"""mcpx_core/metrics.py: bounded labels, the record sink, the /healthz and /metrics server, the option."""
from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from mcpx_core import metrics
from mcpx_core.changes import Change
from mcpx_core.session import SessionTracker
from mcpx_core.settings import OptionError, Settings
from proxy_lib import free_port


def test_labels_are_bounded():
    assert metrics.method_label("tools/call") == "tools/call"
    assert metrics.method_label("notifications/progress") == "notifications/progress"
    assert metrics.method_label("subscriptions/listen") == "subscriptions/listen"  # 2026-07-28's
    assert metrics.method_label("tools/call?token=secret") == "other"
    assert metrics.method_label(None) == "none"
    assert metrics.revision_label("2025-06-18") == "2025-06-18"
    assert metrics.revision_label("2099-01-01") == "unknown" and metrics.revision_label(None) == "unknown"
    assert metrics.reason_label("body of 70000000 bytes exceeds mcpx_max_body: passed through untouched") == "too-large"
    assert metrics.reason_label("internal error: KeyError: 'x'") == "internal-error"
    assert metrics.reason_label("the server could not be reached (connect failed): answered HTTP 502 -32603") == "server-unreachable"
    assert metrics.reason_label("Bearer abc123") == "other"


def test_records_messages_and_rules_beyond_the_bound(monkeypatch):
    m = metrics.Metrics(SessionTracker())
    m.changes([Change(pointer="/a", action="drop", rule="TOOL-title"), Change(pointer="/b", action="drop", rule="TOOL-title"),
               Change(pointer="", action="passthrough", rule="PASSTHROUGH-error", detail="body does not parse as JSON")])
    m.message({"direction": "s2c", "kind": "result", "method": "tools/list", "id": 3}, "2025-06-18", "2024-11-05")
    monkeypatch.setattr(metrics, "MAX_RULES", 2)
    m.changes([Change(pointer="", action="drop", rule="A-new-rule")])
    get = m.registry.get_sample_value
    assert get("mcpx_change_records_total", {"action": "drop", "rule": "TOOL-title"}) == 2
    assert get("mcpx_change_records_total", {"action": "drop", "rule": "other"}) == 1
    assert get("mcpx_passthroughs_total", {"reason": "unparsable"}) == 1
    assert get("mcpx_messages_total", {"direction": "s2c", "method": "tools/list", "from_revision": "2025-06-18",
                                       "to_revision": "2024-11-05"}) == 1
    assert get("mcpx_sessions_opened_total") == 0 and get("mcpx_sessions_live") == 0


def test_healthz_follows_draining_and_metrics_are_served():
    state = {"draining": False}
    address = f"127.0.0.1:{free_port()}"
    srv = metrics.Server(metrics.Metrics(), address, lambda: state["draining"])
    try:
        with urllib.request.urlopen(f"http://{address}/healthz", timeout=5) as r:
            assert (r.status, r.read()) == (200, b"serving\n")
        state["draining"] = True
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://{address}/healthz", timeout=5)
        assert (e.value.code, e.value.read()) == (503, b"draining\n")
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as r:
            assert b"# TYPE mcpx_change_records_total counter" in r.read()
    finally:
        srv.close()


def test_metrics_and_drain_options():
    s = Settings.parse({"mcpx_metrics": "127.0.0.1:9090", "mcpx_drain_grace": "2m"})
    assert (s.metrics, s.drain_grace) == ("127.0.0.1:9090", 120.0)
    assert Settings().metrics == "" and Settings().drain_grace == 30.0
    for bad in ("9090", "127.0.0.1:", "127.0.0.1:99999", ":9090"):
        with pytest.raises(OptionError) as e:
            Settings.parse({"mcpx_metrics": bad})
        assert e.value.line == f'mcpx: invalid value "{bad}" for mcpx_metrics: not HOST:PORT (e.g. 127.0.0.1:9090); ' \
                               f"e.g. --set mcpx_metrics=127.0.0.1:9090"


def test_an_ipv6_address_is_served():
    address = f"[::1]:{free_port()}"
    try:
        srv = metrics.Server(metrics.Metrics(), address, lambda: False)
    except OSError as e:  # a kernel without IPv6
        pytest.skip(f"no IPv6 loopback: {e}")
    try:
        with urllib.request.urlopen(f"http://{address}/healthz", timeout=5) as r:
            assert r.status == 200
    finally:
        srv.close()
