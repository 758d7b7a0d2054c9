#!/usr/bin/env bash
# Install Debian's Chromium for the mitmweb browser test (tests/inspect/test_mitmweb_browser.py),
# idempotently: nothing to do when /usr/bin/chromium exists. Needs root (as CI runs) or sudo.
# It never fails the setup: without root, or when apt-get fails, it says why and returns 0, and
# only the browser test then fails (or skips, outside CI) saying Chromium is missing.
# The test drives it with npm playwright-core (tests/peers/package.json), never a downloaded browser.
set -euo pipefail
log() { printf 'setup_browser: %s\n' "$*" >&2; }

if [[ -x /usr/bin/chromium ]]; then
  log "chromium present ($(/usr/bin/chromium --version 2>/dev/null || echo '?'))"
  exit 0
fi
if [[ "$(id -u)" == 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  log "chromium missing and not root (no passwordless sudo): install Debian's 'chromium' package by hand"
  exit 0
fi
command -v apt-get >/dev/null || { log "chromium missing and no apt-get: install Chromium at /usr/bin/chromium by hand"; exit 0; }
log "installing Debian chromium (apt-get update, apt-get install chromium)"
export DEBIAN_FRONTEND=noninteractive
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
if ! { "${SUDO[@]}" apt-get update -qq && "${SUDO[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core; } >"$out" 2>&1; then
  tail -n 30 "$out" >&2
  log "ERROR: apt-get failed (see above); the mitmweb browser test will fail until chromium is installed"
  exit 0
fi
log "chromium ready ($(/usr/bin/chromium --version 2>/dev/null || echo '?'))"
