#!/usr/bin/env bash
# Builds etcd, kube-apiserver and kube-controller-manager from the Go module proxy into bin/ for
# envtest, `paygate dev`, the e2e suite and the fault harness (kube-controller-manager runs only
# the garbage collector and the namespace controller there). Does nothing for a binary that is
# already there. Safe to run concurrently with itself (a lock).
#
#   hack/build-controlplane.sh            # all three
#   ETCD_VERSION=v3.6.16 KUBE_VERSION=v1.37.0 hack/build-controlplane.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${LOCALBIN:-$ROOT/bin}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
KUBE_VERSION=${KUBE_VERSION:-v1.37.0}
STAGING_VERSION=v0${KUBE_VERSION#v1}
WORK=${CONTROLPLANE_WORK:-$BIN/.controlplane-build}

mkdir -p "$BIN" "$WORK"
exec 9>"$BIN/.controlplane.lock"
flock 9

log() { echo "hack/build-controlplane: $*" >&2; }

build_etcd() {
  if [ -x "$BIN/etcd" ]; then return 0; fi
  log "building etcd $ETCD_VERSION (about 2 minutes cold)"
  local dir="$WORK/etcd"
  rm -rf "$dir" && mkdir -p "$dir"
  cat >"$dir/go.mod" <<MOD
module paygate.local/etcdbuild

go 1.26

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
MOD
  cat >"$dir/tools.go" <<'SRC'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
SRC
  (cd "$dir" && GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true)
  (cd "$dir" && GOFLAGS=-mod=mod go get go.etcd.io/etcd/server/v3@"$ETCD_VERSION" && \
    GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$BIN/etcd.tmp" "$BIN/etcd"
  log "etcd ready: $BIN/etcd"
}

# kube-apiserver and kube-controller-manager come from one temporary module (k8s.io/kubernetes with
# its staging modules pinned) and share its module and build cache: the second is a small build
# once the first is done.
kube_module() {
  local dir=$1
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$dir" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" >"$dir/k8s.json")
  local kmod
  kmod=$(sed -n 's/.*"GoMod": "\(.*\)",*/\1/p' "$dir/k8s.json")
  {
    echo "module paygate.local/kubebuild"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo "replace ("
    # Every k8s.io/<staging> module kubernetes replaces with ./staging/... is pinned to the
    # published v0.x release of the same minor.
    sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"$STAGING_VERSION"'#p' "$kmod"
    echo ")"
  } >"$dir/go.mod"
  cat >"$dir/tools.go" <<'SRC'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
SRC
  (cd "$dir" && GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true)
}

build_kube() {
  local name=$1 dir=$2 started=$SECONDS
  local ldflags="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${KUBE_VERSION#v1.}"
  ldflags=${ldflags%.*}
  (cd "$dir" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$BIN/$name.tmp" "k8s.io/kubernetes/cmd/$name")
  mv "$BIN/$name.tmp" "$BIN/$name"
  log "$name ready in $((SECONDS - started))s: $BIN/$name"
}

build_kubernetes() {
  local apiserver=1 kcm=1
  if [ -x "$BIN/kube-apiserver" ]; then apiserver=0; fi
  if [ -x "$BIN/kube-controller-manager" ]; then kcm=0; fi
  if [ $apiserver = 0 ] && [ $kcm = 0 ]; then return 0; fi
  local dir="$WORK/kubernetes"
  kube_module "$dir"
  if [ $apiserver = 1 ]; then
    log "building kube-apiserver $KUBE_VERSION (4 to 19 minutes cold)"
    build_kube kube-apiserver "$dir"
  fi
  if [ $kcm = 1 ]; then
    log "building kube-controller-manager $KUBE_VERSION (about 4 minutes more once kube-apiserver is built: 261 s measured on a busy 2-core machine)"
    build_kube kube-controller-manager "$dir"
  fi
}

build_etcd
build_kubernetes
