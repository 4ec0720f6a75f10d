#!/bin/sh
# Exercise 2: strides around the transposes, and the one copy, for B=1, N=4, d_model=16, h=2.
. "$(dirname "$0")/../lib.sh"
run="-b 1 -n 4 -d 16 -H 2"
grade 1 "$(trace_field 4 Q strides $run)"
grade 2 "$(trace_field 5 Q strides $run)"
contiguous=$("$MHA" --format json $run | grep '^{"step":5,.*"tensor":"Q"' | grep -c '"contiguous":true')
grade_word 3 "$([ "$contiguous" -eq 1 ] && echo yes || echo no)"
grade 4 "$(trace_field 11 context strides $run)"
grade_count 5 "$(trace_field 12 context copied_bytes $run)"
grade 6 "$(trace_field 12 context strides $run)"
finish
