"""Addon options (issue 15): values with units, and options that can never silently switch mcpx off.

The start-up cases run ``mitmdump -s addon/mcpx.py --mode reverse:... --set ...`` as a user would
and assert the exit code and the exact lines printed: an invalid value or an unknown ``mcpx_*``
name prints one line on stderr and exits 1 before mitmproxy listens; a valid value with a unit
starts mcpx, which rewrites.
"""
from __future__ import annotations

import logging
import pathlib
import re
import subprocess
import time

import orjson
import pytest
from mitmproxy import exceptions
from mitmproxy.test import taddons

import mcpx
from mcpx_core import __version__
from mcpx_core import settings
from mcpx_core.settings import OptionError, Settings, format_duration, format_size, parse_duration, parse_size
from proxy_lib import ADDON, ROOT, Client, LoopbackServer, Proxy, ScriptedMcpHandler, free_port, mitmdump_bin

SIZE_WHAT = "not a size (bytes, or a number with a unit: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"
MIN_BODY_WHAT = "less than 64KiB, the least that holds a session's initialize exchange (mcpx must read it to rewrite anything)"
STAMP = re.compile(r"^\[\d\d:\d\d:\d\d\.\d\d\d\] ")


def run_mitmdump(*sets: str, cwd: pathlib.Path, extra: tuple[str, ...] = ()) -> tuple[int, list[str], list[str]]:
    """mitmdump as a user starts it, with ``--set`` for each of ``sets``: (exit code, stdout lines
    without their time stamps, stderr lines). An upstream that is never contacted."""
    argv = [mitmdump_bin(), "-s", str(ADDON), "--mode", "reverse:http://127.0.0.1:9", "--listen-host", "127.0.0.1",
            "-p", str(free_port()), *extra]
    for s in sets:
        argv += ["--set", s]
    cp = subprocess.run(argv, capture_output=True, timeout=60, cwd=cwd)
    out = [STAMP.sub("", line) for line in cp.stdout.decode(errors="replace").splitlines()]
    return cp.returncode, out, cp.stderr.decode(errors="replace").splitlines()


REFUSED = [
    (["mcpx_max_body=64XB"],
     f'mcpx: invalid value "64XB" for mcpx_max_body: {SIZE_WHAT}; e.g. --set mcpx_max_body=64MiB'),
    # 0 (or any size below 64KiB) passed every body untouched (mitmproxy streamed them all), each with a
    # passthrough record, while mcpx announced itself active: no session could start
    (["mcpx_max_body=0"],
     f'mcpx: invalid value "0" for mcpx_max_body: {MIN_BODY_WHAT}; e.g. --set mcpx_max_body=64MiB'),
    (["mcpx_max_body=65535"],
     f'mcpx: invalid value "65535" for mcpx_max_body: {MIN_BODY_WHAT}; e.g. --set mcpx_max_body=64MiB'),
    (["mcpx_session_ttl=1hour"],
     'mcpx: invalid value "1hour" for mcpx_session_ttl: not a duration (seconds, or a number with a unit: ms, s, m, h, d); '
     'e.g. --set mcpx_session_ttl=1h'),
    (["mcpx_max_sessions=10k"],
     'mcpx: invalid value "10k" for mcpx_max_sessions: not a whole number; e.g. --set mcpx_max_sessions=10000'),
    (["mcpx_policy=stric"],
     'mcpx: invalid value "stric" for mcpx_policy: not one of strict, lenient; e.g. --set mcpx_policy=strict'),
    (["mcpx_audio=blob"],
     'mcpx: invalid value "blob" for mcpx_audio: not one of text, embed; e.g. --set mcpx_audio=embed'),
    (["mcpx_sse_resume=sometimes"],
     'mcpx: invalid value "sometimes" for mcpx_sse_resume: not one of auto, always, off; e.g. --set mcpx_sse_resume=off'),
    (["mcpx_http_sse=/sse"],
     'mcpx: invalid value "/sse" for mcpx_http_sse: not SSE_PATH=MCP_PATH (two absolute paths), or off alone; '
     'e.g. --set mcpx_http_sse=/legacy/events=/api/mcp'),
    (["mcpx_pin=old-client=2025-13-01"],
     'mcpx: invalid value "old-client=2025-13-01" for mcpx_pin: not CLIENT_NAME=REVISION with a revision of '
     '2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28; e.g. --set mcpx_pin=old-client=2025-03-26'),
    (["mcpx_polcy=lenient"],
     "mcpx: unknown option mcpx_polcy (did you mean mcpx_policy?); e.g. --set mcpx_policy=lenient"),
    (["mcpx_log"], "mcpx: mcpx_log needs a value; e.g. --set mcpx_log=mcpx-changes.jsonl"),
    (["mcpx_bridge=flase"], 'mcpx: invalid value "flase" for mcpx_bridge: not "true" or "false"; e.g. --set mcpx_bridge=false'),
    (["mcpx_policy=strict", "mcpx_policy=lenient"],
     'mcpx: mcpx_policy is given 2 times ("strict", "lenient"); give it once, e.g. --set mcpx_policy=lenient'),
    (["mcpx_log=no-such-dir/changes.jsonl"],
     'mcpx: invalid value "no-such-dir/changes.jsonl" for mcpx_log: cannot open it (No such file or directory); '
     'e.g. --set mcpx_log=mcpx-changes.jsonl'),
]


