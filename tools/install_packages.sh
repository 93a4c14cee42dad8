#!/usr/bin/env bash
# Installs the Debian 12 packages ruCCL needs, only those that are missing: a no-op (and no
# network) when everything is there. Extra package names may be given as arguments.
# Used by tools/run.sh, tools/test.sh and .ci/run. Needs root (or sudo) only when installing.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache git  # build (git: tools/check_file_sizes.sh lists tracked files)
  libeigen3-dev libcereal-dev zlib1g-dev libssl-dev  # libraries (libssl-dev: libcrypto's HMAC)
  catch2  # tests
  dataset-fashion-mnist  # real data for the training demo (/usr/share/datasets/fashion-mnist)
  fortunes fortunes-min  # real text for examples/train_char_lm (/usr/share/games/fortunes)
  libopenmpi-dev openmpi-bin  # the MPI engine (RUCCL_WITH_MPI) and its mpirun tests
  # tests/slurm: a private Slurm cluster (tools/slurm_cluster.sh); srun --mpi=pmix dlopens
  # libpmix.so (libpmix-dev); ip netns for the two hosts of the two-host job
  slurmctld slurmd slurm-client libpmix-dev iproute2
  python3 gnuplot-nox  # tools/merge_traces.py, the plots (tests/programs/observability_tools.sh)
  "$@"
)

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$pkg")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install_packages: installing missing Debian packages: ${missing[*]}"
sudo=()
if ((EUID != 0)); then
  if command -v sudo >/dev/null; then
    sudo=(sudo)
  else
    echo "install_packages: need root to install ${missing[*]} (run as root, or install them)" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
