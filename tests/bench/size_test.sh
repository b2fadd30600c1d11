#!/usr/bin/env bash
# libminnow (the core: no plugins, no importers) stays under its size budget once stripped
# (issue 4: 400 KB on x86-64). Strips a copy, so the build tree keeps its symbols.
#   size_test.sh LIBRARY STRIP LIMIT_BYTES
set -euo pipefail
LIB=$1
STRIP=$2
LIMIT=$3
TMP=$(mktemp)
trap 'rm -f "$TMP"' EXIT
"$STRIP" --strip-all -o "$TMP" "$LIB"
size=$(stat -c %s "$TMP")
echo "$(basename "$LIB"): $size bytes stripped (limit $LIMIT)"
[ "$size" -le "$LIMIT" ] || { echo "FAIL: over the limit by $((size - LIMIT)) bytes; see docs/ARCHITECTURE.md (Size)"; exit 1; }
