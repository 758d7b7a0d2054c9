"""The 2024-11-05 HTTP+SSE transport for clients in front of a Streamable-HTTP-only server.

schema/2024-11-05 transports ("HTTP with SSE"): the client opens ``GET <url>`` as an SSE stream; the
server's first event is ``event: endpoint`` whose data is the URL the client POSTs every JSON-RPC
message to (answered ``202 Accepted``); every answer and server message arrives on the GET stream
as ``event: message``. 2025-03-26 "Streamable HTTP" replaced it, and its "Backwards compatibility"
section asks servers to host both: where the server does not, mcpx serves the old transport
itself and carries each message to the server's Streamable HTTP endpoint.

Modules: :mod:`.wire` (sans-IO: which requests open the transport, which upstream path is the MCP
endpoint, the endpoint URL, the SSE events mcpx writes), :mod:`.lifecycle` (the transport
session's states and events, one table), :mod:`.legs` (the Streamable HTTP requests mcpx sends
for the client, through the whole pipeline), :mod:`.serve` (the IO adapter the hooks ask).

The time constants are read here at each use, so a script that sets them takes effect:
"""

#: seconds between keepalive comments on the client's stream (idle load balancers cut silent
#: streams: nginx ``proxy_read_timeout`` 60 s, AWS ALB 60 s idle timeout by default)
KEEPALIVE = 15.0
#: seconds the probe of the client's SSE path waits for the server's status line
PROBE_TIMEOUT = 10.0
