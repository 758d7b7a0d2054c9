"""A mitmproxy addon with mcpx's hooks that does nothing: the benchmark's floor for "any addon".

mitmproxy dispatches every event to every addon (``addonmanager.trigger_event``), and a script
adds its own loader; this addon has the same hook methods as mcpx (async ``request``/``response``,
``responseheaders``, ``error``) and returns at once, so ``mitmdump -s bench/noop_addon.py`` costs
what running *an* addon costs. mcpx's own work is the difference between it and mcpx.
"""
from __future__ import annotations


class Noop:
    async def request(self, flow) -> None:
        return None

    def responseheaders(self, flow) -> None:
        return None

    async def response(self, flow) -> None:
        return None

    def error(self, flow) -> None:
        return None


addons = [Noop()]
