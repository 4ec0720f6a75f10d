#!/bin/sh
# Four constructed heads on a sentence, drawn as heatmaps (rows: queries, columns: keys).
# Look for: head 0 one step left of the diagonal (previous token), head 1 the first
# column (the sink), head 2 the diagonal except "the" at 8 jumping back to "The" at 0
# (same token), head 3 spreading evenly. docs/demo_heads.md explains the weights.
MHA=${MHA:-build/mha}
exec "$MHA" --text "The cat that I saw yesterday sat on the mat" --demo-heads --heatmap --color never
