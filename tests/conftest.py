"""Shared fixtures: shipped cases, schema validators for delivered messages."""
from __future__ import annotations

import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CASES_DIR = pathlib.Path(__file__).resolve().parent / "cases"


def load_cases() -> list[dict]:
    return [json.loads(p.read_text()) | {"_file": p.name} for p in sorted(CASES_DIR.glob("*.json"))]


def pytest_configure(config) -> None:
    """Before the test processes start (pytest-xdist workers, see scripts/test.sh): create
    mitmproxy's CA in its default confdir (~/.mitmproxy) once, so that mitmdumps started at the
    same moment by two workers do not both write it on a fresh machine."""
    if hasattr(config, "workerinput"):  # a worker: the controller did it
        return
    try:
        from mitmproxy import certs
    except ImportError:  # the proxy-only install test's interpreter may lack it: nothing to share then
        return
    certs.CertStore.from_store(pathlib.Path("~/.mitmproxy").expanduser(), "mitmproxy", 2048)
