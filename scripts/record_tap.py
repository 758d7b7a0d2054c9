"""A recording tap for scripts/record_flows.py: the one shipped with mcpx (addon/mcpx_core/testing/tap.py,
``python -m mcpx tap`` prints its path), which streams event-stream responses through unchanged and
keeps a copy of every chunk on the flow, so ``mitmdump -w`` saves what the server sent.

    mitmdump --mode reverse:http://127.0.0.1:3001 -s scripts/record_tap.py -w session.mitm
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "addon", "mcpx_core", "testing"))

from tap import RecordTap  # noqa: E402

addons = [RecordTap()]
