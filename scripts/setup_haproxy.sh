#!/usr/bin/env bash
# Install Debian's HAProxy for the replica tests (tests/e2e/test_replicas.py) and scripts/replicas.py,
# idempotently, with scripts/apt_install.sh (root or sudo; never fails the setup).
exec bash "$(dirname "$0")/apt_install.sh" setup_haproxy /usr/sbin/haproxy "the replica tests" haproxy
