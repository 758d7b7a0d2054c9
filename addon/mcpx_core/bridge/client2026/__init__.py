"""A 2026-07-28 client in front of a legacy server (REVISIONS.md 2.4 cross-era mode; issue 12).

The 2026 client is stateless: every request names its revision and carries its capabilities and
clientInfo in ``params._meta`` (schema/2026-07-28/schema.ts:76-110). The legacy server wants a
session. Per distinct client identity (the URL it asks for, its credentials, clientInfo,
clientCapabilities; the credentials as a keyed digest, :mod:`mcpx_core.identity`) mcpx keeps one
upstream legacy session: it sends ``initialize`` (the newest legacy revision, the client's
capabilities downgraded, its clientInfo) and ``notifications/initialized`` itself (``LC-initialize``,
upgrade direction), and sends every request of that client on it. What each method becomes:

- ``server/discover`` (``DISC-request``): answered by mcpx from the upstream InitializeResult:
  ``supportedVersions ["2026-07-28"]``, the server's capabilities (walked to 2026-07-28),
  ``instructions`` (``LC-instructions``), ``_meta`` serverInfo, ``ttlMs`` 0, ``cacheScope``
  "private", ``resultType`` "complete".
- ``tools/call``, ``prompts/get``, ``resources/read``: sent upstream by mcpx (its own flow), so that
  a server->client request the legacy server sends while the call runs (``sampling/createMessage``,
  ``elicitation/create``, ``roots/list``; ``MRTR-bridge-legacy-server``) can end the client's
  request with an InputRequiredResult (``inputRequests`` built from the held requests,
  ``MRTR-embedded-requests``; ``requestState`` a handle mcpx keeps) while the upstream call stays
  open; the client's retry (``inputResponses`` + that ``requestState``) answers the held upstream
  requests and gets the call's final result, or the next round. A ``ping`` the server sends is
  answered ``{}``, any other request -32601 (``MRTR-bridge-legacy-server``). Progress and other
  notifications of the call reach the client before its result, in the answer's SSE body (the
  answer is written when the call ends or asks for input: not streamed as it comes). A server request
  sent outside any call (on the upstream session's GET stream, which mcpx reads: :mod:`.get_stream`)
  goes to the call in progress, else to the client's next call (answered input_required at once, sent
  upstream on the retry); one no call carries within ``PENDING_TTL`` is answered -32603, and so is
  one beyond ``PENDING_MAX`` waiting. A server that
  closes the call's SSE stream after an event id and before the answer (SSE polling,
  ``TR-sse-priming-polling``, 2025-11-25 basic/transports.mdx:107-115), or whose stream breaks off
  there, is resumed by mcpx: ``GET`` with ``Last-Event-ID``, the server's session id and revision,
  after its ``retry`` (milliseconds, at most ``resume.RETRY_CAP_MS``), again after each close that
  follows a newer id (a ``bridge`` record each); a resume that fails (the GET not answered with an
  SSE stream, or a resumed stream with no newer id) ends the call with -32603 saying why, one
  ``passthrough`` record and one warning line. No overall time limit while the server streams: the
  POST and each GET are ended after 600 s without a byte (``Sender.send`` ``idle``), the call after
  600 s without a message (``CALL_IDLE``: -32603 saying so, one ``passthrough`` record and one
  warning line; its upstream request is ended and a resume of its stream cancelled).
- ``subscriptions/listen`` (``SUB-listen``, ``TR-get-stream``): the client's POST is served from the
  upstream session's GET stream (``resources/subscribe`` first for the URIs it asks for); the first
  event the client gets is the ``notifications/subscriptions/acknowledged`` for what the server can
  honour, then each matching list_changed / resources/updated with ``subscriptionId``
  (``META-subscriptionId``); the rest is not delivered (``SUB-list-changed-delivery``). The listen
  ends when the GET stream does: ended by the server, or broken off (a connection error: then a
  ``passthrough`` record says why), refused or failed.
- ``notifications/cancelled`` of a listen: answered 202 (the stream's close ends it).
- every other request: forwarded on the upstream session, its answer walked to 2026-07-28 with the
  members 2026-07-28 requires added (rules/upgrade.py).

Request ids: a 2026 client's ids are unique only among its outstanding requests, and several
clients of one identity share an upstream session: every request mcpx sends upstream gets an id of
mcpx's own (``mcpx-<n>``, ``RPC-request-id-reuse``), mapped back on the answer.

Memory only (a restart or another replica makes a new upstream session on the next request, which
the stateless 2026 client does not notice): upstream sessions, held input_required round trips
(600 s from their input_required answer, ``HELD_TTL``: then forgotten, their upstream call ended and a
resume of its stream cancelled; one being retried is not held),
listen streams. An upstream session unused for ``mcpx_session_ttl`` (no call in progress,
no open listen stream, no held round trip) is ended: mcpx sends the server ``DELETE`` with its
``Mcp-Session-Id``, as a legacy client ends a session (:meth:`Client2026Bridge.expire_idle`). A retry whose ``requestState`` this process does not hold gets -32602.
"""

from __future__ import annotations

HELD_TTL = 600.0
#: seconds a bridged call waits for its next JSON-RPC message from the server (a message, not a byte:
#: an idle POST or GET is ended by ``Sender.send`` after as long); then the call ends with -32603 and
#: mcpx ends its upstream request (:meth:`Client2026Bridge._next`)
CALL_IDLE = 600.0
#: seconds a server request sent outside any call (the upstream GET stream) waits for a call of the
#: 2026-07-28 client to carry it as input_required; then mcpx answers it -32603 (get_stream.py)
PENDING_TTL = 60.0
#: server requests sent outside any call that may wait at once per upstream session (for the call in
#: progress, and again for the client's next call); one more is answered -32603 at once (get_stream.py:
#: a server flooding its GET stream grows neither mcpx's memory nor a call's InputRequiredResult)
PENDING_MAX = 32
#: answers mcpx sends at once to the server requests of one upstream session's GET stream (pings,
#: -32601s, -32603s), and how many more wait to be sent; one more is left unanswered (get_stream.py:
#: a server flooding its GET stream gets no open request of mcpx's per message)
ANSWERS_IN_FLIGHT = 4
ANSWERS_QUEUED = 1024

from .bridge import Client2026Bridge  # noqa: E402  (after the time constants the parts read here)
from .held import Held  # noqa: E402
from .listen import Listen, ListenStream  # noqa: E402
from .sessions import Upstream2026Session  # noqa: E402
from .shared import (CAPABILITY, EMBEDDED, LATEST, LEVELS, META_KEYS, MRTR_METHODS, NAME, NEWEST_LEGACY, NO_ID,  # noqa: E402
                     STATE_PREFIX, Refused)

__all__ = ["ANSWERS_IN_FLIGHT", "ANSWERS_QUEUED", "CALL_IDLE", "PENDING_MAX", "PENDING_TTL", "CAPABILITY", "EMBEDDED", "HELD_TTL", "LATEST", "LEVELS", "META_KEYS", "MRTR_METHODS", "NAME",
           "NEWEST_LEGACY", "NO_ID", "STATE_PREFIX", "Client2026Bridge", "Held", "Listen", "ListenStream", "Refused",
           "Upstream2026Session"]
