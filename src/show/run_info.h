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

// Layers that cache alike in a KV ledger: K and V of G heads of d_k each, or MLA's latent (one
// vector of d_c + d_R shared by all heads), all T positions or, on a local layer, the last W.
struct KvLedgerRow {
    std::vector<std::size_t> layers;         // which of the model's layers, ascending
    std::size_t kv_heads = 0, head_dim = 0;  // G, d_k; MLA: 1 and d_c + d_R
    std::size_t latent = 0, rope = 0;        // MLA: d_c and d_R; 0 for K and V
    std::size_t window = 0;                  // W > 0: a local layer keeps the last W tokens
    std::size_t cached = 0;                  // the positions one such layer holds at T
    std::uint64_t per_token = 0;             // float32 bytes one token adds to one layer
    std::uint64_t float32 = 0, int8 = 0, int4 = 0;  // one layer's cache at T
    std::uint64_t blocks = 0, paged = 0, unused = 0;  // --kv-block-size: one layer's blocks,
                                                      // their bytes, the last one's unused bytes
};

// One sequence's cache over all layers (or, for `fits`, the sequences --max-memory holds).
struct KvLedgerTotals {
    std::uint64_t float32 = 0, int8 = 0, int4 = 0, paged = 0;
};

// --shapes-only --decode T with --preset or --config: the whole model's KV cache at T.
struct KvLedger {
    std::string model;                     // "Llama 3 8B", or the config.json read
    std::size_t layers = 0, length = 0;    // the model's layers, T
    std::size_t context = 0;               // the longest T the model takes
    std::vector<KvLedgerRow> rows;         // the kinds of layer, in the order of their first layer
    std::uint64_t per_token = 0;           // float32 bytes one token adds to all layers
    bool quantised = true;                 // false: int8 and int4 are not shown (quant_note why)
    std::string quant_note;                // how int8 and int4 group, or why they are not shown
    std::size_t block_size = 0;            // --kv-block-size S; 0: not paged
    std::size_t mha_heads = 0, mha_head_dim = 0;  // MLA: the h heads of d_h plain MHA would cache
    std::uint64_t mha_per_token = 0;       // MLA: 2·h·d_h float32 bytes a token and layer
    KvLedgerTotals total;                  // one sequence of T, all layers
    std::uint64_t max_memory = 0;          // --max-memory
    KvLedgerTotals fits;                   // the most sequences of T whose cache fits in it
};

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
    std::optional<KvLedger> kv_ledger;  // --shapes-only --decode: the model's KV cache ledger
    std::optional<MlaSizes> mla;  // --form mla: its matrices replace W_q, W_k, W_v, W_o
    bool fused_qkv = false;       // --fused-qkv: W_q, W_k, W_v stacked as one W_qkv
    bool shapes_only = false;     // --shapes-only: steps without values, no output
    std::uint64_t activation_bytes = 0;  // what computing would allocate (a dry run's peak)
    std::string activation_tensors = "Q, K, V, scores, context, concat and output";  // of them
    std::uint64_t total_macs = 0;  // multiply-adds of the whole pass
    bool backward = false;         // --backward: the backward's steps follow the forward's
    std::vector<KeptTensor> kept;  // --backward: what the forward keeps for the backward
    std::vector<KeptTensor> kept_streaming;  // --shapes-only --backward on the standard path:
                                             // what the streaming path would keep instead
    MacSplit macs;  // --backward: the forward's and the backward's multiply-adds (a dry run's)
};

}  // namespace mha
