"""mcpx.sessions and mcpx.report on a flow list (the console's and mitmweb's), read from what mcpx
stored on the flows: real recorded sessions (flows/: the released sdk-1.10.2 client against the npm
everything server, and a 2026-07-28 client against the PyPI mcp server) replayed through mcpx, then
written to a flow file and read back, as ``-w`` and ``-r`` do. The lines are the same before and
after the round trip, the 2026-07-28 client is listed as ``(no session)``, each call is paired with
its answer (and its round trips) and has a duration."""
from __future__ import annotations

import asyncio
import functools
import io as pyio
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import time

import orjson
import pytest
from mitmproxy import io
from mitmproxy.addons.view import View
from mitmproxy.test import taddons

from mcpx_core import calls, flowsessions
from mcpx_core.addons import MCPX
from mcpx_core.testing import replay
from mcp_flows import render
from proxy_lib import ROOT

FLOWS_DIR = ROOT / "flows"

SID = "00000000-0000-4000-8000-000000000001"
LINES = [
    f"{SID} (closed): client mcpx-js-client 1.10.2 receives 2024-11-05, server mcp-servers/everything 2.0.0 "
    "speaks 2024-11-05: 56 messages, 68 changes, 51 dropped",
    "(no session): client mcpx-js-client 2.4.0 receives 2026-07-28, server mcpx-py-peer 1.0.0 speaks 2026-07-28: "
    "41 messages, 0 changes, 0 dropped",
]


@functools.cache
def recorded_through_mcpx() -> list:
    """Both sessions replayed through mcpx, written to a flow file and read back. (The recordings'
    flow ids are normalised to the same values: each flow gets its own, as in a live recording.)"""
    flows = replay.replay(FLOWS_DIR / "sdk-1.10.2_everything.mitm") + replay.replay(FLOWS_DIR / "client-2.4.0-auto_py.mitm")
    for n, f in enumerate(flows, 1):
        f.id = f"{n:08x}-0000-4000-8000-000000000000"
    buf = pyio.BytesIO()
    writer = io.FlowWriter(buf)
    for f in flows:
        writer.add(f)
    back = list(io.FlowReader(pyio.BytesIO(buf.getvalue())).stream())
    assert flowsessions.lines(flows) == flowsessions.lines(back) == LINES  # live == read back with -r
    return back


def test_commands_read_the_flow_list(tmp_path, caplog):
    flows = recorded_through_mcpx()
    caplog.set_level("INFO", logger="mcpx")

    async def main():
        view, addon = View(), MCPX()
        with taddons.context(view, addon) as tctx:
            cmd = tctx.master.commands.execute
            assert cmd("mcpx.sessions") == ["no MCP sessions yet"]
            view.add(flows)
            assert cmd("mcpx.sessions") == LINES  # mcpx saw none of these flows: all read from their metadata
            assert [r.getMessage() for r in caplog.records if r.getMessage() in LINES] == LINES  # one event-log entry per line
            path = tmp_path / "report.json"
            table = cmd(f"mcpx.report {path}")
            report = orjson.loads(path.read_bytes())
            assert report["totals"] == {"messages": 97, "changes": 68, "dropped": 51, "sessions": 2, "calls": 43}
            legacy, modern = report["sessions"]
            assert (legacy["session"], legacy["closed"], modern["session"], modern["client_revision"]) == (
                SID, True, "(no session)", "2026-07-28")
            links = next(c for c in legacy["calls"] if c["call"] == "tools/call get-resource-links #6")
            assert {k: links[k] for k in ("answer", "duration_ms", "changes", "dropped", "not_delivered", "round_trips")} == {
                "answer": "result", "duration_ms": 600, "changes": 2, "dropped": 0, "not_delivered": 0, "round_trips": []}
            assert [c["call"] for c in modern["calls"]][:3] == [
                "server/discover #server-discover-probe-1", "tools/list #0", "tools/call add #1"]
            assert table[0].split() == ["session", "client", "revisions", "rule", "action", "count"]
            assert "calls:" in table
            row = next(r for r in table if "tools/call get-resource-links #6" in r).split()
            assert row[-5:] == ["result", links["request_flow"][:8], "600", "ms", "2"]
    asyncio.run(main())


