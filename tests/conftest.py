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
