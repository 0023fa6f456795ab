#!/usr/bin/env bash
# Builds etcd, kube-apiserver and kube-controller-manager from the Go module proxy into bin/ for
# envtest, `paygate dev`, the e2e suite and the fault harness (kube-controller-manager runs only
# the garbage collector and the namespace controller there). Does nothing, in a moment, for a
# binary that is already there. Safe to run concurrently with itself (a lock).
#
# The first build is long (kube-apiserver is a large program), so it says at the start what it
# builds and about how long that takes, and while each step runs it prints, every
# PROGRESS_EVERY seconds (default 30), the step, how long it has run, how many packages it has
# compiled of at most how many, and what is left.
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
PROGRESS_EVERY=${PROGRESS_EVERY:-30}

mkdir -p "$BIN" "$WORK"
exec 9>"$BIN/.controlplane.lock"
flock 9

log() { echo "hack/build-controlplane: $*" >&2; }

# duration 125 prints 2m05s.
duration() {
  local s=$1
  if ((s >= 60)); then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi
}

# The steps still to do, in order: name, then the time each takes cold in minutes, low and high
# (measured: kube-apiserver 4 to 19 minutes, 18.5 on a busy 2-core machine; kube-controller-manager
# 261 s more on that machine, most of its packages being kube-apiserver's).
STEPS=()
declare -A LOW=([etcd]=1 [kubernetes-modules]=1 [kube-apiserver]=4 [kube-controller-manager]=2)
declare -A HIGH=([etcd]=3 [kubernetes-modules]=3 [kube-apiserver]=19 [kube-controller-manager]=5)
[ -x "$BIN/etcd" ] || STEPS+=(etcd)
if [ ! -x "$BIN/kube-apiserver" ] || [ ! -x "$BIN/kube-controller-manager" ]; then STEPS+=(kubernetes-modules); fi
[ -x "$BIN/kube-apiserver" ] || STEPS+=(kube-apiserver)
[ -x "$BIN/kube-controller-manager" ] || STEPS+=(kube-controller-manager)
if [ ${#STEPS[@]} -eq 0 ]; then exit 0; fi

STARTED=$SECONDS
STEP=0

# left prints what follows the current step, with its time.
left() {
  local out="" s lo=0 hi=0
  for s in "${STEPS[@]:STEP}"; do
    out+="${out:+, }$s"
    lo=$((lo + LOW[$s])) hi=$((hi + HIGH[$s]))
  done
  if [ -n "$out" ]; then echo "left after it: $out (about $lo to $hi min)"; else echo "nothing left after it"; fi
}

# begin NAME WHAT starts the next step.
begin() {
  STEP=$((STEP + 1))
  log "[$STEP/${#STEPS[@]}] $2 (about ${LOW[$1]} to ${HIGH[$1]} minutes cold)"
}

# run LOGFILE TOTAL COMMAND... runs one step's command with its output in LOGFILE and, every
# PROGRESS_EVERY seconds, says how long it has run, how many packages it compiled (`go build -v`
# prints one line per package it compiles, none for those the build cache has) of at most TOTAL
# (0: not counted), and what is left. A failure shows the end of the output.
run() {
  local logfile=$1 total=$2
  shift 2
  local started=$SECONDS
  # The command runs in a process group of its own (set -m), so that Ctrl-C, which reaches make
  # and this script, stops all of it here (go runs the compiler in processes of its own).
  set -m
  "$@" >"$logfile" 2>&1 &
  local pid=$!
  set +m
  trap 'kill -TERM -- "-$pid" 2>/dev/null; exit 130' INT TERM
  local next=$((SECONDS + PROGRESS_EVERY))
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= next)); then
      local what=""
      if ((total > 0)); then what=", $(wc -l <"$logfile" | tr -d ' ') of at most $total packages compiled"; fi
      log "[$STEP/${#STEPS[@]}] ${STEPS[STEP - 1]}: $(duration $((SECONDS - started)))$what; $(duration $((SECONDS - STARTED))) in all; $(left)"
      next=$((SECONDS + PROGRESS_EVERY))
    fi
    sleep 1
  done
  local rc=0
  wait "$pid" || rc=$?
  trap - INT TERM
  if ((rc != 0)); then
    log "[$STEP/${#STEPS[@]}] ${STEPS[STEP - 1]} failed after $(duration $((SECONDS - started))); the end of its output ($logfile):"
    tail -n 40 "$logfile" >&2
    exit "$rc"
  fi
}

