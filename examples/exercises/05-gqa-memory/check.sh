#!/bin/sh
# Exercise 5: KV-cache bytes for MHA from the trace's K and V shapes, and for GQA/MQA by
# keeping g of the h key/value heads.
. "$(dirname "$0")/../lib.sh"
run="-b 1 -n 1 -m 1024 -d 512 -H 8"
heads=8
floats=1
for size in $(trace_field 2 K shape $run); do floats=$((floats * size)); done
mha_bytes=$((2 * floats * 4))
grade_count 1 "$mha_bytes"
grade_count 2 "$((mha_bytes * 2 / heads))"
grade_count 3 "$((mha_bytes / heads))"
grade_count 4 "$((heads / 2))"
finish
