#!/usr/bin/env bash
# Set up everything mcpx needs on a fresh machine, idempotently:
#   .venv/                 Python >= 3.12 with mitmproxy 12, orjson, pydantic (requirements.lock)
#                          and the test tools, plus mcpx itself (editable)
#   tests/peers/...        the real MCP peers used by the demo and the tests (scripts/setup_peers.sh)
#   /usr/bin/chromium      Debian's Chromium for the mitmweb browser test (scripts/setup_browser.sh, needs root)
#   /usr/sbin/haproxy      Debian's HAProxy for the replica tests (scripts/setup_haproxy.sh, needs root)
# A re-run only redoes what changed (stamp files keyed by sha256 of the lock files).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }
sha() { sha256sum "$@" | sha256sum | cut -c1-64; }
# shellcheck source=python.sh
source "$ROOT/scripts/python.sh"

py="$(find_python)" || die "no Python >= 3.12 found (mitmproxy 12 needs one; tried python3.12..python3.15, pyenv versions, python3). Install one, or set PEERS_PYTHON=/path/to/python3.12"
VENV="$ROOT/.venv"
want="$(sha "$ROOT/requirements.lock" "$ROOT/pyproject.toml")-$("$py" -c 'import sys; print(sys.version.split()[0])')"
stamp="$VENV/.mcpx-stamp"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$VENV/bin/mitmdump" ]]; then
  log "python environment up to date ($VENV)"
else
  log "creating $VENV with $py"
  rm -rf "$VENV"
  "$py" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -qq --disable-pip-version-check --no-input -r "$ROOT/requirements.lock" >&2
  "$VENV/bin/python" -m pip install -qq --disable-pip-version-check --no-input --no-deps -e "$ROOT" >&2
  "$VENV/bin/python" -c 'import mitmproxy, orjson, pydantic, mcpx_core' || die "install finished but imports fail"
  echo "$want" > "$stamp"
fi
bash "$ROOT/scripts/setup_browser.sh" &  # Debian chromium for the mitmweb browser test
browser=$!
PEERS_PYTHON="$py" bash "$ROOT/scripts/setup_peers.sh"
wait "$browser"
bash "$ROOT/scripts/setup_haproxy.sh"  # Debian haproxy for the replica tests (after the browser's apt-get: one dpkg at a time)
log "ready: $VENV/bin/mitmdump -s addon/mcpx.py --mode reverse:http://YOUR-SERVER"