# packages DIR PKG prints how many packages building PKG in DIR's module compiles at most.
packages() {
  (cd "$1" && GOFLAGS=-mod=mod CGO_ENABLED=0 go list -deps "$2" 2>/dev/null | wc -l | tr -d ' ') || echo 0
}

# in_dir DIR COMMAND... runs COMMAND in DIR.
in_dir() {
  cd "$1" && shift && exec "$@"
}

done_step() {
  log "[$STEP/${#STEPS[@]}] $1 ready in $(duration $((SECONDS - $2))): $BIN/$1"
}

lo=0 hi=0
for s in "${STEPS[@]}"; do lo=$((lo + LOW[$s])) hi=$((hi + HIGH[$s])); done
steps="${#STEPS[@]} steps"
if [ ${#STEPS[@]} -eq 1 ]; then steps="1 step"; fi
log "first run: the control plane is built from the Go module proxy in $steps (${STEPS[*]}):"
log "about $lo to $hi minutes, the high end on a busy 2-core machine. The binaries are kept in $BIN,"
log "so later runs skip this and start in seconds. Progress every ${PROGRESS_EVERY}s."

build_etcd() {
  if [ -x "$BIN/etcd" ]; then return 0; fi
  local started=$SECONDS
  begin etcd "building etcd $ETCD_VERSION"
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
  run "$WORK/etcd-download.log" 0 in_dir "$dir" env GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  run "$WORK/etcd-build.log" "$(packages "$dir" go.etcd.io/etcd/server/v3)" \
    in_dir "$dir" env GOFLAGS=-mod=mod CGO_ENABLED=0 go build -v -trimpath -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$BIN/etcd.tmp" "$BIN/etcd"
  done_step etcd "$started"
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
  (cd "$dir" && GOFLAGS=-mod=mod go mod tidy -e || true)
}

build_kube() {
  local name=$1 dir=$2 started=$SECONDS
  begin "$name" "building $name $KUBE_VERSION"
  local ldflags="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${KUBE_VERSION#v1.}"
  ldflags=${ldflags%.*}
  run "$WORK/$name-build.log" "$(packages "$dir" "k8s.io/kubernetes/cmd/$name")" \
    in_dir "$dir" env GOFLAGS=-mod=mod CGO_ENABLED=0 go build -v -trimpath -ldflags "$ldflags" -o "$BIN/$name.tmp" "k8s.io/kubernetes/cmd/$name"
  mv "$BIN/$name.tmp" "$BIN/$name"
  done_step "$name" "$started"
}

build_kubernetes() {
  local apiserver=1 kcm=1
  if [ -x "$BIN/kube-apiserver" ]; then apiserver=0; fi
  if [ -x "$BIN/kube-controller-manager" ]; then kcm=0; fi
  if [ $apiserver = 0 ] && [ $kcm = 0 ]; then return 0; fi
  local dir="$WORK/kubernetes" started=$SECONDS
  begin kubernetes-modules "downloading k8s.io/kubernetes $KUBE_VERSION and its modules"
  run "$WORK/kubernetes-modules.log" 0 kube_module "$dir"
  log "[$STEP/${#STEPS[@]}] modules ready in $(duration $((SECONDS - started)))"
  if [ $apiserver = 1 ]; then build_kube kube-apiserver "$dir"; fi
  if [ $kcm = 1 ]; then build_kube kube-controller-manager "$dir"; fi
}

build_etcd
build_kubernetes
log "control plane ready in $(duration $((SECONDS - STARTED))): later runs use bin/ as it is"
