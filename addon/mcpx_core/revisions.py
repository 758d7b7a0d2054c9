"""The five MCP revisions and what each one defines, loaded from the official schema.json files.

Revision knowledge is data: every question of the form "does revision R define X?" is answered
from ``data/<revision>/schema.json`` (the unmodified official JSON Schema of each revision,
shipped as package data), never from version comparisons scattered through the code.

Shapes:
    ``SchemaModel.defs``        {definition name: JSON Schema node}
    ``SchemaModel.requests``    {method: request definition name}, e.g. "tools/call" -> "CallToolRequest"
    ``SchemaModel.notifications`` {method: notification definition name}
    ``SchemaModel.result_for(method)`` -> result definition name ("CallToolResult"), or "Result"

Sources: schema/2024-11-05/schema.ts .. schema/2026-07-28/schema.ts (the JSON files are generated
from them); the revision list is the one of REVISIONS.md section 1.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import orjson

#: Every revision mcpx knows, oldest first (REVISIONS.md section 1).
REVISIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
LATEST = REVISIONS[-1]
#: The legacy era (initialize handshake, sessions); 2026-07-28 is stateless (REVISIONS.md 2.3).
LEGACY = REVISIONS[:-1]


def is_known(revision: str | None) -> bool:
    return revision in _INDEX


_INDEX = {r: i for i, r in enumerate(REVISIONS)}


def order(revision: str) -> int:
    """Position of ``revision`` in :data:`REVISIONS`; raises KeyError for an unknown one."""
    return _INDEX[revision]


def older(a: str, b: str) -> bool:
    """True when revision ``a`` predates revision ``b``."""
    return _INDEX[a] < _INDEX[b]


def data_path(*parts: str):
    """A Traversable inside the shipped ``mcpx_core/data`` folder."""
    node = resources.files(__package__).joinpath("data")
    for p in parts:
        node = node.joinpath(p)
    return node


def load_json(*parts: str) -> Any:
    return orjson.loads(data_path(*parts).read_bytes())


class SchemaModel:
    """What one revision defines, indexed for lookups on the hot path.

    Raises KeyError from :meth:`resolve` for a ``$ref`` the schema does not define.
    """

    def __init__(self, revision: str, schema: dict[str, Any]):
        self.revision = revision
        self.schema = schema
        self.defs: dict[str, Any] = schema.get("definitions") or schema.get("$defs") or {}
        self.ref_prefix = "#/definitions/" if "definitions" in schema else "#/$defs/"
        self.requests: dict[str, str] = {}
        self.notifications: dict[str, str] = {}
        self._members: dict[str, frozenset[str]] = {}
        for name, node in self.defs.items():
            method = ((node.get("properties") or {}).get("method") or {}).get("const")
            if not isinstance(method, str):
                continue
            if name.endswith("Notification"):
                self.notifications[method] = name
            elif name.endswith("Request"):
                self.requests[method] = name
        # Which side may send what: ClientRequest / ServerRequest unions (schema.ts bottom).
        self.client_requests = self._union_methods("ClientRequest")
        self.server_requests = self._union_methods("ServerRequest")
        self.client_notifications = self._union_methods("ClientNotification")
        self.server_notifications = self._union_methods("ServerNotification")

    def _union_methods(self, union: str) -> frozenset[str]:
        node = self.defs.get(union) or {}
        methods = set()
        for member in node.get("anyOf", []):
            name = self.ref_name(member.get("$ref", ""))
            m = ((self.defs.get(name, {}).get("properties") or {}).get("method") or {}).get("const")
            if isinstance(m, str):
                methods.add(m)
        return frozenset(methods)

    def ref_name(self, ref: str) -> str:
        return ref.rsplit("/", 1)[-1]

    def resolve(self, ref: str) -> tuple[str, dict[str, Any]]:
        name = self.ref_name(ref)
        return name, self.defs[name]

    def result_for(self, method: str) -> str:
        """The result definition that answers ``method`` ("Result" when the schema names none).

        Convention of every schema.ts: ``XRequest`` is answered by ``XResult``
        (e.g. schema/2025-06-18/schema.ts CallToolRequest/CallToolResult).
        """
        req = self.requests.get(method)
        if req:
            cand = req[: -len("Request")] + "Result"
            if cand in self.defs:
                return cand
        return "Result"


    def result_def(self, method: str | None, result: Any = None) -> str:
        """The definition a ``result`` value answering ``method`` is an instance of (None: the
        request is unknown -> "Result"): :meth:`result_for`, except that where results carry a
        ``resultType`` (2026-07-28), "input_required" names ``InputRequiredResult`` when the
        method's response admits it (``<X>ResultResponse.result`` is ``InputRequiredResult | X``,
        e.g. CallToolResultResponse; schema/2026-07-28/schema.ts:584). Any other value (an open
        string, schema/2026-07-28/schema.ts:216) leaves the method's result type."""
        name = self.result_for(method) if method else "Result"
        if isinstance(result, dict) and result.get("resultType") == "input_required" \
                and "InputRequiredResult" in self._response_members(name):
            return "InputRequiredResult"
        return name

    def _response_members(self, name: str) -> frozenset[str]:
        """The definitions ``<name>Response.result`` admits (its ``anyOf`` members or ``$ref``)."""
        cache = self._members
        hit = cache.get(name)
        if hit is None:
            node = ((self.defs.get(name + "Response") or {}).get("properties") or {}).get("result") or {}
            refs = [m.get("$ref", "") for m in node.get("anyOf", []) if isinstance(m, dict)] or [node.get("$ref", "")]
            hit = cache[name] = frozenset(self.ref_name(r) for r in refs if r)
        return hit


@functools.cache
def model(revision: str) -> SchemaModel:
    """The :class:`SchemaModel` of ``revision``, loaded once per process."""
    if revision not in _INDEX:
        raise KeyError(f"unknown MCP revision {revision!r}")
    return SchemaModel(revision, load_json(revision, "schema.json"))
