"""A modern MCP server on PyPI `mcp==2.3.0` (MCPServer API) for mcpx tests.

    tests/peers/.venvs/mcp-2.3.0/bin/python py_server.py PORT [--stateless] [--json] [--mrtr-tools] [--only-2026] [--path PATH]

Serves Streamable HTTP on http://127.0.0.1:PORT/mcp, dual-era (legacy initialize and
2026-07-28). --mrtr-tools adds the client-input and notification tools of py_server_mrtr.py;
--only-2026 (implies it) serves behind py_server_mrtr.Only2026Gate: a 2026-07-28-only server
(see BRIDGING.md). Without those flags the server is exactly as before. Every tool returns a fixed,
deterministic result that uses a "modern" shape (audio, resource_link, embedded
resources, structuredContent + outputSchema, titles, icons, annotations), so
older clients can be checked with and without the proxy.
Note: the SDK enables DNS-rebinding protection for 127.0.0.1, so requests must
carry Host: 127.0.0.1:PORT or localhost:PORT.
"""

import base64
import io
import sys
import wave

from mcp.server.mcpserver import Audio, Context, Image, MCPServer, UserMessage
from mcp.types import (
    Annotations,
    BlobResourceContents,
    EmbeddedResource,
    Icon,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from pydantic import BaseModel, Field

# 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
ICON = Icon(src="data:image/png;base64," + base64.b64encode(PNG).decode(), mime_type="image/png", sizes=["1x1"])


def _wav() -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(8000)
        w.writeframes(bytes(range(0, 256, 16)))
    return buf.getvalue()


WAV = _wav()
READ_ONLY = ToolAnnotations(title="Read-only tool", read_only_hint=True, idempotent_hint=True, open_world_hint=False)
LINK = ResourceLink(
    uri="resource://greeting",
    name="greeting",
    title="Greeting",
    description="A greeting text resource",
    mime_type="text/plain",
    icons=[ICON],
)

mcp = MCPServer("mcpx-py-peer", title="mcpx Python peer", version="1.0.0", icons=[ICON], log_level="WARNING")


@mcp.tool(title="Add two numbers", annotations=READ_ONLY)
def add(a: int, b: int) -> str:
    """Plain text result: works for every client."""
    return f"{a} + {b} = {a + b}"


@mcp.tool(title="Text and image", icons=[ICON], annotations=READ_ONLY)
def text_and_image() -> list:
    """A text block and an image block."""
    return [TextContent(type="text", text="a 1x1 PNG follows"), Image(data=PNG, format="png")]


@mcp.tool(title="Audio clip", annotations=READ_ONLY)
def audio_clip() -> Audio:
    """An audio block (2025-03-26+)."""
    return Audio(data=WAV, format="wav")


@mcp.tool(title="Resource link", icons=[ICON], annotations=READ_ONLY)
def resource_link() -> list:
    """A text block and a resource_link block (2025-06-18+)."""
    return [TextContent(type="text", text="see the linked resource"), LINK]


@mcp.tool(title="Embedded text resource", annotations=READ_ONLY)
def embedded_text() -> EmbeddedResource:
    """An embedded text resource with annotations."""
    return EmbeddedResource(
        type="resource",
        resource=TextResourceContents(uri="resource://greeting", mime_type="text/plain", text="Hello, world!"),
        annotations=Annotations(audience=["user", "assistant"], priority=0.5),
    )


@mcp.tool(title="Embedded blob resource", annotations=READ_ONLY)
def embedded_blob() -> EmbeddedResource:
    """An embedded blob resource."""
    return EmbeddedResource(
        type="resource",
        resource=BlobResourceContents(
            uri="resource://logo.png", mime_type="image/png", blob=base64.b64encode(PNG).decode()
        ),
    )


class Weather(BaseModel):
    city: str
    temperature: float = Field(description="Celsius")
    conditions: str


@mcp.tool(title="Structured weather", annotations=READ_ONLY)
def weather(city: str = "Paris") -> Weather:
    """structuredContent with an outputSchema (2025-06-18+)."""
    return Weather(city=city, temperature=21.5, conditions="sunny")


@mcp.tool(title="Progress reporter")
async def progress(ctx: Context, steps: int = 3) -> str:
    """Sends notifications/progress (only if the client sent a progressToken)."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, message=f"step {i}")
    return f"done in {steps} steps"


class Name(BaseModel):
    name: str = Field(description="Your name")


@mcp.tool(title="Elicit a name")
async def ask_name(ctx: Context) -> str:
    """Sends elicitation/create (form mode); needs a client with elicitation."""
    result = await ctx.elicit("What is your name?", Name)
    if result.action == "accept":
        return f"Hello, {result.data.name}!"
    return f"elicitation {result.action}"


@mcp.prompt(title="Plain prompt", icons=[ICON])
def plain_prompt(topic: str = "MCP") -> str:
    """A text-only prompt."""
    return f"Tell me about {topic}."


@mcp.prompt(title="Rich prompt")
def rich_prompt() -> list:
    """A prompt with a resource_link and an audio message."""
    return [UserMessage("Listen and read:"), UserMessage(LINK), UserMessage(Audio(data=WAV, format="wav"))]


@mcp.resource("resource://greeting", name="greeting", title="Greeting", icons=[ICON], mime_type="text/plain")
def greeting() -> str:
    return "Hello, world!"


@mcp.resource("resource://logo.png", name="logo", title="Logo", mime_type="image/png")
def logo() -> bytes:
    return PNG


@mcp.resource("resource://items/{item_id}", name="item", title="Item by id", mime_type="text/plain")
def item(item_id: str) -> str:
    return f"item {item_id}"


if __name__ == "__main__":
    args = sys.argv[1:]
    path = "/mcp"
    if "--path" in args:  # --path /prefix/mcp: the Streamable HTTP endpoint's path (a path-prefixed deployment)
        at = args.index("--path")
        path = args[at + 1]
        del args[at:at + 2]
    flags = {"--stateless", "--json", "--mrtr-tools", "--only-2026"}
    if not args or not args[0].isdigit() or set(args[1:]) - flags:
        sys.exit("usage: py_server.py PORT [--stateless] [--json] [--mrtr-tools] [--only-2026] [--path PATH]")
    if "--mrtr-tools" in args or "--only-2026" in args:
        import py_server_mrtr

        py_server_mrtr.register(mcp)
    if "--only-2026" in args:
        py_server_mrtr.run_only_2026(mcp, int(args[0]), stateless="--stateless" in args, json_response="--json" in args)
    else:
        mcp.run("streamable-http", host="127.0.0.1", port=int(args[0]), streamable_http_path=path,
                stateless_http="--stateless" in args, json_response="--json" in args)
