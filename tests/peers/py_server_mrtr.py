"""Extras for py_server.py: client-input tools (MRTR) and the 2026-07-28-only gate.

    py_server.py PORT --mrtr-tools     the dual-era server plus the tools below
    py_server.py PORT --only-2026      the same, behind Only2026Gate (implies --mrtr-tools)

`register(mcp)` adds tools, a prompt and a resource template that need client input, and
two tools that publish change notifications. They use only mcp 2.3.0's own mechanisms, so
each works in both eras with the same code: on a 2025-era session the SDK sends a
server->client request (elicitation/create, sampling/createMessage, roots/list) on the POST's
SSE stream; on a 2026-07-28 request it answers with an InputRequiredResult and resumes on
the retry that carries inputResponses + requestState.

| name | kind | needs | rounds (2026) | inputRequests keys |
|---|---|---|---|---|
| mrtr_elicit | tool | elicitation (form) | 1 | py_server_mrtr:_ask_name |
| mrtr_sample | tool(topic) | sampling | 1 | py_server_mrtr:_sample_haiku |
| mrtr_roots | tool | roots | 1 | py_server_mrtr:_list_roots |
| mrtr_all | tool(topic) | all three | 1 (three requests in one result) | the three above |
| mrtr_two_rounds | tool | elicitation, then sampling that uses the answer | 2 | _ask_name, then _greet |
| mrtr_prompt | prompt | elicitation (hand-rolled InputRequiredResult) | 1 | topic |
| resource://mrtr/{item} | resource template | roots (hand-rolled) | 1 | roots |
| add_dynamic_tool(name) | tool | - | - | adds tool `name`, publishes tools/list_changed |
| touch_resource(uri) | tool | - | - | publishes resources/updated for `uri` |
| log_note(text) | tool | - | - | notifications/message at info (2026-07-28: only if the request's _meta logLevel asks) |
| region_echo(region) | tool | - | - | `region` carries `x-mcp-header: Region` (2026-07-28: header Mcp-Param-Region) |

The resolver-based tools (`Resolve(...)`, mcp.server.mcpserver.resolve) key each input
request by the resolver's `module:qualname`; the hand-rolled prompt/resource use the keys
"topic" and "roots" and a plaintext requestState that the SDK seals (AES-GCM, bound to
method + name/uri + arguments, 600 s) before it goes on the wire.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp_types import (
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    SamplingMessage,
    TextContent,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field


class Name(BaseModel):
    name: str = Field(description="Your name")


class Topic(BaseModel):
    topic: str = Field(description="A topic")


# --- resolvers: each asks one question; the SDK picks the era's transport -------------------


def _ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def _sample_haiku(topic: str) -> Sample:
    text = TextContent(type="text", text=f"Write a haiku about {topic}.")
    return Sample([SamplingMessage(role="user", content=text)], max_tokens=60)


def _list_roots() -> ListRoots:
    return ListRoots()


def _greet(name: Annotated[Name, Resolve(_ask_name)]) -> Sample:
    text = TextContent(type="text", text=f"Greet {name.name} in five words.")
    return Sample([SamplingMessage(role="user", content=text)], max_tokens=30)


def _sampled_text(result: CreateMessageResult) -> str:
    content = result.content
    return content.text if isinstance(content, TextContent) else json.dumps(content.model_dump(mode="json"))


def _roots_text(result: ListRootsResult) -> str:
    return ", ".join(str(r.uri) for r in result.roots) or "(no roots)"


async def mrtr_elicit(answer: Annotated[ElicitationResult[Name], Resolve(_ask_name)]) -> str:
    """Asks the client for a name (form elicitation)."""
    if isinstance(answer, AcceptedElicitation):
        return f"Hello, {answer.data.name}!"
    return f"elicitation {answer.action}"


async def mrtr_sample(reply: Annotated[CreateMessageResult, Resolve(_sample_haiku)], topic: str = "proxies") -> str:
    """Asks the client's LLM for a haiku (sampling)."""
    return f"sampled ({reply.model}): {_sampled_text(reply)}"


async def mrtr_roots(roots: Annotated[ListRootsResult, Resolve(_list_roots)]) -> str:
    """Asks the client for its roots."""
    return f"roots: {_roots_text(roots)}"


async def mrtr_all(
    answer: Annotated[ElicitationResult[Name], Resolve(_ask_name)],
    reply: Annotated[CreateMessageResult, Resolve(_sample_haiku)],
    roots: Annotated[ListRootsResult, Resolve(_list_roots)],
    topic: str = "proxies",
) -> str:
    """Elicitation, sampling and roots at once (one InputRequiredResult with three requests)."""
    who = answer.data.name if isinstance(answer, AcceptedElicitation) else f"({answer.action})"
    return f"name: {who}; sampled: {_sampled_text(reply)}; roots: {_roots_text(roots)}"


