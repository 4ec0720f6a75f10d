#!/bin/sh
# Exercise 3: the keys a query may see under causal masks (N < M and N = M) and
# under both readings of a 0/1 mask file.
. "$(dirname "$0")/../lib.sh"
cross="-b 1 -n 4 -m 6 -d 16 -H 2 --causal"
file="--input tests/data/parity/scratch_lower_keep/query.npy -H 2"
file="$file --mask tests/data/parity/scratch_lower_keep/mask.npy --mask-means"
grade 1 "$(allowed_keys 0 $cross)"
grade 2 "$(allowed_keys 3 $cross)"
grade 3 "$(allowed_keys 0 -b 1 -n 4 -d 16 -H 2 --causal)"
grade 4 "$(allowed_keys 1 $file block 2>/dev/null)"
grade 5 "$(allowed_keys 1 $file keep)"
grade_word 6 "$([ "$(allowed_keys 0 $file keep)" = 0 ] && echo keep || echo block)"
finish
