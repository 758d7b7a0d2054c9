"""Golden files of replays (the pytest plugin's ``mcpx_golden``): a replay's calls as readable JSON,
compared with a stored file; on a difference, a unified diff of the two texts."""

from __future__ import annotations

import difflib
import json
import os
import pathlib

from .run import Replay

#: lines of a difference shown (the rest: counted)
DIFF_LINES = 150


def data(run: Replay) -> dict:
    """What a golden file holds: the recording's name, the client revision and every call."""
    return {"file": os.path.basename(run.file), "client_revision": run.revision, "calls": run.golden()}


def text(value: dict) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def compare(run: Replay, path: str | os.PathLike, update: bool = False) -> str | None:
    """None when ``path`` holds ``run``'s golden text (or ``update``: it is written); else the
    message to fail with: the diff, or that the file is missing."""
    path = pathlib.Path(path)
    actual = text(data(run))
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return None
    if not path.exists():
        return f"no golden file {path}: run pytest with --mcpx-update-goldens to write it, then review it"
    expected = path.read_text(encoding="utf-8")
    if expected == actual:
        return None
    lines = list(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                      f"{path.name} (golden)", f"{path.name} (replayed as {run.revision})", n=3))
    more = len(lines) - DIFF_LINES
    shown = "".join(lines[:DIFF_LINES]) + (f"\n... {more} more diff lines\n" if more > 0 else "")
    return (f"the replay of {os.path.basename(run.file)} as {run.revision} differs from {path}:\n{shown}"
            "(if the change is intended: pytest --mcpx-update-goldens rewrites the golden files)")
