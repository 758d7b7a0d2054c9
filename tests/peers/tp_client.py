"""Released third-party MCP clients (fastmcp, langchain-mcp-adapters, pydantic-ai, openai-agents)
driven through their OWN high-level API, over Streamable HTTP.

    tests/peers/.venvs/<client>/bin/python tp_client.py <client> <url> <ops.json|-> [options-json]

<client> is a scenarios.json client name and the venv's name: fastmcp-2.3.4, fastmcp-2.10.6,
langchain-mcp-adapters-0.1.7, pydantic-ai-slim-0.4.4, openai-agents-0.0.19.
Same ops and output as py_client.py. Each op goes through the library's user-facing call:

  fastmcp           Client(url): list_tools, call_tool (+progress_handler on 2.10.6), list_prompts,
                    get_prompt, list_resources, read_resource, list_resource_templates, ping;
                    sampling_handler (and elicitation_handler on 2.10.6)
  langchain         MultiServerMCPClient({...streamable_http}).session(): load_mcp_tools, the
                    LangChain tool's ainvoke(ToolCall), load_mcp_prompt, load_mcp_resources
                    (listResources = load all; readResource = uris=[uri]); sampling via the
                    connection's session_kwargs. Option {"langchain": "per-call"} uses
                    client.get_tools() instead (a new MCP session per tool call, as its README shows)
  pydantic-ai       MCPServerStreamableHTTP(url) as a toolset: get_tools(ctx), call_tool(name, args,
                    ctx, tool) with a RunContext on pydantic-ai's own TestModel (no LLM);
                    sampling_model=TestModel
  openai-agents     MCPServerStreamableHttp({"url": url}): connect, list_tools, call_tool
                    (tracing disabled)

An op the library has no API for is reported {"ok": false, "errorType": "NoAPI"} (scenarios.json
lists them under the client's "unsupported", so scenario_ops() leaves them out).
A tool result with isError is reported ok with result.isError, also when the library raised its
own is-error exception (fastmcp ToolError, LangChain ToolException: both only raised for isError).
Control ops (not reported): {"op":"sleep","seconds":N}, {"op":"signal","path":P} (create file P),
{"op":"waitFor","path":P,"timeoutMs":N}: for interleaving two clients. Control ops before the first
MCP op run before the client connects (initializes).

Prints ONE JSON line: {"client", "library", "version", "mcp", "protocolVersion",
"protocolVersionSource", "clientInfo", "initializeCount", "results", "serverRequests"}.
protocolVersion comes from the library's API where it has one (fastmcp 2.10.6
Client.initialize_result, openai-agents server_initialize_result); else from a pass-through spy on
mcp's ClientSession.initialize (it only records the result). Exit 0 once connected; 2 otherwise.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import sys
import time
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")  # openai-agents: never export traces
os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")

import mcp.types as types  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from peer_common import error_info, sample_value  # noqa: E402

CONTROL_OPS = ("sleep", "signal", "waitFor")
server_requests: list[dict[str, Any]] = []
inits: list[dict[str, Any]] = []


# ---------------------------------------------------------------- observation only
_orig_initialize = ClientSession.initialize


async def _initialize_spy(self: ClientSession, *a: Any, **kw: Any) -> Any:
    """Calls mcp's own initialize unchanged and records what it sent and got."""
    result = await _orig_initialize(self, *a, **kw)
    info = getattr(self, "_client_info", None)
    inits.append(
        {
            "protocolVersion": result.protocolVersion,
            "serverInfo": jsonable(result.serverInfo),
            "clientInfo": jsonable(info) if info is not None else None,
        }
    )
    return result


ClientSession.initialize = _initialize_spy  # type: ignore[method-assign]


def jsonable(obj: Any, depth: int = 0) -> Any:
    """A JSON view of whatever a library returned (pydantic models, dataclasses, LangChain objects)."""
    if depth > 30:
        return repr(obj)
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    if isinstance(obj, bytes):
        return {"__bytes": len(obj), "b64": base64.b64encode(obj[:64]).decode()}
    if isinstance(obj, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set):
        return [jsonable(v, depth + 1) for v in obj]
    if hasattr(obj, "model_dump"):
        try:
            return jsonable(obj.model_dump(mode="json", by_alias=True, exclude_none=True), depth + 1)
        except Exception:  # noqa: BLE001
            pass
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"__type": type(obj).__name__, **{f.name: jsonable(getattr(obj, f.name), depth + 1) for f in dataclasses.fields(obj)}}
    if type(obj).__name__ == "Blob" and hasattr(obj, "as_bytes"):  # LangChain Blob
        data = obj.as_bytes()
        return {"__type": "Blob", "mimetype": obj.mimetype, "metadata": jsonable(obj.metadata), "size": len(data)}
    if hasattr(obj, "__dict__"):
        return {"__type": type(obj).__name__, **{k: jsonable(v, depth + 1) for k, v in vars(obj).items() if not k.startswith("_")}}
    return repr(obj)