async def mrtr_two_rounds(reply: Annotated[CreateMessageResult, Resolve(_greet)]) -> str:
    """Elicits a name, then samples a greeting for it: two input_required rounds on 2026-07-28."""
    return f"greeting: {_sampled_text(reply)}"


# --- hand-rolled InputRequiredResult (prompts and resources have no Resolve(...)) -----------


def _modern(ctx: Context) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


async def mrtr_prompt(ctx: Context) -> Any:
    """A prompt whose topic is elicited from the user (prompts/get with MRTR)."""
    message = "Which topic should the prompt be about?"
    if not _modern(ctx):
        res = await ctx.elicit(message, Topic)
        topic = res.data.topic if isinstance(res, AcceptedElicitation) else f"({res.action})"
        return f"Tell me about {topic}."
    answer = (ctx.input_responses or {}).get("topic")
    if not isinstance(answer, ElicitResult):
        return InputRequiredResult(
            input_requests={
                "topic": ElicitRequest(
                    params=ElicitRequestFormParams(message=message, requested_schema=render_elicitation_schema(Topic))
                )
            },
            request_state="mrtr_prompt:asked-topic",
        )
    if ctx.request_state != "mrtr_prompt:asked-topic":
        raise ValueError(f"unexpected requestState {ctx.request_state!r}")
    topic = (answer.content or {}).get("topic") if answer.action == "accept" else f"({answer.action})"
    return f"Tell me about {topic}."


async def mrtr_resource(item: str, ctx: Context) -> Any:
    """Text naming the client's roots (resources/read with MRTR)."""
    if not _modern(ctx):
        roots = await ctx.session.list_roots()
        return f"item {item} under {_roots_text(roots)}"
    answer = (ctx.input_responses or {}).get("roots")
    if not isinstance(answer, ListRootsResult):
        return InputRequiredResult(input_requests={"roots": ListRootsRequest()}, request_state=f"mrtr_resource:{item}")
    return f"item {item} under {_roots_text(answer)}"


# --- change notifications ---------------------------------------------------------------------


def _make_dynamic(name: str) -> Any:
    def dynamic(text: str = "") -> str:
        return f"{name}: {text}"

    dynamic.__name__ = name
    dynamic.__doc__ = "A tool added at run time by add_dynamic_tool."
    return dynamic


def register(mcp: MCPServer) -> None:
    """Add the client-input tools, prompt and resource template, and the notifier tools."""
    for fn in (mrtr_elicit, mrtr_sample, mrtr_roots, mrtr_all, mrtr_two_rounds):
        mcp.add_tool(fn)
    mcp.prompt(title="Prompt with an elicited topic")(mrtr_prompt)
    mcp.resource("resource://mrtr/{item}", name="mrtr-item", title="Item needing roots", mime_type="text/plain")(
        mrtr_resource
    )

    @mcp.tool(title="Add a tool")
    async def add_dynamic_tool(ctx: Context, name: str = "dynamic_echo") -> str:
        """Adds tool `name` (if new) and announces notifications/tools/list_changed."""
        if mcp._tool_manager.get_tool(name) is None:  # noqa: SLF001 (the SDK has no public lookup)
            mcp.add_tool(_make_dynamic(name), name=name)
        await ctx.notify_tools_changed()  # 2026-07-28: subscriptions/listen streams
        if not _modern(ctx):
            await ctx.session.send_tool_list_changed()  # 2025 era: the session's GET stream
        return f"tool {name} present"

    @mcp.tool(title="Log a note")
    async def log_note(ctx: Context, text: str = "note") -> str:
        """Sends notifications/message at level info, then returns."""
        await ctx.info(text)
        return f"logged {text}"

    @mcp.tool(title="Echo a region")
    def region_echo(
        region: Annotated[str, Field(description="A region", json_schema_extra={"x-mcp-header": "Region"})] = "eu",
    ) -> str:
        """Its argument is mirrored into the Mcp-Param-Region header on 2026-07-28 (x-mcp-header)."""
        return f"region {region}"

    @mcp.tool(title="Touch a resource")
    async def touch_resource(ctx: Context, uri: str = "resource://greeting") -> str:
        """Announces notifications/resources/updated for `uri`."""
        await ctx.notify_resource_updated(uri)
        if not _modern(ctx):
            await ctx.session.send_resource_updated(uri)
        return f"touched {uri}"


# --- the 2026-07-28-only gate -----------------------------------------------------------------


