#!/usr/bin/env bash
# train_fashion_mnist --resume refuses a checkpoint written with other settings,
# with the exact message of docs/errors.md, and a resume with the same settings
# after the grid finished rewrites its results without training again.
#   resume_errors.sh TRAIN_FASHION_MNIST WORK_DIR
set -euo pipefail
train="$1"
work="$2"
rm -rf "$work"
mkdir -p "$work"
common=(--epochs 1 --train-limit 200 --batch-size 50 --threads 1 --device cpu --quiet)
"$train" "${common[@]}" --out "$work/a" --checkpoint-every 2 > "$work/first.log"

status=0
"$train" "${common[@]}" --lr 0.02 --out "$work/b" --resume "$work/a" > "$work/second.log" 2> "$work/err" || status=$?
want="train_fashion_mnist: $work/a/checkpoint.safetensors: the checkpoint was written by a run with other settings \
(lr=0.01 batch_size=50 workers=0 device=cpu optimizer=adam model=network epochs=1 seed=0 train_limit=200 shuffle=1 \
amp= ranks=1); this one has lr=0.02 batch_size=50 workers=0 device=cpu optimizer=adam model=network epochs=1 seed=0 \
train_limit=200 shuffle=1 amp= ranks=1"
if [ "$status" != 2 ] || [ "$(cat "$work/err")" != "$want" ]; then
  echo "expected exit 2 and: $want"
  echo "got exit $status and: $(cat "$work/err")"
  exit 1
fi

# The same settings after the end: nothing to train, the same results again.
"$train" "${common[@]}" --out "$work/c" --resume "$work/a" > "$work/third.log"
grep -q "resuming from $work/a/checkpoint.safetensors: run 1 (finished)" "$work/third.log"
cmp "$work/a/results.csv" "$work/c/results.csv"
rm -rf "$work"
echo "resume errors: ok"
