#!/bin/sh
# Exercise 8: tokens: how this folder's small tokenizer cuts a verse, " the" against "the", and
# merges against tokens for one word and one emoji.
# Usage: sh check.sh ANSWERS.txt, with mha on PATH or MHA=/path/to/mha. `mha grade` reads the
# key below, runs mha tokenize for the truth and prints each verdict. Exit 0: every answer
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
pieces : --checkpoint . --text-file verse.txt
tokens : --checkpoint . --text-file verse.txt
tokens : --checkpoint . --text-file the.txt
tokens : --checkpoint . --text the
merges : --checkpoint . --text Jerusalem
tokens : --checkpoint . --text Jerusalem
tokens : --checkpoint . --text 🙂
KEY
