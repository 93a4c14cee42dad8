#!/usr/bin/env bash
# Prepares, on a machine without a GPU, the folder tools/gpu_check.sh runs on a GPU machine (which
# has the NVIDIA driver and CUDA 13 but no package registry and another CPU):
#
#   tools/gpu_build.sh [CARRY_DIR]      (default build/gpu-carry; the build folder is build/gpu)
#
# Configures build/gpu with -DRUCCL_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 (the H200) and
# -DRUCCL_MARCH=x86-64-v3 (a CPU the GPU machine surely has), as shared libraries (one copy of the
# device code for every program instead of one per executable), without MPI (the GPU machine has
# no OpenMPI libraries; the MPI engine is checked on the CPU), builds the GPU test binaries
# (CTest label gpu), the programs and the GPU benchmarks (bench/cuda_*), then copies only what the
# check runs into CARRY_DIR, stripped:
#   CARRY_DIR/bin/            the executables        CARRY_DIR/lib/   our shared libraries
#   CARRY_DIR/data/fashion-mnist/   Debian's dataset (train_fashion_mnist --device cuda)
#   CARRY_DIR/gpu_tests.txt   the GPU tests: one executable name per line
# and prints its size: with the working tree it must stay under 64 MiB (the device tool's limit).
# Carry it (run's `carry`: build/gpu-carry) and run `tools/gpu_check.sh build/gpu-carry` there.
#   RUCCL_GPU_BUILD_DIR   the build folder (default build/gpu)      JOBS  parallel jobs (default 2)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARRY="${1:-$ROOT/build/gpu-carry}"
BUILD="${RUCCL_GPU_BUILD_DIR:-$ROOT/build/gpu}"
JOBS="${JOBS:-2}"
DATA_SRC="${RUCCL_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
export CCACHE_BASEDIR="$ROOT"

cd "$ROOT"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRUCCL_WITH_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DRUCCL_MARCH=x86-64-v3 -DBUILD_SHARED_LIBS=ON -DRUCCL_WITH_MPI=OFF \
  -DRUCCL_BUILD_TESTS=ON -DRUCCL_BUILD_EXAMPLES=ON -DRUCCL_BUILD_BENCH=ON >/dev/null

# The GPU tests: ruccl_cuda_tests and every other executable a CTest test labelled gpu runs
# (ctest's JSON listing; a test whose binary is not built yet may list no command).
gpu_list() {
  ctest --test-dir "$BUILD" -L gpu --show-only=json-v1 2>/dev/null | python3 -c '
import json, os, sys
seen = ["ruccl_cuda_tests"]
for t in json.load(sys.stdin).get("tests", []):
    command = t.get("command") or []
    exe = os.path.basename(command[0]) if command else ""
    if exe.startswith(("ruccl_", "doc_")) and exe not in seen:
        seen.append(exe)
print("\n".join(seen))'
}
mapfile -t gpu_tests < <(gpu_list)
benches=()
for src in "$ROOT"/bench/cuda_*.cpp; do
  [[ -e "$src" ]] && benches+=("$(basename "$src" .cpp)")
done
programs=(all_reduce collective_training train_fashion_mnist tensor_parallel_mlp)
targets=()
for t in "${gpu_tests[@]}" "${programs[@]}" "${benches[@]}"; do targets+=(--target "$t"); done
cmake --build "$BUILD" -j"$JOBS" "${targets[@]}"
mapfile -t gpu_tests < <(gpu_list)  # again, now that every test binary exists
targets=()
for t in "${gpu_tests[@]}"; do targets+=(--target "$t"); done
cmake --build "$BUILD" -j"$JOBS" "${targets[@]}"

rm -rf "$CARRY"
mkdir -p "$CARRY/bin" "$CARRY/lib" "$CARRY/data/fashion-mnist"
for t in "${gpu_tests[@]}" "${programs[@]}" "${benches[@]}"; do
  exe="$(find "$BUILD" -type f -name "$t" -perm -u+x | head -n 1)"
  [[ -n "$exe" ]] || { echo "gpu_build: no executable $t in $BUILD" >&2; exit 1; }
  cp "$exe" "$CARRY/bin/"
done
find "$BUILD" -name 'libruccl*.so*' -exec cp -P {} "$CARRY/lib/" \;
# The GNU OpenMP runtime our CPU kernels use (-fopenmp): not every image has it.
gomp="$(ldd "$CARRY/bin/all_reduce" | awk '/libgomp/ {print $3}')"
[[ -n "$gomp" ]] && cp -L "$gomp" "$CARRY/lib/"
strip --strip-unneeded "$CARRY"/bin/* "$CARRY"/lib/*.so* 2>/dev/null || true
# Every library the carried programs load must be carried, the CUDA toolkit's (the GPU machine has
# CUDA 13: cudart, cuBLAS; NCCL from the toolkit or a Python wheel) or the base system's: anything
# else (OpenMPI, hwloc, ...) would fail there at load time.
extra=$(for f in "$CARRY"/bin/*; do LD_LIBRARY_PATH="$CARRY/lib" ldd "$f"; done |
  awk '/=>/ {print $1}' | sort -u |
  grep -vE '^(linux-vdso|ld-linux|lib(c|m|dl|rt|pthread|z|gcc_s|stdc\+\+|gomp|ruccl_[a-z]+|cudart|cublas|cublasLt|nccl)\.so)' || true)
if [[ -n "$extra" ]]; then
  echo "gpu_build: the carried programs need libraries the GPU machine may lack:" $extra >&2
  exit 1
fi
cp "$DATA_SRC"/*-ubyte.gz "$CARRY/data/fashion-mnist/"
printf '%s\n' "${gpu_tests[@]}" >"$CARRY/gpu_tests.txt"
printf '%s\n' "${benches[@]}" >"$CARRY/gpu_benches.txt"
size_mib=$(du -sm "$CARRY" | cut -f1)
tree_mib=$(git -C "$ROOT" ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | awk '{print int($1 / 1048576 + 1)}')
echo "gpu_build: $CARRY is ${size_mib} MiB (the working tree ${tree_mib} MiB; the device tool takes 64 MiB in all)"
if ((size_mib + tree_mib >= 64)); then
  echo "gpu_build: too large to carry: drop data/ (then train_fashion_mnist is skipped) or benches" >&2
  exit 1
fi
