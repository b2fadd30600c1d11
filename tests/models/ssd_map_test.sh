#!/usr/bin/env bash
# ssd_fmnist: `minnow import --ssd-priors` appends PriorBox + DetectionOutput, and
# `minnow eval --task detection` on the 1000 test canvases gives the reference
# mAP@0.5 0.6914 (shared/models/ssd_fmnist/README.md: VOC all-points AP) within 0.002.
set -euo pipefail
MINNOW=$1
DATA=$2  # tests/data
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$MINNOW" import "$DATA/onnx/ssd_fmnist/ssd_fmnist.onnx" --ssd-priors "$DATA/ssd_fmnist/priorbox.json" -o "$OUT/ssd.minnow"
json=$("$MINNOW" eval "$OUT/ssd.minnow" --task detection --images "$DATA/ssd_fmnist/ssd_test1000-images-idx3-ubyte.gz" \
       --ground-truth "$DATA/ssd_fmnist/ssd_test1000_gt.json" --preset fashion-mnist --json --no-progress)
echo "$json"
got=$(echo "$json" | sed -n 's/.*"map50": *\([0-9.]*\).*/\1/p')
want=0.6914
ok=$(awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; print (d <= 0.002) ? "ok" : "FAIL" }')
echo "ssd_fmnist: mAP@0.5 $got, reference $want: $ok"
[ "$ok" = ok ]
