#!/usr/bin/env bash
# Data-parallel Fashion-MNIST over processes: ruCCL (`ruccl-run --nproc-per-node W
# train_fashion_mnist`) against PyTorch DDP over gloo with W processes
# (bench/peers/ddp_fashion_mnist_torch.py): the same MLP 784-512-512-10, Adam lr 1e-3, global
# batch, data split and one thread per process; samples/s of the training loop (no data loading,
# no evaluation). The two alternate for ROUNDS rounds so a slow spell of the machine lands on both;
# the table gives each round and the medians. Beside samples/s (wall clock, which other jobs on
# the machine swing) it gives samples per CPU-second: the training loop's CPU time summed over the
# ranks (each process's, all threads: gloo's and our TCP transport's included), which a busy
# machine changes much less. Needs python3-torch and dataset-fashion-mnist.
# Usage: bash bench/run_ddp_fashion_mnist.sh [BUILD_DIR] [--rounds 3] [--max-batches N]
#            [--batch 128] [--world 2]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RUCCL_BUILD_DIR:-$root/build/release}"
if (($# > 0)) && [[ $1 != --* ]]; then build=$1; shift; fi
rounds=3 max_batches=0 batch=128 world=2
while (($# > 0)); do
  case $1 in
    --rounds) rounds=$2 ;;
    --max-batches) max_batches=$2 ;;
    --batch) batch=$2 ;;
    --world) world=$2 ;;
    *) echo "usage: $0 [BUILD_DIR] [--rounds R] [--max-batches N] [--batch B] [--world W]" >&2
       exit 2 ;;
  esac
  shift 2
done
peer="${RUCCL_PEERS_DIR:-$root/bench/peers}/ddp_fashion_mnist_torch.py"
RUCCL_BUILD_DIR="$build" bash "$root/tools/build_release.sh" train_fashion_mnist ruccl-run >&2
ours_args=(--epochs 1 --batch "$batch" --threads 1)
peer_args=(--epochs 1 --batch "$batch" --threads 1 --world "$world")
if ((max_batches > 0)); then
  ours_args+=(--max-batches "$max_batches")
  peer_args+=(--max-batches "$max_batches")
fi
echo "# data-parallel Fashion-MNIST, $world processes, global batch $batch, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD)"
echo "# $(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| round | ruCCL samples/s | PyTorch DDP samples/s | ratio | ruCCL samples/CPU-s | DDP samples/CPU-s | ratio | ruCCL accuracy | DDP accuracy |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
ours_all=() peer_all=() ours_cpu_all=() peer_cpu_all=()
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
for ((r = 1; r <= rounds; ++r)); do
  ours_line=$("$build/bin/ruccl-run" --nproc-per-node "$world" "$build/examples/train_fashion_mnist" \
    "${ours_args[@]}" | grep "^\[0\] epoch  1 ")
  ours=$(sed -E 's/.* ([0-9]+) samples\/s.*/\1/' <<<"$ours_line")
  ours_acc=$(sed -E 's/.*test accuracy ([0-9.]+)%.*/\1/' <<<"$ours_line")
  ours_cpu=$(sed -E 's/.*cpu ([0-9.]+) s.*/\1/' <<<"$ours_line")
  samples=$(sed -E 's/.*step +([0-9]+) .*/\1/' <<<"$ours_line")
  ours_spc=$(awk -v s="$samples" -v b="$batch" -v c="$ours_cpu" 'BEGIN {printf "%.0f", s * b / c}')
  if peer_line=$(/usr/bin/python3 "$peer" "${peer_args[@]}" 2>/dev/null | grep "^epoch 1 "); then
    theirs=$(awk '{print $8}' <<<"$peer_line")
    their_acc=$(awk '{printf "%.2f", 100 * $10}' <<<"$peer_line")
    their_spc=$(awk '{printf "%.0f", $4 / $12}' <<<"$peer_line")
    r1=$(ratio "$ours" "$theirs")× r2=$(ratio "$ours_spc" "$their_spc")×
  else
    theirs=n/a their_acc=n/a their_spc=n/a r1=n/a r2=n/a
  fi
  ours_all+=("$ours") peer_all+=("$theirs") ours_cpu_all+=("$ours_spc") peer_cpu_all+=("$their_spc")
  echo "| $r | $ours | $theirs | $r1 | $ours_spc | $their_spc | $r2 | $ours_acc % | $their_acc % |"
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
m_ours=$(median "${ours_all[@]}") m_ours_cpu=$(median "${ours_cpu_all[@]}")
if [[ " ${peer_all[*]} " != *" n/a "* ]]; then
  m_peer=$(median "${peer_all[@]}") m_peer_cpu=$(median "${peer_cpu_all[@]}")
  echo "| median | $m_ours | $m_peer | $(ratio "$m_ours" "$m_peer")× | $m_ours_cpu | $m_peer_cpu | $(ratio "$m_ours_cpu" "$m_peer_cpu")× | | |"
else
  echo "| median | $m_ours | n/a (no python3-torch) | n/a | $m_ours_cpu | n/a | n/a | | |"
fi
echo
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