@pytest.mark.parametrize("sets,line", REFUSED, ids=[" ".join(s) for s, _ in REFUSED])
def test_refused_at_startup_with_one_line(sets, line, tmp_path):
    """Before: 64MB (an int option) left mcpx unloaded while mitmdump listened; a misspelt name was
    ignored; a bad value printed "listening at" and then a traceback. Now: one line, exit 1, and
    mitmdump never listens."""
    code, out, err = run_mitmdump(*sets, cwd=tmp_path)
    assert (code, err) == (1, [line])
    assert out == [f"Loading script {ADDON}"]


def test_units_start_mcpx_and_it_rewrites(tmp_path):
    """``mcpx_max_body=64MB`` and ``mcpx_session_ttl=1h`` (before: mcpx silently did nothing):
    the start-up line shows them, and a resource_link is rewritten for a 2025-03-26 client."""

    class Server(ScriptedMcpHandler):
        def answer(self, body):
            if "id" not in body:  # notifications/initialized
                self.send_accepted()
                return
            out = orjson.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {"content": [
                {"type": "resource_link", "uri": "file:///r.txt", "name": "r.txt", "mimeType": "text/plain"}]}})
            self.send_json(out)

    srv = LoopbackServer(Server)
    try:
        with Proxy(f"http://127.0.0.1:{srv.port}", tmp_path, save=False,
                   options={"mcpx_max_body": "64MB", "mcpx_session_ttl": "1h", "mcpx_keep_original": "0"}) as px:
            c = Client(px.port)
            c.initialize("2025-03-26")
            status, _, msgs = c.rpc({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}}})
            c.close()
    finally:
        srv.stop()
    assert status == 200 and msgs[0]["result"]["content"][0]["type"] == "resource"
    assert [(r["pointer"], r["action"], r["rule"]) for r in px.changes() if r["method"] == "tools/call"] == [
        ("/result/content/0", "rewrite", "CT-resource_link")]
    lines = [STAMP.sub("", line) for line in px.output().splitlines()]
    assert lines[0] == f"Loading script {ADDON}"
    assert lines[1] == (f"mcpx {__version__} active: revisions 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28; "
                        f"mcpx_policy=strict mcpx_log={px.log_path} mcpx_max_body=64MB mcpx_max_sessions=10000 "
                        f"mcpx_session_ttl=1h mcpx_session_keys={px.key_path} mcpx_audio=text mcpx_keep_original=0 mcpx_record_lines=false mcpx_bridge=true "
                        f"mcpx_server_era=auto mcpx_sse_resume=auto mcpx_http_sse=- mcpx_upstream_sse=- mcpx_repair=true mcpx_profiles=- mcpx_profile=- mcpx_audit=true mcpx_check_references=true mcpx_auth=true "
                        f"mcpx_drain_grace=0s mcpx_metrics=- mcpx_pin=-")
    assert lines[2].startswith("reverse proxy to http://127.0.0.1:") and "listening at 127.0.0.1:" in lines[2]
    assert "mcpx: s2c tools/call id=1 2025-03-26->2025-03-26: 1 rewritten (rewrite: CT-resource_link)" in lines


