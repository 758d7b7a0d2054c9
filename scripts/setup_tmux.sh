#!/usr/bin/env bash
# Install Debian's tmux for the console test (tests/inspect/test_flow_commands.py: mitmproxy's console
# in a tmux pane, read with capture-pane), idempotently, with scripts/apt_install.sh (root or sudo;
# never fails the setup).
exec bash "$(dirname "$0")/apt_install.sh" setup_tmux /usr/bin/tmux "the console test" tmux
