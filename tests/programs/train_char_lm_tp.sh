#!/usr/bin/env bash
# train_char_lm --tp T --dp D (docs/parallelism.md, "The char LM on a mesh"):
#   train_char_lm_tp.sh TRAIN_CHAR_LM RUCCL_RUN WORKDIR [MPIRUN]
# With MPIRUN, only: --tp 2 as 4 processes of `mpirun -np 4` (the MPI engine; mesh 2 x 2) against
# one rank, F64, as in 1.
# Against the one-rank model (--ranks 1) from the same seed, 6 steps of a small GPT:
# 1. F64, --tp 2 --dp 2 on threads, --tp 2 as 2 processes under ruccl-run, and --tp 4 (the
#    vocabulary of 114 padded to 116), and --tp 2 --untied (a column-parallel head): every step's
#    loss within 1e-12 relative, the final parameters gathered within 1e-9 (absolute, or relative
#    where larger than 1); 2 x 2 samples the one-rank run's text;
# 2. F32, --tp 2 --dp 2: every step's loss within 1e-5 relative; with --overlap (dp's buckets of
#    4 KiB all-reduced while backward runs), --zero-stage 1 and --zero-stage 2 --overlap the same
#    parameters byte for byte;
# 3. sharded checkpoints (F64, 8 steps): --tp 2 --dp 2 stopped after step 4 and resumed on the
#    same mesh ends with the uninterrupted run's parameters byte for byte (and with
#    --zero-stage 2, its optimizer state gathered for the save); stopped after step 4,
#    resumed on one rank (--tp 1) to step 6, then on --tp 4 to step 8: every step's loss within
#    1e-12 of the uninterrupted run's, the parameters within 1e-9;
# 4. a mesh that does not fit (heads, ranks) is refused with a message.
# Prints "PASS: ..." and exits 0, or says what differed and exits 1.
set -euo pipefail
train=$1 ruccl_run=$2 work=$3 mpirun=${4:-}
rm -rf "$work" && mkdir -p "$work"
tiny=(--steps 6 --batch 4 --context 16 --embed 16 --heads 4 --layers 1 --eval-every 6
      --eval-batches 2 --warmup 2 --lr 0.01 --threads 1 --sample 0 --print-losses)

fail() { echo "FAIL: $*"; exit 1; }
# losses LOG: the "loss step N X" lines, without ruccl-run's "[rank] " prefix.
losses() { sed -n 's/^\(\[[0-9]*\] \)\{0,1\}loss step //p' "$1"; }
# same_losses REF LOG RTOL: every step's loss of LOG within RTOL (relative) of REF's.
same_losses() {
  [[ $(losses "$1" | wc -l) -eq 6 && $(losses "$2" | wc -l) -eq 6 ]] || fail "$2: not 6 step losses"
  join <(losses "$1") <(losses "$2") | awk -v tol="$3" '
    { d = $2 - $3; if (d < 0) d = -d; if (d > tol * $2) { print "step " $1 ": " $2 " vs " $3; bad = 1 } }
    END { exit bad }' || fail "$2: a step's loss differs from the one-rank run's by more than $3"
}
# same_step_losses REF RTOL LOG...: the steps the LOGs ran, each within RTOL of REF's.
same_step_losses() {
  local ref=$1 tol=$2; shift 2
  [[ $(cat "$@" | grep -c "loss step") -eq $(losses "$ref" | wc -l) ]] || fail "$*: steps missing"
  join <(losses "$ref" | sort -k1,1) <(for f in "$@"; do losses "$f"; done | sort -k1,1) |
    awk -v tol="$tol" '
    { d = $2 - $3; if (d < 0) d = -d; if (d > tol * $2) { print "step " $1 ": " $2 " vs " $3; bad = 1 } }
    END { exit bad }' || fail "$*: a step's loss differs from the uninterrupted run's by more than $tol"
}
# same_parameters REF OUT TOL: every value of OUT (path numel v...) within TOL x max(1, |ref|).
same_parameters() {
  awk -v tol="$3" '
    NR == FNR { n[$1] = NF; for (i = 3; i <= NF; ++i) ref[$1, i] = $i; next }
    { if (n[$1] != NF) { print "no " $1 " of that size"; bad = 1; next }
      seen++
      for (i = 3; i <= NF; ++i) {
        d = $i - ref[$1, i]; if (d < 0) d = -d; m = ref[$1, i]; if (m < 0) m = -m; if (m < 1) m = 1
        if (d > tol * m) { print $1 "[" i - 3 "]: " ref[$1, i] " vs " $i; bad = 1; next }
      } }
    END { if (seen != length(n)) { print seen " of " length(n) " parameters"; bad = 1 }; exit bad }
  ' "$1" "$2" || fail "$2: the gathered parameters differ from the one-rank run's"
}

