"""A mitmproxy addon that parses and re-serialises every JSON response, and does nothing else: the
benchmark's floor for "any addon that rewrites a JSON body".

Any addon that changes a value inside a JSON-RPC result has to read the body into objects and write
it back: ``orjson.loads`` then ``orjson.dumps`` (the floor that part 1b's core ratios are taken
against), and mitmproxy's ``Response.content`` setter (the same one mcpx's ``responses.py`` uses,
which also sets ``Content-Length``). This addon does exactly that for each ``application/json``
response and changes no byte (orjson writes back the raw server's bytes), so
``mitmdump -s bench/floor_addon.py`` costs what the rewrite of a body costs before the first rule
runs. Part 2b runs it interleaved with bare mitmdump and mcpx: its p50 ratio is the lowest ratio a
rewriting addon can reach on that body, in that run.
"""
from __future__ import annotations

import orjson


class Floor:
    async def request(self, flow) -> None:
        return None

    def responseheaders(self, flow) -> None:
        return None

    async def response(self, flow) -> None:
        resp = flow.response
        if resp is not None and resp.headers.get("content-type", "").startswith("application/json") and resp.content:
            resp.content = orjson.dumps(orjson.loads(resp.content))

    def error(self, flow) -> None:
        return None


addons = [Floor()]
