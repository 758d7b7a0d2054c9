"""Print valid/total per (from, to) revision pair for schema-drawn messages and the 2026 examples.

    .venv/bin/python scripts/schema_report.py [EXAMPLES_PER_MESSAGE_TYPE]   (default 50)

"valid" = the downgraded message validates against the receiver's schema.json with unknown
properties forbidden, every value missing from the output is accounted for by a change record,
and a second downgrade changes nothing (see tests/schema/property_lib.py).
"""
from __future__ import annotations

import collections
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "addon"), str(ROOT / "tests"), str(ROOT / "tests" / "schema")]


from examples_lib import example_messages  # noqa: E402
from mcpx_core import revisions  # noqa: E402
from property_lib import applicable, check, each_drawn, types_toward  # noqa: E402
from test_properties import INVALID_EXAMPLES  # noqa: E402


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    R = revisions.REVISIONS
    stats: collections.Counter = collections.Counter()
    for i, frm in enumerate(R):
        for to in R[: i + 1]:
            for t in types_toward(frm, to):
                def one(msg, t=t, frm=frm, to=to):
                    v = check(t, msg, to)
                    stats[(frm, to, "total")] += 1
                    stats[(frm, to, "ok")] += v.valid and not v.unaccounted and v.idempotent

                each_drawn(t, n, one)
            for name, t, msg in example_messages():
                if name in INVALID_EXAMPLES or frm != "2026-07-28" or not applicable(t, to):
                    continue
                v = check(t, msg, to)
                stats[("examples", to, "total")] += 1
                stats[("examples", to, "ok")] += v.valid and not v.unaccounted and v.idempotent
    print(f"schema-drawn messages ({n} per message type) downgraded from -> to: valid/total")
    bad = 0
    for i, frm in enumerate(R):
        for to in R[: i + 1]:
            ok, total = stats[(frm, to, "ok")], stats[(frm, to, "total")]
            bad += total - ok
            print(f"  {frm} -> {to}: {ok}/{total}")
    print("2026-07-28 specification examples -> to: valid/total")
    for to in R:
        ok, total = stats[("examples", to, "ok")], stats[("examples", to, "total")]
        bad += total - ok
        print(f"  2026-07-28 examples -> {to}: {ok}/{total}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
