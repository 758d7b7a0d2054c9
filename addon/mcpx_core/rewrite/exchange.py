"""What mcpx knows about one HTTP exchange (one mitmproxy flow): :class:`Exchange`, and how much of
it a flow keeps (:data:`FLOW_KEEP_MAX`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..changes import Change
from ..disposition import Disposition
from ..session import Session

#: at most this many message entries and change records are kept per flow (``Exchange.messages``,
#: ``Exchange.changes``), so a long SSE stream does not grow memory; the rest are counted
FLOW_KEEP_MAX = 1000


@dataclass
class Exchange:
    """What mcpx knows about one HTTP request/response pair (one mitmproxy flow).

    ``request_ids``: id -> method of every JSON-RPC request in the request body; ``initialize``:
    the initialize request it carries; ``replies``: JSON-RPC messages mcpx would send to the server
    itself (answers on the client's behalf), kept when it cannot send them (offline replay);
    ``late_answers``: errors for batch members mcpx answered itself, appended to the batch's
    answer; ``changes``: every record so far.
    """

    flow_id: str | None = None
    #: the server's origin (scheme://host:port): era verdicts are kept per origin
    origin: str = ""
    #: the server's origin and path (``scheme://host:port/path``, no query): servers seen priming an
    #: SSE stream are kept by it (mcpx_sse_resume=auto, :mod:`mcpx_core.bridge.resume`)
    endpoint: str = ""
    session: Session | None = None
    #: fallback session keys for clients that echo no session id: the client's connection, then its host
    client_keys: tuple[str, ...] = ()
    #: the messages of the client's request body as the flow list names them (:func:`mcpx_core.flowlist.carried`)
    carries: str = ""
    #: the keyed digest of the request's credentials (:func:`mcpx_core.identity.credentials_key`; "" none):
    #: what mcpx keeps on a client's behalf is keyed by it
    credentials: str = ""
    #: the server's origin and the request's whole path, query included (``scheme://host:port/path?query``):
    #: tenants told apart by path, and credentials in the query, scope what mcpx keeps too
    target: str = ""
    is_mcp: bool = False
    request_ids: dict = field(default_factory=dict)
    #: the ids of ``request_ids`` the server answered so far (a result or an error)
    answered_ids: set = field(default_factory=set)
    single_request_id: Any = None
    initialize: dict | None = None
    replies: list[dict] = field(default_factory=list)
    late_answers: list[dict] = field(default_factory=list)
    #: mcpx wrote this flow's response itself (it is already for the client's revision)
    answered: bool = False
    #: ... as a stream it writes over time (bridge/stream.py): mitmproxy must stream it through
    streamed: bool = False
    #: that stream (:class:`mcpx_core.bridge.stream.AnswerStream`): what it delivered is the flow's body
    answer_stream: Any = None
    #: mcpx sent this request's content to the server itself (an action of addons/actions.py): whatever
    #: goes wrong after, mitmproxy must never forward the request as well
    upstream_sent: bool = False
    #: why mcpx answered this flow itself (a bridge), shown in the views and the flow's comment
    answered_by: str | None = None
    #: mcpx relays this flow's request and answer itself (:mod:`mcpx_core.bridge.resume`): what it
    #: resumes, shown in the views and the flow's comment; its answer is rewritten as any other
    relayed: str | None = None
    #: the disposition decided from the headers alone (a request body mitmproxy streams, or may)
    early: Disposition | None = None
    #: records held back (:meth:`Rewriter.flush`): those of a disposition decided from the headers of a
    #: body mitmproxy may or may not stream, logged only once it did (else the body decides, as for any request)
    deferred: list | None = None
    #: what puts such a request back as the client sent it (its headers, its route to the server)
    undo: Callable[[], None] | None = None
    #: request ids mcpx gave the server (RPC-request-id-reuse) -> the client's own, put back on the answer
    id_map: dict = field(default_factory=dict)
    #: the record of a pinned initialize result, logged with that message's other changes
    pin_change: Change | None = None
    #: id -> tool name of the tools/call requests in the request body (named in audit records)
    tool_calls: dict = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)  # per message: kind, method, id, direction, change count
    #: messages and records beyond :data:`FLOW_KEEP_MAX` (not kept on the flow; every record is still logged)
    messages_omitted: int = 0
    changes_omitted: int = 0

    @property
    def client_scope(self) -> tuple[str, str]:
        """What mcpx keeps on a client's behalf is kept for exactly this: the URL the client asked for
        (:attr:`target`, else the origin) and its credentials; a request that sends none, its host
        (``host:`` and the client's IP address): credentialless clients on two hosts never share what
        mcpx keeps (a bridge's upstream session, whose GET stream's requests and notifications reach
        every client of it: docs/security.md)."""
        if self.credentials:
            return self.target or self.origin, self.credentials
        return self.target or self.origin, next((k for k in self.client_keys if k.startswith("host:")), "")

    @property
    def revisions(self) -> tuple[str | None, str | None]:
        s = self.session
        if s is None:
            return None, None
        return s.server_rev, s.client_leg


