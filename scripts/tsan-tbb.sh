#!/usr/bin/env bash
# oneTBB built with ThreadSanitizer, for `make test-tsan`. Debian's libtbb.so is not
# instrumented, so TSan cannot see how it hands tasks between workers and reports oneTBB's
# own bookkeeping (a task's fields, its partitioner's tree nodes) as races. The fix is the
# same library, instrumented: Debian's source package of the installed libtbb-dev version
# (`apt-get source`, with a private apt configuration, so the system's sources are left
# alone), built with oneTBB's own TBB_SANITIZE=thread. Same version and soname as the
# system library, so the TSan tree compiles against the system headers and only the
# run-time library differs (found through the RUNPATH that MINNOW_TSAN_TBB_LIBDIR adds).
#   scripts/tsan-tbb.sh <dir>   ->  prints <dir>/lib, which holds libtbb.so.12; idempotent
set -euo pipefail
dir=$1
lib=$dir/lib
if [ -f "$lib/libtbb.so.12" ]; then echo "$lib"; exit 0; fi
die() { echo "tsan-tbb: error: $*" >&2; exit 1; }
version=$(dpkg-query -W -f='${source:Version}' libtbb-dev 2>/dev/null) || die "libtbb-dev is not installed"
"$(dirname "$0")/install-deps.sh" dpkg-dev >&2
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/src" "$lib"
# The system's own mirrors and suites, as deb-src lines.
{
  grep -h '^URIs:\|^Suites:\|^Components:' /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '/^URIs:/{u=$2} /^Suites:/{$1=""; s=$0} /^Components:/{$1=""; n=split(s, a, " "); for (i=1;i<=n;i++) print "deb-src " u " " a[i] $0}' || true
  grep -h '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | sed 's/^deb /deb-src /' || true
} | sort -u > "$dir/apt/sources.list"
[ -s "$dir/apt/sources.list" ] || die "no apt sources found in /etc/apt"
apt=(-o Dir::Etc::SourceList="$dir/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o Dir::State::Lists="$dir/apt/lists" -o Dir::Cache="$dir/apt/cache" -o APT::Sandbox::User=root)
echo "tsan-tbb: fetching Debian's onetbb $version source" >&2
apt-get "${apt[@]}" update >"$dir/apt.log" 2>&1 || die "apt-get update failed (log: $dir/apt.log)"
(cd "$dir/src" && apt-get "${apt[@]}" source --download-only "onetbb=$version" >>"$dir/apt.log" 2>&1) ||
  die "apt-get source onetbb=$version failed (log: $dir/apt.log)"
rm -rf "$dir/src/onetbb"
dpkg-source -x "$dir/src/"onetbb_*.dsc "$dir/src/onetbb" >>"$dir/apt.log" 2>&1 || die "dpkg-source failed (log: $dir/apt.log)"
echo "tsan-tbb: building libtbb with -fsanitize=thread" >&2
cmake -S "$dir/src/onetbb" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTBB_SANITIZE=thread \
  -DTBB_TEST=OFF -DTBB_EXAMPLES=OFF -DTBBMALLOC_BUILD=OFF -DTBB_STRICT=OFF \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >"$dir/build.log" 2>&1 || die "configure failed (log: $dir/build.log)"
cmake --build "$dir/build" --target tbb >>"$dir/build.log" 2>&1 || die "build failed (log: $dir/build.log)"
cp -P "$dir/build"/*_release/libtbb.so* "$lib/"
echo "$lib"
