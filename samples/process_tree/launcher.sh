#!/bin/sh
# A torchrun-style launcher as a shell script: two workers with RANK,
# LOCAL_RANK and WORLD_SIZE set, rank 0 with a helper process of its own.
# The three-level tree that tests/e2e/test_process_tree.cpp traces:
#   sh launcher.sh -> tree_worker (rank 0) -> tree_worker --as-helper
#                  -> tree_worker (rank 1)
# Usage: launcher.sh [STATUS]   exit with STATUS instead of the workers' status.
# TREE_WORKER names the worker binary (default: tree_worker next to this script).
# Not $(dirname "$0"): that would be one more (traced) process in the tree.
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
worker=${TREE_WORKER:-$here/tree_worker}
export WORLD_SIZE=2
RANK=0 LOCAL_RANK=0 "$worker" --helper --steps 300 &
w0=$!
RANK=1 LOCAL_RANK=1 "$worker" --steps 100 &
w1=$!
status=0
wait $w0 || status=$?
wait $w1 || status=$?
echo "launcher: workers finished with status $status"
exit "${1:-$status}"
