#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the main job on a real example (scripts/demo.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
exec "$ROOT/.venv/bin/python" "$ROOT/scripts/demo.py"