def is_error_result(text: str, raised: str) -> dict[str, Any]:
    return {"isError": True, "content": [{"type": "text", "text": text}], "raisedBy": raised}


class NoAPI(Exception):
    """The library has no user-facing call for this op."""


# ---------------------------------------------------------------- adapters
class Adapter:
    library = ""
    protocol_source = "spy"

    def __init__(self, url: str, options: dict[str, Any]) -> None:
        self.url, self.options = url, options

    async def __aenter__(self) -> Adapter:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    def protocol_version(self) -> str | None:
        return inits[0]["protocolVersion"] if inits else None

    async def run(self, op: dict[str, Any]) -> Any:
        handler = getattr(self, "op_" + str(op.get("op")), None)
        if handler is None:
            raise NoAPI(f"{self.library} has no API for {op.get('op')}")
        return await handler(op)


class FastMCP(Adapter):
    library = "fastmcp"

    def __init__(self, url: str, options: dict[str, Any]) -> None:
        super().__init__(url, options)
        from fastmcp import Client

        self.new = tuple(int(x) for x in dist_version("fastmcp").split(".")[:2]) >= (2, 10)
        kwargs: dict[str, Any] = {"sampling_handler": self.sampling, "timeout": 60}
        if self.new:
            kwargs["elicitation_handler"] = self.elicitation
            self.protocol_source = "fastmcp Client.initialize_result"
        self.client = Client(url, **kwargs)

    async def sampling(self, messages: Any, params: Any, context: Any) -> str:
        server_requests.append({"method": "sampling/createMessage", "params": jsonable(params)})
        return "mcpx test sampling reply"

    async def elicitation(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        p = jsonable(params)
        server_requests.append({"method": "elicitation/create", "params": p})
        from fastmcp.client.elicitation import ElicitResult

        action = self.options.get("elicitation", "accept")
        if action != "accept":
            return ElicitResult(action=action)
        props = (p.get("requestedSchema") or {}).get("properties") or {}
        content = {k: sample_value(k, v) for k, v in props.items()}
        # mcp 1.12's ElicitResult only allows primitive values (2025-06-18): like py_client.py, fill
        # in only the fields this client can render, and say which were left out
        dropped = [k for k, v in content.items() if isinstance(v, list | dict)]
        if dropped:
            server_requests[-1]["droppedFields"] = dropped
        return {k: v for k, v in content.items() if k not in dropped}

    async def __aenter__(self) -> Adapter:
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.client.__aexit__(*exc)

    def protocol_version(self) -> str | None:
        if self.new:
            return self.client.initialize_result.protocolVersion
        return super().protocol_version()

    async def op_listTools(self, op: dict[str, Any]) -> Any:
        return await self.client.list_tools()

    async def op_callTool(self, op: dict[str, Any]) -> Any:
        from fastmcp.exceptions import ToolError

        progress: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {}
        if self.new and op.get("progress"):

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append({"progress": value, "total": total, "message": message})

            kwargs["progress_handler"] = on_progress
        try:
            result = jsonable(await self.client.call_tool(op["name"], op.get("arguments") or {}, **kwargs))
        except ToolError as exc:  # fastmcp raises it only for a result with isError
            return is_error_result(str(exc), "ToolError")
        if op.get("progress"):
            result = {"result": result, "__progress": progress}
        return result

    async def op_listPrompts(self, op: dict[str, Any]) -> Any:
        return await self.client.list_prompts()

    async def op_getPrompt(self, op: dict[str, Any]) -> Any:
        return await self.client.get_prompt(op["name"], op.get("arguments") or {})

    async def op_listResources(self, op: dict[str, Any]) -> Any:
        return await self.client.list_resources()

    async def op_readResource(self, op: dict[str, Any]) -> Any:
        return await self.client.read_resource(op["uri"])

    async def op_listResourceTemplates(self, op: dict[str, Any]) -> Any:
        return await self.client.list_resource_templates()

    async def op_ping(self, op: dict[str, Any]) -> Any:
        return await self.client.ping()


class LangChain(Adapter):
    library = "langchain-mcp-adapters"

    def __init__(self, url: str, options: dict[str, Any]) -> None:
        super().__init__(url, options)
        from langchain_mcp_adapters.client import MultiServerMCPClient

        self.per_call = options.get("langchain") == "per-call"
        conn = {"url": url, "transport": "streamable_http", "session_kwargs": {"sampling_callback": self.sampling}}
        self.client = MultiServerMCPClient({"srv": conn})
        self.tools: dict[str, Any] | None = None
        self._cm: Any = None
        self.session: Any = None

    async def sampling(self, context: Any, params: Any) -> Any:
        server_requests.append({"method": "sampling/createMessage", "params": jsonable(params)})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="mcpx test sampling reply"),
            model="mcpx-test-model",
            stopReason="endTurn",
        )

    async def __aenter__(self) -> Adapter:
        if not self.per_call:
            self._cm = self.client.session("srv")
            self.session = await self._cm.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._cm is not None:
            await self._cm.__aexit__(*exc)

    async def _load_tools(self) -> dict[str, Any]:
        from langchain_mcp_adapters.tools import load_mcp_tools

        if self.per_call:
            tools = await self.client.get_tools()
        else:
            tools = await load_mcp_tools(self.session)
        self.tools = {t.name: t for t in tools}
        return self.tools

    async def op_listTools(self, op: dict[str, Any]) -> Any:
        tools = await self._load_tools()
        return [
            {"name": t.name, "description": t.description, "args_schema": t.args_schema, "metadata": t.metadata}
            for t in tools.values()
        ]

    async def op_callTool(self, op: dict[str, Any]) -> Any:
        from langchain_core.tools import ToolException

        tools = self.tools if self.tools is not None else await self._load_tools()
        tool = tools[op["name"]]
        call = {"type": "tool_call", "id": "call-1", "name": op["name"], "args": op.get("arguments") or {}}
        try:
            msg = await tool.ainvoke(call)  # a ToolMessage: .content (text) and .artifact (non-text blocks)
        except ToolException as exc:  # raised only for a result with isError
            return is_error_result(str(exc), "ToolException")
        return {"content": jsonable(msg.content), "artifact": jsonable(msg.artifact), "status": getattr(msg, "status", None)}

    async def op_getPrompt(self, op: dict[str, Any]) -> Any:
        from langchain_mcp_adapters.prompts import load_mcp_prompt

        if self.per_call:
            msgs = await self.client.get_prompt("srv", op["name"], arguments=op.get("arguments") or {})
        else:
            msgs = await load_mcp_prompt(self.session, op["name"], arguments=op.get("arguments") or {})
        return [{"type": m.type, "content": jsonable(m.content)} for m in msgs]

    async def op_listResources(self, op: dict[str, Any]) -> Any:
        from langchain_mcp_adapters.resources import load_mcp_resources

        if self.per_call:
            return await self.client.get_resources("srv")
        return await load_mcp_resources(self.session)

    async def op_readResource(self, op: dict[str, Any]) -> Any:
        from langchain_mcp_adapters.resources import load_mcp_resources

        if self.per_call:
            return await self.client.get_resources("srv", uris=[op["uri"]])
        return await load_mcp_resources(self.session, uris=[op["uri"]])


