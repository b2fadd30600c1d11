#!/usr/bin/env bash
# Packages only the benchmark needs (bench/export_models.py: PyTorch + torchvision to build
# the models, python3-onnx to check them; node + npm for ONNX Runtime). Kept out of
# scripts/install-deps.sh's default set so that `make` / `make test` never pull in torch
# (~1 GB); installed through it (only what is missing, quiet otherwise).
# ONNX Runtime itself comes from npm, installed by bench/compare.sh into its cache folder.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PACKAGES=(python3-torchvision python3-onnx python3-numpy)
# node/npm may come from elsewhere than Debian (nodesource, nvm): accept them on PATH.
command -v node >/dev/null && command -v npm >/dev/null || PACKAGES+=(nodejs npm)
exec "$ROOT/scripts/install-deps.sh" "${PACKAGES[@]}"
