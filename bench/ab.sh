#!/bin/bash
# A/B of two Minnow builds or settings on the same machine, in alternating rounds, so
# that the guest's slow phases (minutes long, +-15 %) fall on both sides alike.
#
#   bench/ab.sh [-t THREADS] [-r ROUNDS] [-s SECONDS] BIN_A ENV_A BIN_B ENV_B MODEL[:INPUT.npy]...
#
# ENV_A / ENV_B are `env` assignments ("" for none), e.g. to compare two builds at 2 threads:
#   bench/ab.sh -t 2 /tmp/base/bin/minnow "" build/bin/minnow "" m.minnow:in.npy
# A model without an input runs on random data. Prints each side's median of the round
# medians and the median of the per-round ratios A/B.
set -euo pipefail
threads=1 rounds=7 seconds=1
while getopts "t:r:s:" o; do
  case $o in
    t) threads=$OPTARG ;; r) rounds=$OPTARG ;; s) seconds=$OPTARG ;;
    *) echo "usage: $0 [-t THREADS] [-r ROUNDS] [-s SECONDS] BIN_A ENV_A BIN_B ENV_B MODEL[:INPUT]..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -lt 5 ]; then
  echo "usage: $0 [-t THREADS] [-r ROUNDS] [-s SECONDS] BIN_A ENV_A BIN_B ENV_B MODEL[:INPUT]..." >&2
  exit 2
fi
bin_a=$1 env_a=$2 bin_b=$3 env_b=$4
shift 4
median_ms() {  # bin env model input
  local in_args=(--random)
  [ -n "$4" ] && in_args=(-i "$4")
  # shellcheck disable=SC2086
  env $2 "$1" bench "$3" "${in_args[@]}" -t "$threads" --warmup 5 --seconds "$seconds" --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["median_ms"])'
}
for spec in "$@"; do
  model=${spec%%:*} input=""
  [ "$spec" != "$model" ] && input=${spec#*:}
  a=() b=()
  for _ in $(seq "$rounds"); do
    a+=("$(median_ms "$bin_a" "$env_a" "$model" "$input")")
    b+=("$(median_ms "$bin_b" "$env_b" "$model" "$input")")
  done
  python3 - "$(basename "$model")" "${a[*]}" "${b[*]}" <<'PY'
import statistics as st, sys
a = [float(x) for x in sys.argv[2].split()]
b = [float(x) for x in sys.argv[3].split()]
r = [x / y for x, y in zip(a, b)]
print(f"{sys.argv[1]:24s} A {st.median(a):8.3f} ms  B {st.median(b):8.3f} ms  A/B {st.median(r):.3f}"
      f"  (rounds: {' '.join(f'{x:.2f}' for x in r)})")
PY
done