"$train" "${tiny[@]}" --ranks 1 --dtype f64 --save-parameters "$work/one64.txt" > "$work/one64.log"
if [[ -n $mpirun ]]; then
  "$mpirun" --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 --mca btl self,vader \
    -np 4 "$train" "${tiny[@]}" --tp 2 --dtype f64 --save-parameters "$work/mpi.txt" > "$work/mpi.log"
  grep -q "(processes), mesh {dp: 2, tp: 2}" "$work/mpi.log" || fail "mpirun did not run a 2 x 2 mesh"
  same_losses "$work/one64.log" "$work/mpi.log" 1e-12
  same_parameters "$work/one64.txt" "$work/mpi.txt" 1e-9
  echo "PASS: --tp 2 as 4 MPI processes (2 x 2) equals one rank: F64 losses within 1e-12, parameters within 1e-9"
  exit 0
fi
"$train" "${tiny[@]}" --ranks 1 --save-parameters "$work/one32.txt" > "$work/one32.log"

"$train" "${tiny[@]}" --tp 2 --dp 2 --dtype f64 --save-parameters "$work/tpdp.txt" --sample 30 \
  > "$work/tpdp.log"
grep -q "over 4 rank(s) (threads), mesh {dp: 2, tp: 2}, f64" "$work/tpdp.log" ||
  fail "--tp 2 --dp 2 did not run a 2 x 2 mesh of threads"
same_losses "$work/one64.log" "$work/tpdp.log" 1e-12
same_parameters "$work/one64.txt" "$work/tpdp.txt" 1e-9
"$train" "${tiny[@]}" --ranks 1 --dtype f64 --sample 30 > "$work/sample.log"
diff <(sed -n '/^sample:/,$p' "$work/sample.log") <(sed -n '/^sample:/,$p' "$work/tpdp.log") ||
  fail "--tp 2 --dp 2 samples other text than one rank (the logits gathered over tp)"
"$train" "${tiny[@]}" --ranks 1 --untied --dtype f64 --save-parameters "$work/one_untied.txt" \
  > "$work/one_untied.log"
"$train" "${tiny[@]}" --tp 2 --untied --dtype f64 --save-parameters "$work/untied.txt" \
  > "$work/untied.log"
same_losses "$work/one_untied.log" "$work/untied.log" 1e-12
same_parameters "$work/one_untied.txt" "$work/untied.txt" 1e-9

"$ruccl_run" --nproc-per-node 2 "$train" "${tiny[@]}" --tp 2 --dtype f64 \
  --save-parameters "$work/proc.txt" > "$work/proc.log"
grep -q "(processes), mesh {dp: 1, tp: 2}" "$work/proc.log" || fail "ruccl-run did not run --tp 2"
same_losses "$work/one64.log" "$work/proc.log" 1e-12
same_parameters "$work/one64.txt" "$work/proc.txt" 1e-9

"$train" "${tiny[@]}" --tp 4 --dtype f64 --save-parameters "$work/tp4.txt" > "$work/tp4.log"
grep -q "mesh {dp: 1, tp: 4}" "$work/tp4.log" || fail "--tp 4 did not run"
same_losses "$work/one64.log" "$work/tp4.log" 1e-12
same_parameters "$work/one64.txt" "$work/tp4.txt" 1e-9

"$train" "${tiny[@]}" --tp 2 --dp 2 --save-parameters "$work/tpdp32.txt" > "$work/tpdp32.log"
same_losses "$work/one32.log" "$work/tpdp32.log" 1e-5
"$train" "${tiny[@]}" --tp 2 --dp 2 --overlap --bucket-mb 0.004 \
  --save-parameters "$work/overlap.txt" > "$work/overlap.log"