class PydanticAI(Adapter):
    library = "pydantic-ai-slim"

    def __init__(self, url: str, options: dict[str, Any]) -> None:
        super().__init__(url, options)
        from pydantic_ai.mcp import MCPServerStreamableHTTP
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.tools import RunContext
        from pydantic_ai.usage import Usage

        self.server = MCPServerStreamableHTTP(
            url=url, timeout=30, sampling_model=TestModel(custom_output_text="mcpx test sampling reply")
        )
        self.ctx = RunContext(deps=None, model=TestModel(), usage=Usage())
        self.tools: dict[str, Any] | None = None

    async def __aenter__(self) -> Adapter:
        await self.server.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.server.__aexit__(*exc)

    async def op_listTools(self, op: dict[str, Any]) -> Any:
        self.tools = await self.server.get_tools(self.ctx)
        return [jsonable(t.tool_def) for t in self.tools.values()]

    async def op_callTool(self, op: dict[str, Any]) -> Any:
        from dataclasses import replace

        tools = self.tools if self.tools is not None else await self.server.get_tools(self.ctx)
        ctx = replace(self.ctx, tool_name=op["name"], tool_call_id="call-1")
        return await self.server.call_tool(op["name"], op.get("arguments") or {}, ctx, tools[op["name"]])


class OpenAIAgents(Adapter):
    library = "openai-agents"
    protocol_source = "openai-agents server_initialize_result"

    def __init__(self, url: str, options: dict[str, Any]) -> None:
        super().__init__(url, options)
        import agents
        from agents.mcp import MCPServerStreamableHttp

        agents.set_tracing_disabled(True)
        # timeouts raised from the default 5 s so a loaded 2-core test machine does not flake
        self.server = MCPServerStreamableHttp({"url": url, "timeout": 30}, client_session_timeout_seconds=30)

    async def __aenter__(self) -> Adapter:
        await self.server.connect()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.server.cleanup()

    def protocol_version(self) -> str | None:
        res = self.server.server_initialize_result
        return res.protocolVersion if res is not None else None

    async def op_listTools(self, op: dict[str, Any]) -> Any:
        return await self.server.list_tools()

    async def op_callTool(self, op: dict[str, Any]) -> Any:
        return await self.server.call_tool(op["name"], op.get("arguments") or {})


