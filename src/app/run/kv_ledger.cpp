// The KV cache's ledger of a preset's decode: one layer's cache times the layers.

#include "app/run/kv_ledger.h"

#include "app/cli/presets.h"
#include "core/checked.h"
#include "core/forms/kv_quant.h"

namespace mha {

namespace {

// One layer's cache of one sequence at `length` positions, quantised to `bits` (0: float).
std::uint64_t layer_bytes(const Sizes& one, unsigned bits) {
    KvQuant quant;
    quant.bits = bits;
    const KvQuantBytes bytes = kv_quant_bytes(quant, one, one.seq_len);
    return bits ? bytes.total() : bytes.plain;
}

// The most sequences whose cache over all layers fits in `memory`.
std::uint64_t batch_in(std::uint64_t memory, std::uint64_t per_sequence) {
    return per_sequence ? memory / per_sequence : 0;
}

}  // namespace

std::optional<KvLedger> kv_ledger_of(const Config& c, const Sizes& s) {
    if (c.preset.empty() || !c.shapes_only || !c.decode || c.form != Form::Decode) return {};
    Sizes one = s;
    one.batch = 1;
    KvLedger ledger;
    ledger.layers = find_preset(c.preset).layers;
    ledger.length = s.seq_len;
    ledger.per_token = checked_product({2, s.kv_heads, s.d_k(), sizeof(float)}, "the KV ledger");
    ledger.at_length = layer_bytes(one, 0);
    ledger.int8 = layer_bytes(one, 8);
    ledger.int4 = layer_bytes(one, 4);
    ledger.max_memory = c.max_memory;
    const std::string what = "the KV ledger";
    ledger.batch_float = batch_in(c.max_memory, checked_product({ledger.at_length, ledger.layers}, what));
    ledger.batch_int8 = batch_in(c.max_memory, checked_product({ledger.int8, ledger.layers}, what));
    ledger.batch_int4 = batch_in(c.max_memory, checked_product({ledger.int4, ledger.layers}, what));
    return ledger;
}

}  // namespace mha
