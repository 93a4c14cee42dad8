#!/usr/bin/env bash
# Draws bus bandwidth against message size from a benchmark's tidy CSV, one line per
# implementation (ours and the peers measured in the same run):
#
#   build/release/bench/collective_bench --csv > inproc.csv        # ruccl and mpi-shm
#   build/release/bench/tcp_collective_bench --csv > tcp.csv       # ruccl, mpi, gloo, torch, raw
#   tools/plot_bandwidth.sh inproc.csv inproc.png [OP] [WORLD] [TITLE]  # all_reduce, 2
#
# The CSV needs the columns op, world, bytes, impl and busbw_gbs (any order, header first).
# Needs gnuplot (Debian: apt-get install gnuplot-nox). Exit status 2 for a bad argument or file.
set -euo pipefail

die() {
  echo "plot_bandwidth: $*" >&2
  exit 2
}

(($# >= 2 && $# <= 5)) || die "usage: tools/plot_bandwidth.sh BENCH.csv OUT.png [OP] [WORLD] [TITLE]"
csv=$1
png=$2
op=${3:-all_reduce}
world=${4:-2}
title=${5:-"$op, world $world: bus bandwidth against message size"}
command -v gnuplot >/dev/null || die "gnuplot is not installed; on Debian: apt-get install gnuplot-nox"
[[ -r "$csv" ]] || die "$csv: cannot read it"

data=$(mktemp)
trap 'rm -f "$data"' EXIT
# One gnuplot data block per implementation ("# impl" then "bytes busbw" lines, two blank lines
# between blocks), in the order the implementations first appear.
awk -F, -v op="$op" -v world="$world" '
  NR == 1 {
    for (i = 1; i <= NF; ++i) col[$i] = i
    if (!("op" in col) || !("world" in col) || !("bytes" in col) || !("impl" in col) ||
        !("busbw_gbs" in col)) { print "header" > "/dev/stderr"; exit 3 }
    next
  }
  $col["op"] == op && $col["world"] == world {
    impl = $col["impl"]
    if (!(impl in seen)) { seen[impl] = ++n; order[n] = impl }
    rows[impl] = rows[impl] $col["bytes"] " " $col["busbw_gbs"] "\n"
  }
  END {
    for (i = 1; i <= n; ++i) printf "# %s\n%s\n\n", order[i], rows[order[i]]
  }' "$csv" >"$data" 2>/dev/null || die "$csv: expected a header with op,world,bytes,impl,busbw_gbs"
impls=$(grep '^# ' "$data" | cut -c3- | tr '\n' ' ')
[[ -n "$impls" ]] || die "$csv: no rows for op $op on world $world"

plots=""
index=0
for impl in $impls; do
  [[ -n "$plots" ]] && plots+=", "
  plots+="'$data' index $index using 1:2 with linespoints lw 2 pt 7 title '$impl'"
  index=$((index + 1))
done
gnuplot <<GNUPLOT
set terminal pngcairo size 900,520 font ',11'
set output '$png'
set title '$title' noenhanced
set xlabel 'message size (bytes)'
set ylabel 'bus bandwidth (GB/s)'
set logscale x 2
set format x '%.0b%B'
set grid
set key top left noenhanced
plot $plots
GNUPLOT
echo "plot_bandwidth: wrote $png ($impls)"
