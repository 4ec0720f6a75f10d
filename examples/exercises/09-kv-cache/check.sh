#!/bin/sh
# Exercise 9: the KV cache as a serving engine keeps it: a GQA cache's bytes, int8 codes with
# their scales, a paged cache's block and slot and its unused slots, a draft tree's mask.
# Usage: sh check.sh ANSWERS.txt, with mha on PATH or MHA=/path/to/mha. `mha grade` reads the
# key below, runs mha for the truth and prints each verdict. Exit 0: every answer
# right; 1: one is wrong; 2: misuse (no answers file, no mha).
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
kv-cache : -b 1 -n 1 -m 1 -d 512 -H 8 -G 2
cache-bytes : -b 1 -d 512 -H 8 -G 2 --decode 40
cache-bytes : -b 1 -d 512 -H 8 -G 2 --decode 40 --kv-quant int8 --kv-quant-axis token --kv-quant-group 32
page 13 : -b 2 -d 8 -H 2 --decode 20 --kv-block-size 4 --kv-pool-seed 7
unused 13 : -b 2 -d 8 -H 2 --decode 20 --kv-block-size 4 --kv-pool-seed 7
keys 4 : -b 1 -d 8 -H 2 --decode 7 --draft-tree -1,-1,0,0,1
KEY
