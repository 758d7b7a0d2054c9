#!/usr/bin/env bash
# Set up everything the tests need (scripts/setup.sh: .venv with the test tools, every peer, Debian
# chromium via apt-get as root) and run the whole test suite: unit, replay and real-peer end-to-end tests.
# Extra arguments go to pytest (e.g. scripts/test.sh -k streaming; -n 0 runs in one process).
# Tests run in MCPX_TEST_WORKERS (default 4) pytest-xdist processes, a test file per process at a
# time: most of an end-to-end test is waiting for its peers, so 4 fill 2 cores.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
cd "$ROOT"
export MCPX_REQUIRE_PEERS=1
exec "$ROOT/.venv/bin/python" -m pytest -p no:cacheprovider -n "${MCPX_TEST_WORKERS:-4}" --dist loadfile "$@"
