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
# postgresql is Debian's metapackage for the distribution's current major version (15 on
# bookworm, `apt-cache policy postgresql`); it pulls postgresql-<major> with the binaries.
"$(dirname "$0")/apt-install.sh" "the archive tests" postgresql
dir=$(find_bin) || { echo "hack/install-postgres.sh: initdb/postgres not found (not installed)" >&2; exit 0; }
echo "postgres: $("$dir/postgres" --version) ($dir)"
