"""Secrets: what mcpx logs never holds a credential header or a whole base64 payload.

A run through the real ``mitmdump -s addon/mcpx.py`` at ``termlog_verbosity=debug`` (every change
record is also printed) with mitmdump's default ``flow_detail=1``: requests carry Authorization,
Cookie, X-Api-Key and Proxy-Authorization headers, a response sets a cookie, and results carry a
large base64 payload in blocks a 2024-11-05 client gets rewritten or dropped (audio, image
annotations, icon data: URIs, structuredContent), as JSON and as SSE, plus a batch split and a
passthrough. Neither the JSON Lines change log nor mitmdump's output may hold any credential
value or the payload (nor any 48-character piece of it); payloads appear as a size and a hash.
The change log file is created mode 0600, whatever the umask.
"""
from __future__ import annotations

import base64
import hashlib
import os
import stat

import orjson
import pytest

from fault_server import FaultServer
from proxy_lib import Proxy
from rel_lib import Client, count, figures  # noqa: F401
from test_faults import assert_no_crash, call

SECRETS = {
    "authorization": "Bearer sk-live-7f3a9c1e5b2d4f6a8c0e1b3d5f7a9c1e",
    "cookie": "session=cafebabe0123456789deadbeef; csrftoken=f00dfacef00dface",
    "x-api-key": "key-0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e",
    "proxy-authorization": "Basic dXNlcjpodW50ZXIy",
}
SET_COOKIE = "c0ffee-5e7c00k1e-51d-0123456789"
PAYLOAD = base64.b64encode(bytes((i * 31 + 7) % 256 for i in range(150_000))).decode()


@pytest.fixture(scope="module")
def logged_run(tmp_path_factory):
    """Run the traffic; return (change-log text, mitmdump output, change-log path)."""
    old_umask = os.umask(0)  # the log must still be 0600
    try:
        with FaultServer() as fs:
            px = Proxy(fs.url, tmp_path_factory.mktemp("secrets"), options={"termlog_verbosity": "debug", "flow_detail": 1})
            os.umask(old_umask)
            try:
                c = Client(px.port, headers=dict(SECRETS))
                c.initialize("2024-11-05")
                for sse in (False, True):
                    st, h, msgs = c.rpc(call("media", 3, payload=PAYLOAD, cookie=SET_COOKIE, sse=sse))
                    assert st == 200 and SET_COOKIE in h["set-cookie"]
                    types = [b["type"] for b in msgs[0]["result"]["content"]]
                    assert types == ["text", "image", "resource", "text"], types  # audio note, image, link, structuredContent
                    assert msgs[0]["result"]["content"][1].get("annotations", {}) == {}  # lastModified dropped
                # a batch (split into single POSTs that carry the same headers) and a body mcpx cannot parse
                c.post([call("links", 4), call("links", 5)])
                c.post(None, raw=b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"token":"' + SECRETS["x-api-key"].encode() + b'"')
                c.close()
            finally:
                px.stop()
        return px.log_path.read_text(), px.output(), px.log_path
    finally:
        os.umask(old_umask)


def test_no_credentials_or_payloads_in_logs(logged_run):
    log, out, path = logged_run
    assert_no_crash(out)
    records = [orjson.loads(line) for line in log.splitlines()]
    rules = {r["rule"] for r in records}
    assert {"CT-audio", "ANN-lastModified", "SC-structuredContent", "RPC-batch-request", "PASSTHROUGH-error"} <= rules, rules
    assert any("mcpx:" in line for line in out.splitlines())  # the debug run did print records
    for name, value in {**SECRETS, "set-cookie": SET_COOKIE}.items():
        for text, where in ((log, "change log"), (out, "mitmdump output")):
            assert value not in text, f"{name} value in the {where}"
            for part in value.split("=")[-1:] + value.split()[-1:]:
                assert part not in text, f"part of {name} in the {where}"
    pieces = [PAYLOAD[i:i + 48] for i in range(0, len(PAYLOAD) - 48, 997)]
    for text, where in ((log, "change log"), (out, "mitmdump output")):
        assert not any(p in text for p in pieces), f"a piece of the base64 payload in the {where}"
    # the payload appears as its size and hash
    digest = hashlib.sha256(PAYLOAD.encode()).hexdigest()[:12]
    assert f"<str len={len(PAYLOAD)} sha256={digest}>" in log
    count("secret checks passed")


def test_change_log_is_owner_only(logged_run):
    _, _, path = logged_run
    mode = stat.S_IMODE(os.stat(path).st_mode)
    assert mode == 0o600, oct(mode)
    count("secret checks passed")
