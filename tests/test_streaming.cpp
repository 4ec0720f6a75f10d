// The streaming (online-softmax) path against the standard one: per unit on
// shapes across the tile sizes, through forward() with every kind of mask, the
// trace it leaves, the memory it counts, and how the command line picks it.

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "app/run/budget.h"
#include "app/run/problem.h"
#include "core/forms/block.h"
#include "core/forms/decode.h"
#include "core/forms/per_head.h"
#include "core/kernels/kernels.h"
#include "core/kernels/streaming.h"
#include "core/ops/ops.h"
#include "core/pass/attention.h"
#include "core/pass/costs.h"
#include "core/pass/projection.h"
#include "core/reference.h"
#include "helpers.h"
#include "io/init.h"
#include "io/npy.h"
#include "kernel_variants.h"
#include "recorder.h"
#include "show/notes.h"

namespace test_streaming {

using mha::MatrixView;
using mha::Shape;
using mha::Tensor;
using test::random_values;
using test::same_bits;

namespace {

constexpr double stream_tolerance = 1e-5;  // streaming vs standard, max abs difference
const float inf = std::numeric_limits<float>::infinity();

mha::ForwardResult run(const mha::Weights& w, const mha::Inputs& in, const mha::Masks& masks,
                       std::size_t heads, std::size_t threads, mha::AttentionPath path,
                       mha::Tracer& tracer, bool zero_rows = false) {
    mha::ForwardOptions options;
    options.heads = heads;
    options.threads = threads;
    options.path = path;
    options.zero_masked_rows = zero_rows;
    return mha::forward(w, in, masks, options, tracer);
}

}  // namespace

TEST_CASE("one unit streamed equals scores, softmax and weights @ V") {
    EACH_VARIANT();
    const std::size_t n = GENERATE(1, 7, 65, 130);    // one and several query tiles
    const std::size_t m = GENERATE(1, 33, 257, 600);  // one and several key tiles
    const std::size_t d_k = GENERATE(1, 7, 64);
    const bool causal = GENERATE(false, true);
    CAPTURE(n, m, d_k, causal);
    const std::vector<float> q = random_values(n * d_k, 1, 2.0f),
                             k = random_values(m * d_k, 2, 2.0f), v = random_values(m * d_k, 3);
    std::vector<float> padding(m, 0.0f);
    padding[m / 2] = -inf;
    mha::Masks masks;
    masks.key_padding = mha::Tensor({1, m}, padding);
    masks.causal = causal;
    const mha::HeadMask mask = mha::unit_mask(masks, 0, 0, mha::Sizes{1, n, m, 1, 1, 1, 1, 1, 1});
    const float factor = float(1.0 / std::sqrt(double(d_k)));

    std::vector<float> weights(n * m), expected(n * d_k);
    mha::matmul({q.data(), n, d_k, d_k, 1}, MatrixView{k.data(), m, d_k, d_k, 1}.transposed(),
                weights.data(), m);
    const std::size_t masked = mha::scale_mask_softmax(weights.data(), factor, mask, false);
    mha::matmul({weights.data(), n, m, m, 1}, {v.data(), m, d_k, d_k, 1}, expected.data(), d_k);

    // context rows 3·d_k apart, as in (B, N, h, d_k) with h = 3
    std::vector<float> context(n * 3 * d_k, 5.0f), packed(n * d_k);
    CHECK(mha::attend_streaming({q.data(), n, d_k, d_k, 1}, {k.data(), m, d_k, d_k, 1},
                                {v.data(), m, d_k, d_k, 1}, mask, factor, false, context.data(),
                                3 * d_k) == masked);
    for (std::size_t r = 0; r < n; ++r) {
        for (std::size_t j = 0; j < d_k; ++j) packed[r * d_k + j] = context[r * 3 * d_k + j];
        CHECK(context[r * 3 * d_k + d_k] == 5.0f);  // the next head's slot is untouched
    }
    const test::Difference d = test::max_difference(packed, expected);
    INFO("worst difference " << d.worst << " at " << d.index);
    REQUIRE(d.worst <= stream_tolerance);
}

TEST_CASE("the fused tile gives the same bits on every kernel variant, with every score mod") {
    const std::size_t n = 70, m = 300, d_k = GENERATE(7, 64, 300);  // 300: two slices of d_k
    const int mods = GENERATE(0, 1, 2);  // none; causal and padding; the modern mods and a mask
    CAPTURE(d_k, mods);
    const std::vector<float> q = random_values(n * d_k, 1, 2.0f),
                             k = random_values(m * d_k, 2, 2.0f), v = random_values(m * d_k, 3),
                             attn = random_values(n * m, 4);
    std::vector<float> padding(m, 0.0f);
    for (std::size_t j = 0; j < m; j += 7) padding[j] = -inf;
    mha::Masks masks;
    if (mods == 1) {
        masks.causal = true;
        masks.key_padding = mha::Tensor({1, m}, padding);
    }
    if (mods == 2) {
        masks.attn_mask = mha::Tensor({n, m}, attn);
        masks.softcap = 3.0;
        masks.alibi = true;  // head 0 of h = 2: slope 2^(-8/2) = 0.0625
        masks.window = 40;
        masks.sinks = 2;
    }
    const mha::HeadMask mask = mha::unit_mask(masks, 0, 0, mha::Sizes{1, n, m, 1, 1, 1, 2, 2, 1});
    const float factor = float(1.0 / std::sqrt(double(d_k)));
    auto streamed = [&](mha::KernelVariant variant) {
        const test::UsingVariant using_variant(variant);
        std::vector<float> context(n * d_k);
        mha::attend_streaming({q.data(), n, d_k, d_k, 1}, {k.data(), m, d_k, d_k, 1},
                              {v.data(), m, d_k, d_k, 1}, mask, factor, false, context.data(), d_k);
        return context;
    };
    const std::vector<float> plain = streamed(mha::KernelVariant::Plain);
    for (mha::KernelVariant variant : mha::runnable_kernel_variants()) {
        CAPTURE(mha::kernel_variant_name(variant));
        CHECK(same_bits(streamed(variant), plain));
    }
    // and the standard path's kernels: the whole scores, scale_mask_softmax, weights @ V
    std::vector<float> weights(n * m), expected(n * d_k);
    mha::matmul({q.data(), n, d_k, d_k, 1}, MatrixView{k.data(), m, d_k, d_k, 1}.transposed(),
                weights.data(), m);
    mha::scale_mask_softmax(weights.data(), factor, mask, false);
    mha::matmul({weights.data(), n, m, m, 1}, {v.data(), m, d_k, d_k, 1}, expected.data(), d_k);
    const test::Difference d = test::max_difference(plain, expected);
    INFO("worst difference " << d.worst << " at " << d.index);
    REQUIRE(d.worst <= stream_tolerance);
}

TEST_CASE("decode, per-head and the block run the fused tile on every variant and thread count") {
    const std::size_t B = 2, N = 70, E = 32, h = 4;
    const mha::Inputs in = mha::seeded_inputs({B, N, N, E, E, E, h, h, E / h}, true, 13);
    const mha::Weights w = mha::seeded_weights(E, true, true, 13);
    const mha::BlockWeights block = mha::seeded_block(E, 48, 13);
    mha::Masks causal;
    causal.causal = true;
    mha::NullTracer none;
    auto results = [&](mha::KernelVariant variant, std::size_t threads) {
        const test::UsingVariant using_variant(variant);
        mha::ForwardOptions o;
        o.heads = h;
        o.threads = threads;
        o.path = mha::AttentionPath::Streaming;
        return std::vector<std::vector<float>>{
            mha::forward(w, in, causal, o, none).output.to_vector(),
            mha::forward_per_head(w, in, causal, o, none).output.to_vector(),
            mha::decode(w, in, {}, o, none).output.to_vector(),
            mha::forward_block(w, block, mha::BlockKind::Pre, in, causal, o, none)
                .output.to_vector()};
    };
    const std::vector<std::vector<float>> plain = results(mha::KernelVariant::Plain, 1);
    // each form reaches the fused tile of the packed pass: the same bits, as its projections
    // sum each element in the same order (decoding is the causal pass one row at a time)
    CHECK(same_bits(plain[1], plain[0]));
    CHECK(same_bits(plain[2], plain[0]));
    for (mha::KernelVariant variant : mha::runnable_kernel_variants()) {
        for (std::size_t threads : {1, 3}) {
            CAPTURE(mha::kernel_variant_name(variant), threads);
            const std::vector<std::vector<float>> r = results(variant, threads);
            for (std::size_t form = 0; form < r.size(); ++form) {
                CAPTURE(form);
                CHECK(same_bits(r[form], plain[form]));
            }
        }
    }
}

TEST_CASE("forward: streaming equals standard with and without masks") {
    const std::size_t B = 2, h = 3, E = 12;
    const std::size_t N = GENERATE(1, 70), M = GENERATE(5, 300);
    const int kind =
        GENERATE(0, 1, 2, 3, 4, 5);  // none, (N,M), (B,N,M), (B·h,N,M), padding, causal
    CAPTURE(N, M, kind);
    const mha::Inputs in = mha::seeded_inputs({B, N, M, E, E, E, h, h, E / h}, false, 3);
    const mha::Weights w = mha::seeded_weights(E, true, true, 3);
    mha::Masks masks;
    const std::size_t planes[] = {0, 1, B, B * h};
    if (kind >= 1 && kind <= 3) {
        const Shape shape = kind == 1 ? Shape{N, M} : Shape{planes[kind], N, M};
        std::vector<float> values = random_values(mha::element_count(shape), 4);
        for (std::size_t i = 0; i < values.size(); i += 4) values[i] = -inf;
        masks.attn_mask = Tensor(shape, values);
    }
    if (kind == 4) {
        std::vector<float> padding(B * M, 0.0f);
        for (std::size_t j = 1; j < B * M; j += 2) padding[j] = -inf;
        masks.key_padding = Tensor({B, M}, padding);
    }
    masks.causal = kind == 5;
    mha::NullTracer none;
    const mha::ForwardResult standard = run(w, in, masks, h, 1, mha::AttentionPath::Standard, none);
    const mha::ForwardResult streamed =
        run(w, in, masks, h, 2, mha::AttentionPath::Streaming, none);
    test::require_close(streamed.output, standard.output, stream_tolerance);
    CHECK(streamed.fully_masked_rows == standard.fully_masked_rows);
    CHECK(streamed.weights.empty());
}

TEST_CASE("forward: streaming equals standard with shared key/value heads (GQA, MQA)") {
    const std::size_t B = 2, h = 4, E = 16, d_k = E / h;
    const std::size_t G = GENERATE(1, 2);
    const std::size_t N = GENERATE(3, 70), M = GENERATE(70, 300);
    const bool causal = GENERATE(false, true);
    CAPTURE(G, N, M, causal);
    const mha::Inputs in = mha::seeded_inputs({B, N, M, E, E, E, h, G, E / h}, false, 5);
    const mha::Weights w = mha::seeded_weights(E, G * d_k, true, true, 5);
    mha::Masks masks;
    masks.causal = causal;
    mha::NullTracer none;
    const mha::ForwardResult standard = run(w, in, masks, h, 1, mha::AttentionPath::Standard, none);
    const mha::ForwardResult streamed =
        run(w, in, masks, h, 2, mha::AttentionPath::Streaming, none);
    test::require_close(streamed.output, standard.output, stream_tolerance);
}

TEST_CASE("streaming: fully masked rows are NaN or zero, like the standard path") {
    const mha::Sizes s{1, 4, 2, 8, 8, 8, 2, 2, 4};  // causal with N > M: queries 0 and 1 see no key
    const mha::Inputs in = mha::seeded_inputs(s, false, 5);
    const mha::Weights w = mha::seeded_weights(8, true, false, 5);
    mha::Masks masks;
    masks.causal = true;
    mha::NullTracer none;
    const bool zero = GENERATE(false, true);
    const mha::ForwardResult standard =
        run(w, in, masks, 2, 1, mha::AttentionPath::Standard, none, zero);
    const mha::ForwardResult streamed =
        run(w, in, masks, 2, 1, mha::AttentionPath::Streaming, none, zero);
    CHECK(streamed.fully_masked_rows == 4);  // 2 rows x 2 heads
    CHECK(standard.fully_masked_rows == 4);
    CHECK(std::isnan(streamed.output.at({0, 0, 0})) == !zero);
    test::require_close(streamed.output, standard.output, stream_tolerance);
}

TEST_CASE("streaming output is bit-identical for every thread count") {
    const mha::Sizes s{3, 70, 90, 24, 24, 24, 6, 6, 4};
    const mha::Inputs in = mha::seeded_inputs(s, false, 9);
    const mha::Weights w = mha::seeded_weights(24, true, true, 9);
    mha::Masks masks;
    masks.causal = true;
    mha::NullTracer none;
    const mha::ForwardResult one = run(w, in, masks, 6, 1, mha::AttentionPath::Streaming, none);
    const std::size_t threads = GENERATE(2, 3, 7, 18);
    test::Recorder traced;
    const mha::ForwardResult many =
        run(w, in, masks, 6, threads, mha::AttentionPath::Streaming, traced);
    CHECK(many.output.to_vector() == one.output.to_vector());
}

TEST_CASE("weights packed once give every pass the bits of packing them in the pass") {
    // self-attention (one fused Q, K, V product) and cross-attention (three products), on both
    // paths, every variant and several thread counts; the weights packed under each variant,
    // so a pack made for another variant must be ignored, not misread
    EACH_VARIANT();
    const bool self = GENERATE(true, false);
    const auto path = GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    const std::size_t threads = GENERATE(1, 3);
    CAPTURE(self, int(path), threads);
    const mha::Sizes s{2, 70, self ? 70u : 90u, 40, 40, 40, 4, 4, 10};
    const mha::Inputs in = mha::seeded_inputs(s, self, 5);
    const mha::Weights w = mha::seeded_weights(40, true, true, 5);
    mha::NullTracer none;
    mha::ForwardOptions o;
    o.heads = 4;
    o.threads = threads;
    o.path = path;
    const std::vector<float> expected = mha::forward(w, in, {}, o, none).output.to_vector();
    for (mha::KernelVariant packed_for : mha::runnable_kernel_variants()) {
        CAPTURE(mha::kernel_variant_name(packed_for));
        const mha::PackedWeights packed = [&] {
            const test::UsingVariant using_packing(packed_for);
            return mha::pack_weights(w);
        }();
        o.packed = &packed;
        CHECK(mha::forward(w, in, {}, o, none).output.to_vector() == expected);
        CHECK(mha::forward(w, in, {}, o, none).output.to_vector() == expected);  // and again
    }
}

TEST_CASE("the streaming trace: one step for 6-10, and step 12 copies nothing") {
    const mha::Sizes s{2, 8, 8, 16, 16, 16, 4, 4, 4};
    test::Recorder rec;
    run(mha::seeded_weights(16, true, false, 1), mha::seeded_inputs(s, true, 1), mha::Masks(), 4, 1,
        mha::AttentionPath::Streaming, rec);
    std::vector<int> numbers;
    for (const mha::Step& step : rec.steps) numbers.push_back(step.number);
    CHECK(numbers == std::vector<int>{0, 1, 2, 3, 4, 4, 4, 5, 5, 5, 10, 11, 12, 13, 14});
    const mha::Step& attend = rec.steps.at(10);
    CHECK(attend.name == "attend");
    CHECK(attend.shape == mha::Shape{2, 4, 8, 4});
    CHECK_FALSE(attend.contiguous);
    CHECK(attend.macs == 2u * 2 * 4 * 8 * 8 * 4);  // scores and weights @ V
    const std::vector<std::string> notes = mha::step_notes(attend);
    CHECK_THAT(notes.back(), Catch::Contains("nothing to copy"));
    CHECK_THAT(notes.at(notes.size() - 2),
               Catch::Contains("online softmax") && Catch::Contains("2,048 bytes"));
    CHECK(rec.steps.at(12).copied_bytes == 0);
}

TEST_CASE("the pass's memory counts the scores only on the standard path") {
    const mha::Sizes s{1, 4096, 4096, 512, 512, 512, 8, 8, 64};
    const mha::Config c;
    const mha::PassProblem dry = mha::dry_problem(c, s, mha::AttentionPath::Standard, 0);
    const auto bytes = [&](mha::AttentionPath path, std::size_t threads) {
        return mha::pass_bytes(c, s, dry, path, threads);
    };
    const std::uint64_t standard = bytes(mha::AttentionPath::Standard, 2);
    const std::uint64_t streamed = bytes(mha::AttentionPath::Streaming, 2);
    const std::uint64_t scores = 8ull * 4096 * 4096 * 4;
    CHECK(standard - streamed > scores);
    CHECK(streamed < (48ull << 20));  // Q, K, V, context, output: 40 MiB, plus scratch
    CHECK(bytes(mha::AttentionPath::Streaming, 1) < streamed);  // per-thread tiles
}

TEST_CASE("--attention: auto streams what would not fit, standard is refused") {
    const std::string sizes = "-b 1 -n 2048 -d 64 -H 1 --max-memory 8M";
    CHECK(test::run_mha(sizes).status == 0);
    const test::RunResult traced = test::run_mha(sizes + " --trace");
    CHECK(traced.status == 0);
    CHECK_THAT(traced.output, Catch::Contains("streaming path"));
    const test::RunResult refused = test::run_mha(sizes + " --attention standard");
    CHECK(refused.status == 2);
    CHECK_THAT(refused.output, Catch::StartsWith("mha: error: this configuration needs") &&
                                   Catch::Contains("on the standard path"));
    const test::RunResult small = test::run_mha("--trace");
    CHECK_THAT(small.output,
               Catch::Contains("weights = torch.softmax") && !Catch::Contains("streaming path"));
    CHECK_THAT(test::run_mha("--trace --attention streaming").output,
               Catch::Contains("streaming path"));
}

TEST_CASE("auto streams every untraced form but decoding") {
    // decoding attends one query per unit, which fills one query lane of the fused tile
    const mha::Sizes s{1, 512, 512, 512, 512, 512, 8, 8, 64};
    mha::Config c;
    const auto path = [&] {
        return mha::plan_run(c, s, 2048,
                             mha::dry_problem(c, s, mha::AttentionPath::Standard, 2048))
            .path;
    };
    CHECK(path() == mha::AttentionPath::Streaming);
    c.form = mha::Form::PerHead;
    CHECK(path() == mha::AttentionPath::Streaming);
    c.trace = true;  // a trace shows steps 6-9 when they fit
    CHECK(path() == mha::AttentionPath::Standard);
    c.trace = false;
    c.form = mha::Form::Packed;
    c.block = mha::BlockKind::Pre;
    CHECK(path() == mha::AttentionPath::Streaming);
    c.block.reset();
    c.form = mha::Form::Decode;
    CHECK(path() == mha::AttentionPath::Standard);
}

TEST_CASE("--attention errors") {
    const test::RunResult bad = test::run_mha("--attention fast");
    CHECK(bad.status == 2);
    CHECK(bad.output ==
          "mha: error: --attention expects one of auto, standard, streaming, got 'fast'\n");
}

TEST_CASE("the streaming path saves the output without attn_weights, with a note") {
    const std::string streamed = test::temp_path("streamed.npz");
    const std::string standard = test::temp_path("standard.npz");
    const test::RunResult run =
        test::run_command(test::mha_binary() + " -b 2 -n 5 -d 16 --attention streaming --save " +
                          streamed + " 2>&1 >/dev/null");
    CHECK(run.status == 0);
    CHECK(run.output ==
          "mha: note: --save wrote output without attn_weights: the streaming path never stores "
          "them (--attention standard does)\n");
    REQUIRE(test::run_mha("-b 2 -n 5 -d 16 --attention standard --save " + standard).status == 0);
    const auto saved = mha::npy::read_npz(streamed);
    const auto reference = mha::npy::read_npz(standard);
    std::remove(streamed.c_str());
    std::remove(standard.c_str());
    CHECK(saved.size() == 1);
    CHECK(reference.count("attn_weights") == 1);
    test::require_close(mha::npy::to_tensor(saved.at("output")),
                        mha::npy::to_tensor(reference.at("output")), 1e-5);
}

TEST_CASE("both fast paths equal the reference forward pass on the plain loops") {
    const mha::Sizes s{2, 33, 65, 24, 24, 24, 3, 3, 8};
    const mha::Inputs in = mha::seeded_inputs(s, false, 11);
    const mha::Weights w = mha::seeded_weights(24, true, true, 11);
    mha::Masks masks;
    masks.causal = GENERATE(false, true);
    masks.attn_mask = Tensor({2, 33, 65}, random_values(2 * 33 * 65, 12));
    mha::ForwardOptions three_heads;
    three_heads.heads = 3;
    const mha::ForwardResult reference = mha::reference_forward(w, in, masks, three_heads);
    mha::NullTracer none;
    test::Recorder traced;
    const mha::ForwardResult fused = run(w, in, masks, 3, 2, mha::AttentionPath::Standard, none);
    const mha::ForwardResult stepwise =
        run(w, in, masks, 3, 2, mha::AttentionPath::Standard, traced);
    const mha::ForwardResult streamed =
        run(w, in, masks, 3, 2, mha::AttentionPath::Streaming, none);
    test::require_close(fused.weights, reference.weights, stream_tolerance);
    test::require_close(fused.output, reference.output, stream_tolerance);
    CHECK(stepwise.output.to_vector() == fused.output.to_vector());  // same bits, traced or not
    CHECK(stepwise.weights.to_vector() == fused.weights.to_vector());
    test::require_close(streamed.output, reference.output, stream_tolerance);
}

TEST_CASE("forward_macs counts the projections and both attention products") {
    // B=2, N=3, M=5, d_model=4, kdim=6, vdim=7: Q and W_O 2·3·4·4 each = 96 + 96,
    // K and V 2·5·4·(6 + 7) = 520, scores and weights @ V 2·3·5·4 each = 120 + 120
    CHECK(mha::forward_macs({2, 3, 5, 4, 6, 7, 2, 2, 2}) == 96 + 96 + 520 + 120 + 120);
    // one shared K/V head (G=1, d_k=2): K and V 2·5·2·(6 + 7) = 260
    CHECK(mha::forward_macs({2, 3, 5, 4, 6, 7, 2, 1, 2}) == 96 + 96 + 260 + 120 + 120);
}

TEST_CASE("small sizes run on one thread unless --threads says otherwise") {
    CHECK_THAT(test::run_mha("--trace").output, Catch::Contains("1 thread, "));
    CHECK_THAT(test::run_mha("--trace --threads 2").output, Catch::Contains("2 threads, "));
}

}  // namespace test_streaming
