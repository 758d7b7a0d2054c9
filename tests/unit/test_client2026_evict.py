"""Which upstream sessions of the client2026 bridge ``evict`` forgets (bridge/client2026.py): those
unused for more than the TTL, unless a call is in progress on them, a listen stream is open on them,
or an input_required round trip is held on them (tests/e2e/test_bridge_client2026_expiry.py shows
the DELETE that follows, through mitmdump)."""
from __future__ import annotations

from mcpx_core.bridge.client2026 import Client2026Bridge, Held, Upstream2026Session
from mcpx_core.rewrite import Rewriter
from mcpx_core.session import Session


def up(name: str, used: float) -> Upstream2026Session:
    return Upstream2026Session(Session(f"({name})"), used=used)


def test_only_idle_sessions_without_a_call_a_listen_or_a_held_round_trip_are_evicted():
    b = Client2026Bridge(Rewriter(), answers=None)
    idle, calling, listening, holding, recent, second_listen = (
        up("idle", 0.0), up("calling", 0.0), up("listening", 0.0), up("holding", 0.0), up("recent", 95.0), up("second", 0.0))
    calling.active, listening.listening = 1, 1
    b.sessions = {("o", b"a", b"{}"): idle, ("o", b"b", b"{}"): calling, ("o", b"c", b"{}"): listening,
                  ("o", b"d", b"{}"): holding, ("o", b"e", b"{}"): recent}
    b.unshared = [second_listen]
    b.held["mcpx-rs1.h"] = Held(handle="mcpx-rs1.h", upstream=holding, method="tools/call")
    b.held["mcpx-rs1.h"].at = 1e12  # (not expired by HELD_TTL)
    assert b.evict(ttl=10.0, now=100.0) == [idle, second_listen]
    assert list(b.sessions.values()) == [calling, listening, holding, recent] and b.unshared == []
    # once the call, the listen and the round trip are over, they go too (recent: not yet idle long enough)
    calling.active, listening.listening = 0, 0
    b.held.clear()
    assert b.evict(ttl=10.0, now=100.0) == [calling, listening, holding]
    assert b.evict(ttl=10.0, now=106.0) == [recent]
