#!/bin/sh
# Exercise 3: the keys a query may see under causal masks (N < M and N = M) and under
# both readings of a 0/1 mask file (mask.npy and query.npy in this folder).
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
keys 0 : -b 1 -n 4 -m 6 -d 16 -H 2 --causal
keys 3 : -b 1 -n 4 -m 6 -d 16 -H 2 --causal
keys 0 : -b 1 -n 4 -d 16 -H 2 --causal
keys 1 : --input query.npy -H 2 --mask mask.npy --mask-means block
keys 1 : --input query.npy -H 2 --mask mask.npy --mask-means keep
word keep -- with keep, query i sees keys 0..i: a lower triangle, the causal mask
KEY
