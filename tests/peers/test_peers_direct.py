"""Direct (no proxy) baseline of the real peers: each client x each server gives the
verdicts recorded in scenarios.json "direct_failures" (see BASELINE.md).

This guards the test peers themselves (pins, wrappers, clients), so that mcpx's
end-to-end tests compare against a known starting point.
"""
from __future__ import annotations

import pytest

import peers_lib as pl

pytestmark = [
    pytest.mark.peers,
    pytest.mark.skipif(bool(pl.peers_missing()), reason="peers not installed: run scripts/setup_peers.sh"),
]


@pytest.fixture(scope="module")
def everything():
    with pl.start_everything_server() as srv:
        yield srv


@pytest.fixture(scope="module")
def py_server():
    with pl.start_py_server() as srv:
        yield srv


@pytest.mark.parametrize("client", pl.CLIENTS)
@pytest.mark.parametrize("server_name", ["everything", "py"])
def test_direct_baseline(server_name, client, request):
    srv = request.getfixturevalue("everything" if server_name == "everything" else "py_server")
    report = pl.run_client(client, srv.url, pl.scenario_ops(server_name, client))
    assert report["returncode"] == 0, report.get("error")
    assert report["protocolVersion"] == pl.load_scenarios()["clients"][client]["revision"]
    assert pl.verdicts(report) == pl.expected_verdicts(server_name, client)


def test_servers_bind_loopback_only(everything, py_server):
    import socket

    for srv in (everything, py_server):
        with socket.create_connection(("127.0.0.1", srv.port), timeout=2):
            pass
        # Not reachable on another local address (when the machine has one).
        for family, _, _, _, addr in socket.getaddrinfo(socket.gethostname(), srv.port, socket.AF_INET):
            if addr[0].startswith("127."):
                continue
            with pytest.raises(OSError), socket.create_connection(addr, timeout=2):
                pass


def test_everything_server_env_is_minimal(everything):
    report = pl.run_js_client("sdk-1.25.0", everything.url, [{"op": "callTool", "name": "get-env"}])
    text = report["results"][0]["result"]["content"][0]["text"]
    assert "HOME" not in text and "TOKEN" not in text.upper()
