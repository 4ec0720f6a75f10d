#!/bin/sh
# Cross-attention: 4 queries attend to 6 keys/values (N=4, M=6), causal with the
# bottom-right alignment, so the last query sees every key. The scores are
# (B, h, N, M) = (1, 2, 4, 6) and the trace draws the mask grid.
MHA=${MHA:-build/mha}
exec "$MHA" --trace --batch 1 --seq-len 4 --kv-len 6 --d-model 16 --heads 2 --causal
