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
