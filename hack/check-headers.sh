#!/usr/bin/env bash
# Every Go file starts with the project's license header (hack/boilerplate.go.txt).
#   hack/check-headers.sh         # list files without it, exit 1 if any
#   hack/check-headers.sh --fix   # add it where it is missing
set -euo pipefail
cd "$(dirname "$0")/.."
header=$(cat hack/boilerplate.go.txt)
n=$(wc -l < hack/boilerplate.go.txt)
missing=0
for f in $(git ls-files '*.go' | grep -v zz_generated); do
  [ -f "$f" ] || continue
  if [ "$(head -n "$n" "$f")" != "$header" ]; then
    if [ "${1:-}" = "--fix" ]; then
      { cat hack/boilerplate.go.txt; echo; cat "$f"; } > "$f.tmp" && mv "$f.tmp" "$f"
    else
      echo "missing license header: $f"; missing=1
    fi
  fi
done
exit $missing
