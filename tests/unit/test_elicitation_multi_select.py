"""A multi-select elicitation field (2025-11-25, schema/2025-11-25/schema.ts ``UntitledMultiSelectEnumSchema``)
reaches a client whose revision defines it untouched, and only older clients lose it (ELIC-enum-multi;
a required one cannot be expressed: the request is answered -32602 by mcpx). Issue 19: a survivor
of mutation testing (the check for the array member of the target's PrimitiveSchemaDefinition)."""
from __future__ import annotations

import copy

import pytest

from mcpx_core.downgrade import downgrade

ASK = {"jsonrpc": "2.0", "id": 5, "method": "elicitation/create", "params": {
    "message": "Pick", "requestedSchema": {"type": "object", "required": ["colors"], "properties": {
        "colors": {"type": "array", "items": {"type": "string", "enum": ["r", "g"]}}}}}}
REJECTED = {"code": -32602, "message": "mcpx: required multi-select field 'colors' cannot be expressed for a 2025-06-18 client"}


@pytest.mark.parametrize("frm,to,records,reply", [
    ("2025-11-25", "2025-11-25", [], None),
    ("2026-07-28", "2025-11-25", [], None),
    ("2025-11-25", "2025-06-18", [("/params/requestedSchema/properties/colors", "drop-message", "ELIC-enum-multi")], REJECTED),
])
def test_a_multi_select_field_reaches_the_clients_that_define_it(frm, to, records, reply):
    out = downgrade(copy.deepcopy(ASK), "request", "elicitation/create", frm, to, "s2c")
    assert [c.key() for c in out.changes] == records and out.reply == reply
    if reply is None:
        assert out.message == ASK
