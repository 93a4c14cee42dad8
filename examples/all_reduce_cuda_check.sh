#!/usr/bin/env bash
# Runs `all_reduce --device cuda` (path in $1) and checks its verdict against its exit code: on a
# GPU it must pass (exit 0, "all_reduce: OK on cuda:0"); without one (or without a CUDA backend) it
# must say so and exit non-zero. Anything else fails.
out=$("$1" --device cuda)
rc=$?
echo "$out"
case "$out" in
  'all_reduce: OK on cuda:0'*)
    [ "$rc" -eq 0 ] && echo 'all_reduce --device cuda: passed on a GPU' ;;
  'all_reduce: no CUDA GPU'* | 'all_reduce: no CUDA device'* | 'all_reduce: this build has no CUDA'*)
    [ "$rc" -ne 0 ] && echo 'all_reduce --device cuda: refused without a GPU' ;;
esac
