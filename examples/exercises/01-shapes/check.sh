#!/bin/sh
# Exercise 1: the shapes after steps 4, 5, 6, 10 and 13 for B=2, N=5, d_model=48, h=3.
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
shape 4 Q : -b 2 -n 5 -d 48 -H 3
shape 5 Q : -b 2 -n 5 -d 48 -H 3
shape 6 scores : -b 2 -n 5 -d 48 -H 3
shape 10 context : -b 2 -n 5 -d 48 -H 3
shape 13 concat : -b 2 -n 5 -d 48 -H 3
KEY
