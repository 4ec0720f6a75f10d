// The KV cache ledger: each kind of layer's cache at T, quantised, paged, and what fits.

#include "app/run/kv_ledger.h"

#include <algorithm>

#include "app/run/kv_quant_options.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/forms/paged_kv.h"

namespace mha {

namespace {

const char* const ledger_what = "the KV ledger";

bool same_cache(const LayerCache& a, const LayerCache& b) {
    return a.kv_heads == b.kv_heads && a.head_dim == b.head_dim && a.latent == b.latent &&
           a.rope == b.rope && a.window == b.window;
}

// The sizes of one sequence's cache of `cached` positions, as kv_quant_bytes reads them: K and
// V of G heads of d_k, or for MLA the latent as one head d_c + d_R wide.
Sizes cache_sizes(const LayerCache& layer, std::size_t cached) {
    const bool mla = layer.latent > 0;
    const std::size_t G = mla ? 1 : layer.kv_heads;
    const std::size_t d_k = mla ? layer.latent + layer.rope : layer.head_dim;
    return Sizes{1, cached, cached, G * d_k, G * d_k, G * d_k, G, G, d_k};
}

// Whether int8 and int4 can be counted for `layer`: a group along d_k must divide it. Throws
// for a --kv-quant-group that does not; "" when it fits, else why the default does not.
std::string quant_misfit(const LedgerSettings& s, const LayerCache& layer) {
    const Sizes one = cache_sizes(layer, s.length);
    for (QuantAxis axis : {s.quant.k_axis, s.quant.v_axis}) {
        const std::size_t group = quant_group(s.quant, axis, s.length, one.d_k());
        if (axis != QuantAxis::Token || one.d_k() % group == 0) continue;
        const std::string why = std::to_string(group) + " does not divide d_k = " +
                                std::to_string(one.d_k()) + ": " + operands_on(s.quant, axis) +
                                " grouped along d_k, within each token's vector";
        if (s.group_given) throw Error("--kv-quant-group " + why);
        return "int8 and int4 are not counted: the default group " + why +
               " (give --kv-quant int8 --kv-quant-group G with G dividing d_k)";
    }
    return "";
}

// One layer's bytes at `cached` positions quantised to `bits`: codes, scales and zero points,
// and the positions still in float. MLA's latent is one tensor, grouped as K is.
std::uint64_t quantised_bytes(const LedgerSettings& s, const LayerCache& layer,
                              std::size_t cached, unsigned bits) {
    KvQuant quant = s.quant;
    quant.bits = bits;
    if (layer.latent == 0) return kv_quant_bytes(quant, cache_sizes(layer, cached), cached).total();
    quant.v_axis = quant.k_axis;  // K and V alike: half of both is the latent alone
    return kv_quant_bytes(quant, cache_sizes(layer, cached), cached).total() / 2;
}

// "K per channel (along the tokens), V per token (along d_k), groups of 32 ...".
std::string quant_words(const LedgerSettings& s, bool mla) {
    const auto axis_words = [](QuantAxis axis) {
        return axis == QuantAxis::Token ? std::string("per token (groups along d_k)")
                                        : std::string("per channel (groups along the tokens)");
    };
    const KvQuant& q = s.quant;
    const std::string tensors =
        mla ? "the latent " + axis_words(q.k_axis) + " as K would be"
        : q.k_axis == q.v_axis ? "K and V " + axis_words(q.k_axis)
                               : "K " + axis_words(q.k_axis) + ", V " + axis_words(q.v_axis);
    const std::string group = q.group ? "groups of " + std::to_string(q.group)
                                      : "groups of 32 (or the axis's length if shorter)";
    const std::string residual =
        q.residual ? ", the last " + std::to_string(q.residual) + " tokens in float" : "";
    return "int8, int4: KIVI's min-max codes, " + tensors + ", " + group + residual +
           "; scales and zero points (two floats a group) and the positions still in float "
           "(a last partial group along the tokens) included";
}

KvLedgerRow row_of(const LedgerSettings& s, const LayerCache& layer, bool quantised) {
    KvLedgerRow row;
    const bool mla = layer.latent > 0;
    row.kv_heads = mla ? 1 : layer.kv_heads;
    row.head_dim = mla ? layer.latent + layer.rope : layer.head_dim;
    row.latent = layer.latent;
    row.rope = layer.rope;
    row.window = layer.window;
    row.cached = layer.window ? std::min(s.length, layer.window) : s.length;
    row.per_token = checked_product({mla ? 1u : 2u, row.kv_heads, row.head_dim, sizeof(float)},
                                    ledger_what);
    row.float32 = checked_product({row.per_token, row.cached}, ledger_what);
    if (quantised) {
        row.int8 = quantised_bytes(s, layer, row.cached, 8);
        row.int4 = quantised_bytes(s, layer, row.cached, 4);
    }
    if (s.block_size) {
        row.blocks = blocks_for(row.cached, s.block_size);
        row.paged = checked_product({row.blocks, s.block_size, row.per_token}, ledger_what);
        row.unused = row.paged - row.float32;
    }
    return row;
}

// The most sequences of `per_sequence` bytes in `memory`.
std::uint64_t fits_in(std::uint64_t memory, std::uint64_t per_sequence) {
    return per_sequence ? memory / per_sequence : 0;
}

void add_layers(KvLedgerTotals& total, const KvLedgerRow& row) {
    const std::uint64_t n = row.layers.size();
    total.float32 = checked_sum({total.float32, checked_product({n, row.float32}, ledger_what)},
                                ledger_what);
    total.int8 = checked_sum({total.int8, checked_product({n, row.int8}, ledger_what)}, ledger_what);
    total.int4 = checked_sum({total.int4, checked_product({n, row.int4}, ledger_what)}, ledger_what);
    total.paged = checked_sum({total.paged, checked_product({n, row.paged}, ledger_what)},
                              ledger_what);
}

}  // namespace

LedgerSettings ledger_settings(const Config& c, std::size_t length) {
    LedgerSettings s;
    s.length = length;
    s.quant = kv_quant_of(c);
    s.group_given = c.kv_quant_group.has_value();
    s.block_size = c.kv_block_size.value_or(0);
    s.max_memory = c.max_memory;
    return s;
}

LedgerModel preset_ledger_model(const Preset& p, const Sizes& s, const std::optional<MlaSizes>& mla) {
    LedgerModel model;
    model.name = p.model;
    model.context = p.context;
    for (std::size_t l = 0; l < p.layers; ++l) {
        LayerCache layer;
        if (mla) {
            layer.latent = mla->d_latent;
            layer.rope = mla->d_rope;
        } else {
            layer.kv_heads = s.kv_heads;
            layer.head_dim = s.d_k();
        }
        layer.window = p.local_window > 0 && l % 2 == 0 ? p.local_window : p.window;
        model.layers.push_back(layer);
    }
    if (mla) {
        model.mha_heads = mla->heads;
        model.mha_head_dim = mla->d_nope;
    }
    return model;
}

LedgerModel config_ledger_model(const checkpoint::Config& cf) {
    LedgerModel model;
    model.name = cf.file;
    model.context = cf.max_positions;
    for (const checkpoint::LayerConfig& l : cf.layer)
        model.layers.push_back(LayerCache{cf.kv_heads, cf.head_dim, 0, 0, l.window});
    return model;
}

KvLedger kv_ledger(const LedgerModel& model, const LedgerSettings& s) {
    if (s.length > model.context) {
        throw Error("--decode " + std::to_string(s.length) + " is longer than " + model.name +
                    "'s context of " + std::to_string(model.context) + " positions");
    }
    if (s.quant.residual > s.length) {
        throw Error("--kv-residual " + std::to_string(s.quant.residual) +
                    " is larger than the cache: --decode " + std::to_string(s.length) +
                    " caches " + std::to_string(s.length) + " positions");
    }
    KvLedger ledger;
    ledger.model = model.name;
    ledger.layers = model.layers.size();
    ledger.length = s.length;
    ledger.context = model.context;
    ledger.block_size = s.block_size;
    ledger.max_memory = s.max_memory;
    for (const LayerCache& layer : model.layers) {
        ledger.quant_note = quant_misfit(s, layer);
        ledger.quantised = ledger.quant_note.empty();
        if (!ledger.quantised) break;
    }
    const bool mla = model.mha_heads > 0;
    if (ledger.quantised) ledger.quant_note = quant_words(s, mla);
    for (std::size_t l = 0; l < model.layers.size(); ++l) {
        const auto same = [&](const KvLedgerRow& row) {
            return same_cache(model.layers[row.layers.front()], model.layers[l]);
        };
        auto row = std::find_if(ledger.rows.begin(), ledger.rows.end(), same);
        if (row == ledger.rows.end()) {
            ledger.rows.push_back(row_of(s, model.layers[l], ledger.quantised));
            row = ledger.rows.end() - 1;
        }
        row->layers.push_back(l);
    }
    for (const KvLedgerRow& row : ledger.rows) {
        add_layers(ledger.total, row);
        ledger.per_token = checked_sum(
            {ledger.per_token, checked_product({row.layers.size(), row.per_token}, ledger_what)},
            ledger_what);
    }
    if (mla) {
        ledger.mha_heads = model.mha_heads;
        ledger.mha_head_dim = model.mha_head_dim;
        ledger.mha_per_token = checked_product(
            {2, model.mha_heads, model.mha_head_dim, sizeof(float)}, ledger_what);
    }
    ledger.fits.float32 = fits_in(s.max_memory, ledger.total.float32);
    ledger.fits.int8 = fits_in(s.max_memory, ledger.total.int8);
    ledger.fits.int4 = fits_in(s.max_memory, ledger.total.int4);
    ledger.fits.paged = fits_in(s.max_memory, ledger.total.paged);
    return ledger;
}

std::optional<KvLedger> kv_ledger_of(const Config& c, const Sizes& s,
                                     const std::optional<MlaSizes>& mla) {
    if (c.preset.empty() || !c.shapes_only || !c.decode) return {};
    return kv_ledger(preset_ledger_model(find_preset(c.preset), s, mla),
                     ledger_settings(c, s.seq_len));
}

}  // namespace mha
