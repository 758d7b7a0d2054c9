"""Generic MCP client over Streamable HTTP for the PyPI `mcp` SDK (any version).

    tests/peers/.venvs/mcp-<ver>/bin/python py_client.py <url> <ops.json|-> [options-json]

Same interface and output as js_client.mjs: ops is a JSON list such as
{"op":"listTools"}, {"op":"callTool","name":..,"arguments":{..},"progress":true},
{"op":"listPrompts"}, {"op":"getPrompt","name":..,"arguments":{..}},
{"op":"listResources"}, {"op":"readResource","uri":..},
{"op":"listResourceTemplates"}, {"op":"ping"}, {"op":"subscribeResource","uri":..},
{"op":"unsubscribeResource","uri":..}, {"op":"setLoggingLevel","level":..},
{"op":"waitNotification","method":..,"count":1,"timeoutMs":5000} (change notifications the session
received, e.g. on its GET stream); options e.g. {"elicitation":"decline"}, {"roots":[{"uri":..,"name":..}]}
(declare roots and answer roots/list with these),
{"clientInfo": {"name": "claude-code", "version": "2.1.0"}} (default: mcpx-py-client <mcp version>), or
{"clientInfo": "sdk-default"} (the SDK's own default, {"name": "mcp", "version": "0.1.0"}),
{"headers": {"Accept-Encoding": "gzip, deflate, zstd"}} (mcp 1.x: headers the transport sends, e.g. mcp-use's).
Every op uses the SDK's own ClientSession call, so its pydantic validation runs.
Prints ONE JSON line on stdout:
  {"sdk":"mcp","version":..,"protocolVersion":..,"results":[..],"serverRequests":[..]}
Exit 0 once connected; 2 on usage or connection failure.
"""

import inspect
import json
import os
import sys
from contextlib import AsyncExitStack
from datetime import timedelta
from importlib.metadata import version as dist_version
from typing import Any

import anyio
import mcp.types as types
from mcp import ClientSession
from pydantic import ValidationError
from peer_common import error_info, sample_value

try:  # mcp < 2
    from mcp.client.streamable_http import streamablehttp_client as _transport
except ImportError:
    try:  # mcp >= 2
        from mcp.client.streamable_http import streamable_http_client as _transport
    except ImportError:  # mcp < 1.8 (1.6.0): the HTTP+SSE transport only, "transport": "sse"
        _transport = None

VERSION = dist_version("mcp")
SESSION_PARAMS = inspect.signature(ClientSession.__init__).parameters
CAN_ELICIT = "elicitation_callback" in SESSION_PARAMS
CAN_PROGRESS = "progress_callback" in inspect.signature(ClientSession.call_tool).parameters
server_requests: list[dict[str, Any]] = []
notifications: list[dict[str, Any]] = []  # change notifications the session received
NOTIFICATION_METHODS = (
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/message",
)


def dump(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json", by_alias=True, exclude_none=True)
    return obj


def make_callbacks(options: dict[str, Any]) -> dict[str, Any]:
    async def sampling(context: Any, params: Any) -> Any:
        server_requests.append({"method": "sampling/createMessage", "params": dump(params)})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="mcpx test sampling reply"),
            model="mcpx-test-model",
            stopReason="endTurn",
        )

    async def elicitation(context: Any, params: Any) -> Any:
        p = dump(params)
        server_requests.append({"method": "elicitation/create", "params": p})
        action = options.get("elicitation", "accept")
        if action != "accept" or p.get("mode") == "url":
            return types.ElicitResult(action=action)
        props = (p.get("requestedSchema") or {}).get("properties") or {}
        content = {k: sample_value(k, v) for k, v in props.items()}
        try:
            return types.ElicitResult(action="accept", content=content)
        except ValidationError:
            # This SDK's ElicitResult only allows primitive values (2025-06-18): a
            # real client would fill in only the fields it can render.
            server_requests[-1]["droppedFields"] = [k for k, v in content.items() if isinstance(v, list | dict)]
            content = {k: v for k, v in content.items() if not isinstance(v, list | dict)}
            return types.ElicitResult(action="accept", content=content)

    async def list_roots(context: Any) -> Any:
        server_requests.append({"method": "roots/list"})
        return types.ListRootsResult(roots=[types.Root(**r) for r in options["roots"]])

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", None)
        method = getattr(root, "method", None)
        if method in NOTIFICATION_METHODS:
            params = getattr(root, "params", None)
            entry: dict[str, Any] = {"method": method}
            if params is not None:
                entry["params"] = dump(params)
            notifications.append(entry)

    cbs: dict[str, Any] = {"sampling_callback": sampling, "message_handler": on_message}
    if CAN_ELICIT:
        cbs["elicitation_callback"] = elicitation
    if isinstance(options.get("roots"), list):
        cbs["list_roots_callback"] = list_roots
    return cbs


