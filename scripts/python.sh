# Sourced by scripts/*.sh: find a Python >= 3.12 (mitmproxy 12 needs it; the machine default may be 3.11).
# die() must be defined by the caller.
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