def test_config_yaml_numbers(tmp_path):
    """Numbers in mitmproxy's config.yaml (typed by YAML, deferred as such) are read as text."""
    (tmp_path / "config.yaml").write_text("mcpx_max_body: 67108864\nmcpx_session_ttl: 90\nmcpx_pin: old=2025-03-26\n")
    argv = [mitmdump_bin(), "-s", str(ADDON), "--mode", "reverse:http://127.0.0.1:9", "--listen-host", "127.0.0.1",
            "-p", str(free_port()), "--set", f"confdir={tmp_path}"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        line = ""
        deadline = time.time() + 30
        while time.time() < deadline and "active:" not in line:
            line = proc.stdout.readline().decode()
            assert line, "mitmdump exited"
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
    assert "mcpx_max_body=64MiB " in line and "mcpx_session_ttl=1m30s " in line and line.rstrip().endswith("mcpx_pin=old=2025-03-26")


# -- in process: values, and a value refused while mitmproxy runs ----------------------------------
@pytest.mark.parametrize("text,n", [("64MiB", 64 << 20), ("64MB", 64_000_000), ("64 mb", 64_000_000), ("1.5KiB", 1536),
                                    ("1024", 1024), (" 0 ", 0), ("2GiB", 2 << 30)])
def test_sizes(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize("text", ["64m", "64k", "-1", "1e3", "64MB junk", "1.5B", "", "MiB", "0x10", "٦٤"])
def test_sizes_refused(text):
    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize("text,s", [("1h", 3600), ("90s", 90), ("1h30m", 5400), ("1h 30m", 5400), ("0.5s", 0.5),
                                    ("3600", 3600), ("100ms", 0.1), ("2d", 172800), ("1H", 3600)])
def test_durations(text, s):
    assert parse_duration(text) == s


@pytest.mark.parametrize("text", ["1hour", "h", "", "-1", "1h-30m", "1w", "s1"])
def test_durations_refused(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_values_as_typed():
    assert [format_size(n) for n in (64 << 20, 64_000_000, 1 << 20, 1536, 0)] == ["64MiB", "64MB", "1MiB", "1536", "0"]
    assert [format_duration(s) for s in (3600, 90, 5400, 0.5, 59)] == ["1h", "1m30s", "1h30m", "0.5s", "59s"]


def test_configure_applies_units():
    addon = mcpx.MCPX()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, mcpx_max_body="64MB", mcpx_session_ttl="1h30m", mcpx_keep_original="2KiB",
                       mcpx_max_sessions="5", mcpx_policy="lenient", mcpx_audio="embed")
        st = addon.state
        assert (st.max_body, st.tracker.ttl, st.keep_original, st.tracker.max_sessions) == (64_000_000, 5400.0, 2048, 5)
        assert (st.rewriter.policy, st.rewriter.options["audio"]) == ("lenient", "embed")


def test_refused_while_running_keeps_the_value(caplog):
    """Set in mitmweb or the console: an OptionsError with the same line; the value stays, and
    the start-up line is not written again (mitmproxy's rollback configures the old values anew:
    the line would read as if the refused change had taken effect)."""
    addon = mcpx.MCPX()
    with taddons.context(addon) as tctx:
        caplog.set_level(logging.INFO)
        tctx.configure(addon, mcpx_max_body="1MiB")
        active = [r.getMessage() for r in caplog.records if " active: " in r.getMessage()]
        assert len(active) == 1 and " mcpx_max_body=1MiB " in active[0]
        caplog.clear()
        with pytest.raises(exceptions.OptionsError) as e:
            tctx.configure(addon, mcpx_max_body="lots")
        assert str(e.value) == f'mcpx: invalid value "lots" for mcpx_max_body: {SIZE_WHAT}; e.g. --set mcpx_max_body=64MiB'
        assert (tctx.options.mcpx_max_body, addon.state.max_body) == ("1MiB", 1 << 20)
        assert [r.getMessage() for r in caplog.records if " active: " in r.getMessage()] == []
        tctx.configure(addon, mcpx_max_body="2MiB")  # a change that takes effect is announced
        active = [r.getMessage() for r in caplog.records if " active: " in r.getMessage()]
        assert len(active) == 1 and " mcpx_max_body=2MiB " in active[0]


def test_sse_resume_option():
    """mcpx_sse_resume reaches the relay's decision (addon/mcpx_core/bridge/resume.py); auto by default."""
    addon = mcpx.MCPX()
    with taddons.context(addon) as tctx:
        assert addon.state.resume.mode == "auto"
        tctx.configure(addon, mcpx_sse_resume="off")
        assert addon.state.resume.mode == "off"
        with pytest.raises(exceptions.OptionsError, match="mcpx_sse_resume"):
            tctx.configure(addon, mcpx_sse_resume="never")
        assert (tctx.options.mcpx_sse_resume, addon.state.resume.mode) == ("off", "off")
        tctx.configure(addon, mcpx_sse_resume="always")
        assert addon.state.resume.mode == "always"


def test_http_sse_option():
    """mcpx_http_sse reaches the transport (addon/mcpx_core/transport/http_sse/serve.py): the conventions by
    default, named pairs, off; a bad value keeps the old one."""
    addon = mcpx.MCPX()
    with taddons.context(addon) as tctx:
        t = addon.state.transport
        assert (t.enabled, t.routes) == (True, {})
        tctx.configure(addon, mcpx_http_sse=["/legacy/events=/api/mcp", "/a/sse=/b/mcp"])
        assert (t.enabled, t.routes) == (True, {"/legacy/events": "/api/mcp", "/a/sse": "/b/mcp"})
        for bad in (["off", "/a=/b"], ["/a=b"], ["/a?x=/b"], ["/a=/b=/c"]):
            with pytest.raises(exceptions.OptionsError, match="mcpx_http_sse"):
                tctx.configure(addon, mcpx_http_sse=bad)
        assert t.routes == {"/legacy/events": "/api/mcp", "/a/sse": "/b/mcp"}
        tctx.configure(addon, mcpx_http_sse=["off"])
        assert (t.enabled, t.routes) == (False, {})
        assert (addon.state.upstream_sse.enabled, addon.state.upstream_sse.routes) == (True, {})  # the other direction's own option


def test_upstream_sse_option():
    """mcpx_upstream_sse reaches the upstream HTTP+SSE transport (transport/upstream_sse/serve.py): the conventions
    by default, MCP_PATH=SSE_PATH pairs, off (which leaves mcpx_http_sse on); a bad value keeps the old one and
    names this option's own form; a new value drops the cached verdicts."""
    addon = mcpx.MCPX()
    with taddons.context(addon) as tctx:
        u = addon.state.upstream_sse
        assert (u.enabled, u.routes) == (True, {})
        u.verdicts.put("http://127.0.0.1:1/sse", True)
        tctx.configure(addon, mcpx_upstream_sse=["/api/mcp=/events/stream", "/b/mcp=/b/events"])
        assert (u.enabled, u.routes, len(u.verdicts)) == (True, {"/api/mcp": "/events/stream", "/b/mcp": "/b/events"}, 0)
        for bad in (["off", "/a=/b"], ["/a=b"], ["/a?x=/b"], ["/a=/b=/c"]):
            with pytest.raises(exceptions.OptionsError, match="mcpx_upstream_sse.*not MCP_PATH=SSE_PATH"):
                tctx.configure(addon, mcpx_upstream_sse=bad)
        assert u.routes == {"/api/mcp": "/events/stream", "/b/mcp": "/b/events"}
        tctx.configure(addon, mcpx_upstream_sse=["off"])
        assert (u.enabled, u.routes, addon.state.transport.enabled) == (False, {}, True)


def test_pin_option():
    addon = mcpx.MCPX()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, mcpx_pin=["old-client=2025-03-26"])
        assert addon.state.tracker.pins == {"old-client": "2025-03-26"}
        with pytest.raises(exceptions.OptionsError, match="mcpx_pin"):
            tctx.configure(addon, mcpx_pin=["old-client=2025-13-01"])
        addon.state.tracker.pins["by-command"] = "2024-11-05"  # mcpx.pin: kept while other options change
        tctx.configure(addon, mcpx_policy="lenient")
        assert addon.state.tracker.pins == {"old-client": "2025-03-26", "by-command": "2024-11-05"}


def test_unknown_option_suggestions():
    lines = [settings.unknown_option(n, "x").line for n in ("mcpx-policy", "mcpx_ttl", "mcpx_keep", "mcpx_foo")]
    assert lines == [
        "mcpx: unknown option mcpx-policy (did you mean mcpx_policy?); e.g. --set mcpx_policy=x",
        "mcpx: unknown option mcpx_ttl (did you mean mcpx_session_ttl?); e.g. --set mcpx_session_ttl=x",
        "mcpx: unknown option mcpx_keep (did you mean mcpx_keep_original?); e.g. --set mcpx_keep_original=x",
        "mcpx: unknown option mcpx_foo; mcpx's options are " + ", ".join(Settings.option_names()),
    ]


def test_max_body_minimum():
    """64KiB is accepted (the start-up line shows it as typed); one byte less is not, also while running."""
    assert Settings.parse({"mcpx_max_body": "64KiB"}).max_body == 65536
    assert Settings.parse({"mcpx_max_body": "65536"}).describe()["mcpx_max_body"] == "64KiB"
    addon = mcpx.MCPX()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, mcpx_max_body="64KiB")
        with pytest.raises(exceptions.OptionsError) as e:
            tctx.configure(addon, mcpx_max_body="0")
        assert str(e.value) == f'mcpx: invalid value "0" for mcpx_max_body: {MIN_BODY_WHAT}; e.g. --set mcpx_max_body=64MiB'
        assert (tctx.options.mcpx_max_body, addon.state.max_body) == ("64KiB", 65536)


