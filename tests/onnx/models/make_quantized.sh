#!/usr/bin/env bash
# Remakes mlp_int8.onnx, seed_net_int8.onnx and conv_block_int8.onnx (the float
# models as ONNX Runtime's dynamic quantization writes them:
# tests/onnx/models/make_quantized.cpp) and ONNX Runtime 1.30's outputs for their
# committed inputs,
# <name>_int8_ort_output_0.npy, which test_pytorch_models.cpp holds Ember to.
#   tests/onnx/models/make_quantized.sh [BUILD_DIR]    (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
build="${1:-$root/build}"
here="$root/tests/onnx/models"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$root/scripts/install-ort" >/dev/null
for name in mlp seed_net conv_block; do
  "$build/tests/onnx/onnx-make-quantized" "$here/$name.onnx" "$tmp/${name}_int8.onnx" "$here/${name}_input_0.pb" \
    "$tmp/${name}_int8_input_0.npy"
  node "$root/tests/onnx/exported/run_ort.js" "$tmp" "${name}_int8"
  cp "$tmp/${name}_int8.onnx" "$tmp/${name}_int8_ort_output_0.npy" "$here/"
done
ls -l "$here"/*_int8*
