#!/bin/sh
# Exercise 4: parameters, score cost, and attention-map size for h=1 against h=8.
. "$(dirname "$0")/../lib.sh"
one="-b 1 -n 8 -d 64 -H 1"
eight="-b 1 -n 8 -d 64 -H 8"
grade_count 1 "$(top_field parameters $one)"
grade_count 2 "$(top_field parameters $eight)"
grade_count 3 "$(trace_field 6 scores macs $one)"
grade_count 4 "$(trace_field 6 scores macs $eight)"
shape=$(trace_field 9 weights shape $eight)
grade 5 "$shape"
bytes=4
for size in $shape; do bytes=$((bytes * size)); done
grade_count 6 "$bytes"
finish
