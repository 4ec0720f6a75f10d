#!/bin/sh
# The classic example: self-attention, B=2, N=8, d_model=256, h=4, traced.
# Watch step 5 turn the tensor non-contiguous and step 12 copy it back (16 KiB).
MHA=${MHA:-build/mha}
exec "$MHA" --trace --batch 2 --seq-len 8 --d-model 256 --heads 4
