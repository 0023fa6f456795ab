#!/usr/bin/env bash
# Installs Debian's Chromium for the hosted checkout browser tests (test/e2e/checkout_test.go)
# when it is missing. Needs root (as in CI) or sudo; without either it says so and the browser
# tests skip outside CI.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  echo "chromium: $(chromium --version 2>/dev/null || echo present)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "hack/install-chromium.sh: not root and no sudo: install the 'chromium' package to run the browser tests" >&2
    exit 0
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "chromium: $(chromium --version)"
