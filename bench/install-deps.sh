#!/usr/bin/env bash
# Packages only the benchmark needs (bench/export_models.py: PyTorch + torchvision to build
# the models, python3-onnx to check them). Kept out of scripts/install-deps.sh so that
# `make` / `make test` never pull in torch (~1 GB). Idempotent, quiet when all is there.
# ONNX Runtime comes from npm, installed by bench/compare.sh into its cache folder.
set -euo pipefail

PACKAGES=(python3-torchvision python3-onnx python3-numpy nodejs npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node/npm may come from elsewhere than Debian (nodesource, nvm): accept them on PATH.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=($(printf '%s\n' "${missing[@]}" | grep -vx -e nodejs -e npm || true))
fi
[ ${#missing[@]} -eq 0 ] && exit 0

echo "bench/install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "bench/install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Other apt users on a shared machine: wait for the dpkg lock instead of failing.
$SUDO apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=900 "${missing[@]}" >/dev/null