class Only2026Gate:
    """ASGI middleware that makes the dual-era mcp 2.3.0 server a 2026-07-28-only server.

    The server's own code stays the SDK's: the gate only refuses legacy traffic. The SDK's
    StreamableHTTPSessionManager routes by the MCP-Protocol-Version header alone
    (streamable_http_manager.py `_handle_request`): a value outside the handshake versions
    goes to its 2026 entry (`_streamable_http_modern.handle_modern_request`), anything else
    (no header, or 2024-11-05..2025-11-25) to its legacy session transport. The gate lets the
    first kind through untouched and hands every request of the second kind to the SDK's own
    2026 entry instead, so the refusals are the SDK's 2026 answers:

    - GET / DELETE (and any other non-POST) -> 405, `Allow: POST`
      (spec: 2026 streamable-http "Backward Compatibility": a 2026-only server SHOULD answer
      GET/DELETE with 405; REVISIONS.md TR-get-stream, TR-session-delete,
      docs/specification/2026-07-28/basic/transports/streamable-http.mdx:670).
    - a request without `params._meta` protocolVersion + clientCapabilities -> 400, -32602
      (REVISIONS.md META-protocolVersion: docs/specification/2026-07-28/basic/index.mdx:375).
    - enveloped but without the MCP-Protocol-Version header -> 400, -32020 HeaderMismatch
      (streamable-http.mdx:257, "Server Validation").
    - a notification (e.g. notifications/initialized) with no or a legacy header -> 400,
      -32022 with data.supported (the SDK's notification arm checks only the version header).
    - a batch array or a POSTed JSON-RPC response -> 400, -32600.
    - Mcp-Session-Id / Last-Event-ID headers are ignored; no session id is ever minted.

    One exception, `initialize`: the SDK's 2026 entry would say -32602 (no `_meta`), which
    names no version. versioning.mdx ("Backward Compatibility with Initialization-Based
    Versions") says a modern-only server SHOULD name its supported versions in any error
    it returns to `initialize`, and the compatibility matrix gives HTTP 400 for a legacy
    client against a modern server (REVISIONS.md 2.3 cites versioning.mdx:159). The gate
    therefore answers a POSTed `initialize` itself with HTTP 400 and the JSON-RPC error
    -32022 UnsupportedProtocolVersionError, data {supported: ["2026-07-28"], requested:
    <params.protocolVersion>}: the same code and data mcp 2.3.0 itself uses for
    `initialize` on its modern-locked stream connections (mcp/server/runner.py
    `_serve_modern_stream`, `_initialize_after_modern_data`).

    Requests whose MCP-Protocol-Version is 2026-07-28 (or any non-handshake value, which the
    SDK answers with -32022) reach the SDK exactly as without the gate. Unknown methods and
    removed ones (ping, logging/setLevel, resources/subscribe) are answered by the SDK there:
    404 with -32601.
    """

    def __init__(self, app: Any, mcp: MCPServer, path: str = "/mcp") -> None:
        self.app = app
        self.mcp = mcp
        self.path = path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        version = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"mcp-protocol-version"), None)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await self.app(scope, receive, send)  # the SDK's own 2026 entry
            return
        await self._refuse_legacy(scope, receive, send)

    async def _refuse_legacy(self, scope: Any, receive: Any, send: Any) -> None:
        from mcp.server._streamable_http_modern import handle_modern_request
        from mcp.server.transport_security import TransportSecurityMiddleware
        from starlette.requests import Request
        from starlette.responses import Response

        body = b""
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)

        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        manager = self.mcp.session_manager
        if scope["method"] == "POST":
            try:
                decoded = json.loads(body)
            except ValueError:
                decoded = None
            if isinstance(decoded, dict) and decoded.get("method") == "initialize" and "id" in decoded:
                security = TransportSecurityMiddleware(manager.security_settings)
                refused = await security.validate_request(Request(scope, replay), is_post=True)
                if refused is not None:
                    await refused(scope, replay, send)
                    return
                params = decoded.get("params")
                requested = params.get("protocolVersion") if isinstance(params, dict) else None
                supported = list(MODERN_PROTOCOL_VERSIONS)
                data: dict[str, Any] = {"supported": supported}
                if isinstance(requested, str):
                    data["requested"] = requested
                error = {
                    "code": -32022,
                    "message": f"Unsupported protocol version: this server speaks only {', '.join(supported)} "
                    "(no initialize handshake)",
                    "data": data,
                }
                answer = {"jsonrpc": "2.0", "id": decoded["id"], "error": error}
                await Response(json.dumps(answer, separators=(",", ":")), 400, media_type="application/json")(
                    scope, replay, send
                )
                return
        await handle_modern_request(
            manager.app,
            manager.security_settings,
            manager.json_response,
            manager._lifespan_state,  # noqa: SLF001 (what the manager passes itself)
            scope,
            replay,
            send,
        )


def run_only_2026(mcp: MCPServer, port: int, stateless: bool = False, json_response: bool = False) -> None:
    """Serve `mcp` on 127.0.0.1:port/mcp behind Only2026Gate (as MCPServer.run would, plus the gate)."""
    import uvicorn

    app = mcp.streamable_http_app(
        json_response=json_response, stateless_http=stateless, host="127.0.0.1", streamable_http_path="/mcp"
    )
    uvicorn.run(Only2026Gate(app, mcp), host="127.0.0.1", port=port, log_level=mcp.settings.log_level.lower())
