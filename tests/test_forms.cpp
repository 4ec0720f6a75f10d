// Every form of the pass on one table: packed, fused QKV, per head, decoding and the
// post-LN block's attention, with each mask, --no-scale, --ablate-head, --masked-rows
// and both paths where the maths allows. Each is checked against the reference loops
// (core/reference), against the packed pass, across thread counts (bit for bit), and
// each traced tensor against the plan's shape and strides.

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>

#include "core/forms/block.h"
#include "core/forms/decode.h"
#include "core/forms/fused_qkv.h"
#include "core/forms/per_head.h"
#include "core/pass/attention.h"
#include "core/reference.h"
#include "helpers.h"
#include "io/init.h"

namespace test_forms {

using mha::Tensor;

namespace {

constexpr double same_tolerance = 1e-6;       // the same sums, possibly in another order
constexpr double reference_tolerance = 1e-5;  // fast kernels against the double-accumulating loops

enum class MaskCase { None, Causal, AttnPerHead, PaddingBlocksARow };

// A (B·h, N, M) additive mask, different for every (batch, head), blocking a few keys
// but never a whole row (key 0 stays open).
Tensor per_head_mask(std::size_t planes, std::size_t N, std::size_t M) {
    Tensor mask({planes, N, M});
    float* v = mask.data();
    for (std::size_t p = 0; p < planes; ++p) {
        for (std::size_t i = 0; i < N; ++i) {
            for (std::size_t j = 1; j < M; ++j) {
                const std::size_t k = (p * N + i) * M + j;
                v[k] = (p + i + j) % 3 == 0 ? -std::numeric_limits<float>::infinity()
                                            : 0.25f * float((p + j) % 4);
            }
        }
    }
    return mask;
}

mha::Masks make_masks(MaskCase c, std::size_t B, std::size_t h, std::size_t N, std::size_t M) {
    mha::Masks masks;
    masks.causal = c == MaskCase::Causal;
    if (c == MaskCase::AttnPerHead) masks.attn_mask = per_head_mask(B * h, N, M);
    if (c == MaskCase::PaddingBlocksARow) {  // batch 1 ignores every key: its rows are all blocked
        masks.key_padding = Tensor({B, M});
        for (std::size_t j = 0; j < M; ++j)
            masks.key_padding.data()[M + j] = -std::numeric_limits<float>::infinity();
    }
    return masks;
}

// Checks that every traced tensor has the shape and strides its planned step says.
class PlanChecker : public mha::Tracer {
public:
    void on_step(const mha::Step& step) override {
        ++steps;
        if (step.value == nullptr) return;
        ++valued;
        CAPTURE(step.number, step.tensor);
        CHECK(step.value->shape() == step.shape);
        CHECK(step.value->strides() == step.strides);
        CHECK(step.contiguous == step.value->is_contiguous());
    }
    std::size_t steps = 0, valued = 0;
};

// Bit for bit, NaN included.
bool same_bits(const Tensor& a, const Tensor& b) {
    return test::same_bits(a.to_vector(), b.to_vector());
}

enum class Form { Packed, FusedQkv, PerHead, Decode, BlockPost };

const char* name_of(Form f) {
    switch (f) {
        case Form::Packed:
            return "packed";
        case Form::FusedQkv:
            return "fused QKV";
        case Form::PerHead:
            return "per head";
        case Form::Decode:
            return "decode";
        case Form::BlockPost:
            return "post-LN block";
    }
    return "";
}

mha::ForwardResult run_form(Form f, const mha::Weights& w, const mha::Inputs& in,
                            const mha::Masks& masks, const mha::ForwardOptions& o,
                            mha::Tracer& tracer) {
    switch (f) {
        case Form::Packed:
            return mha::forward(w, in, masks, o, tracer);
        case Form::FusedQkv:
            return mha::forward_fused_qkv(w, in, masks, o, tracer);
        case Form::PerHead:
            return mha::forward_per_head(w, in, masks, o, tracer);
        case Form::Decode:
            return mha::decode(w, in, {}, o, tracer);
        case Form::BlockPost: {
            const mha::BlockWeights block = mha::seeded_block(w.d_model(), 24, 9);
            return mha::forward_block(w, block, mha::BlockKind::Post, in, masks, o, tracer);
        }
    }
    return {};
}

}  // namespace

TEST_CASE("every form agrees with the packed pass, the reference loops and itself across threads") {
    const auto [form, mask_case, G, cross] = GENERATE(table<Form, MaskCase, std::size_t, bool>({
        {Form::Packed, MaskCase::None, 4, false},
        {Form::Packed, MaskCase::AttnPerHead, 2, true},
        {Form::Packed, MaskCase::PaddingBlocksARow, 4, true},
        {Form::FusedQkv, MaskCase::Causal, 4, false},
        {Form::FusedQkv, MaskCase::AttnPerHead, 4, false},
        {Form::PerHead, MaskCase::None, 4, false},
        {Form::PerHead, MaskCase::Causal, 2, true},
        {Form::PerHead, MaskCase::AttnPerHead, 4, true},
        {Form::PerHead, MaskCase::AttnPerHead, 1, false},
        {Form::PerHead, MaskCase::PaddingBlocksARow, 4, false},
        {Form::Decode, MaskCase::Causal, 4, false},
        {Form::Decode, MaskCase::Causal, 2, false},
        {Form::BlockPost, MaskCase::AttnPerHead, 4, false},
    }));
    const auto [path, scale, ablate, zero_rows] =
        GENERATE(table<mha::AttentionPath, bool, bool, bool>({
            {mha::AttentionPath::Standard, true, false, false},
            {mha::AttentionPath::Standard, false, true, true},
            {mha::AttentionPath::Streaming, true, false, true},
            {mha::AttentionPath::Streaming, false, true, false},
        }));
    const std::size_t B = 2, N = 5, M = cross ? 7 : 5, E = 16, h = 4;
    CAPTURE(name_of(form), int(mask_case), G, cross, int(path), scale, ablate, zero_rows);
    const mha::Weights w = mha::seeded_weights(E, G * (E / h), true, true, 11);
    const mha::Inputs in = mha::seeded_inputs({B, N, M, E, E, E, h, G, E / h}, !cross, 11);
    const mha::Masks masks = make_masks(mask_case, B, h, N, M);
    mha::ForwardOptions options;
    options.heads = h;
    options.path = path;
    options.scale = scale;
    options.zero_masked_rows = zero_rows;
    if (ablate) options.ablate_head = 1;

    // the form, traced: every tensor matches its planned layout
    PlanChecker checker;
    options.threads = 1;
    const mha::ForwardResult one = run_form(form, w, in, masks, options, checker);
    CHECK(checker.valued > 0);

    // bit for bit the same on 3 threads, traced or not
    options.threads = 3;
    mha::NullTracer none;
    const mha::ForwardResult three = run_form(form, w, in, masks, options, none);
    CHECK(same_bits(three.output, one.output));
    CHECK(same_bits(three.weights, one.weights));
    CHECK(three.fully_masked_rows == one.fully_masked_rows);
    CHECK(one.weights.empty() == (path == mha::AttentionPath::Streaming));

    // the packed pass (the causal one for decoding) on the same path
    const mha::ForwardResult packed = mha::forward(w, in, masks, options, none);
    if (form != Form::BlockPost) {
        test::require_close(one.output, packed.output, same_tolerance);
        CHECK(one.fully_masked_rows == packed.fully_masked_rows);
    }
    if (!one.weights.empty()) test::require_close(one.weights, packed.weights, same_tolerance);

    // the reference loops, where they apply: G = h, scaled, nothing ablated
    if (G == h && scale && !ablate) {
        const mha::ForwardResult reference = mha::reference_forward(w, in, masks, options);
        if (form != Form::BlockPost) {
            test::require_close(one.output, reference.output, reference_tolerance);
        }
        if (!one.weights.empty())
            test::require_close(one.weights, reference.weights, reference_tolerance);
    }
}

TEST_CASE(
    "every form with QK-norm, RoPE, soft-cap, ALiBi and a window with a sink agrees with "
    "the reference loops") {
    const auto [form, cross] = GENERATE(table<Form, bool>({{Form::Packed, false},
                                                           {Form::Packed, true},
                                                           {Form::FusedQkv, false},
                                                           {Form::PerHead, true},
                                                           {Form::Decode, false}}));
    const mha::AttentionPath path =
        GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    const mha::RopeLayout layout = GENERATE(mha::RopeLayout::Half, mha::RopeLayout::Interleaved);
    const std::size_t B = 2, N = cross ? 4 : 6, M = cross ? 7 : 6, E = 16, h = 4;
    CAPTURE(name_of(form), cross, int(path), int(layout));
    mha::Weights w = mha::seeded_weights(E, E, true, true, 21);
    w.q_norm = Tensor({4}, {1.1f, 0.9f, 1.2f, 0.8f});
    w.k_norm = Tensor({4}, {0.7f, 1.3f, 1.0f, 1.05f});
    const mha::Inputs in = mha::seeded_inputs({B, N, M, E, E, E, h, h, E / h}, !cross, 21);
    mha::Masks masks;
    masks.softcap = 2.5;
    masks.alibi = true;
    masks.window = 3;
    masks.sinks = 1;
    mha::ForwardOptions options;
    options.heads = h;
    options.path = path;
    options.rope = mha::Rope{layout, 100.0};
    PlanChecker checker;
    mha::ForwardResult result;
    switch (form) {
        case Form::FusedQkv:
            result = mha::forward_fused_qkv(w, in, masks, options, checker);
            break;
        case Form::PerHead:
            result = mha::forward_per_head(w, in, masks, options, checker);
            break;
        case Form::Decode:
            result = mha::decode(w, in, masks, options, checker);
            break;
        default:
            result = mha::forward(w, in, masks, options, checker);
            break;
    }
    CHECK(checker.valued > 0);
    const mha::ForwardResult reference = mha::reference_forward(w, in, masks, options);
    test::require_close(result.output, reference.output, reference_tolerance);
    if (!result.weights.empty())
        test::require_close(result.weights, reference.weights, reference_tolerance);
}

}  // namespace test_forms
