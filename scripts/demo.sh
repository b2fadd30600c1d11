#!/usr/bin/env bash
# The demo: import a bundled Fashion-MNIST model, inspect it, classify a test image and
# measure latency. Grows with the product (compression before/after comes next).
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
