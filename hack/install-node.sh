#!/usr/bin/env bash
# Installs Debian's Node.js for the legacy IPN webhook tests (test/e2e/legacy_ipn_test.go runs
# receivers written in JavaScript; internal/events checks JSON.stringify round trips) when it is
# missing. Needs root (as in CI) or sudo; without either it says so and those tests skip outside CI.
set -euo pipefail
if command -v node >/dev/null 2>&1; then
  echo "node: $(node --version)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "hack/install-node.sh: not root and no sudo: install the 'nodejs' package to run the legacy IPN tests" >&2
    exit 0
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends nodejs >/dev/null
echo "node: $(node --version)"
