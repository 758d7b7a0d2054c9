"""Transports: a client and a server that carry MCP messages over different HTTP transports meet
in a transport bridge of its own, one folder per pair, around one session.

- :mod:`.http_sse`: a client of the 2024-11-05 HTTP+SSE transport in front of a server that serves
  only Streamable HTTP (2025-03-26 on).

The rules never see which transport carried a message: a transport bridge hands each message to
the same pipeline a Streamable HTTP client's request goes through (session, bridges, rules,
repair, records), as flows of their own through mitmproxy's core.
"""
