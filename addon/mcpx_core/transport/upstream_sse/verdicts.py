"""The probe's verdicts, cached per origin and path, bounded, sans-IO.

A Streamable HTTP client's ``initialize`` POST that the server refuses with 400, 404 or 405 makes
mcpx GET the paths :func:`.wire.probe_paths` names (2025-03-26 transports "Backwards
compatibility"). A server that is not HTTP+SSE must cost one probe per path, not one per
``initialize``: the verdict (True: HTTP+SSE, with the path; False: not) is kept per
``(scheme, host:port, path)`` in insertion-refreshed order; past :data:`VERDICT_LIMIT` entries the
least recently used goes. A probe that timed out or failed to connect is not a verdict and is not
cached (the next ``initialize`` probes again).
"""

from __future__ import annotations

from collections import OrderedDict
from urllib.parse import urlsplit

#: origin+path verdicts kept; one entry is a few hundred bytes
VERDICT_LIMIT = 1024


def key(url: str) -> tuple[str, str, str]:
    """The cache key of a probed URL: lower-case scheme and host:port, the path without query
    (``/sse?x=1`` and ``/sse`` are one path to the server's router)."""
    u = urlsplit(url)
    return u.scheme.lower(), u.netloc.lower(), u.path or "/"


class Verdicts:
    """:meth:`get` gives True, False or None (never probed, or evicted); :meth:`put` records one."""

    def __init__(self, limit: int = VERDICT_LIMIT) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._map: OrderedDict[tuple[str, str, str], bool] = OrderedDict()

    def __len__(self) -> int:
        return len(self._map)

    def clear(self) -> None:
        self._map.clear()

    def get(self, url: str) -> bool | None:
        k = key(url)
        if k not in self._map:
            return None
        self._map.move_to_end(k)
        return self._map[k]

    def put(self, url: str, verdict: bool) -> None:
        k = key(url)
        self._map[k] = verdict
        self._map.move_to_end(k)
        while len(self._map) > self.limit:
            self._map.popitem(last=False)

    def to_probe(self, origin: str, paths: list[str]) -> tuple[str | None, list[str]]:
        """For a refused ``initialize`` at ``origin`` (``scheme://host:port``) and the paths in
        probe order: the first path already known to be HTTP+SSE (then nothing to probe), else
        None and the paths not yet judged, in order (a path known not to be HTTP+SSE is skipped)."""
        todo = []
        for p in paths:
            v = self.get(origin + p)
            if v is True:
                return p, []
            if v is None:
                todo.append(p)
        return None, todo
