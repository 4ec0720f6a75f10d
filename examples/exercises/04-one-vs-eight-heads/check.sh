#!/bin/sh
# Exercise 4: parameters (biases included), score cost and attention-map size for h=1 against h=8.
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
parameters : -b 1 -n 8 -d 64 -H 1 -- four (64, 64) matrices and four biases of 64 (counted)
parameters : -b 1 -n 8 -d 64 -H 8 -- four (64, 64) matrices and four biases of 64 (counted)
macs 6 scores : -b 1 -n 8 -d 64 -H 1
macs 6 scores : -b 1 -n 8 -d 64 -H 8
shape 9 weights : -b 1 -n 8 -d 64 -H 8
bytes 9 weights : -b 1 -n 8 -d 64 -H 8
KEY