ADAPTERS = {"fastmcp": FastMCP, "langchain-mcp-adapters": LangChain, "pydantic-ai-slim": PydanticAI, "openai-agents": OpenAIAgents}


def library_of(client: str) -> str:
    for lib in ADAPTERS:
        if client.startswith(lib + "-"):
            return lib
    raise SystemExit(f"unknown client {client!r}: expected one of {', '.join(a + '-<ver>' for a in ADAPTERS)}")


async def control(op: dict[str, Any]) -> None:
    kind = op["op"]
    if kind == "sleep":
        await asyncio.sleep(float(op["seconds"]))
    elif kind == "signal":
        Path(op["path"]).write_text(str(time.time()))
    elif kind == "waitFor":
        deadline = time.monotonic() + op.get("timeoutMs", 60000) / 1000
        while not Path(op["path"]).exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"waitFor {op['path']}: timed out")
            await asyncio.sleep(0.05)


async def main(adapter: Adapter, ops: list[dict[str, Any]], report: dict[str, Any]) -> None:
    while ops and ops[0].get("op") in CONTROL_OPS:  # leading control ops: before the client connects
        await control(ops.pop(0))
    async with adapter:
        report["protocolVersion"] = adapter.protocol_version()
        for op in ops:
            if op.get("op") in CONTROL_OPS:
                await control(op)
                continue
            entry: dict[str, Any] = {"op": op.get("op")}
            entry.update({k: op[k] for k in ("id", "name", "uri") if k in op})
            report["results"].append(entry)
            try:
                entry["result"] = jsonable(await asyncio.wait_for(adapter.run(op), op.get("timeoutMs", 60000) / 1000))
                entry["ok"] = True
            except NoAPI as exc:
                entry.update(ok=False, error=str(exc), errorType="NoAPI")
            except Exception as exc:  # noqa: BLE001
                entry["ok"] = False
                entry.update(error_info(exc))


def run(client: str, url: str, ops: list[dict[str, Any]], options: dict[str, Any]) -> int:
    lib = library_of(client)
    report: dict[str, Any] = {
        "client": client,
        "library": lib,
        "version": dist_version(lib),
        "mcp": dist_version("mcp"),
        "protocolVersion": None,
        "results": [],
    }
    code = 0
    adapter: Adapter | None = None
    try:
        adapter = ADAPTERS[lib](url, options)
        asyncio.run(main(adapter, ops, report))
    except BaseException as exc:  # noqa: BLE001
        info = error_info(exc)
        if report["protocolVersion"] is None and not report["results"]:
            report.update(info)  # could not connect / initialize
            code = 2
        else:
            report["sessionError"] = info["error"]
            results = report["results"]
            if results and "ok" not in results[-1]:
                results[-1].update(ok=False, **info)
            done = len(results)
            for op in [o for o in ops if o.get("op") not in CONTROL_OPS][done:]:
                entry = {"op": op.get("op"), **{k: op[k] for k in ("id", "name", "uri") if k in op}}
                results.append({**entry, "ok": False, "error": "not run: session died", "errorType": "NotRun"})
    if report["protocolVersion"] is None and inits:
        report["protocolVersion"] = inits[0]["protocolVersion"]
    report["protocolVersionSource"] = adapter.protocol_source if adapter else None
    report["clientInfo"] = inits[0]["clientInfo"] if inits else None
    report["initializeCount"] = len(inits)
    report["serverRequests"] = server_requests
    print(json.dumps(report), flush=True)
    return code


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit("usage: tp_client.py <client> <url> <ops.json|-> [options-json]")
    ops_text = sys.stdin.read() if sys.argv[3] == "-" else open(sys.argv[3], encoding="utf-8").read()
    opts = json.loads(sys.argv[4]) if len(sys.argv) == 5 else {}
    sys.exit(run(sys.argv[1], sys.argv[2], json.loads(ops_text), opts))
