#!/usr/bin/env bash
# Runs the libFuzzer targets of a MINNOW_FUZZ build.
#   run_fuzz.sh fuzz   <build dir> <seconds per target> [target ...]   fuzz (corpus kept in <build>/fuzz/corpus)
#   run_fuzz.sh replay <build dir> <target>                             run the regression inputs and seeds once
# A crash leaves its input in <build>/fuzz/artifacts/<target>/; minimize it with
#   <build>/bin/<target> -minimize_crash=1 -max_total_time=60 <crash file>
# and add the result to tests/fuzz/regressions/<target>/ (it then runs in every `make test-asan`).
set -uo pipefail
mode=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
seeds=$build/fuzz/seeds
# Leaks are reported by the unit tests under ASan; in fuzzing they only cost time.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export MINNOW_LOG=off

if [ "$mode" = replay ]; then
  t=$3
  inputs=()
  [ -d "$here/regressions/$t" ] && [ -n "$(ls -A "$here/regressions/$t")" ] && inputs+=("$here/regressions/$t")
  [ -d "$seeds/$t" ] && [ -n "$(ls -A "$seeds/$t")" ] && inputs+=("$seeds/$t")
  [ ${#inputs[@]} -eq 0 ] && { echo "$t: nothing to replay"; exit 0; }
  exec "$build/bin/$t" -runs=0 -rss_limit_mb=2048 "${inputs[@]}"
fi

secs=$3
shift 3
targets=("$@")
[ ${#targets[@]} -eq 0 ] && read -r -a targets < <(tr ';' ' ' < "$build/fuzz/targets.txt")
failed=()
for t in "${targets[@]}"; do
  corpus=$build/fuzz/corpus/$t artifacts=$build/fuzz/artifacts/$t
  mkdir -p "$corpus" "$artifacts" "$seeds/$t"
  dirs=("$corpus" "$seeds/$t")
  [ -d "$here/regressions/$t" ] && dirs+=("$here/regressions/$t")
  start=$(date +%s)
  "$build/bin/$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" "${dirs[@]}" > "$build/fuzz/$t.log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz/$t.log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$build/fuzz/$t.log" | tail -1)
  echo "fuzz: $t: ${execs:-?} inputs in $(( $(date +%s) - start )) s, $cov, exit $rc"
  if [ $rc -ne 0 ]; then
    failed+=("$t")
    tail -40 "$build/fuzz/$t.log"
    echo "fuzz: $t found a problem; input in $artifacts/ (see the header of $0)"
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: failures in: ${failed[*]}"; exit 1; }
