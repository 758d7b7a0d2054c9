"""Streamable HTTP clients in front of a server that speaks only the 2024-11-05 HTTP+SSE transport.

The reverse of :mod:`..http_sse`. schema/2024-11-05 transports ("HTTP with SSE"): the server's GET
stream opens with ``event: endpoint`` (the URL every client message is POSTed to, ``202``), and
every answer and server message arrives on that one stream as ``event: message``. A 2025-03-26+
client instead POSTs each message and expects the answer on that POST (2025-03-26 transports
"Streamable HTTP" 2.1). mcpx holds one upstream stream per client session and answers each client
POST from the stream's messages that belong to it.

Modules: :mod:`.wire` (sans-IO: which refusals of a POST mean an HTTP+SSE-only server, which path
is probed, the ``endpoint`` URL as the SDKs resolve it), :mod:`.router` (sans-IO: which stream each
upstream message goes to, and in what order), :mod:`.verdicts` (sans-IO: the probe's verdict per
origin and path, bounded), :mod:`.lifecycle` (the upstream session's states,
one table); :mod:`.serve` the IO adapter, asked by the hooks of ``addons/upstream_sse.py`` (docs/transports.md).
"""

#: seconds the probe GET waits for the server's first SSE event (``endpoint``)
PROBE_TIMEOUT = 10.0
#: server messages kept for a client session whose standalone GET stream is not open yet
QUEUE_LIMIT = 256
#: seconds between keepalive comments on the client's GET stream (idle load balancers cut silent
#: streams after minutes; an SSE comment is ignored by every client, schema/2025-03-26 transports 2.2)
KEEPALIVE = 15.0
