"""SessionTracker bounds and lookups (issue 19: survivors of mutation testing in session.py)."""
from __future__ import annotations

import time

from mcpx_core.session import Named, SessionTracker


def test_a_session_in_use_outlives_the_ttl_of_its_start():
    """``ttl`` counts from a session's last use (``get``), not from its start."""
    store = SessionTracker(ttl=10)
    a, b = store.create("a"), store.create("b")
    a.last_seen = b.last_seen = time.monotonic() - 60
    assert store.get("a") is a
    assert store.expire(time.monotonic() + 5) == 1
    assert store.get("a") is a and store.get("b") is None and len(store) == 1


def test_a_request_that_names_its_revision_in_a_header_only_belongs_to_no_session():
    store = SessionTracker()
    assert store.lookup(None, None, "2025-06-18") == Named("2025-06-18", "header")
    assert store.lookup(None, None, "2099-01-01") is None
    assert store.lookup(None, "2026-07-28", "2025-06-18") == Named("2026-07-28", "_meta")


def test_initialize_params_of_the_wrong_type_are_not_kept():
    """clientInfo must be an object, protocolVersion a string, capabilities an object
    (schema/2025-06-18/schema.ts InitializeRequest): other values are not the session's."""
    s = SessionTracker().start({"protocolVersion": 20250618, "clientInfo": "c", "capabilities": ["sampling"]}, "k")
    assert (s.requested_rev, s.client_info, s.client_caps) == (None, None, None)
    s = SessionTracker().start({"protocolVersion": "2025-06-18", "clientInfo": {"name": "c"}, "capabilities": {"roots": {}}}, "k")
    assert (s.requested_rev, s.client_info, s.client_caps) == ("2025-06-18", {"name": "c"}, {"roots": {}})


def test_expire_counts_the_sessions_it_forgets():
    store = SessionTracker(ttl=10)
    sessions = [store.create(key) for key in ("a", "b", "c")]
    for s in sessions:
        s.last_seen = time.monotonic() - 60
    store.get("c")
    assert store.expire() == 2 and len(store) == 1


def _live(store: SessionTracker, upstream_id: str):
    a = store.start({"protocolVersion": "2025-03-26", "clientInfo": {"name": "c"}}, "conn:1", client_keys=("host:h",))
    a.server_rev = "2025-03-26"
    store.learn(a, upstream_id, seal=False)
    assert store.settle(a, 200, upstream_id)
    return a


def test_an_initialize_refused_with_a_live_sessions_server_id_leaves_that_id_to_the_live_session():
    """A server that answers a second initialize (forwarded as it is, e.g. in a batch) with an error
    and the id of the session it keeps: the id was learnt for the new session before the answer was
    judged; refused (:meth:`SessionTracker.settle`), the id and the client's keys go back to the live one."""
    store = SessionTracker()
    a = _live(store, "srv-1")
    b = store.start({"protocolVersion": "2025-03-26", "clientInfo": {"name": "c"}}, "conn:2", client_keys=("host:h",))
    store.learn(b, "srv-1", seal=False)  # no server revision learnt: the answer was a JSON-RPC error
    assert store.get("srv-1") is b
    assert store.settle(b, 200, "srv-1") is False
    assert store.get("srv-1") is a and store.get("host:h") is a and store.get("conn:2") is None
    assert b.displaced == {}


def test_an_accepted_initialize_keeps_the_keys_it_took():
    store = SessionTracker()
    a = _live(store, "srv-1")
    b = store.start({"protocolVersion": "2025-03-26", "clientInfo": {"name": "c"}}, "conn:2", client_keys=("host:h",))
    b.server_rev = "2025-03-26"
    store.learn(b, "srv-2", seal=False)
    assert store.settle(b, 200, "srv-2") is True
    assert store.get("srv-2") is b and store.get("host:h") is b and store.get("srv-1") is a
    assert b.displaced == {}


def test_an_initialize_refused_with_http_400_is_abandoned_under_every_key_but_the_servers_id():
    store = SessionTracker()
    b = store.start({"protocolVersion": "2025-03-26", "clientInfo": {"name": "c"}}, "conn:2", client_keys=("host:h",))
    b.server_rev = "2025-03-26"
    assert store.settle(b, 400, "srv-9") is False
    assert store.get("conn:2") is None and store.get("host:h") is None
    assert store.get("srv-9") is b and b.upstream_id == "srv-9" and b.token is None
