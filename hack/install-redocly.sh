#!/usr/bin/env bash
# Installs Redocly CLI, the OpenAPI linter that `make lint-openapi` runs on apiserver/openapi.json
# with the rules of redocly.yaml, from npm into bin/redocly when it is missing or another version;
# installs Node.js (hack/install-node.sh) and Debian's npm first if needed. When it cannot (no
# root, no npm, a Node.js too old, npm failing) it says so and exits 0: `make lint-openapi` then
# skips outside CI and fails in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
version=2.77.0
bin=${LOCALBIN:-$(pwd)/bin}
dest=$bin/redocly
installed() {
  [ -x "$dest/bin/redocly" ] &&
    grep -q "\"version\": \"$version\"" "$dest/lib/node_modules/@redocly/cli/package.json" 2>/dev/null
}
if installed; then
  echo "redocly: $version ($dest/bin/redocly)"
  exit 0
fi
if ! command -v node >/dev/null 2>&1; then
  hack/install-node.sh
fi
if command -v node >/dev/null 2>&1 && ! command -v npm >/dev/null 2>&1; then
  hack/apt-install.sh "the OpenAPI lint" npm
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "hack/install-redocly.sh: node or npm is missing; the OpenAPI lint skips outside CI" >&2
  exit 0
fi
# Redocly CLI 2 runs on Node.js 20.19 or later within 20, or 22.12 or later (its engines field).
if ! node -e '
  const [major, minor] = process.versions.node.split(".").map(Number);
  process.exit((major === 20 && minor >= 19) || (major === 22 && minor >= 12) || major > 22 ? 0 : 1);
'; then
  echo "hack/install-redocly.sh: Redocly CLI $version needs Node.js 20.19+ or 22.12+, not $(node --version); the OpenAPI lint skips outside CI" >&2
  exit 0
fi
mkdir -p "$bin"
exec 9>"$bin/.redocly.lock"
flock 9
if installed; then
  echo "redocly: $version ($dest/bin/redocly)"
  exit 0
fi
tmp=$(mktemp -d "$bin/.redocly-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! npm install --global --prefix "$tmp" --no-audit --no-fund --no-update-notifier --loglevel=error \
  "@redocly/cli@$version" >/dev/null; then
  echo "hack/install-redocly.sh: npm could not install @redocly/cli@$version; the OpenAPI lint skips outside CI" >&2
  exit 0
fi
chmod 755 "$tmp"
rm -rf "$dest"
mv "$tmp" "$dest"
echo "redocly: $version ($dest/bin/redocly)"
