#!/usr/bin/env bash
# Remakes the ONNX Runtime reference data of tests/onnx/test_export.cpp: exports
# the models of tests/onnx/export_models.h with onnx::save, runs them in ONNX
# Runtime 1.30 (scripts/install-ort) and keeps the inputs and ORT's outputs here.
# The .onnx files are not kept (the MLP's is 7 MB): the test exports them again.
#   tests/onnx/exported/make.sh [BUILD_DIR]    (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
build="${1:-$root/build}"
here="$root/tests/onnx/exported"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$root/scripts/install-ort" >/dev/null
"$build/tests/onnx/onnx-make-exported" "$tmp"
node "$here/run_ort.js" "$tmp" network mlp zoo
rm -f "$here"/*.npy
cp "$tmp"/*.npy "$here/"
ls -l "$here"
