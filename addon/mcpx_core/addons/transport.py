"""The hooks of the transport bridges (:mod:`mcpx_core.transport`): each reads the flow, asks the
transport one question and acts on its one typed answer.

:class:`TransportRequests` runs before :class:`~.requests.ClientRequests`: a request the transport
takes (the HTTP+SSE client's stream and its POSTs) is answered here and no other hook handles it.
:class:`TransportResponses` runs after :class:`~.responses.ServerResponses`: a leg's answer, as
mcpx rewrote it for the client, goes to the client's stream (:mod:`mcpx_core.transport.http_sse.legs`).
"""

from __future__ import annotations

import logging

from mitmproxy import http

from ..bridge import Answer, Streamed
from .headers import make_response
from .state import State

logger = logging.getLogger("mcpx")


class TransportRequests:
    name = "mcpx.transport.requests"

    def __init__(self, state: State) -> None:
        self.state = state

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        self.state.transport.claim(flow)

    async def request(self, flow: http.HTTPFlow) -> None:
        st = self.state
        try:
            out = await st.transport.request(flow)
        except Exception as e:  # never lose a message: the request goes on as any other
            logger.warning(f"mcpx: HTTP+SSE transport failed: {type(e).__name__}: {e}")
            flow.metadata.pop("mcpx_transport", None)
            return
        match out:
            case Streamed(stream=stream, note=note):
                await st.answers.ensure()
                st.answers.route(flow, stream)
                flow.comment = f"mcpx: answered by mcpx ({note})"
            case Answer(status=status, body=body, headers=headers, note=note):
                flow.response = make_response(status, body, headers)
                flow.comment = f"mcpx: answered by mcpx ({note})"


class TransportResponses:
    name = "mcpx.transport.responses"

    def __init__(self, state: State) -> None:
        self.state = state

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        self.state.transport.responseheaders(flow)

    def response(self, flow: http.HTTPFlow) -> None:
        self.state.transport.response(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self.state.transport.error(flow)