async def run_op(session: ClientSession, op: dict[str, Any]) -> Any:
    kind = op.get("op")
    if kind == "listTools":
        return await session.list_tools()
    if kind == "callTool":
        progress: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {}
        if op.get("progress") and CAN_PROGRESS:

            async def on_progress(value: float, total: float | None, message: str | None = None) -> None:
                progress.append({"progress": value, "total": total, "message": message})

            kwargs["progress_callback"] = on_progress
        result = dump(await session.call_tool(op["name"], op.get("arguments") or {}, **kwargs))
        if op.get("progress"):
            result["__progress"] = progress
        return result
    if kind == "listPrompts":
        return await session.list_prompts()
    if kind == "getPrompt":
        return await session.get_prompt(op["name"], op.get("arguments") or {})
    if kind == "listResources":
        return await session.list_resources()
    if kind == "readResource":
        uri: Any = op["uri"]
        if VERSION.startswith("1."):
            from pydantic import AnyUrl

            uri = AnyUrl(uri)
        return await session.read_resource(uri)
    if kind == "listResourceTemplates":
        return await session.list_resource_templates()
    if kind == "ping":
        return await session.send_ping()
    if kind == "subscribeResource":
        return await session.subscribe_resource(_uri(op["uri"]))
    if kind == "unsubscribeResource":
        return await session.unsubscribe_resource(_uri(op["uri"]))
    if kind == "setLoggingLevel":
        return await session.set_logging_level(op.get("level", "info"))
    if kind == "waitNotification":
        with anyio.fail_after(op.get("timeoutMs", 5000) / 1000):
            while True:
                seen = [n for n in notifications if not op.get("method") or n["method"] == op["method"]]
                if len(seen) >= op.get("count", 1):
                    return {"notifications": seen}
                await anyio.sleep(0.02)
    if kind == "sleep":
        await anyio.sleep(op.get("ms", 100) / 1000)
        return {}
    if kind == "signal":  # control op: create the file op["path"] (a test waits for it)
        open(op["path"], "w").close()
        return {}
    if kind == "waitFor":  # control op: wait until the file op["path"] exists (a test creates it)
        with anyio.fail_after(op.get("timeoutMs", 60000) / 1000):
            while not os.path.exists(op["path"]):
                await anyio.sleep(0.025)
        return {}
    raise ValueError(f"unknown op {kind!r}")


def _uri(uri: str) -> Any:
    if VERSION.startswith("1."):
        from pydantic import AnyUrl

        return AnyUrl(uri)
    return uri


def client_info(options: dict[str, Any]) -> dict[str, Any]:
    """The ClientSession's client_info keyword: mcpx-py-client <mcp version>, the "clientInfo" option
    ({"name", "version"}), or none at all ("sdk-default": the SDK sends its DEFAULT_CLIENT_INFO; mcp 1.6.0,
    whose ClientSession has no such keyword, always sends {"name": "mcp", "version": "0.1.0"})."""
    info = options.get("clientInfo", {"name": "mcpx-py-client", "version": VERSION})
    if info == "sdk-default" or "client_info" not in SESSION_PARAMS:
        return {}
    return {"client_info": types.Implementation(name=info["name"], version=info["version"])}


async def main(url: str, ops: list[dict[str, Any]], options: dict[str, Any], report: dict[str, Any]) -> None:
    async with AsyncExitStack() as stack:
        if options.get("transport") == "sse":  # "transport": "sse": the 2024-11-05 HTTP+SSE transport (sse_client)
            from mcp.client.sse import sse_client
            streams = await stack.enter_async_context(sse_client(url, timeout=10, sse_read_timeout=30))
        elif VERSION.startswith("1."):  # "headers": request headers of the transport's own (e.g. another Accept-Encoding)
            streams = await stack.enter_async_context(_transport(url, headers=options.get("headers"), timeout=timedelta(seconds=30)))
        else:
            streams = await stack.enter_async_context(_transport(url))
        session = await stack.enter_async_context(
            ClientSession(
                streams[0],
                streams[1],
                read_timeout_seconds=timedelta(seconds=60) if VERSION.startswith("1.") else 60.0,
                **client_info(options),
                **make_callbacks(options),
            )
        )
        init = await session.initialize()
        report["protocolVersion"] = getattr(init, "protocolVersion", None) or getattr(init, "protocol_version", None)
        for op in ops:
            entry: dict[str, Any] = {"op": op.get("op")}
            entry.update({k: op[k] for k in ("id", "name", "uri") if k in op})
            report["results"].append(entry)
            try:
                with anyio.fail_after(op.get("timeoutMs", 60000) / 1000):
                    entry["result"] = dump(await run_op(session, op))
                entry["ok"] = True
            except Exception as exc:  # noqa: BLE001
                entry["ok"] = False
                entry.update(error_info(exc))


def run(url: str, ops: list[dict[str, Any]], options: dict[str, Any]) -> int:
    """Run the ops; always print the report, even when the SDK's session dies."""
    report: dict[str, Any] = {"sdk": "mcp", "version": VERSION, "protocolVersion": None, "results": []}
    code = 0
    try:
        anyio.run(main, url, ops, options, report)
    except BaseException as exc:  # noqa: BLE001
        info = error_info(exc)
        if report["protocolVersion"] is None:
            report.update(info)  # could not connect / initialize
            code = 2
        else:
            # Old SDKs (e.g. mcp 1.8.1) let an unknown server->client request kill
            # the session's task group: mark the interrupted and remaining ops.
            report["sessionError"] = info["error"]
            results = report["results"]
            if results and "ok" not in results[-1]:
                results[-1].update(ok=False, **info)
            for op in ops[len(results) :]:
                entry = {"op": op.get("op"), **{k: op[k] for k in ("id", "name", "uri") if k in op}}
                results.append({**entry, "ok": False, "error": "not run: session died", "errorType": "NotRun"})
    report["serverRequests"] = server_requests
    report["notifications"] = notifications
    print(json.dumps(report), flush=True)
    return code


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: py_client.py <url> <ops.json|-> [options-json]")
    ops_text = sys.stdin.read() if sys.argv[2] == "-" else open(sys.argv[2], encoding="utf-8").read()
    opts = json.loads(sys.argv[3]) if len(sys.argv) == 4 else {}
    sys.exit(run(sys.argv[1], json.loads(ops_text), opts))
