#!/usr/bin/env bash
# Builds allreduce_mpi.c and runs it over OpenMPI's shared-memory transport (pml ob1, btl
# vader,self) for each world size given: the peer collective_bench compares with.
# Usage: bash bench/peers/run_allreduce_mpi.sh ["2 4"]   (needs openmpi-bin and libopenmpi-dev)
# Prints "## mpirun -np N ..." before each world's table (collective_bench parses both).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exe="${TMPDIR:-/tmp}/ruccl_allreduce_mpi"
mpicc -O2 "$here/allreduce_mpi.c" -o "$exe"
# --oversubscribe: 4 ranks on a 2-core machine; --bind-to none: like our threads, unpinned.
mpirun_flags=(--oversubscribe --bind-to none --mca pml ob1 --mca btl vader,self)
((EUID != 0)) || mpirun_flags+=(--allow-run-as-root)
for np in ${1:-2 4}; do
  echo "## mpirun -np $np ${mpirun_flags[*]}"
  timeout 300 mpirun -np "$np" "${mpirun_flags[@]}" "$exe"
  echo
done