def test_first_invalid_option_is_named():
    with pytest.raises(OptionError) as e:
        Settings.parse({"mcpx_keep_original": "x", "mcpx_max_body": "y"})
    assert e.value.option == "mcpx_max_body" and e.value.value == "y"


def test_readme_options_table_matches():
    """README's Options table lists every option with its default as typed."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("\n## Options\n"):]
    section = section[:section.index("\n## ", 1)]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `(mcpx_\w+)` \| ([^|]+) \|", line)
        if m:
            rows[m.group(1)] = m.group(2).strip()
    want = {}
    for name in Settings.option_names():
        default = Settings.spec(name)[1]
        if isinstance(default, bool):
            default = "true" if default else "false"
        want[name] = f"`{default}`" if default not in ("", ()) else "(none)"
    assert rows == want


def test_outstanding_request_ids_are_bounded_per_session():
    from mcpx_core.session import MAX_PENDING, Session
    s = Session("k")
    for i in range(MAX_PENDING + 10):
        s.remember("c2s", i, "tools/call")
    assert len(s.pending) == MAX_PENDING == 1024
    assert s.answer("c2s", 0) is None and s.answer("c2s", MAX_PENDING + 9) == "tools/call"


def test_repair_option():
    """mcpx_repair (on by default) switches the repair stage of the shared rewriter."""
    addon = mcpx.MCPX()
    with taddons.context(addon) as tctx:
        assert tctx.options.mcpx_repair is True and addon.state.rewriter.repair is True
        tctx.configure(addon, mcpx_repair=False)
        assert addon.state.rewriter.repair is False
        tctx.configure(addon, mcpx_repair=True)
        assert addon.state.rewriter.repair is True


def test_audio_embed_option_reaches_the_rewrite():
    """mcpx_audio=embed: a 2024-11-05 client (no AudioContent) gets an audio block as an embedded
    blob resource (CT-audio, rules/content.py) instead of a text note."""
    from mcpx_core.rewrite import Exchange, Rewriter
    from mcpx_core.session import SessionTracker
    body = b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}]}}'
    out = {}
    for audio in ("embed", "text"):
        store = SessionTracker()
        s = store.create("s")
        s.server_rev, s.client_rev = "2025-03-26", "2024-11-05"
        exch = Exchange(flow_id="f", session=s, is_mcp=True, request_ids={3: "tools/call"})
        out[audio] = Rewriter(store, options={"audio": audio}).response_json(exch, body)
    assert out == {
        "embed": b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"resource","resource":{"uri":"urn:mcpx:audio:aa40ebcc97ccf9ef",'
                 b'"mimeType":"audio/wav","blob":"UklGRg=="}}]}}',
        "text": b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"[audio content omitted: audio/wav, 4 bytes]"}]}}'}
