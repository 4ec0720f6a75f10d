#!/bin/sh
# Exercise 6: the --heads whose output matches PyTorch's statistics (numpy, from
# tests/data/parity/self_bias/expected.npz), the parameter count, and d_k.
. "$(dirname "$0")/../lib.sh"
dir=tests/data/parity/self_bias
files="--weights $dir/weights.npz --input $dir/query.npy"
heads=$(answer 1 | tr -d ' \r')
# mean, std, min and max as PyTorch's output has them, to float32 rounding
matches=$("$MHA" --format json $files --heads "$heads" 2>/dev/null | tail -n 1 |
    sed 's/.*"mean":\([^,]*\),"std":\([^,]*\),"min":\([^,]*\),"max":\([^,]*\),.*/\1 \2 \3 \4/' |
    awk '{ d = 0; split("0.055026 0.201322 -0.796085 0.432091", want, " ")
           for (i = 1; i <= 4; ++i) { e = $i - want[i]; if (e < 0) e = -e; if (e > d) d = e }
           print (NF == 4 && d < 1e-5) ? "yes" : "no" }')
verdict 1 "$matches" yes
grade_count 2 "$(top_field parameters $files --heads 1)"
if [ "$matches" = yes ]; then d_k=$((16 / heads)); else d_k=none; fi
grade_count 3 "$d_k"
finish
