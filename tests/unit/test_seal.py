"""Sealed session tokens (seal.py): what they carry, how long they are, what never opens."""
from __future__ import annotations

import base64
import os

import pytest

from mcpx_core import seal
from mcpx_core.seal import BadToken, Facts, Sealer
from mcpx_core.session import SessionTracker

#: the initialize exchange of the npm everything server (2026.8.31) with sdk 1.10.2, as mcpx reads it
EVERYTHING = Facts(sid="s-0123456789abcdef", client_rev="2024-11-05", server_rev="2024-11-05", requested_rev="2024-11-05",
                   upstream_id="8077ad25-7c10-4136-96f3-ac7ad6931059",
                   client_info={"name": "mcpx-js-client", "version": "1.10.2"},
                   server_info={"name": "mcp-servers/everything", "version": "2.0.0"},
                   client_caps={"sampling": {}, "roots": {"listChanged": True}},
                   server_caps={"tools": {"listChanged": True}, "prompts": {"listChanged": True},
                                "resources": {"subscribe": True, "listChanged": True}, "logging": {},
                                "completions": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}},
                   issued=1764450000)


def test_round_trip_and_size():
    s = Sealer([seal.new_key()])
    token = s.seal(EVERYTHING)
    assert token.startswith("mcpx1.") and s.open(token) == EVERYTHING
    # measured: a real session's token; the bound MAX_TOKEN (1,024) holds with room, far below the 8 KiB
    # a header line may take in nginx and the 16 KiB all headers may take in Node.js, h11 and HAProxy
    assert 200 < len(token) < 400, len(token)
    assert all(0x21 <= ord(ch) <= 0x7E for ch in token)  # visible ASCII (transports.mdx: session id)
    assert s.seal(EVERYTHING) != token  # a fresh nonce each time


def test_nothing_in_the_clear():
    token = Sealer([seal.new_key()]).seal(EVERYTHING)
    raw = base64.urlsafe_b64decode(token[6:] + "=" * (-len(token[6:]) % 4))
    for secret in (b"8077ad25", b"everything", b"mcpx-js-client", b"2024-11-05", b"listChanged"):
        assert secret not in raw


def test_large_capabilities_stay_within_the_bound():
    big = {f"cap{i}": {f"k{j}": {"x": True} for j in range(30)} for i in range(30)}
    facts = Facts(sid="s-1", client_rev="2025-06-18", server_rev="2025-06-18", client_caps=big, server_caps=big,
                  client_info={"name": "n" * 500, "version": "v" * 500})
    token = Sealer([seal.new_key()]).seal(facts)
    assert len(token) <= seal.MAX_TOKEN


