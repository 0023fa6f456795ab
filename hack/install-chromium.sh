#!/usr/bin/env bash
# Installs Debian's Chromium for the hosted checkout browser tests (test/e2e/checkout_test.go)
# when it is missing; without root or sudo the browser tests skip outside CI.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  "$(dirname "$0")/apt-install.sh" "the browser tests" chromium fonts-dejavu-core
fi
command -v chromium >/dev/null 2>&1 && echo "chromium: $(chromium --version 2>/dev/null || echo present)" || true
