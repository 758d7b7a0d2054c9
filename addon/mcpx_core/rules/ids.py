"""Rule ids for change records, looked up in the shipped ``revision-delta.json``.

Every record there has a stable id (e.g. ``TOOL-title``), a ``where`` text naming the fields it
covers ("Tool.title (BaseMetadata)", "TextContent._meta, ImageContent._meta, ...") and the
``targets`` revisions for which it fires. A field the schema walker drops is attributed to the
record whose ``where`` names ``<Type>.<field>`` and whose targets include the receiving revision;
failing that, to the unique record naming ``.<field>`` for that target (longest common type-name
prefix wins a tie). A field no record names (e.g. one a future revision adds) gets
:data:`UNDEFINED`: it is still dropped and logged, nobody has to list it.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

from ..revisions import load_json

#: Rule id for a value the target revision does not define and no delta record names.
UNDEFINED = "SCHEMA-undefined"
#: Rule id for a body forwarded unchanged because it could not be handled.
PASSTHROUGH = "PASSTHROUGH-error"

_PATH = re.compile(r"(?<![\w.$])([A-Za-z][A-Za-z]+)((?:\.[A-Za-z_$][\w$]*)+)")
_TYPE_WORD = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)+\b")


def _fields(where: str) -> list[tuple[str, str]]:
    """("Type", "field") pairs named in a ``where`` text; every segment of a dotted path counts."""
    out = []
    for typ, path in _PATH.findall(where):
        for seg in path.split(".")[1:]:
            out.append((typ, seg))
    return out


_KEY = re.compile(r'\["([^"]+)"\]')


def _affinity(a: str, b: str) -> int:
    """How alike two type names are: the longer of their common prefix and common suffix."""
    return max(len(os.path.commonprefix([a, b])), len(os.path.commonprefix([a[::-1], b[::-1]])))


@dataclass(frozen=True)
class Record:
    id: str
    rule: str
    direction: str
    targets: frozenset[str]
    where: str


class RuleIndex:
    def __init__(self, delta: dict):
        self.records: dict[str, Record] = {}
        self._by_field: dict[tuple[str, str], list[Record]] = {}
        self._by_name: dict[str, list[Record]] = {}
        self._by_key: dict[str, list[Record]] = {}
        for r in delta["records"]:
            rec = Record(r["id"], r["rule"], r["direction"], frozenset(r["targets"]), r["where"])
            self.records[rec.id] = rec
            for typ, field in _fields(rec.where):
                self._by_field.setdefault((typ, field), []).append(rec)
                self._by_name.setdefault(field, []).append(rec)
            for key in _KEY.findall(rec.where):
                self._by_key.setdefault(key, []).append(rec)

    @staticmethod
    def _fits(rec: Record, target: str, direction: str) -> bool:
        return target in rec.targets and (rec.direction == "both" or rec.direction == direction)

    @functools.lru_cache(maxsize=4096)
    def for_field(self, typ: str, field: str, target: str, direction: str, parent: str = "") -> str:
        """The record id for dropping ``typ.field`` toward ``target`` (or :data:`UNDEFINED`).

        ``typ``: the nearest named definition being walked; ``parent``: the property that holds
        the object (for inline objects such as ``params`` or ``requestedSchema``). Among the
        records that name ``.field`` and fire for the target, the best scored wins: an exact
        ``typ.field`` match, then a ``where`` that names ``typ``, then ``parent.field``, then the
        most alike type name; a ``where`` that names only other types scores lower.
        """
        cands = [rec for rec in self._by_name.get(field, ()) if self._fits(rec, target, direction)]
        if not cands:
            return UNDEFINED

        def score(rec: Record) -> int:
            pairs = _fields(rec.where)
            named = set(_TYPE_WORD.findall(rec.where))
            s = 0
            if (typ, field) in pairs:
                s += 100
            like = max((_affinity(typ, t) for t, f in pairs if f == field), default=0)
            if typ in named:
                s += 50
            elif named and like == 0:
                s -= 10  # the record speaks of other types only
            if parent and (parent, field) in pairs:
                s += 20
            return s + like

        return max(cands, key=score).id

    def for_field_exact(self, typ: str, field: str, target: str, direction: str) -> str | None:
        """The record naming exactly ``typ.field`` that fires for ``target``, or None."""
        for rec in self._by_field.get((typ, field), ()):
            if self._fits(rec, target, direction):
                return rec.id
        return None

    @functools.lru_cache(maxsize=1024)
    def for_key(self, key: str, target: str, direction: str) -> str:
        """The record id for a reserved ``_meta`` key such as ``io.modelcontextprotocol/serverInfo``."""
        for rec in self._by_key.get(key, ()):
            if self._fits(rec, target, direction):
                return rec.id
        return UNDEFINED

    @functools.lru_cache(maxsize=1024)
    def for_method(self, method: str, target: str, direction: str) -> str:
        """The record id for a method or notification the target revision lacks."""
        pat = re.compile(r"(?<![\w/])" + re.escape(method) + r"(?![\w/])")
        for rec in self.records.values():
            if rec.rule in ("drop-message", "reject", "answer-locally", "bridge") and self._fits(rec, target, direction) and pat.search(rec.where):
                return rec.id
        return UNDEFINED

    def __hash__(self) -> int:  # lru_cache on methods needs a hashable self
        return id(self)


@functools.cache
def index() -> RuleIndex:
    return RuleIndex(load_json("revision-delta.json"))
