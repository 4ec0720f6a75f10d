# Shared by the exercises' check.sh scripts (POSIX sh, no Python): read the
# learner's answers file, ask mha for the truth, compare, print a score.
# A check script exits 0 when every answer is right, 1 when one is wrong, 2 on misuse.

MHA=${MHA:-$(command -v mha || echo build/mha)}

if [ $# -ne 1 ] || [ ! -r "$1" ]; then
    echo "usage: sh $0 ANSWERS.txt   (one answer per line, lines starting with # skipped)" >&2
    exit 2
fi
ANSWERS=$1
RIGHT=0
ASKED=0

# answer N: line N of the answers file, comments skipped.
answer() {
    grep -v '^#' "$ANSWERS" | sed -n "$1p"
}

# numbers TEXT: the whole numbers in TEXT, space-separated: "(B=2, h=4)" -> "2 4".
numbers() {
    printf '%s\n' "$1" | sed 's/[A-Za-z_]*=//g' | tr -c '0-9\n' ' ' | tr -s ' ' | sed 's/^ //; s/ $//'
}

# trace_field STEP TENSOR FIELD MHA-OPTIONS...: a list field ("shape", "strides") or a
# number field ("copied_bytes", "macs") of one step of `mha --format json`, space-separated.
trace_field() {
    step=$1 tensor=$2 field=$3
    shift 3
    "$MHA" --format json "$@" | grep "^{\"step\":$step,.*\"tensor\":\"$tensor\"" |
        sed "s/.*\"$field\":\[*\([-0-9.,]*\).*/\1/" | tr ',' ' ' | sed 's/ *$//'
}

# allowed_keys QUERY MHA-OPTIONS...: the keys query QUERY of batch 0, head 0 may attend to
# after step 8, space-separated, read from the trace's mask grid.
allowed_keys() {
    query=$1
    shift
    "$MHA" --format json "$@" | grep '^{"step":8,' | sed 's/.*"allowed":\[\[//; s/\]\].*//' |
        sed 's/\],\[/|/g' | tr '|' '\n' | sed -n "$((query + 1))p" | tr ',' '\n' |
        grep -n true | cut -d: -f1 | while read -r line; do printf '%s ' $((line - 1)); done |
        sed 's/ $//'
}

# top_field FIELD MHA-OPTIONS...: a number of the document's head, e.g. "parameters".
top_field() {
    field=$1
    shift
    "$MHA" --format json "$@" | head -n 1 | sed "s/.*\"$field\":\([0-9]*\).*/\1/"
}

# verdict N GOT EXPECTED: counts answer N right when GOT, its normalised text, is EXPECTED.
verdict() {
    ASKED=$((ASKED + 1))
    if [ "$2" = "$3" ]; then
        RIGHT=$((RIGHT + 1))
        echo "$1. right"
    else
        echo "$1. wrong: you answered '$(answer "$1")'"
    fi
}

# grade N EXPECTED: a list of numbers (a shape, strides, key indices) in any common spelling.
grade() { verdict "$1" "$(numbers "$(answer "$1")")" "$2"; }

# grade_count N EXPECTED: one whole number, written with or without separators: 263,168.
grade_count() { verdict "$1" "$(answer "$1" | tr -d ',_ \r')" "$2"; }

# grade_word N EXPECTED: yes/no and one-word answers, case-insensitive.
grade_word() { verdict "$1" "$(answer "$1" | tr 'A-Z' 'a-z' | tr -d ' \r')" "$2"; }

# finish: the score line and the exit status.
finish() {
    echo "score: $RIGHT/$ASKED"
    [ "$RIGHT" -eq "$ASKED" ]
    exit $?
}
