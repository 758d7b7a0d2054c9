"""Addon options."""
from __future__ import annotations

import pytest
from mitmproxy import exceptions
from mitmproxy.test import taddons

import mcpx


@pytest.mark.parametrize("option,value", [("mcpx_policy", "stric"), ("mcpx_policy", "Strict"), ("mcpx_audio", "blob")])
def test_invalid_choice_is_refused_by_mitmdump(option, value, tmp_path):
    """mitmproxy does not check `choices` for a value --set before the script loads: without mcpx's own
    check, mcpx_policy=stric silently ran the lenient policy. mitmdump must refuse to start."""
    import subprocess
    from proxy_lib import ADDON, mitmdump_bin
    cp = subprocess.run([mitmdump_bin(), "-n", "-q", "-s", str(ADDON), "--set", f"{option}={value}"],
                        capture_output=True, timeout=60, cwd=tmp_path)
    out = (cp.stdout + cp.stderr).decode(errors="replace")
    assert cp.returncode != 0 and f"{option} must be one of" in out


def test_pin_option():
    addon = mcpx.MCPX()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, mcpx_pin=["old-client=2025-03-26"])
        assert addon.state.tracker.pins == {"old-client": "2025-03-26"}
        with pytest.raises(exceptions.OptionsError, match="mcpx_pin"):
            tctx.configure(addon, mcpx_pin=["old-client=2025-13-01"])


def test_outstanding_request_ids_are_bounded_per_session():
    from mcpx_core.session import MAX_PENDING, Session
    s = Session("k")
    for i in range(MAX_PENDING + 10):
        s.remember("c2s", i, "tools/call")
    assert len(s.pending) == MAX_PENDING == 1024
    assert s.answer("c2s", 0) is None and s.answer("c2s", MAX_PENDING + 9) == "tools/call"


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
