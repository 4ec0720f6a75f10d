#!/bin/sh
# A tiny case small enough to read every number: B=1, N=3, d_model=4, h=2.
# --values prints each tensor after its step, the way NumPy prints arrays.
MHA=${MHA:-build/mha}
exec "$MHA" --values --batch 1 --seq-len 3 --d-model 4 --heads 2 --seed 1
