"""The ids an HTTP+SSE stream's events carry and what a reconnect's ``Last-Event-ID`` opens
(addon/mcpx_core/transport/http_sse/resume.py), sans-IO: every reason a reconnect is refused, and that
the ids name nothing in the clear."""
from __future__ import annotations

import os
import time

import pytest

from mcpx_core import seal
from mcpx_core.seal import ENDPOINT_ONLY, Facts, Sealer
from mcpx_core.transport.http_sse import resume

ENDPOINT = "0f" * 16
UNOPENED = "session id does not open with any session key (tampered, truncated or sealed with another key)"
BEARER = [("Authorization", "Bearer alice-secret"), ("Accept", "text/event-stream")]


def opened(sealer: Sealer, sid: str = "a1b2c3d4e5f60718", holder: str | None = None) -> str:
    """The endpoint token mcpx seals for a new stream (transport/http_sse/serve.py ``_open``)."""
    return sealer.seal(Facts(sid=sid, bridge=ENDPOINT_ONLY, endpoint=ENDPOINT, issued=int(time.time()),
                             holder=resume.holder(BEARER) if holder is None else holder))


@pytest.fixture
def sealer() -> Sealer:
    return Sealer([seal.new_key()])


def test_the_holder_is_the_digest_of_the_credential_headers_only():
    assert resume.holder(BEARER) == resume.holder([("authorization", "Bearer alice-secret"), ("User-Agent", "x")])
    assert resume.holder(BEARER) != resume.holder([("Authorization", "Bearer bob-secret")])
    assert len(resume.holder(BEARER)) == 32 and "alice" not in resume.holder(BEARER)
    assert resume.holder([("Accept", "*/*")]) == ""


def test_the_endpoint_events_id_resumes_a_stream_before_its_initialize(sealer):
    token = opened(sealer)
    got = resume.resumed(sealer, token, ENDPOINT, resume.holder(BEARER))
    assert got == resume.Resumed("a1b2c3d4e5f60718", token, None, None, token)


def test_the_initialize_answers_id_resumes_the_ready_session(sealer):
    token = opened(sealer)
    event_id = resume.ready_id(sealer, token, "a1b2c3d4e5f60718", ENDPOINT, "mcpx1.legs-session", "2024-11-05")
    assert event_id.startswith(token + "~") and event_id.count("~") == 1
    assert "legs-session" not in event_id and "2024-11-05" not in event_id  # sealed, not in the clear
    got = resume.resumed(sealer, event_id, ENDPOINT, resume.holder(BEARER))
    assert got == resume.Resumed("a1b2c3d4e5f60718", token, "mcpx1.legs-session", "2024-11-05", event_id)


def test_a_stateless_servers_session_resumes_without_an_upstream_id(sealer):
    token = opened(sealer)
    event_id = resume.ready_id(sealer, token, "a1b2c3d4e5f60718", ENDPOINT, None, "2025-03-26")
    got = resume.resumed(sealer, event_id, ENDPOINT, resume.holder(BEARER))
    assert (got.upstream_id, got.revision) == (None, "2025-03-26")


def test_a_session_id_too_long_to_seal_gives_no_ready_id(sealer):
    assert resume.ready_id(sealer, opened(sealer), "a1b2c3d4e5f60718", ENDPOINT, os.urandom(1500).hex(), "2024-11-05") is None


def test_only_mcpx_ids_are_read():
    assert resume.is_mcpx("mcpx1.abc") and not resume.is_mcpx("42") and not resume.is_mcpx("")


@pytest.mark.parametrize("case, reason", [
    ("other credentials", "the stream was opened with other credentials"),
    ("no credentials", "the stream was opened with other credentials"),
    ("other endpoint", "the stream was opened for another MCP endpoint"),
    ("other key", UNOPENED),
    ("a session token", "not an HTTP+SSE stream's id"),
    ("halves of two streams", "the two halves of the id name two streams"),
    ("tampered second half", UNOPENED),
])
def test_a_reconnect_is_refused(sealer, case, reason):
    token = opened(sealer)
    holder, endpoint, last = resume.holder(BEARER), ENDPOINT, token
    if case == "other credentials":
        holder = resume.holder([("Authorization", "Bearer mallory")])
    elif case == "no credentials":
        holder = ""
    elif case == "other endpoint":
        endpoint = "1e" * 16
    elif case == "other key":
        last = opened(Sealer([seal.new_key()]))
    elif case == "a session token":  # a Streamable HTTP session's token: no stream's id
        last = sealer.seal(Facts(sid="s1", upstream_id="server-session", endpoint=ENDPOINT, holder=holder))
    elif case == "halves of two streams":
        other = opened(sealer, sid="ffffffffffffffff")
        last = token + "~" + resume.ready_id(sealer, other, "ffffffffffffffff", ENDPOINT, "u", "2024-11-05").split("~")[1]
    elif case == "tampered second half":
        r = resume.ready_id(sealer, token, "a1b2c3d4e5f60718", ENDPOINT, "u", "2024-11-05")
        last = r[:-3] + ("AAA" if not r.endswith("AAA") else "BBB")
    got = resume.resumed(sealer, last, endpoint, holder)
    assert got == reason
