#!/usr/bin/env bash
# Draws train_fashion_mnist's metrics CSV (--metrics FILE: epoch,step,train_loss,test_accuracy,...)
# as a PNG: the training loss (left axis) and the test accuracy in % (right axis) per epoch.
#
#   tools/plot_metrics.sh metrics.csv [metrics.png]     # default: the CSV's name with .png
#
# Needs gnuplot (Debian: apt-get install gnuplot-nox). Exit status 2 for a bad argument or file.
set -euo pipefail

die() {
  echo "plot_metrics: $*" >&2
  exit 2
}

(($# >= 1 && $# <= 2)) || die "usage: tools/plot_metrics.sh METRICS.csv [OUT.png]"
csv=$1
png=${2:-${csv%.csv}.png}
command -v gnuplot >/dev/null || die "gnuplot is not installed; on Debian: apt-get install gnuplot-nox"
[[ -r "$csv" ]] || die "$csv: cannot read it"
header=$(head -n 1 "$csv")
[[ "$header" == epoch,step,train_loss,test_accuracy,* ]] ||
  die "$csv: expected a train_fashion_mnist metrics CSV (epoch,step,train_loss,test_accuracy,...), got the header '$header'"
rows=$(($(wc -l <"$csv") - 1))
((rows >= 1)) || die "$csv: expected at least one epoch row, got none"

gnuplot <<GNUPLOT
set terminal pngcairo size 900,500 font ',11'
set output '$png'
set datafile separator ','
set title 'train_fashion_mnist: $rows epoch(s)' noenhanced
set xlabel 'epoch'
set ylabel 'training loss (mean cross-entropy)'
set y2label 'test accuracy (%)'
set ytics nomirror
set y2tics
set grid
set key center right
set xtics 1
set offsets 0.2, 0.2, 0, 0
plot '$csv' skip 1 using 1:3 with linespoints lw 2 pt 7 title 'training loss' axes x1y1, \
     '' skip 1 using 1:(\$4 >= 0 ? 100 * \$4 : NaN) with linespoints lw 2 pt 5 title 'test accuracy' axes x1y2
GNUPLOT
echo "plot_metrics: wrote $png"
