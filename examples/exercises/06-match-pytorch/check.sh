#!/bin/sh
# Exercise 6: the --heads whose output matches PyTorch's (statistics computed by PyTorch),
# the parameter count, and d_k (weights.npz and query.npy in this folder).
# Usage: sh check.sh ANSWERS.txt, with mha on PATH or MHA=/path/to/mha. `mha grade` reads the
# key below, runs mha for the truth and prints each verdict. Exit 0: every answer right;
# 1: one is wrong; 2: misuse (no answers file, no mha).
if [ $# -eq 0 ]; then
    echo "usage: sh $0 ANSWERS.txt (a file of your answers, one a line; solution.txt is the teacher's)" >&2
    exit 2
fi
MHA=${MHA:-mha}
if ! command -v "$MHA" >/dev/null 2>&1; then
    echo "check.sh: cannot find mha: put it on PATH or run MHA=/path/to/mha sh $0 ANSWERS" >&2
    exit 2
fi
exec "$MHA" grade "$@" --files-in "$(dirname "$0")" <<'KEY'
matches 0.055026 0.201322 -0.796085 0.432091 : --weights weights.npz --input query.npy --heads {1}
parameters : --weights weights.npz --input query.npy --heads 1
d_k : --weights weights.npz --input query.npy --heads {1}
KEY
