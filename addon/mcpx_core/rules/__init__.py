"""The named rules, registered in one list (like mitmproxy's ``contentviews``).

Each module exports ``RULES`` (values of :mod:`.api`); :data:`REGISTRY` holds them in this
order, which is the order message hooks run in. :mod:`mcpx_core.downgrade` reads the registry
and imports no rule module itself; rule modules import only :mod:`.api` (and helpers), so there
is no import circle between the walk and the rules.
"""

from __future__ import annotations

from . import capabilities, content, elicitation, messages, tools, upgrade
from .api import Registry

#: every named rule, in registration order
ALL = [*messages.RULES, *upgrade.RULES, *capabilities.RULES, *content.RULES, *elicitation.RULES, *tools.RULES]
REGISTRY = Registry(ALL)
#: rule id -> what mcpx does, where that is not its revision-delta.json record's text (the reason: each module)
AS_BUILT = {**content.AS_BUILT}
