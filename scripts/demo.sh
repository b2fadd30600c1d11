#!/usr/bin/env bash
# The demo: import a bundled Fashion-MNIST model, inspect it, classify a test image and
# measure latency; then compress it (`fast` preset, no training data) and show size, accuracy
# and speed before and after.
set -euo pipefail
BUILD=${1:-build}
MINNOW="$BUILD/bin/minnow"
DATA=tests/data/fashion_mnist/mlp
OUT="$BUILD/demo"
mkdir -p "$OUT"
CLASSES=(T-shirt/top Trouser Pullover Dress Coat Sandal Shirt Sneaker Bag "Ankle boot")

echo "== minnow plugins"
"$MINNOW" plugins
echo
echo "== import the bundled ONNX model (LeNet-300-100 on Fashion-MNIST)"
"$MINNOW" import "$DATA/mlp.onnx" -o "$OUT/mlp.minnow"
echo
echo "== inspect"
"$MINNOW" inspect "$OUT/mlp.minnow" --plan
echo
echo "== run on test image 0 (reference logits: $DATA/test_data_set_0/output_0.pb)"
"$MINNOW" run "$OUT/mlp.minnow" --input "$DATA/test_data_set_0/input_0.pb" | tee "$OUT/run.txt"
cls=$(sed -n 's/.*argmax \([0-9]*\).*/\1/p' "$OUT/run.txt" | head -1)
echo "predicted class: $cls (${CLASSES[$cls]}); the label of test image 0 is 9 (Ankle boot)"
echo
echo "== bench"
"$MINNOW" bench "$OUT/mlp.minnow" --runs 200
echo
FM=/usr/share/datasets/fashion-mnist
if [ -f "$FM/t10k-images-idx3-ubyte.gz" ]; then
  echo "== compress (preset fast: fuse, prune wide layers, quantize, Huffman; accuracy on the 10,000 test images)"
  "$MINNOW" compress "$OUT/mlp.minnow" -o "$OUT/mlp_fast.minnow" --preset fast \
    --eval-images "$FM/t10k-images-idx3-ubyte.gz" --eval-labels "$FM/t10k-labels-idx1-ubyte.gz"
  echo
  echo "== before / after"
  for m in mlp mlp_fast; do
    size=$(stat -c %s "$OUT/$m.minnow")
    acc=$("$MINNOW" eval "$OUT/$m.minnow" --images "$FM/t10k-images-idx3-ubyte.gz" \
          --labels "$FM/t10k-labels-idx1-ubyte.gz" --preset fashion-mnist --json --no-progress |
          sed -n 's/.*"accuracy": *\([0-9.]*\).*/\1/p')
    med=$("$MINNOW" bench "$OUT/$m.minnow" --runs 200 --json | sed -n 's/.*"median_ms": *\([0-9.]*\).*/\1/p')
    printf '%-10s %9s bytes   accuracy %s   median %s ms\n' "$m" "$size" "$acc" "$med"
  done
else
  echo "(compression step skipped: $FM not installed; make deps installs dataset-fashion-mnist)"
fi
