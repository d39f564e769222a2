#!/bin/sh
# A plan sharded over two MPI ranks prints exactly what one process prints (planner/mpi_executor.hpp).
# Usage: mpi_plan_test.sh TRAINSIM MPIEXEC
set -eu
trainsim=$1
mpiexec=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Open MPI refuses root without these (containers, CI), and may count cores strictly.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
for args in \
  "plan --model gpt2-1.5b --hw dgx2 --gpus 2 --global-batch 8 --format json" \
  "plan --model bert-large --hw zhores --nodes 1..2 --global-batch 16 --families zero2,dp,gpipe --format csv"; do
  "$trainsim" $args --quiet --no-cache >"$tmp/one"
  "$mpiexec" -n 2 "$trainsim" $args --quiet --no-cache >"$tmp/two"
  if ! cmp -s "$tmp/one" "$tmp/two"; then
    echo "FAILED: mpiexec -n 2 trainsim $args differs from one process:"
    diff "$tmp/one" "$tmp/two" | head -20
    exit 1
  fi
  echo "same bytes with 1 and 2 MPI ranks: trainsim $args"
done
