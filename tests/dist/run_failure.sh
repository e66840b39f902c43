#!/usr/bin/env bash
# Runs one failure scenario of tests/dist/failures.cpp under mpirun with 2 ranks and
# passes when every rank expected to survive printed "rank R: ok". mpirun's own exit
# status is not used: after a rank dies or a group fails, ranks leave without
# MPI_Finalize, which Open MPI reports however the test went. --enable-recovery
# keeps Open MPI from killing the survivors when one rank dies, so they can show
# that they noticed. The meson timeout bounds the whole run.
#   run_failure.sh MPIRUN PROGRAM SCENARIO SURVIVORS...
set -u
mpirun="$1" program="$2" scenario="$3"
shift 3
out=$("$mpirun" --allow-run-as-root --oversubscribe --enable-recovery -np 2 "$program" "$scenario" 2>&1)
echo "$out"
for r in "$@"; do
  if ! grep -q "^rank $r: ok$" <<<"$out"; then
    echo "run_failure.sh: rank $r did not report ok in scenario $scenario" >&2
    exit 1
  fi
done
exit 0
