#!/bin/sh
# A pre-LN transformer block around causal attention: LayerNorm (step 15), the
# 14 attention steps, residual, LayerNorm, the feed-forward network widening to
# d_ff = 4·d_model = 64 with GELU, and the second residual (steps 16-21).
MHA=${MHA:-build/mha}
exec "$MHA" --trace --batch 1 --seq-len 4 --d-model 16 --heads 2 --causal --block pre
