#!/usr/bin/env bash
# Installs Debian's Node.js for the legacy IPN webhook tests (test/e2e/legacy_ipn_test.go runs
# receivers written in JavaScript; internal/events checks JSON.stringify round trips) when it is
# missing.
set -euo pipefail
if ! command -v node >/dev/null 2>&1; then
  "$(dirname "$0")/apt-install.sh" "the legacy IPN tests" nodejs
fi
command -v node >/dev/null 2>&1 && echo "node: $(node --version)" || true
