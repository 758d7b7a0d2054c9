"""Option names one typo from mcpx's, and the form mcpx gives mitmproxy's ``stream_large_bodies``.

Before: ``--set mpcx_policy=lenient`` started mcpx with the default policy and no word (mitmproxy keeps
a name no addon defines deferred for ever; only names starting with ``mcpx`` were refused), and the
console's status bar showed the body limit mcpx sets as ``[67108864]``."""
from __future__ import annotations

import subprocess

import pytest
from mitmproxy.addons import proxyserver
from mitmproxy.test import taddons
from mitmproxy.utils import human

import mcpx
from mcpx_core.addons.options import stream_size
from mcpx_core.settings import meant_for_mcpx, unknown_option
from proxy_lib import ADDON, free_port, mitmdump_bin

MEANT = ["mpcx_policy", "mcpx-policy", "mcpx.policy", "mpcx-policy", "mcp_policy", "mcpxx_policy", "mcx_max_body",
         "mpcx_polcy", "mcpx_polcy", "MPCX_POLICY", "mcp_session_tll", "mcpx_foo"]
NOT_MEANT = ["mcp_timeout", "mcpp_foo", "block_global", "stream_large_bodies", "connection_strategy", "policy",
             "mcpolicy", "web_columns"]


@pytest.mark.parametrize("name", MEANT)
def test_names_meant_for_mcpx(name):
    assert meant_for_mcpx(name)


@pytest.mark.parametrize("name", NOT_MEANT)
def test_other_names_are_left_to_mitmproxy(name):
    assert not meant_for_mcpx(name)


def test_the_suggestion_strips_a_misspelt_prefix():
    assert [unknown_option(n, "lenient").line for n in ("mpcx_policy", "mcp_polcy", "mcpx-policy")] == [
        "mcpx: unknown option mpcx_policy (did you mean mcpx_policy?); e.g. --set mcpx_policy=lenient",
        "mcpx: unknown option mcp_polcy (did you mean mcpx_policy?); e.g. --set mcpx_policy=lenient",
        "mcpx: unknown option mcpx-policy (did you mean mcpx_policy?); e.g. --set mcpx_policy=lenient",
    ]


@pytest.mark.parametrize("name", ["mpcx_policy", "mcp_policy"])
def test_refused_at_startup(name, tmp_path):
    """As for ``mcpx_polcy``: one line on stderr, exit status 1, mitmdump never listens."""
    argv = [mitmdump_bin(), "-s", str(ADDON), "--mode", "reverse:http://127.0.0.1:9", "--listen-host", "127.0.0.1",
            "-p", str(free_port()), "--set", f"{name}=lenient"]
    cp = subprocess.run(argv, capture_output=True, timeout=60, cwd=tmp_path)
    assert (cp.returncode, cp.stderr.decode().splitlines()) == (
        1, [f"mcpx: unknown option {name} (did you mean mcpx_policy?); e.g. --set mcpx_policy=lenient"])
    assert "listening at" not in cp.stdout.decode()


@pytest.mark.parametrize("n,text", [(67108864, "64m"), (64000000, "62500k"), (65536, "64k"), (1 << 30, "1g"),
                                    (3 << 40, "3t"), (1000, "1000"), (1536, "1536")])
def test_stream_size_is_mitmproxys_own_form(n, text):
    assert stream_size(n) == text and human.parse_size(text) == n


def test_stream_large_bodies_is_set_readably():
    """mcpx sets stream_large_bodies to mcpx_max_body in mitmproxy's own form, follows it when it
    changes, and leaves a value the user set alone."""
    addon = mcpx.MCPX()
    with taddons.context(proxyserver.Proxyserver(), addon) as tctx:
        tctx.configure(addon, mcpx_max_body="64MiB")
        assert tctx.options.stream_large_bodies == "64m"
        assert human.parse_size(tctx.options.stream_large_bodies) == addon.state.max_body == 67108864
        tctx.configure(addon, mcpx_max_body="64MB")
        assert tctx.options.stream_large_bodies == "62500k"
        assert human.parse_size(tctx.options.stream_large_bodies) == 64000000
        tctx.configure(addon, stream_large_bodies="1m")
        tctx.configure(addon, mcpx_max_body="128MiB")
        assert tctx.options.stream_large_bodies == "1m"
