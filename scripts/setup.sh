#!/usr/bin/env bash
# Set up what mcpx's scripts need on a fresh machine, idempotently.
#
#   scripts/setup.sh        everything the tests need (scripts/test.sh, CI):
#     .venv/                 Python >= 3.12 with mcpx (editable), mitmproxy 12, orjson, pydantic and the
#                            test tools (pytest, hypothesis, jsonschema), versions of requirements.lock
#     tests/peers/...        every real MCP peer (scripts/setup_peers.sh)
#     /usr/bin/chromium      Debian's Chromium for the mitmweb browser test (scripts/setup_browser.sh:
#                            apt-get, as root or with passwordless sudo)
#     /usr/sbin/haproxy      Debian's HAProxy for the replica tests (scripts/setup_haproxy.sh, needs root)
#     /usr/bin/tmux          Debian's tmux for the console test (scripts/setup_tmux.sh, needs root)
#   scripts/setup.sh demo   only what scripts/demo.sh needs: .venv without the test tools, the npm peers
#                            and the mcp 1.8.1 client (scripts/setup_peers.sh demo); no browser, no root
#
# A re-run only redoes what changed (stamp files keyed by sha256 of the lock files); `setup.sh` after
# `setup.sh demo` adds the test tools and the other peers to what is there, and `setup.sh demo` after
# `setup.sh` keeps its .venv (a test venv holds all the demo needs). A .venv made by hand (the README's
# `pip install -c requirements.lock .`) is kept too when it holds the lock's versions (scripts/venv_kind.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }
sha() { cat "$@" | sha256sum | cut -c1-64; }  # of the contents only: the same wherever the checkout lies
# shellcheck source=python.sh
source "$ROOT/scripts/python.sh"

part="${1:-tests}"
[[ "$part" == tests || "$part" == demo ]] || die "unknown part '$part' (tests, demo)"
py="$(find_python)" || die "no Python >= 3.12 found (mitmproxy 12 needs one; tried python3.12..python3.15, pyenv versions, python3). Install one, or set PEERS_PYTHON=/path/to/python3.12"
VENV="$ROOT/.venv"
pip() { "$VENV/bin/python" -m pip install -qq --disable-pip-version-check --no-input -c "$ROOT/requirements.lock" "$@" >&2; }
pyver="$("$py" -c 'import sys; print(sys.version.split()[0])')"
want="$(sha "$ROOT/requirements.lock" "$ROOT/pyproject.toml")-$pyver"
stamp="$VENV/.mcpx-stamp"  # "<want> proxy" (mcpx and its dependencies) or "<want> test" (and the test tools)
have="$(cat "$stamp" 2>/dev/null || true)"
python_env() {
  if [[ -x "$VENV/bin/mitmdump" && "$have" != "$want test" && "$have" != "$want proxy" ]]; then
    # a venv made by hand (the README's proxy-only install) or under another stamp: keep it when what
    # it holds is what this part needs (scripts/venv_kind.py: same Python, the lock's versions)
    local found
    found="$("$VENV/bin/python" "$ROOT/scripts/venv_kind.py" "$ROOT" "$pyver" 2>/dev/null || true)"
    if [[ "$found" == test || "$found" == proxy ]]; then
      log "reusing $VENV (it holds the $found part at the versions of requirements.lock)"
      have="$want $found"  # not written to the stamp: a venv kept as it is stays untouched
    fi
  fi
  if [[ -x "$VENV/bin/mitmdump" && ( "$have" == "$want test" || ( "$part" == demo && "$have" == "$want proxy" ) ) ]]; then
    log "python environment up to date ($VENV)"
  elif [[ -x "$VENV/bin/mitmdump" && "$have" == "$want proxy" ]]; then
    log "adding the test tools to $VENV"
    pip -e "$ROOT[test]"
    echo "$want test" > "$stamp"
  else
    log "creating $VENV with $py"
    rm -rf "$VENV"
    "$py" -m venv "$VENV"
    if [[ "$part" == tests ]]; then pip -e "$ROOT[test]"; else pip -e "$ROOT"; fi
    "$VENV/bin/python" -c 'import mitmproxy, orjson, pydantic, mcpx_core' || die "install finished but imports fail"
    echo "$want $([[ "$part" == tests ]] && echo test || echo proxy)" > "$stamp"
  fi
}
python_env &  # in parallel with the peers (npm ci is mostly waiting on the network)
env_pid=$!
if [[ "$part" == tests ]]; then
  bash "$ROOT/scripts/setup_browser.sh" &  # Debian chromium for the mitmweb browser test
  browser=$!
  PEERS_PYTHON="$py" bash "$ROOT/scripts/setup_peers.sh"
  wait "$browser"
  bash "$ROOT/scripts/setup_haproxy.sh"  # Debian haproxy for the replica tests (after the browser's apt-get: one dpkg at a time)
  bash "$ROOT/scripts/setup_tmux.sh"  # Debian tmux for the console test
else
  PEERS_PYTHON="$py" bash "$ROOT/scripts/setup_peers.sh" demo
fi
wait "$env_pid" || die "the python environment ($VENV) failed to install (see above)"
# byte-compile the addon: where PYTHONDONTWRITEBYTECODE is set, every mitmdump would otherwise compile
# mcpx's modules from source at start-up (0.2 s of CPU each time; the tests start hundreds)
"$VENV/bin/python" -m compileall -q -j 0 "$ROOT/addon" >/dev/null || log "byte-compiling the addon failed (mcpx runs from source)"
if [[ "$PWD" == "$ROOT" ]]; then at=""; else at="$ROOT/"; fi  # a command that runs as printed, from here
log "ready: ${at}.venv/bin/mitmdump -s ${at}addon/mcpx.py --mode reverse:http://YOUR-SERVER"
