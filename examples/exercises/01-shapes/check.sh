#!/bin/sh
# Exercise 1: the shapes after steps 4, 5, 6, 10 and 13 for B=2, N=5, d_model=48, h=3.
. "$(dirname "$0")/../lib.sh"
run="-b 2 -n 5 -d 48 -H 3"
grade 1 "$(trace_field 4 Q shape $run)"
grade 2 "$(trace_field 5 Q shape $run)"
grade 3 "$(trace_field 6 scores shape $run)"
grade 4 "$(trace_field 10 context shape $run)"
grade 5 "$(trace_field 13 concat shape $run)"
finish
