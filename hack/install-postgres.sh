#!/usr/bin/env bash
# Installs Debian's PostgreSQL server binaries (initdb, postgres) for the archive tests
# (internal/archive, started by internal/pgtest) when they are missing: on PATH or under
# /usr/lib/postgresql/*/bin. Needs root (as in CI) or sudo; without either it says so and the
# archive tests skip outside CI. The cluster Debian's package creates is not used: the tests run
# their own server on a temporary directory and port.
set -euo pipefail
find_bin() {
  if command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1; then
    dirname "$(command -v postgres)"
    return 0
  fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/postgres" ]; then echo "$d"; return 0; fi
  done
  return 1
}
if dir=$(find_bin); then
  echo "postgres: $("$dir/postgres" --version) ($dir)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "hack/install-postgres.sh: not root and no sudo: install the 'postgresql' package to run the archive tests" >&2
    exit 0
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# postgresql is Debian's metapackage for the distribution's current major version (15 on
# bookworm, `apt-cache policy postgresql`); it pulls postgresql-<major> with the binaries.
$SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
dir=$(find_bin) || { echo "hack/install-postgres.sh: postgresql installed but initdb/postgres not found" >&2; exit 1; }
echo "postgres: $("$dir/postgres" --version) ($dir)"
