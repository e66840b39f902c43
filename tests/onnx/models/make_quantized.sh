#!/usr/bin/env bash
# Remakes mlp_int8.onnx (mlp.onnx as ONNX Runtime's dynamic quantization writes
# it: tests/onnx/models/make_quantized.cpp) and ONNX Runtime 1.30's output for
# mlp_input_0.pb, mlp_int8_ort_output_0.npy, which test_pytorch_models.cpp holds
# Ember to.   tests/onnx/models/make_quantized.sh [BUILD_DIR]    (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
build="${1:-$root/build}"
here="$root/tests/onnx/models"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$root/scripts/install-ort" >/dev/null
"$build/tests/onnx/onnx-make-quantized" "$here/mlp.onnx" "$tmp/mlp_int8.onnx" "$here/mlp_input_0.pb" \
  "$tmp/mlp_int8_input_0.npy"
node "$root/tests/onnx/exported/run_ort.js" "$tmp" mlp_int8
cp "$tmp/mlp_int8.onnx" "$tmp/mlp_int8_ort_output_0.npy" "$here/"
ls -l "$here"/mlp_int8*
