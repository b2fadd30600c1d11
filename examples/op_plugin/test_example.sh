#!/usr/bin/env bash
# CTest driver: installs the build to a temporary prefix, copies this example out of the
# source tree, configures it with CMAKE_PREFIX_PATH = that prefix only, builds it and runs
# its tests (`ctest`, the same as `make test`). Proves a third party needs nothing else.
set -euo pipefail
BUILD=$1
SRC=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null
cp -r "$SRC/examples/op_plugin" "$WORK/op_plugin"
rm -rf "$WORK/op_plugin/build"
cmake -S "$WORK/op_plugin" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$WORK/prefix" \
  ${MINNOW_CONSUMER_CMAKE_ARGS:-} >/dev/null  # a sanitizer tree's compiler and flags (tests/CMakeLists.txt)
cmake --build "$WORK/build" >/dev/null
cd "$WORK/build"
env -u MINNOW_PLUGIN_PATH ctest --output-on-failure
grep -q "minnow_run_swish" <(ctest -N) || { echo "the installed minnow command was not found"; exit 1; }
echo "op plugin example passed"
