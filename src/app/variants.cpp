// The variants of the forward pass and the options each one accepts.

#include "app/variants.h"

#include "core/decode.h"
#include "core/error.h"
#include "core/fused_qkv.h"
#include "core/per_head.h"

namespace mha {

namespace {

const char* variant_name(const Config& c) {
    if (c.decode) return "--decode";
    if (c.fused_qkv) return "--fused-qkv";
    return c.per_head ? "--per-head" : nullptr;
}

}  // namespace

ForwardFunction forward_for(const Config& c) {
    if (c.decode) return decode;
    if (c.fused_qkv) return forward_fused_qkv;
    if (c.per_head) return forward_per_head;
    return forward;
}

void apply_variants(Config& c) {
    if (int(bool(c.decode)) + int(c.fused_qkv) + int(c.per_head) > 1) {
        throw Error("--decode, --fused-qkv and --per-head are different forms of the same "
                    "pass; choose one");
    }
    const char* name = variant_name(c);
    if (name == nullptr) return;
    if (c.shapes_only) throw Error(std::string(name) + " computes; it cannot be combined with --shapes-only");
    if (c.per_head && !c.mask_path.empty()) {
        throw Error("--per-head supports --causal and --key-padding-mask, not --mask");
    }
    if (c.fused_qkv && (c.kv_heads || c.kv_len || !c.key_path.empty())) {
        throw Error("--fused-qkv needs self-attention with K and V as wide as Q: no "
                    "--kv-heads, --kv-len or --key/--value");
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
