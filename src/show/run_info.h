#pragma once
// What a printer says about a run besides its steps: the configuration and where
// the numbers came from. Filled in by the app, read by the printers.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/backward/training_costs.h"
#include "core/pass/mla.h"

namespace mha {

struct RunInfo {
    std::size_t batch = 0;          // B
    std::size_t seq_len = 0;        // N
    std::size_t kv_len = 0;         // M
    std::size_t appended_keys = 0;  // add_bias_kv / add_zero_attn positions after the M keys
    std::size_t d_model = 0;
    std::size_t heads = 0;     // h
    std::size_t kv_heads = 0;  // G key/value heads (h unless shared)
    std::size_t head_dim = 0;  // d_k (d_model / h unless the heads are wider; MLA: d_h + d_R)
    std::size_t kdim = 0;      // features of x_k (d_model unless the state dict differs)
    std::size_t vdim = 0;      // features of x_v
    bool self_attention = true;
    bool bias = true;
    bool causal = false;
    std::size_t threads = 1;
    std::string kernels;  // the kernel variant that computes, e.g. "avx512"
    std::size_t parameters = 0;
    std::string weights_source;             // "seeded (seed 0)" or the .npz path
    std::string inputs_source;              // "seeded (seed 0)" or the .npy path(s)
    std::string grad_output_source;         // --backward: "seeded standard normal (seed 0)" or the
                                            // --grad-output path; empty without --backward
    std::vector<std::string> layout_notes;  // seq-first or unbatched files: the conversions
    std::string config_file;                // a checkpoint: its config.json, else empty
    std::vector<std::string> config_keys;   // its keys read, "key value: what it sets"
    bool values = false;                    // --values: print every traced tensor's values
    bool explain = false;                   // --explain: a paragraph on what each kind of step does
    std::vector<std::string> tokens;        // --text: one per position; empty otherwise
    std::vector<std::string> head_names;    // --demo-heads: one per head; empty otherwise
    std::string variant;          // "" for the packed pass, else e.g. "pre-LN block, d_ff=64"
    std::optional<MlaSizes> mla;  // --form mla: its matrices replace W_q, W_k, W_v, W_o
    bool fused_qkv = false;       // --fused-qkv: W_q, W_k, W_v stacked as one W_qkv
    bool shapes_only = false;     // --shapes-only: steps without values, no output
    std::uint64_t activation_bytes = 0;  // what computing would allocate (forward_bytes)
    std::string activation_tensors = "Q, K, V, scores, context, concat and output";  // of them
    std::uint64_t total_macs = 0;  // multiply-adds of the whole pass
    bool backward = false;         // --backward: the backward's steps follow the forward's
    std::vector<KeptTensor> kept;  // --backward: what the forward keeps for the backward
    std::vector<KeptTensor> kept_streaming;  // --shapes-only --backward on the standard path:
                                             // what the streaming path would keep instead
    MacSplit macs;  // --backward: the forward's and the backward's multiply-adds (a dry run's)
};

}  // namespace mha
