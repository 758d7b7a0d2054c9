"""Property tests of issue 3: for every message type of every revision, instances drawn from its
schema.json and downgraded to every older (or the same) revision

- validate against the receiver's schema.json with unknown properties forbidden,
- lose nothing silently: every input value absent from the output lies under a change record,
- are idempotent: a second downgrade changes nothing and logs nothing but "keep" records.

The budget per message type is MCPX_PROPERTY_EXAMPLES (default 8; scripts/schema_report.py runs more).
Every file of the 2026-07-28 examples folder is checked the same way.
"""
from __future__ import annotations

import json
import os
import pathlib

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from mcpx_core import revisions
from property_lib import applicable, check, message_types, messages
from examples_lib import example_messages
from schema_check import message_errors

EXAMPLES = int(os.environ.get("MCPX_PROPERTY_EXAMPLES", "8"))
PAIRS = [(f, t) for i, f in enumerate(revisions.REVISIONS) for t in revisions.REVISIONS[: i + 1]]


@pytest.mark.parametrize("frm,to", PAIRS, ids=[f"{f}->{t}" for f, t in PAIRS])
def test_downgraded_instances_validate(frm, to):
    failures = []
    for t in message_types(frm):
        if not applicable(t, to):
            continue

        @settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck), deadline=None, database=None,
                  phases=[Phase.generate])
        @given(messages(t))
        def run(msg):
            v = check(t, msg, to)
            if not (v.valid and not v.unaccounted and v.idempotent):
                failures.append((t.label, v.errors[:2], v.unaccounted[:3], v.idempotent, json.dumps(msg)[:300]))

        run()
    assert failures == []


#: official examples that are not valid against their own schema.json (spec bugs, reported in the issue note)
INVALID_EXAMPLES = {"ReadResourceResultResponse/read-resource-result-response.json": "lacks the required ttlMs and cacheScope (schema/2026-07-28/schema.ts:1094)"}


def test_invalid_examples_are_the_known_ones():
    bad = {name for name, t, msg in example_messages()
           if message_errors("2026-07-28", msg, t.method if t.kind == "result" else None)}
    assert bad == set(INVALID_EXAMPLES)


@pytest.mark.parametrize("to", revisions.REVISIONS)
def test_2026_examples(to):
    failures, n = [], 0
    for name, t, msg in example_messages():
        if not applicable(t, to) or name in INVALID_EXAMPLES:
            continue
        n += 1
        v = check(t, msg, to)
        if not (v.valid and not v.unaccounted and v.idempotent):
            failures.append((name, v.errors[:2], v.unaccounted[:3], v.idempotent))
    assert n > 40 and failures == []
