"""Print valid/total per (from, to) revision pair for schema-drawn messages and the 2026 examples,
then the mutation pass: the same kind of messages broken in each way mcpx repairs.

    .venv/bin/python scripts/schema_report.py [EXAMPLES_PER_MESSAGE_TYPE]   (default 50)

"valid" = the downgraded (and repaired) message validates against the receiver's schema.json with
unknown properties forbidden, every value missing from the output is accounted for by a change
record, a second pass changes nothing, and it needed no repair (see tests/schema/property_lib.py).

Mutation pass (issue 14): each drawn message (valid for its revision) is broken at most once per
repair kind: an object written ``[]``, an optional member written ``null``, a 2026-07-28 required
member with a specified default left out, at a site where the break makes it invalid and what it
means is valid (property_lib.mutations). Each broken message goes to every receiver; outcomes
(property_lib.check_mutation): "repaired" = valid for the receiver and exactly what the message
means, every change recorded; "as sent" = the receiver's schema accepts the broken value where it
sits (e.g. inside a capability object its revision leaves open): valid, nothing to repair; "not
repaired" = delivered as the downgrade left it, with a REPAIR-invalid record; "worse" = anything
else (a wrong repair, a change without record, a crash).
"""
from __future__ import annotations

import collections
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "addon"), str(ROOT / "tests"), str(ROOT / "tests" / "schema")]


from examples_lib import example_messages  # noqa: E402
from mcpx_core import revisions  # noqa: E402
from property_lib import KINDS, applicable, check, check_mutation, each_drawn, message_types, mutations, types_toward  # noqa: E402
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
                    stats[(frm, to, "ok")] += v.valid and not v.unaccounted and v.idempotent and not v.repairs

                each_drawn(t, n, one)
            for name, t, msg in example_messages():
                if name in INVALID_EXAMPLES or frm != "2026-07-28" or not applicable(t, to):
                    continue
                v = check(t, msg, to)
                stats[("examples", to, "total")] += 1
                stats[("examples", to, "ok")] += v.valid and not v.unaccounted and v.idempotent and not v.repairs
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
    bad += mutation_pass(n)
    return 1 if bad else 0


OUTCOMES = ("repaired", "accepted", "not repaired", "worse", "crash")


def mutation_pass(n: int) -> int:
    """Print the mutation figures; returns how many broken messages came out worse (or crashed)."""
    R = revisions.REVISIONS
    stats: collections.Counter = collections.Counter()
    for i, frm in enumerate(R):
        for t in message_types(frm):
            muts: list = []
            each_drawn(t, n, lambda msg, t=t: muts.extend(mutations(t, msg)))
            for to in R[: i + 1]:
                if not applicable(t, to):
                    continue
                for mut in muts:
                    outcome = check_mutation(t, mut, to).outcome
                    stats[(frm, to, outcome)] += 1
                    stats[(mut.kind, outcome)] += 1
    print(f"mutation pass: broken messages ({n} drawn per message type, at most one break per repair kind) from -> to")
    print("  | from -> to | broken | repaired to valid | valid as sent | not repaired (logged) | made worse |")
    print("  |---|---|---|---|---|---|")
    worse = 0
    for i, frm in enumerate(R):
        for to in R[: i + 1]:
            c = [stats[(frm, to, o)] for o in OUTCOMES]
            worse += c[3] + c[4]
            print(f"  | {frm} -> {to} | {sum(c)} | {c[0]} | {c[1]} | {c[2]} | {c[3] + c[4]} |")
    print("  per repair kind (all pairs):")
    for kind in KINDS:
        c = [stats[(kind, o)] for o in OUTCOMES]
        print(f"  | {kind} | {sum(c)} | {c[0]} | {c[1]} | {c[2]} | {c[3] + c[4]} |")
    return worse


if __name__ == "__main__":
    sys.exit(main())
