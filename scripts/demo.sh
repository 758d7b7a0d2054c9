#!/usr/bin/env bash
# Set up only what the demo needs (scripts/setup.sh demo: .venv with mcpx and mitmproxy, the npm
# everything server and SDK 1.10.2 client, the PyPI mcp 1.8.1 client; no browser, no root) and run
# the main job on a real example (scripts/demo.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh" demo
exec "$ROOT/.venv/bin/python" "$ROOT/scripts/demo.py"
