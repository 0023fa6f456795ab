#!/usr/bin/env bash
# Installs Debian packages for a test dependency, the one way every hack/install-*.sh does it:
#   hack/apt-install.sh "<what it is for>" <package>...
# Needs root (as in CI) or sudo; without either it says so and exits 0, and the tests that need
# the packages skip outside CI (in CI they fail instead).
set -euo pipefail
what=$1
shift
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "hack/apt-install.sh: not root and no sudo: install $* to run $what" >&2
    exit 0
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
