#!/bin/sh
# Exercise 5: KV-cache bytes for MHA, GQA (g=2) and MQA (g=1), and the saving.
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
kv-cache : -b 1 -n 1 -m 1024 -d 512 -H 8
kv-cache : -b 1 -n 1 -m 1024 -d 512 -H 8 --kv-heads 2
kv-cache : -b 1 -n 1 -m 1024 -d 512 -H 8 --kv-heads 1
number 4 -- h / g = 8 / 2: K and V keep g·d_k = 128 of d_model = 512 columns
KEY
