#!/usr/bin/env bash
# Installs the build into a prefix, moves the prefix elsewhere (relocation), checks the
# layout, runs the installed command, and builds + runs an out-of-tree consumer with
# find_package(minnow).
set -euo pipefail
BUILD=$1
SRC=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/stage" >/dev/null
mv "$WORK/stage" "$WORK/moved"
P="$WORK/moved"
for f in bin/minnow lib/libminnow.so lib/minnow/plugins/cpu_dense.so include/minnow/plugin.h \
         include/minnow/minnow.h lib/cmake/minnow/minnowConfig.cmake; do
  [ -e "$P/$f" ] || { echo "install is missing $f"; exit 1; }
done
# The relocated command finds its library and its plugin folder by itself.
env -u MINNOW_PLUGIN_PATH "$P/bin/minnow" plugins | tee "$WORK/plugins.txt"
grep -q "cpu_dense" "$WORK/plugins.txt"
grep -q "$P/lib/minnow/plugins" "$WORK/plugins.txt"
cmake -S "$SRC/tests/install/consumer" -B "$WORK/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$P" ${MINNOW_CONSUMER_CMAKE_ARGS:-} >/dev/null
cmake --build "$WORK/consumer" >/dev/null
env -u MINNOW_PLUGIN_PATH "$WORK/consumer/consumer_app" "$WORK/consumer/plugins"
echo "install test passed"
