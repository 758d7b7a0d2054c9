"""An HTTP+SSE client's stream resumed on any mcpx process, sans-IO: the SSE event ids mcpx gives the
stream, and what a reconnecting client's ``Last-Event-ID`` opens.

HTTP+SSE has no resumption of its own (schema/2024-11-05 transports "HTTP with SSE": the session is
the stream). But an EventSource client reconnects by itself when its stream breaks (WHATWG HTML 9.2.3,
after the stream's ``retry`` time), and sends the id of the last event it got as ``Last-Event-ID``
(9.2.4; only events with data count, as npm ``eventsource`` 3 and the standard dispatch them). mcpx
gives two ids, each sealed with the session keys (:mod:`mcpx_core.seal`), so any replica continues the
session:

- the ``endpoint`` event: ``id: T``, T the endpoint token itself (the stream's ``sid``, the bridge name
  ``http+sse``, the digest of the server's MCP endpoint, and ``holder``: a digest of the opening GET's
  credential headers);
- the ``initialize`` answer (an ``event: message`` with data): ``id: T~R``, R sealing the same ``sid``
  with the upstream session: the ``Mcp-Session-Id`` mcpx gave the legs (``upstream_id``, itself a
  sealed token) and the revision the session speaks (``client_rev``).

T comes first so that a load balancer that sticks on the first characters of ``Last-Event-ID``, the
``mcpx_session`` query parameter and the ``Mcpx-Affinity`` response header (deploy/haproxy.cfg) sends a
reconnecting client to the process that still holds its stream, when it lives.

A GET that opens the transport with a Last-Event-ID that is mcpx's continues the session when T opens,
names this MCP endpoint, and the GET sends the same credentials (``holder``); with R too (same
``sid``) the session is ready at once: the upstream session and its revision are R's. What it does not
bring back: the messages the server sent while no stream was open (the upstream GET stream is opened
again; 2024-11-05 has no replay), and requests in flight on a process that died (their answers are
lost; the client's own timeout ends them).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Iterable

from ...identity import credential_headers
from ...seal import ENDPOINT_ONLY, PREFIX, BadToken, Facts, Sealer, TooLarge

#: between T and R in an event id (never in a token: base64url and ``.`` only)
SEPARATOR = "~"
#: how long a client waits before it reconnects (the ``retry`` field of the ``endpoint`` event,
#: milliseconds; npm ``eventsource``'s own default is 3,000)
RETRY_MS = 1000
#: how long a POST whose stream is not (yet) on this process waits for its client to reconnect it
#: here (seconds): the reconnection time, a load balancer's health checks, a connect
RESUME_WAIT = 5.0


def holder(headers: Iterable[tuple[str, str]]) -> str:
    """The digest of a request's credential headers (:func:`mcpx_core.identity.credential_headers`),
    sealed in the tokens, never sent in the clear: "" when it sends none."""
    creds = credential_headers(headers)
    if not creds:
        return ""
    h = hashlib.sha256()
    for k, v in creds:
        h.update(k.encode("latin-1", "replace") + b"\0" + v.encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()[:32]


def ready_id(sealer: Sealer, token: str, sid: str, endpoint: str, upstream_id: str | None, revision: str | None) -> str | None:
    """The id of the ``initialize`` answer's event (``T~R``), or None when R cannot be sealed (the
    legs' session id too long: the stream then resumes only as far as T takes it)."""
    try:
        r = sealer.seal(Facts(sid=sid, bridge=ENDPOINT_ONLY, endpoint=endpoint, upstream_id=upstream_id,
                              client_rev=revision, issued=int(time.time())))
    except TooLarge:
        return None
    return f"{token}{SEPARATOR}{r}"


@dataclass(frozen=True)
class Resumed:
    """A stream to continue: its ``sid`` and endpoint ``token``; ``upstream_id``/``revision``: the
    session it was ready with (None: it resumes before its ``initialize`` went through);
    ``event_id``: the id the new stream's ``endpoint`` event carries (the same Last-Event-ID)."""

    sid: str
    token: str
    upstream_id: str | None
    revision: str | None
    event_id: str


def is_mcpx(last_event_id: str) -> bool:
    """Whether a ``Last-Event-ID`` is one mcpx gave (any other is the client's own business)."""
    return last_event_id.startswith(PREFIX)


def resumed(sealer: Sealer, last_event_id: str, endpoint: str, holder_now: str) -> Resumed | str:
    """What ``last_event_id`` continues on the MCP endpoint of digest ``endpoint`` for a GET whose
    credentials digest to ``holder_now``: a :class:`Resumed`, or why not (a string)."""
    token, _, rest = last_event_id.partition(SEPARATOR)
    try:
        t = sealer.open(token)
    except BadToken as e:
        return e.reason
    if t.bridge != ENDPOINT_ONLY or t.upstream_id is not None:
        return "not an HTTP+SSE stream's id"
    if t.endpoint != endpoint:
        return "the stream was opened for another MCP endpoint"
    if t.holder != holder_now:
        return "the stream was opened with other credentials"
    if not rest:
        return Resumed(t.sid, token, None, None, token)
    try:
        r = sealer.open(rest)
    except BadToken as e:
        return e.reason
    if r.sid != t.sid or r.bridge != ENDPOINT_ONLY or r.endpoint != endpoint:
        return "the two halves of the id name two streams"
    return Resumed(t.sid, token, r.upstream_id, r.client_rev, last_event_id)
