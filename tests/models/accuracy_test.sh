#!/usr/bin/env bash
# Each Fashion-MNIST model reproduces its reference test accuracy (info.json) within 0.1
# point on the 10,000 test images of Debian's dataset-fashion-mnist, via `minnow eval`.
set -euo pipefail
MINNOW=$1
DATA=$2
SET=/usr/share/datasets/fashion-mnist
[ -f "$SET/t10k-images-idx3-ubyte.gz" ] || { echo "dataset-fashion-mnist is not installed: skipped"; exit 77; }
status=0
for m in mlp lenet5 mobilenet; do
  want=$(sed -n 's/.*"fp32_test_accuracy": *\([0-9.]*\).*/\1/p' "$DATA/$m/info.json")
  got=$("$MINNOW" eval "$DATA/$m/${m}_dynN.onnx" --images "$SET/t10k-images-idx3-ubyte.gz" \
        --labels "$SET/t10k-labels-idx1-ubyte.gz" --preset fashion-mnist --batch 500 --json --no-progress |
        sed -n 's/.*"accuracy": *\([0-9.]*\).*/\1/p')
  ok=$(awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; print (d <= 0.001) ? "ok" : "FAIL" }')
  echo "$m: accuracy $got, reference $want: $ok"
  [ "$ok" = ok ] || status=1
done
exit $status
