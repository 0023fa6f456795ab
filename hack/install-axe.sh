#!/usr/bin/env bash
# Fetches axe-core (the accessibility engine the console's browser tests run in Chromium,
# test/e2e/console_test.go) from npm into bin/axe/axe.min.js when it is missing; installs
# Debian's npm first if needed. Without it the accessibility checks skip outside CI.
set -euo pipefail
cd "$(dirname "$0")/.."
version=4.14.1
dest=bin/axe
if [ -f "$dest/axe.min.js" ] && grep -q "axe v$version" "$dest/axe.min.js"; then
  echo "axe-core: $version (bin/axe/axe.min.js)"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  hack/apt-install.sh "the console's accessibility checks" npm
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "hack/install-axe.sh: npm is missing; the accessibility checks skip outside CI" >&2
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && npm pack --silent "axe-core@$version" >/dev/null); then
  echo "hack/install-axe.sh: npm could not fetch axe-core@$version; the accessibility checks say so" >&2
  exit 0
fi
tar -xzf "$tmp/axe-core-$version.tgz" -C "$tmp"
mkdir -p "$dest"
cp "$tmp/package/axe.min.js" "$dest/axe.min.js"
echo "axe-core: $version (bin/axe/axe.min.js)"
