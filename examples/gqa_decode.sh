#!/bin/sh
# Llama-style decoding: 4 query heads share 2 key/value heads (GQA), and 4 tokens
# are decoded one at a time. Watch the K cache grow from (B=1, G=2, t=1, d_k=4)
# to t=4, each token's weights (B=1, h=4, N=1, t), and the cache's bytes.
MHA=${MHA:-build/mha}
exec "$MHA" --trace --batch 1 --d-model 16 --heads 4 --kv-heads 2 --decode 4
