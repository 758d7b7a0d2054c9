"""The trust stages on their own: the one guess (session.Session.guessable), tokens bound to their
server (session.endpoint_digest), credentials as a keyed digest (identity), what reaches the terminal
(terminal), the local server's Origin check (bridge/origin_check)."""
from __future__ import annotations

import logging

import pytest

from mcpx_core import identity, seal, terminal
from mcpx_core.bridge import origin_check
from mcpx_core.session import SessionTracker, Unknown, endpoint_digest

INIT = {"protocolVersion": "2025-03-26", "clientInfo": {"name": "c", "version": "1"}}
KEYS = ("conn:10.0.0.1:5000", "host:10.0.0.1")
EP = "http://127.0.0.1:3001/mcp"


def _tracker() -> SessionTracker:
    return SessionTracker(sealer=seal.Sealer([seal.new_key()]))


def _started(tr: SessionTracker, upstream_id: str | None = None, bridge: str = ""):
    s = tr.start(INIT, "flow:1", KEYS, sealed=True, endpoint=EP)
    s.client_rev = s.server_rev = "2025-03-26"
    s.bridge = bridge
    tr.learn(s, upstream_id, seal=True)
    return s


def test_the_guess_serves_only_a_session_a_stranger_can_do_nothing_in():
    tr = _tracker()
    s = _started(tr)
    assert tr.lookup(None, None, None, KEYS, endpoint=EP) is s  # stateless server, never echoed: the guess serves it
    assert tr.lookup(None, None, None, KEYS, endpoint=EP, method="DELETE") is None  # never a DELETE
    s.remember("s2c", 5, "sampling/createMessage")
    assert tr.lookup(None, None, None, KEYS, endpoint=EP) is None  # a server request waits for this client's answer
    s.answer("s2c", 5)
    assert tr.lookup(None, None, None, KEYS, endpoint=EP) is s
    assert tr.lookup(s.token, None, None, KEYS, endpoint=EP) is s  # echoed once: never tokenless again
    assert tr.lookup(None, None, None, KEYS, endpoint=EP) is None


@pytest.mark.parametrize("upstream_id,bridge", [("server-1", ""), (None, "legacy-client"), ("server-1", "legacy-client")])
def test_the_guess_never_serves_a_server_session_or_a_bridged_one(upstream_id, bridge):
    tr = _tracker()
    _started(tr, upstream_id, bridge)
    assert tr.lookup(None, None, None, KEYS, endpoint=EP) is None


def test_a_token_opens_only_for_its_server_and_before_anything_else():
    tr = _tracker()
    s = _started(tr, "server-1")
    token = s.token
    other = SessionTracker(sealer=tr.sealer)  # another process with the same key (a replica, or another mcpx)
    assert other.lookup(token, None, None, endpoint="http://127.0.0.1:3002/mcp") == Unknown(
        "a session of another server (the token names another origin or path)")
    assert other.lookup(token, None, None, endpoint="http://127.0.0.1:3001/other") == Unknown(
        "a session of another server (the token names another origin or path)")
    assert tr.lookup(token, None, None, endpoint="http://127.0.0.1:3002/mcp") == Unknown(
        "a session of another server (the token names another origin or path)")  # also from memory
    opened = other.lookup(token, "2026-07-28", "2025-06-18", endpoint="HTTP://127.0.0.1:3001/mcp")
    assert opened.upstream_id == "server-1"  # a revision named in _meta does not bypass the token
    assert endpoint_digest("HTTP://LOCALHOST:1/mcp") == endpoint_digest("http://localhost:1/mcp") != endpoint_digest("http://localhost:1/MCP")
    assert endpoint_digest("http://localhost:1/mcp/") == endpoint_digest("http://localhost:1/mcp")  # a redirect away
    old = seal.Sealer([seal.new_key()])  # a token of an mcpx that sealed no endpoint
    legacy_token = old.seal(seal.Facts(sid="s-1", client_rev="2025-03-26", server_rev="2025-03-26"))
    assert SessionTracker(sealer=old).lookup(legacy_token, None, None, endpoint=EP) == Unknown(
        "a token that names no server (sealed by an earlier mcpx)")


def test_credentials_key():
    k = identity.credentials_key
    assert k([("Accept", "*/*"), ("User-Agent", "x"), ("Mcp-Session-Id", "s")]) == ""
    alice = k([("Authorization", "Bearer a"), ("User-Agent", "x")])
    assert alice and alice == k([("authorization", "Bearer a")]) != k([("Authorization", "Bearer b")])
    assert k([("X-API-Key", "1")]) != k([("X-API-Key", "2")]) and k([("Cookie", "a=1")]) != ""
    assert "Bearer" not in alice and len(alice) == 32
    assert [identity.is_credential(n) for n in ("x-auth-token", "api-key", "keep-alive", "mcp-session-id", "accept")] == [
        True, True, False, False, False]


def test_printable_and_the_log_filter(caplog):
    assert terminal.printable("a\x1b[31m\r\nb\u202e\x7f") == "a\\x1b[31m\\x0d\\x0ab\\u202e\\x7f"
    assert terminal.printable("x" * 10, limit=4) == "xxxx… (6 more characters)"
    logger = logging.getLogger("mcpx")
    terminal.install(logger)
    terminal.install(logger)
    assert logger.filters.count(terminal._FILTER) == 1
    with caplog.at_level(logging.DEBUG, logger="mcpx"):
        logger.info("id=%s", "1\nmcpx: forged")
        logger.debug("one\ntwo\x1b", extra={"mcpx_lines": True})
    assert [r.getMessage() for r in caplog.records] == ["id=1\\x0amcpx: forged", "one\ntwo\\x1b"]


@pytest.mark.parametrize("listen,origin,host,why", [
    ("127.0.0.1", "http://evil.example.com", None, "Origin is not a local origin"),
    ("127.0.0.1", "null", None, "Origin is not a local origin"),
    ("127.0.0.1", "http://127.0.0.1:8080", None, None),
    ("::1", "http://[::1]:8080", None, None),
    ("::ffff:127.0.0.1", "http://localhost", None, None),
    ("127.0.0.1", None, None, None),
    ("127.0.0.1", None, "evil.example.com:8080", "Host is not a local host"),
    ("127.0.0.1", None, "localhost:8080", None),
    ("10.1.2.3", "http://evil.example.com", "evil.example.com", None),  # mcpx listens on purpose elsewhere
    (None, "http://evil.example.com", None, None),
])
def test_origin_check(listen, origin, host, why):
    assert origin_check.refusal(listen, origin, host) == why
