// The variants of the forward pass and the options each one accepts.

#include "app/variants.h"

#include "core/block.h"
#include "core/decode.h"
#include "core/error.h"
#include "core/fused_qkv.h"
#include "core/per_head.h"

namespace mha {

ForwardResult run_pass(const Config& c, const Problem& p, Tracer& tracer) {
    if (c.block) {
        return forward_block(p.weights, *p.block, *c.block, p.inputs, p.masks, p.options, tracer);
    }
    switch (form_of(c)) {
        case Form::Decode: return decode(p.weights, p.inputs, p.masks, p.options, tracer);
        case Form::FusedQkv:
            return forward_fused_qkv(p.weights, p.inputs, p.masks, p.options, tracer);
        case Form::PerHead: return forward_per_head(p.weights, p.inputs, p.masks, p.options, tracer);
        case Form::Packed: break;
    }
    return forward(p.weights, p.inputs, p.masks, p.options, tracer);
}

std::string variant_description(const Config& c, std::size_t d_ff) {
    if (c.block) {
        return std::string(*c.block == BlockKind::Pre ? "pre-LN" : "post-LN") +
               " block, d_ff=" + std::to_string(d_ff);
    }
    if (c.decode) return "decoding with a KV cache";
    if (c.fused_qkv) return "fused QKV";
    return c.per_head ? "per head" : "";
}

Form form_of(const Config& c) {
    if (c.decode) return Form::Decode;
    if (c.fused_qkv) return Form::FusedQkv;
    return c.per_head ? Form::PerHead : Form::Packed;
}

void apply_variants(Config& c) {
    if (int(bool(c.decode)) + int(c.fused_qkv) + int(c.per_head) + int(bool(c.block)) > 1) {
        throw Error("--decode, --fused-qkv, --per-head and --block are different forms of the "
                    "pass; choose one");
    }
    if (c.d_ff && !c.block) throw Error("--d-ff sets the feed-forward width of --block; give --block pre or post");
    if (c.block && (c.kv_len || !c.key_path.empty())) {
        throw Error("--block is self-attention: no --kv-len or --key/--value");
    }
    if (c.block && c.shapes_only) throw Error("--block computes; it cannot be combined with --shapes-only");
    if (c.fused_qkv && ((c.kv_heads && *c.kv_heads != c.heads) || c.kv_len ||
                        !c.key_path.empty())) {
        throw Error("--fused-qkv needs self-attention with K and V as wide as Q: no "
                    "--kv-heads below --heads, --kv-len or --key/--value");
    }
    if (!c.decode) return;
    if (c.kv_len || !c.key_path.empty() || !c.mask_path.empty() ||
        !c.key_padding_mask_path.empty()) {
        throw Error("--decode runs one sequence attending to itself, causal by construction: "
                    "no --kv-len, --key/--value, --mask or --key-padding-mask");
    }
    if (c.seq_len && *c.seq_len != *c.decode) {
        throw Error("--decode " + std::to_string(*c.decode) + " and --seq-len " +
                    std::to_string(*c.seq_len) + " disagree; --decode T decodes N = T tokens");
    }
    c.seq_len = c.decode;
    c.causal = true;
}

}  // namespace mha
