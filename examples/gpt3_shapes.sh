#!/bin/sh
# GPT-3 175B's attention layer (d_model=12288, h=96, N=2048), traced from its sizes
# alone: shapes, strides, the 96 MiB copy at step 12 and 1.34e12 multiply-adds,
# without allocating a single tensor. Compare the presets: mha --list-presets
MHA=${MHA:-build/mha}
exec "$MHA" --preset gpt3 --shapes-only --trace
