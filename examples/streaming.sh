#!/bin/sh
# The streaming path: steps 6-10 run tile by tile with an online softmax, so the
# (B, h, N, M) scores are never stored. Watch step 10 ("attend") replace steps
# 6-9, and step 12 copy nothing because the context is written in place.
MHA=${MHA:-build/mha}
exec "$MHA" --trace --attention streaming --batch 1 --seq-len 300 --d-model 64 --heads 2 --causal
