#!/bin/sh
# Exercise 2: strides around the transposes, and the one copy, for B=1, N=4, d_model=16, h=2.
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
strides 4 Q : -b 1 -n 4 -d 16 -H 2
strides 5 Q : -b 1 -n 4 -d 16 -H 2
contiguous 5 Q : -b 1 -n 4 -d 16 -H 2
strides 11 context : -b 1 -n 4 -d 16 -H 2
copied 12 context : -b 1 -n 4 -d 16 -H 2
strides 12 context : -b 1 -n 4 -d 16 -H 2
KEY
