#!/usr/bin/env bash
# apt_install.sh TAG BINARY "WHAT NEEDS IT" PACKAGE...
# Install Debian packages for one optional test, idempotently: nothing to do when BINARY is executable.
# Needs root (as CI runs) or passwordless sudo. It never fails the setup: without root, without
# apt-get, or when apt-get fails, it says why and returns 0, and only WHAT NEEDS IT then fails (or
# skips, outside CI) saying the program is missing. apt-get update runs only when the package lists
# do not already know the packages.
set -euo pipefail
tag="$1" bin="$2" needs="$3"; shift 3
log() { printf '%s: %s\n' "$tag" "$*" >&2; }
version() { { "$bin" --version 2>/dev/null || true; } | head -1; }

if [[ -x "$bin" ]]; then
  log "$bin present ($(version))"
  exit 0
fi
if [[ "$(id -u)" == 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  log "$bin missing and not root (no passwordless sudo): install Debian's $* by hand"
  exit 0
fi
command -v apt-get >/dev/null || { log "$bin missing and no apt-get: install $* by hand"; exit 0; }
log "installing Debian $* (apt-get install)"
export DEBIAN_FRONTEND=noninteractive
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
install() { "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "$@"; }
if ! { install "$@" || { "${SUDO[@]}" apt-get update -qq && install "$@"; }; } >"$out" 2>&1; then
  tail -n 30 "$out" >&2
  log "ERROR: apt-get failed (see above); $needs will fail until $bin is installed"
  exit 0
fi
log "$bin ready ($(version))"
