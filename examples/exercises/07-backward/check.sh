#!/bin/sh
# Exercise 7: the backward pass: gradient shapes with GQA, a backward step's multiply-adds,
# the backward's cost against the forward's, and two gradients of this folder's layer.
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
shape b10 dV : -b 2 -n 6 -d 32 -H 4 --kv-heads 2 --backward
shape b10 dP : -b 2 -n 6 -d 32 -H 4 --kv-heads 2 --backward
shape b9 dS : -b 2 -n 6 -d 32 -H 4 --kv-heads 2 --backward
shape b2 dW_k : -b 2 -n 6 -d 32 -H 4 --kv-heads 2 --backward
macs b10 dP : -b 2 -n 6 -d 32 -H 4 --kv-heads 2 --backward
number 2 -- --shapes-only: 41,472 forward, 125,088 with --backward; 83,616 / 41,472 = 2.02
number 2 -- db_o = dOut.sum((0, 1)): column 0 of dO.npy is 1, -1, 0, 2
number 0 -- b_k adds q·b_k to a whole row of scores; the softmax ignores that
KEY
