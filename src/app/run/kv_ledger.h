#pragma once
// The KV cache ledger of --shapes-only --decode T for a preset or a config.json: every kind of
// layer's cache per token and at T, in float32, int8 and int4 (--kv-quant-group, --kv-quant-axis
// and --kv-residual as given), paged in whole blocks (--kv-block-size), MLA's latent beside
// plain MHA, and the most sequences of T whose cache fits --max-memory.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/config.h"
#include "app/cli/presets.h"
#include "core/forms/kv_quant.h"
#include "core/pass/mla.h"
#include "core/sizes.h"
#include "io/checkpoint/config.h"
#include "show/run_info.h"

namespace mha {

// What one layer caches for each token: K and V of G heads of d_k, or MLA's latent.
struct LayerCache {
    std::size_t kv_heads = 0, head_dim = 0;  // G, d_k (K and V)
    std::size_t latent = 0, rope = 0;        // > 0: MLA's d_c and d_R instead of K and V
    std::size_t window = 0;                  // W > 0: a local layer keeps the last W tokens
};

// A model as the ledger sees it: a LayerCache per layer.
struct LedgerModel {
    std::string name;          // "Llama 3 8B"
    std::size_t context = 0;   // the longest T it takes
    std::vector<LayerCache> layers;
    std::size_t mha_heads = 0, mha_head_dim = 0;  // MLA: h and d_h of the MHA it stands beside
};

// What the options ask of the ledger.
struct LedgerSettings {
    std::size_t length = 0;      // T
    KvQuant quant;               // the groups, axes and residual of int8 and int4 (bits unused)
    bool group_given = false;    // --kv-quant-group was given: a group that does not fit is refused
    std::size_t block_size = 0;  // --kv-block-size S; 0: not paged
    std::uint64_t max_memory = 0;
};

// The options' settings for a ledger at T.
LedgerSettings ledger_settings(const Config& config, std::size_t length);

// A preset's layers with the traced layer's G and d_k (Gemma 2: even layers local), or, with
// `mla`, its latent on every layer.
LedgerModel preset_ledger_model(const Preset& preset, const Sizes& sizes,
                                const std::optional<MlaSizes>& mla);

// A config.json's layers: its G and head_dim, and each layer's sliding window.
LedgerModel config_ledger_model(const checkpoint::Config& config);

// The ledger. Throws mha::Error for T beyond the model's context, --kv-residual beyond T, or a
// --kv-quant-group that does not divide a d_k its tensor is grouped along.
KvLedger kv_ledger(const LedgerModel& model, const LedgerSettings& settings);

// The ledger for --preset P --shapes-only --decode T (`sizes`: the traced layer's, `mla`: its
// MLA sizes if it attends with MLA); none for other runs.
std::optional<KvLedger> kv_ledger_of(const Config& config, const Sizes& sizes,
                                     const std::optional<MlaSizes>& mla);

}  // namespace mha
