#!/usr/bin/env bash
# Runs every model test of the ONNX test data's pytorch-converted and
# pytorch-operator sets through ember-run, with --expect against the reference
# outputs. Tests listed in the gaps file must fail (with ember-run's own error),
# the rest must pass. Exits 77 without the data (Debian's libonnx-testdata).
#   run_model_tests.sh EMBER_RUN GAPS_FILE [DATA_DIR]
set -u
ember_run=$1
gaps=$2
data=${3:-/usr/share/libonnx-testdata/data}
[ -d "$data/pytorch-converted" ] || { echo "ONNX test data not found at $data: skipped"; exit 77; }
passed=0; failed=0; gap=0
for dir in "$data"/pytorch-converted/*/ "$data"/pytorch-operator/*/; do
  name=$(basename "$dir")
  for set in "$dir"test_data_set_*/; do
    args=("$dir/model.onnx" --threads 2)
    for f in "$set"input_*.pb; do args+=(--input "$f"); done
    for f in "$set"output_*.pb; do args+=(--expect "$f"); done
    if out=$("$ember_run" "${args[@]}" 2>&1); then ok=1; else ok=0; fi
    if grep -qx "$name .*" "$gaps" 2>/dev/null || grep -qx "$name" "$gaps" 2>/dev/null; then
      if [ $ok = 1 ]; then echo "ERROR $name passes but is listed in $gaps"; failed=$((failed+1)); else gap=$((gap+1)); fi
      break
    fi
    if [ $ok = 1 ]; then passed=$((passed+1)); else echo "FAIL $name ($set): $out"; failed=$((failed+1)); fi
  done
done
echo "ember-run over the model tests: $passed data sets passed, $failed failed, $gap tests listed as gaps"
[ $failed = 0 ]
