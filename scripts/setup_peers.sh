#!/usr/bin/env bash
# Install the real MCP test peers from their registries (npm, PyPI), idempotently:
#   tests/peers/node_modules       npm ci (exact versions from package-lock.json)
#   tests/peers/.venvs/mcp-<ver>   one venv per PyPI mcp version, from
#                                  tests/peers/requirements-mcp-<ver>.txt (exact pins)
#   tests/peers/.venvs/<client>    one venv per released third-party client (fastmcp, langchain-mcp-adapters,
#                                  pydantic-ai-slim, openai-agents), from requirements-<client>.txt (exact pins)
#   tests/conformance/node_modules        npm ci: the official MCP conformance suite 0.1.16
#   tests/conformance/alpha/node_modules  npm ci: the conformance suite 0.2.0-alpha.12 (2026-07-28)
# A re-run skips every part whose lockfile / requirements file (and Python) is
# unchanged (stamp files keyed by their sha256). Needs node >= 20 and Python >= 3.12
# (found by itself; set PEERS_PYTHON=/path/to/python to force one).
#
#   scripts/setup_peers.sh        every peer (the tests)
#   scripts/setup_peers.sh demo   only what scripts/demo.py runs: tests/peers/node_modules (the npm
#                                 everything server, @modelcontextprotocol/sdk 1.10.2) and the mcp-1.8.1 venv
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="$ROOT/tests/peers"
VENVS="$PEERS/.venvs"
MCP_VERSIONS=(1.6.0 1.8.1 1.9.2 1.9.4 1.12.4 2.3.0)  # 1.6.0: HTTP+SSE only (no Streamable HTTP client)
# third-party clients: venv name = requirements-<name>.txt; each with the import that must work
declare -A TP_CLIENTS=(
  [fastmcp-2.3.4]="import fastmcp"
  [fastmcp-2.10.6]="import fastmcp"
  [langchain-mcp-adapters-0.1.7]="import langchain_mcp_adapters.client, langchain_mcp_adapters.tools"
  [pydantic-ai-slim-0.4.4]="import pydantic_ai.mcp"
  [openai-agents-0.0.19]="import agents.mcp"
)

log() { printf 'setup_peers: %s\n' "$*" >&2; }
die() { printf 'setup_peers: ERROR: %s\n' "$*" >&2; exit 1; }
sha() { sha256sum "$@" | sha256sum | cut -c1-64; }

# shellcheck source=python.sh
source "$ROOT/scripts/python.sh"

# ---------------------------------------------------------------- npm peers
check_node() {
  command -v node >/dev/null || die "node not found (need Node.js >= 20 for the npm peers)"
  command -v npm >/dev/null || die "npm not found"
  local major; major="$(node -p 'process.versions.node.split(".")[0]')"
  (( major >= 20 )) || die "node $(node --version) is too old: need >= 20"
}

npm_ci() { # $1 = folder with package.json + package-lock.json, relative to the repository
  local dir="$ROOT/$1" want stamp="$ROOT/$1/node_modules/.mcpx-stamp"
  want="$(sha "$dir/package-lock.json" "$dir/package.json")"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    log "npm packages up to date in $1"
    return
  fi
  log "npm ci in $1"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
  echo "$want" > "$stamp"
}

# ---------------------------------------------------------------- PyPI venvs
setup_venv() { # $1 = venv name, $2 = python, $3 = import check; requirements-$1.txt
  local name="$1" py="$2" check="$3" dir="$VENVS/$1" req="$PEERS/requirements-$1.txt"
  [[ -f "$req" ]] || die "missing $req"
  local want stamp="$dir/.mcpx-stamp"
  want="$(sha "$req")-$("$py" -c 'import sys; print(sys.version.split()[0])')"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$dir/bin/python" ]]; then
    return 0
  fi
  log "creating venv $name"
  rm -rf "$dir"
  "$py" -m venv "$dir"
  "$dir/bin/python" -m pip install -qq --disable-pip-version-check --no-input -r "$req" >&2
  local out # fastmcp 2.10.6 prints an authlib deprecation warning on import: show output only on failure
  out="$("$dir/bin/python" -c "$check" 2>&1)" || { printf '%s\n' "$out" >&2; die "$name installed but does not import"; }
  echo "$want" > "$stamp"
}

main() {
  local part="${1:-all}" py
  [[ "$part" == all || "$part" == demo ]] || die "unknown part '$part' (all, demo)"
  py="$(find_python)" || die "no Python >= 3.12 found (tried python3.12..python3.15, pyenv versions, python3); install one or set PEERS_PYTHON=/path/to/python3.12"
  log "using $py ($(py_ok "$py"))"
  mkdir -p "$VENVS"
  check_node
  local pids=() ver dir check npm_dirs=(tests/peers) versions=(1.8.1) clients=()
  if [[ "$part" == all ]]; then
    # the test peers, and the official conformance suite (tests/e2e/test_conformance.py) in two releases
    npm_dirs=(tests/peers tests/conformance tests/conformance/alpha)
    versions=("${MCP_VERSIONS[@]}")
    clients=("${!TP_CLIENTS[@]}")
  fi
  for dir in "${npm_dirs[@]}"; do
    npm_ci "$dir" &
    pids+=($!)
  done
  for ver in "${versions[@]}"; do
    if [[ "$ver" == 1.6.0 ]]; then check="import mcp, mcp.client.sse"; else check="import mcp, mcp.client.streamable_http"; fi
    setup_venv "mcp-$ver" "$py" "$check" &
    pids+=($!)
  done
  local name
  for name in "${clients[@]}"; do
    setup_venv "$name" "$py" "${TP_CLIENTS[$name]}" &
    pids+=($!)
  done
  if [[ "$part" == all ]]; then  # a current fastmcp server (tests/peers/fastmcp_server.py)
    setup_venv fastmcp-4.1.6 "$py" "import fastmcp" &
    pids+=($!)
  fi
  local failed=0 pid
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  (( failed == 0 )) || die "some peers failed to install (see above)"
  if [[ "$part" == demo ]]; then log "the demo's peers are ready"; else log "all peers ready"; fi
}

main "$@"
