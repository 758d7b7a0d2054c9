"""Drive mcpx's hooks by hand: the addons of one ``MCPX`` (sub-addons), hook by hook, as mitmproxy does."""
from __future__ import annotations

import inspect

from mitmproxy.addonmanager import traverse


async def hook(addon, name: str, *args) -> None:
    """Call hook ``name`` on ``addon`` and every sub-addon that has it (awaiting async ones), in order."""
    for a in traverse([addon]):
        fn = getattr(a, name, None)
        if callable(fn):
            res = fn(*args)
            if inspect.isawaitable(res):
                await res


def hook_sync(addon, name: str, *args) -> None:
    """:func:`hook` for hooks that are synchronous in every sub-addon (e.g. ``responseheaders``)."""
    for a in traverse([addon]):
        fn = getattr(a, name, None)
        if callable(fn):
            res = fn(*args)
            assert not inspect.isawaitable(res), f"{a}.{name} is async"