@pytest.mark.parametrize("mangle,reason", [
    (lambda t: t[:50] + ("A" if t[50] != "A" else "B") + t[51:], "does not open with any session key"),  # tampered
    (lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"), "session id"),  # tampered last character (also its unused bits)
    (lambda t: t[:6 + 4 * 20], "does not open with any session key"),  # truncated at a 4-character boundary
    (lambda t: t[:6 + 4 * 10 + 1], "session id is not base64url"),  # truncated elsewhere: not even base64url
    (lambda t: t[:6 + 4 * 5], "truncated"),
    (lambda t: "mcpx1.!!!!", "not base64url"),
    (lambda t: "8077ad25-7c10-4136-96f3-ac7ad6931059", "not a session id mcpx issued"),
    (lambda t: t + "A" * 2000, "too long"),
])
def test_what_never_opens(mangle, reason):
    s = Sealer([seal.new_key()])
    with pytest.raises(BadToken) as e:
        s.open(mangle(s.seal(EVERYTHING)))
    assert reason in e.value.reason
    assert "mcpx1." not in e.value.reason  # no token bytes in the reason


def test_rotation_first_key_seals_all_open():
    old, new = seal.new_key(), seal.new_key()
    token_old = Sealer([old]).seal(EVERYTHING)
    rotated = Sealer([new, old])
    assert rotated.open(token_old) == EVERYTHING
    token_new = rotated.seal(EVERYTHING)
    with pytest.raises(BadToken):
        Sealer([old]).open(token_new)
    with pytest.raises(BadToken, match="does not open with any session key"):
        Sealer([seal.new_key()]).open(token_old)  # another key


def test_key_files(tmp_path):
    default = tmp_path / "conf" / "mcpx-session.key"
    keys, created = seal.load_keys([], str(default))
    assert created == str(default) and len(keys) == 1 and oct(default.stat().st_mode & 0o777) == "0o600"
    again, created = seal.load_keys([], str(default))
    assert again == keys and created is None  # reused: a plain restart keeps every session
    two = tmp_path / "two.key"
    two.write_bytes(b"# rotation\n" + base64.b64encode(os.urandom(32)) + b"\n" + base64.urlsafe_b64encode(keys[0]) + b"\n")
    assert seal.load_keys([str(two)], str(default))[0][1] == keys[0]
    bad = tmp_path / "bad.key"
    bad.write_bytes(base64.b64encode(os.urandom(16)) + b"\n")
    with pytest.raises(ValueError, match="bad.key:1: a key must be 32 bytes, this one has 16"):
        seal.load_keys([str(bad)], str(default))


def test_tracker_reopens_a_session_that_left_memory():
    tr = SessionTracker(max_sessions=1, sealer=Sealer([seal.new_key()]))
    s = tr.start({"protocolVersion": "2025-03-26", "clientInfo": {"name": "c", "version": "1"}}, "flow:1", (), sealed=True)
    s.server_rev = s.client_rev = "2025-03-26"
    token = tr.learn(s, "upstream-1", seal=True)
    tr.create("crowd")  # max_sessions=1: s leaves memory
    assert tr.get(token) is None and len(tr) == 1
    again = tr.lookup(token, None, None, live=True)
    assert again is not s and (again.key, again.client_rev, again.server_rev, again.upstream_id, again.client_info) == (
        s.key, "2025-03-26", "2025-03-26", "upstream-1", {"name": "c", "version": "1"})
    tampered = token[:30] + ("x" if token[30] != "x" else "y") + token[31:]
    assert tr.lookup(tampered, None, None, live=True).reason.startswith("session id does not open")
    assert tr.lookup("upstream-1", None, None, live=True).reason == "not a session id mcpx issued (or one mcpx no longer knows)"


def test_tracker_a_terminated_token_no_longer_opens(monkeypatch):
    """terminate (a DELETE mcpx answered): the token gets Unknown, even sealed and valid; the set is
    bounded (oldest forgotten first); a session that only left memory still opens."""
    from mcpx_core import session
    from mcpx_core.session import Unknown
    monkeypatch.setattr(session, "MAX_ENDED", 2)
    tr = SessionTracker(max_sessions=1, sealer=Sealer([seal.new_key()]))
    tokens = []
    for i in range(3):
        s = tr.start({"protocolVersion": "2025-03-26"}, f"flow:{i}", (), sealed=True)
        s.server_rev = s.client_rev = "2025-03-26"
        tokens.append(tr.learn(s, None, seal=True))
        tr.terminate(s)
    assert list(tr.ended) == tokens[1:]
    assert tr.lookup(tokens[2], None, None, live=True) == Unknown("a session the client ended (DELETE)")
    assert tr.lookup(tokens[0], None, None, live=True).client_rev == "2025-03-26"  # forgotten: opens again
    s = tr.start({"protocolVersion": "2025-03-26"}, "flow:9", (), sealed=True)
    s.server_rev = s.client_rev = "2025-03-26"
    kept = tr.learn(s, None, seal=True)
    tr.create("crowd")  # left memory (max_sessions=1): not ended
    assert tr.lookup(kept, None, None, live=True).client_rev == "2025-03-26"


def test_a_server_session_id_too_long_to_seal():
    """The server's own id is sealed whole (any length a server picks): one that makes the token longer
    than MAX_TOKEN even without capabilities raises TooLarge (before: a ValueError "not reached"
    that crashed the request hook); the tracker then keeps the session unsealed, found under the
    server's id, and says why."""
    long_id = os.urandom(700).hex()
    with pytest.raises(seal.TooLarge, match=r"^too long to seal in a session token \(at most 1024\)$"):
        Sealer([seal.new_key()]).seal(Facts(sid="s-0123456789abcdef", upstream_id=long_id))
    tracker = SessionTracker(sealer=Sealer([seal.new_key()]))
    s = tracker.start({"protocolVersion": "2025-03-26"}, "flow:1", sealed=True)
    s.server_rev = s.client_rev = "2025-03-26"
    assert tracker.learn(s, long_id, seal=True) is None
    assert (s.token, s.unsealed) == (None, "the server's Mcp-Session-Id (1400 characters) is too long to seal in a session "
                                           "token (at most 1024)")
    assert tracker.lookup(long_id, None, None) is s
    s2 = tracker.start({"protocolVersion": "2025-03-26"}, "flow:2", sealed=True)
    s2.server_rev = s2.client_rev = "2025-03-26"
    assert tracker.learn(s2, "short-id", seal=True).startswith("mcpx1.") and s2.unsealed is None
