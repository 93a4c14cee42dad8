#!/usr/bin/env bash
# The observability tools end to end (docs/observability.md):
#   observability_tools.sh TRAIN_FASHION_MNIST RUCCL_RUN TOOLS_DIR WORKDIR
# 1. train_fashion_mnist on 2 threads and on 2 processes (ruccl-run, TCP) with RUCCL_TRACE_FILE:
#    every rank writes its Chrome trace, holding the collectives and the step's phases;
# 2. tools/merge_traces.py merges them into one timeline (both ranks, starting at 0, sorted) and
#    refuses two files of one rank;
# 3. tools/plot_trace.py, tools/plot_metrics.sh and tools/plot_bandwidth.sh write PNGs, and
#    refuse a file that is not theirs with exit status 2 and a message.
# Prints "PASS: ..." and exits 0, or says what failed and exits 1.
set -euo pipefail
train=$1 ruccl_run=$2 tools=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
short=(--epochs 2 --max-batches 4 --hidden 32 --threads 1)

RUCCL_TRACE_FILE="$work/threads.%r.json" "$train" "${short[@]}" --ranks 2 \
  --metrics "$work/metrics.csv" >"$work/threads.log" 2>&1 || fail "threads run: $(cat "$work/threads.log")"
RUCCL_TRACE_FILE="$work/procs.%r.json" "$ruccl_run" --nproc-per-node 2 "$train" "${short[@]}" \
  >"$work/procs.log" 2>&1 || fail "processes run: $(cat "$work/procs.log")"
for f in threads.0 threads.1 procs.0 procs.1; do
  [[ -s "$work/$f.json" ]] || fail "no trace $f.json was written"
done

for run in threads procs; do
  python3 "$tools/merge_traces.py" -o "$work/$run.merged.json" "$work/$run.1.json" \
    "$work/$run.0.json" >"$work/$run.summary" || fail "merge_traces failed on the $run traces"
  grep -q "events from ranks \[0, 1\]" "$work/$run.summary" || fail "summary: $(cat "$work/$run.summary")"
  python3 - "$work/$run.merged.json" <<'PY' || fail "the merged $run trace is not what it should be"
import json, sys
t = json.load(open(sys.argv[1]))
x = [e for e in t["traceEvents"] if e.get("ph") == "X"]
assert {e["pid"] for e in x} == {0, 1}, "both ranks"
assert min(e["ts"] for e in x) == 0, "starts at 0"
assert [e["ts"] for e in x] == sorted(e["ts"] for e in x), "sorted"
for rank in (0, 1):
    names = {e["name"] for e in x if e["pid"] == rank}
    for want in ("step", "forward", "backward", "gradient bucket F32", "optimizer",
                 "DataParallel::reduce", "all_reduce"):
        assert want in names, f"rank {rank} lacks {want}: {sorted(names)}"
    steps = [e for e in x if e["pid"] == rank and e["name"] == "step"]
    assert len(steps) == 8, f"rank {rank}: {len(steps)} steps"  # 2 epochs of 4 batches
    seqs = [e["args"]["seq"] for e in x if e["pid"] == rank and e.get("cat") == "collective"]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "call numbers in order"
PY
done
if python3 "$tools/merge_traces.py" -o "$work/bad.json" "$work/threads.0.json" \
  "$work/procs.0.json" 2>"$work/dup.err"; then
  fail "merge_traces accepted two traces of rank 0"
fi
grep -q "rank 0 is already in" "$work/dup.err" || fail "duplicate rank message: $(cat "$work/dup.err")"

png_ok() { [[ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]]; }
python3 "$tools/plot_trace.py" "$work/procs.merged.json" "$work/timeline.png" ||
  fail "plot_trace failed"
png_ok "$work/timeline.png" || fail "plot_trace wrote no PNG"
bash "$tools/plot_metrics.sh" "$work/metrics.csv" "$work/metrics.png" >/dev/null ||
  fail "plot_metrics failed"
png_ok "$work/metrics.png" || fail "plot_metrics wrote no PNG"
cat >"$work/bench.csv" <<'CSV'
op,world,bytes,impl,iters,time_us,min_us,algbw_gbs,busbw_gbs
all_reduce,2,4096,ruccl,400,1.80,1.60,2.2756,2.2756
all_reduce,2,65536,ruccl,200,3.20,3.00,20.4800,20.4800
all_reduce,2,4096,mpi-shm,,3.40,,1.2047,1.2047
all_reduce,2,65536,mpi-shm,,21.40,,3.0624,3.0624
CSV
bash "$tools/plot_bandwidth.sh" "$work/bench.csv" "$work/bw.png" all_reduce 2 >"$work/bw.log" ||
  fail "plot_bandwidth failed"
grep -q "(ruccl mpi-shm )" "$work/bw.log" || fail "plot_bandwidth lines: $(cat "$work/bw.log")"
png_ok "$work/bw.png" || fail "plot_bandwidth wrote no PNG"
set +e
bash "$tools/plot_metrics.sh" "$work/bench.csv" "$work/x.png" 2>"$work/refuse.err"
status=$?
set -e
((status == 2)) || fail "plot_metrics of a benchmark CSV exited $status, expected 2"
grep -q "expected a train_fashion_mnist metrics CSV" "$work/refuse.err" ||
  fail "plot_metrics refusal: $(cat "$work/refuse.err")"
echo "PASS: traces of threads and processes merged, timeline, metrics and bandwidth plots drawn"
