"""Legacy clients (2024-11-05 .. 2025-11-25) in front of a 2026-07-28-only server (REVISIONS.md 2.4
"cross-era mode"; the ``bridge``, ``answer-locally`` and ``synthesize`` records toward legacy clients
and the *Upgrade direction* paragraphs of revision-delta.json).

A 2026-07-28 server has no handshake, sessions, GET stream, ``ping``, ``logging/setLevel``,
resource subscriptions nor server->client requests (docs/specification/2026-07-28/changelog.mdx:12-20);
a legacy client starts with ``initialize`` and fails at once (tests/peers/BRIDGING.md 1). In a
session of this bridge the client's flows never reach the server as they are: mcpx answers some
itself and sends the 2026-07-28 requests as flows of its own (:class:`mcpx_core.bridge.Upstream`).

- **Handshake** (LC-initialize, LC-instructions, TR-session-id): :meth:`LegacyClientBridge.initialize`
  answers ``initialize`` from a ``server/discover`` (schema/2026-07-28/schema.ts:665): the client's
  requested revision, the DiscoverResult's capabilities downgraded to it, ``serverInfo`` from its
  ``_meta`` (schema/2026-07-28/schema.ts:157), ``instructions``; the session is sealed with
  ``bridge="legacy-client"``, server leg 2026-07-28 (:mod:`mcpx_core.seal`).
- **Answered locally**: ``notifications/initialized`` (LC-initialized), ``ping`` (LC-ping),
  ``logging/setLevel`` (LOG-setLevel: the level is kept and sent as ``_meta`` logLevel),
  ``resources/(un)subscribe`` (SUB-resources-subscribe: the URIs go into the listen filter),
  ``DELETE`` (TR-session-delete), ``notifications/roots/list_changed`` (ROOTS-list-changed),
  client ``notifications/progress`` (PROG-direction).
- **Every request upstream** (:meth:`_upgrade`): walked toward the 2026-07-28 schema, then the
  per-request ``_meta`` (META-protocolVersion, META-clientCapabilities upgraded, META-clientInfo,
  META-logLevel; ``params`` created where absent: PAGE-params-required) and the headers
  ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*`` (TR-protocol-version-header,
  TR-mcp-method-name, TR-mcp-param-headers: from each tool's ``x-mcp-header`` seen in tools/list,
  schema/2026-07-28/schema.ts:1997); ``Mcp-Session-Id`` and ``Last-Event-ID`` stay behind.
- **Multi round-trip requests** (:class:`Call`; MRTR-bridge-legacy-client,
  docs/specification/2026-07-28/basic/patterns/mrtr.mdx:249): an ``InputRequiredResult``
  (schema/2026-07-28/schema.ts:584) becomes server->client requests on the SSE stream of the
  client's POST (MRTR-embedded-requests: ``jsonrpc`` and a proxy id added, downgraded to the
  client's revision; a URL elicitation to a 2025-11-25 client gets a synthesized ``elicitationId``,
  ELIC-elicitationId); the client's answers (separate POSTs, consumed: a 2026 server never gets a
  POSTed response, TR-post-body) go upstream as ``inputResponses`` with the untouched
  ``requestState`` under a new id, as long as the server asks; the final result reaches the client
  under its own id. A client lacking the capability gets -32603 naming it.
  The answer streams through mcpx's answer endpoint (:mod:`.stream`: mitmproxy has no API for a
  response an addon writes over time), only when it must (an input request, a notification before
  the result); an answer that is one JSON body is given at once.
- **Notifications** (:class:`Listen`; TR-get-stream, SUB-*): the client's GET stream is served from
  an upstream ``subscriptions/listen`` (schema/2026-07-28/schema.ts:1314) whose filter has the
  ``listChanged`` kinds the server announced and the URIs the client subscribed; the ack is
  consumed (SUB-acknowledged), ``subscriptionId`` removed (META-subscriptionId).
- **Answers**: downgraded by the rules as any 2026-07-28 message toward the client's revision
  (RES-resultType, RES-ttlMs, RES-cacheScope, META-serverInfo, ERR-*); an HTTP 400/404 carrying a
  JSON-RPC error reaches the client as HTTP 200 (TR-modern-400-errors, TR-unknown-method-404;
  mcp 2.3.0 sends every -32602/-32600 as 400: BRIDGING.md 4.3).

State: what never changes is sealed in the session token (revisions, capabilities, clientInfo);
the log level, subscribed URIs, open listen streams and outstanding input requests live in this
process only (a failover loses them: README "Legacy clients in front of a 2026-07-28 server").
"""

from .bridge import LegacyClientBridge
from .call import Call
from .lifecycle import CallEvent, CallLifecycle, CallState, CallStateError
from .listen import Listen
from .envelope import Prepared
from .shared import (CAPS, INFO, INPUT_TIMEOUT, JSON_HEADERS, LATEST, LOG, MAX_ROUNDS, MAX_SESSIONS, NAME, NOTE,
                     PAGINATED, PV, SERVER_INFO, Pending, SessionState, sse_event)

__all__ = ["CAPS", "INFO", "INPUT_TIMEOUT", "JSON_HEADERS", "LATEST", "LOG", "MAX_ROUNDS", "MAX_SESSIONS", "NAME", "NOTE",
           "PAGINATED", "PV", "SERVER_INFO", "Call", "CallEvent", "CallLifecycle", "CallState", "CallStateError",
           "LegacyClientBridge", "Listen", "Pending", "Prepared", "SessionState", "sse_event"]
