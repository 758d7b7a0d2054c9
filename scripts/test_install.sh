#!/usr/bin/env bash
# CI: the README's proxy-only install from a clean copy of the checkout (tests/install/): a fresh
# venv with `pip install -c requirements.lock .` only, whose `mitmdump -s "$(python -m mcpx)"`
# rewrites one real exchange; then a new project in that venv, with pytest, tests a recorded session with
# the pytest plugin. Needs scripts/setup.sh first (the .venv running pytest, the npm peers)
# and PyPI. About 40 s on 2 cores with a warm pip cache, and 60 s more for the plugin test.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MCPX_INSTALL_TEST=1 exec "$ROOT/.venv/bin/python" -m pytest -p no:cacheprovider -q -s tests/install "$@"
