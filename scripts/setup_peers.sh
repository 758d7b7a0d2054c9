#!/usr/bin/env bash
# Install the real MCP test peers from their registries (npm, PyPI), idempotently:
#   tests/peers/node_modules       npm ci (exact versions from package-lock.json)
#   tests/peers/.venvs/mcp-<ver>   one venv per PyPI mcp version, from
#                                  tests/peers/requirements-mcp-<ver>.txt (exact pins)
# A re-run skips every part whose lockfile / requirements file (and Python) is
# unchanged (stamp files keyed by their sha256). Needs node >= 20 and Python >= 3.12
# (found by itself; set PEERS_PYTHON=/path/to/python to force one).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="$ROOT/tests/peers"
VENVS="$PEERS/.venvs"
MCP_VERSIONS=(1.8.1 1.9.4 1.12.4 2.3.0)

log() { printf 'setup_peers: %s\n' "$*" >&2; }
die() { printf 'setup_peers: ERROR: %s\n' "$*" >&2; exit 1; }
sha() { sha256sum "$@" | sha256sum | cut -c1-64; }

# ---------------------------------------------------------------- Python >= 3.12
py_ok() { # "$@" = command; prints its version when it is a Python >= 3.12
  "$@" -c 'import sys; assert sys.version_info >= (3, 12); print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null
}
find_python() { # prefers the lowest minor >= 3.12 (the one the peers were pinned on)
  local minor cand v
  if [[ -n "${PEERS_PYTHON:-}" ]]; then
    py_ok "$PEERS_PYTHON" >/dev/null || die "PEERS_PYTHON=$PEERS_PYTHON is not a Python >= 3.12"
    "$PEERS_PYTHON" -c 'import sys; print(sys.executable)'; return
  fi
  for minor in 12 13 14 15; do
    cand="python3.$minor"
    if command -v "$cand" >/dev/null && py_ok "$cand" >/dev/null; then
      "$cand" -c 'import sys; print(sys.executable)'; return
    fi
    # pyenv shims refuse a version that is installed but not selected: ask for it.
    if command -v pyenv >/dev/null; then
      for v in $(pyenv versions --bare 2>/dev/null | grep -E "^3\.$minor(\.[0-9]+)?\$" | sort -t. -k3,3nr); do
        if PYENV_VERSION="$v" py_ok "$cand" >/dev/null; then
          PYENV_VERSION="$v" "$cand" -c 'import sys; print(sys.executable)'; return
        fi
      done
    fi
    for cand in /usr/local/bin/python3.$minor /usr/bin/python3.$minor "$HOME"/.pyenv/versions/3.$minor*/bin/python3.$minor; do
      if [[ -x "$cand" ]] && py_ok "$cand" >/dev/null; then "$cand" -c 'import sys; print(sys.executable)'; return; fi
    done
  done
  if command -v python3 >/dev/null && py_ok python3 >/dev/null; then
    python3 -c 'import sys; print(sys.executable)'; return
  fi
  return 1
}

# ---------------------------------------------------------------- npm peers
setup_npm() {
  command -v node >/dev/null || die "node not found (need Node.js >= 20 for the npm peers)"
  command -v npm >/dev/null || die "npm not found"
  local major; major="$(node -p 'process.versions.node.split(".")[0]')"
  (( major >= 20 )) || die "node $(node --version) is too old: need >= 20"
  local want stamp="$PEERS/node_modules/.mcpx-stamp"
  want="$(sha "$PEERS/package-lock.json" "$PEERS/package.json")"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    log "npm peers up to date"
    return
  fi
  log "npm ci in tests/peers"
  (cd "$PEERS" && npm ci --no-audit --no-fund --loglevel=error >&2)
  echo "$want" > "$stamp"
}

# ---------------------------------------------------------------- PyPI venvs
setup_venv() { # $1 = mcp version, $2 = python
  local ver="$1" py="$2" dir="$VENVS/mcp-$1" req="$PEERS/requirements-mcp-$1.txt"
  [[ -f "$req" ]] || die "missing $req"
  local want stamp="$dir/.mcpx-stamp"
  want="$(sha "$req")-$("$py" -c 'import sys; print(sys.version.split()[0])')"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$dir/bin/python" ]]; then
    return 0
  fi
  log "creating venv mcp-$ver"
  rm -rf "$dir"
  "$py" -m venv "$dir"
  "$dir/bin/python" -m pip install -qq --disable-pip-version-check --no-input -r "$req" >&2
  "$dir/bin/python" -c 'import mcp, mcp.client.streamable_http' \
    || die "mcp-$ver installed but does not import"
  echo "$want" > "$stamp"
}

main() {
  local py
  py="$(find_python)" || die "no Python >= 3.12 found (tried python3.12..python3.15, pyenv versions, python3); install one or set PEERS_PYTHON=/path/to/python3.12"
  log "using $py ($(py_ok "$py"))"
  mkdir -p "$VENVS"
  setup_npm &
  local pids=($!) ver
  for ver in "${MCP_VERSIONS[@]}"; do
    setup_venv "$ver" "$py" &
    pids+=($!)
  done
  local failed=0 pid
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  (( failed == 0 )) || die "some peers failed to install (see above)"
  log "all peers ready"
}

main "$@"
