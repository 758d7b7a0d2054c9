"""Which part of scripts/setup.sh an existing .venv already serves, judged from what is installed in it
(run with the venv's own python): prints ``test`` (mcpx, its dependencies and the test tools), ``proxy``
(mcpx and its dependencies: e.g. the Quick start's ``pip install -c requirements.lock .``) or nothing.

    .venv/bin/python scripts/venv_kind.py ROOT PYTHON_VERSION

A venv counts only if it runs the Python version setup.sh chose, imports mitmproxy, orjson, pydantic and
mcpx_core, and every distribution it holds that requirements.lock pins is at the pinned version. ``test``
also needs the test tools of pyproject.toml's ``test`` extra and mcpx installed editable (the full setup's
``pip install -e '.[test]'``). setup.sh then keeps the venv instead of building it again, and changes
nothing in it (not even its stamp file) unless the part asked for needs more."""

from __future__ import annotations

import json
import re
import sys
from importlib import metadata
from pathlib import Path

PROXY = ("mcpx", "mitmproxy", "orjson", "pydantic", "prometheus-client")
TEST = ("pytest", "pytest-timeout", "pytest-xdist", "jsonschema", "hypothesis", "kubernetes-validate")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def kind(root: Path, version: str) -> str:
    if "%d.%d.%d" % sys.version_info[:3] != version:
        return ""
    pins = {}
    for line in (root / "requirements.lock").read_text().splitlines():
        name, sep, ver = line.split("#")[0].strip().partition("==")
        if sep:
            pins[norm(name)] = ver.strip()
    installed = {norm(d.metadata["Name"] or ""): d.version for d in metadata.distributions()}
    if any(name in pins and pins[name] != ver for name, ver in installed.items()):
        return ""
    try:
        import mcpx_core, mitmproxy, orjson, pydantic  # noqa: F401
    except Exception:
        return ""
    if not all(norm(n) in installed for n in PROXY):
        return ""
    try:
        url = json.loads(metadata.distribution("mcpx").read_text("direct_url.json") or "{}")
    except Exception:
        url = {}
    # editable (the full setup's ``pip install -e '.[test]'``; the suite imports mcpx from the checkout's
    # addon/ either way, so a venv shared by several checkouts of one repository serves each)
    editable = bool(url.get("dir_info", {}).get("editable"))
    if editable and all(norm(n) in installed for n in TEST):
        return "test"
    return "proxy"


if __name__ == "__main__":
    print(kind(Path(sys.argv[1]), sys.argv[2]))
