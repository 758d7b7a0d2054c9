#!/usr/bin/env bash
# Install Debian's Chromium for the mitmweb browser test (tests/inspect/test_mitmweb_browser.py),
# idempotently, with scripts/apt_install.sh (root or sudo; never fails the setup).
# The test drives it with npm playwright-core (tests/peers/package.json), never a downloaded browser.
exec bash "$(dirname "$0")/apt_install.sh" setup_browser /usr/bin/chromium "the mitmweb browser test" \
  chromium fonts-dejavu-core
