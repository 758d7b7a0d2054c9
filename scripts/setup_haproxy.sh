#!/usr/bin/env bash
# Install Debian's HAProxy for the replica tests (tests/e2e/test_replicas.py) and scripts/replicas.py,
# idempotently: nothing to do when haproxy is on PATH or in /usr/sbin. Needs root (as CI runs) or
# sudo. It never fails the setup: without root, or when apt-get fails, it says why and returns 0, and
# only the replica tests then fail (or skip, outside CI) saying HAProxy is missing.
set -euo pipefail
log() { printf 'setup_haproxy: %s\n' "$*" >&2; }

hp="$(command -v haproxy || echo /usr/sbin/haproxy)"
if [[ -x "$hp" ]]; then
  log "haproxy present ($("$hp" -v 2>/dev/null | head -1))"
  exit 0
fi
if [[ "$(id -u)" == 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  log "haproxy missing and not root (no passwordless sudo): install Debian's 'haproxy' package by hand"
  exit 0
fi
command -v apt-get >/dev/null || { log "haproxy missing and no apt-get: install HAProxy >= 2.6 by hand"; exit 0; }
log "installing Debian haproxy (apt-get install haproxy)"
export DEBIAN_FRONTEND=noninteractive
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
if ! { "${SUDO[@]}" apt-get install -y -qq --no-install-recommends haproxy || { "${SUDO[@]}" apt-get update -qq && "${SUDO[@]}" apt-get install -y -qq --no-install-recommends haproxy; }; } >"$out" 2>&1; then
  tail -n 30 "$out" >&2
  log "ERROR: apt-get failed (see above); the replica tests will fail until haproxy is installed"
  exit 0
fi
log "haproxy ready ($(/usr/sbin/haproxy -v 2>/dev/null | head -1))"
