// How a run's header names the variant of the pass it runs.

#include "app/run/variant_name.h"

#include "show/format.h"

namespace mha {

namespace {

// The form of the pass, "" for the packed one.
std::string form_description(const Config& c, std::size_t d_ff) {
    if (c.block) {
        return std::string(*c.block == BlockKind::Pre ? "pre-LN" : "post-LN") +
               " block, d_ff=" + std::to_string(d_ff);
    }
    switch (c.form) {
        case Form::Decode:
            if (c.kv_quant) return "decoding with an int" + std::to_string(*c.kv_quant) + " KV cache";
            if (c.draft) return "decoding with a KV cache, the last " + std::to_string(*c.draft) + " as a draft";
            if (!c.draft_tree.empty())
                return "decoding with a KV cache, the last " + std::to_string(c.draft_tree.size()) +
                       " as a draft tree";
            if (c.prefill_chunks.empty()) return "decoding with a KV cache";
            return "chunked prefill (" + joined(c.prefill_chunks, ", ") + ") with a KV cache";
        case Form::FusedQkv:
            return "fused QKV";
        case Form::PerHead:
            return "per head";
        case Form::Mla:
            return "multi-head latent attention (DeepSeek-V2)";
        case Form::Packed:
            break;
    }
    return "";
}

}  // namespace

std::string variant_description(const Config& c, std::size_t d_ff) {
    const std::string form = form_description(c, d_ff);
    if (c.layer_kind.empty()) return form;
    return form.empty() ? c.layer_kind : form + ", " + c.layer_kind;
}

}  // namespace mha