cmp "$work/tpdp32.txt" "$work/overlap.txt" || fail "--overlap (4 KiB buckets) changed the parameters"
"$train" "${tiny[@]}" --tp 2 --dp 2 --zero-stage 1 --save-parameters "$work/zero1.txt" \
  > "$work/zero1.log"
cmp "$work/tpdp32.txt" "$work/zero1.txt" || fail "--zero-stage 1 changed the parameters"
"$train" "${tiny[@]}" --tp 2 --dp 2 --zero-stage 2 --overlap --bucket-mb 0.004 \
  --save-parameters "$work/zero2.txt" > "$work/zero2.log"
cmp "$work/tpdp32.txt" "$work/zero2.txt" || fail "--zero-stage 2 --overlap changed the parameters"

long=("${tiny[@]}" --steps 8 --eval-every 8 --dtype f64)
"$train" "${long[@]}" --tp 2 --dp 2 --save-parameters "$work/whole.txt" > "$work/whole.log"
"$train" "${long[@]}" --tp 2 --dp 2 --checkpoint-dir "$work/same" --stop-after 4 > "$work/same1.log"
"$train" "${long[@]}" --tp 2 --dp 2 --checkpoint-dir "$work/same" --resume \
  --save-parameters "$work/same.txt" > "$work/same2.log"
grep -q "resuming after step 4 (sharded)" "$work/same2.log" || fail "no sharded resume"
cmp "$work/whole.txt" "$work/same.txt" || fail "resumed on the same mesh, the parameters differ"
same_step_losses "$work/whole.log" 0 "$work/same1.log" "$work/same2.log"
"$train" "${long[@]}" --tp 2 --dp 2 --zero-stage 2 --checkpoint-dir "$work/zero" --stop-after 4 \
  > "$work/zck1.log"
"$train" "${long[@]}" --tp 2 --dp 2 --zero-stage 2 --checkpoint-dir "$work/zero" --resume \
  --save-parameters "$work/zero.txt" > "$work/zck2.log"
cmp "$work/whole.txt" "$work/zero.txt" || fail "ZeRO-2 stopped and resumed: other parameters"
"$train" "${long[@]}" --tp 2 --dp 2 --checkpoint-dir "$work/mesh" --stop-after 4 > "$work/mesh1.log"
"$train" "${long[@]}" --ranks 1 --checkpoint-dir "$work/mesh" --resume --stop-after 6 \
  > "$work/mesh2.log"
grep -q "resuming after step 4 (sharded)" "$work/mesh2.log" || fail "--tp 1 did not resume"
"$train" "${long[@]}" --tp 4 --checkpoint-dir "$work/mesh" --resume \
  --save-parameters "$work/mesh.txt" > "$work/mesh3.log"
grep -q "resuming after step 6 (sharded)" "$work/mesh3.log" || fail "--tp 4 did not resume"
same_step_losses "$work/whole.log" 1e-12 "$work/mesh1.log" "$work/mesh2.log" "$work/mesh3.log"
same_parameters "$work/whole.txt" "$work/mesh.txt" 1e-9

if "$train" "${tiny[@]}" --tp 3 > "$work/heads.log" 2>&1; then fail "--tp 3 with 4 heads ran"; fi
grep -q "num_heads divisible by the group size 3, got 4" "$work/heads.log" || fail "no heads refusal"
if "$train" "${tiny[@]}" --ranks 3 --tp 2 > "$work/mesh.log" 2>&1; then fail "3 ranks, --tp 2 ran"; fi
grep -q "3 ranks are not --tp 2 x --dp 1" "$work/mesh.log" || fail "no mesh refusal"
echo "PASS: --tp 2 --dp 2 (threads), --tp 2 (processes) and --tp 4 (vocabulary padded) equal one rank: F64 losses within 1e-12, parameters within 1e-9; F32 losses within 1e-5; --overlap and ZeRO 1, 2 byte for byte; sharded checkpoint resumed bit for bit on 2 x 2, and 2 x 2 -> 1 -> tp 4"
