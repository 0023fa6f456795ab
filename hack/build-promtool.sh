#!/usr/bin/env bash
# Builds promtool (Prometheus's rule checker and rule unit-test runner) from the Go module proxy
# into bin/, for test/alerts (`promtool check rules`, `promtool test rules`). Does nothing when
# bin/promtool is already there. Service discovery plugins are left out (remove_all_sd): promtool's
# rule commands do not use them, and they are most of the build.
#
#   hack/build-promtool.sh
#   PROMETHEUS_VERSION=v0.316.0 hack/build-promtool.sh     # the Go module version of Prometheus 3.16.0
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${LOCALBIN:-$ROOT/bin}
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}

mkdir -p "$BIN"
exec 9>"$BIN/.promtool.lock"
flock 9

if [ -x "$BIN/promtool" ]; then exit 0; fi
echo "hack/build-promtool: building promtool (github.com/prometheus/prometheus $PROMETHEUS_VERSION, a few minutes cold)" >&2
tmp=$(mktemp -d "$BIN/.promtool-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
GOBIN=$tmp GOFLAGS=-mod=mod CGO_ENABLED=0 go install -trimpath -tags remove_all_sd \
  github.com/prometheus/prometheus/cmd/promtool@"$PROMETHEUS_VERSION"
mv "$tmp/promtool" "$BIN/promtool"
echo "hack/build-promtool: promtool ready: $BIN/promtool" >&2