def test_a_server_request_is_a_round_trip_of_its_call():
    """sdk-1.13.0: the everything server's sampling/createMessage, sent on the stream of the
    trigger-sampling-request call, is answered by the client on a later POST."""
    found = calls.calls(replay.replay(FLOWS_DIR / "sdk-1.13.0_everything.mitm"))
    call = next(c for c in found if c.name == "tools/call trigger-sampling-request #12")
    assert [(t.request, t.answer, t.answer_flow != t.request_flow) for t in call.round_trips] == [
        ("sampling/createMessage #0", "result #0", True)]
    assert (call.answer, call.duration_ms, call.answer_flow == call.request_flow) == ("result", 600, True)


def test_console_lists_every_session_of_a_file_recorded_through_mcpx(tmp_path):
    """The console as a user runs it, ``mitmproxy -r FILE -s addon/mcpx.py``, in a tmux pane:
    ``:mcpx.sessions`` shows one row per session of the file, the 2026-07-28 client included."""
    tmux = shutil.which("tmux")
    if tmux is None:
        if os.environ.get("CI") or os.environ.get("MCPX_REQUIRE_PEERS"):
            pytest.fail("tmux missing: run scripts/setup_tmux.sh")
        pytest.skip("tmux missing: run scripts/setup_tmux.sh")
    path = tmp_path / "recorded.mitm"
    with open(path, "wb") as fh:
        writer = io.FlowWriter(fh)
        for f in recorded_through_mcpx():
            writer.add(f)
    console = pathlib.Path(sys.executable).with_name("mitmproxy")
    sock = str(tmp_path / "tmux.sock")  # a tmux server of this test's own
    run = lambda *a: subprocess.run([tmux, "-S", sock, *a], capture_output=True, text=True, timeout=20)  # noqa: E731
    env = f"cd {shlex.quote(str(ROOT))} && HOME={shlex.quote(str(tmp_path))} exec {shlex.quote(str(console))} " \
          f"-r {shlex.quote(str(path))} -s addon/mcpx.py"
    assert run("new-session", "-d", "-s", "mcpx", "-x", "260", "-y", "50", env).returncode == 0
    try:
        screen = _wait(run, lambda text: "00:00:" in text)  # the flow list, read from the file
        run("send-keys", "-t", "mcpx", ":mcpx.sessions", "Enter")
        screen = _wait(run, lambda text: all(line in text for line in LINES))
        rows = [ln for ln in screen.splitlines() if "│" in ln and ("receives" in ln)]
        assert [r.split("│")[1].strip() for r in rows] == LINES, screen
    finally:
        run("kill-server")


def _wait(run, done, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = run("capture-pane", "-p", "-t", "mcpx").stdout
        if done(text):
            return text
        time.sleep(0.3)
    raise AssertionError(f"the console did not show it in {timeout} s:\n{text}")


def test_the_mcp_view_names_the_other_flows_of_a_call():
    """sdk-1.13.0 through mcpx, in a flow list: the MCP view of the trigger-sampling-request call
    names its round trip (the server's sampling/createMessage on the call's stream, the client's
    result on a later POST) and the call's duration; the view of that later POST names the call."""
    flows = replay.replay(FLOWS_DIR / "sdk-1.13.0_everything.mitm")
    call = next(c for c in calls.calls(flows) if c.name == "tools/call trigger-sampling-request #12")
    trip = call.round_trips[0]
    by_id = {f.id: f for f in flows}

    async def main():
        view = View()
        with taddons.context(view, MCPX()):
            assert not [ln for ln in render(by_id[call.request_flow])[1].split("\n") if ln.startswith("call ")]  # the list is empty
            view.add(flows)
            assert render(by_id[call.request_flow])[1].split("\n")[4:6] == [
                "call tools/call trigger-sampling-request #12: request on this flow, result on this flow, 600 ms",
                f"    round trip: sampling/createMessage #0 on this flow, result #0 on flow {trip.answer_flow[:8]}"]
            assert render(by_id[trip.answer_flow], "request")[1].split("\n")[4:6] == [
                f"call tools/call trigger-sampling-request #12: request on flow {call.request_flow[:8]}, "
                f"result on flow {call.request_flow[:8]}, 600 ms",
                "    round trip: sampling/createMessage #0 "
                f"on flow {call.request_flow[:8]}, result #0 on this flow"]
    asyncio.run(main())
