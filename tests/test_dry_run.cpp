// Dry runs: the pass run on tensors with shapes and no storage describes the very steps the
// computed pass does (every word, layout, cost and note), and hands out no tensor storage.

#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "app/run/problem.h"

#include "core/backward/backward.h"
#include "core/backward/block_backward.h"
#include "core/backward/model_backward.h"
#include "core/forms/block.h"
#include "core/forms/decode.h"
#include "core/forms/draft.h"
#include "core/forms/prefill.h"
#include "core/forms/fused_qkv.h"
#include "core/forms/mla_pass.h"
#include "core/forms/model.h"
#include "core/forms/per_head.h"
#include "core/pass/attention.h"
#include "core/pass/costs.h"
#include "core/tensor/storage.h"
#include "core/tensor/workspace.h"
#include "io/dry.h"
#include "io/init.h"
#include "io/model_init.h"
#include "recorder.h"
#include "show/notes.h"

namespace test_dry_run {

namespace {

using test::Recorder;

// The dry run's steps are the computed run's, field by field; only the values differ.
void require_same_steps(const Recorder& dry, const Recorder& computed) {
    REQUIRE(dry.steps.size() == computed.steps.size());
    for (std::size_t i = 0; i < dry.steps.size(); ++i) {
        const mha::Step& a = dry.steps[i];
        const mha::Step& b = computed.steps[i];
        CAPTURE(i, b.number, b.name, b.tensor, b.expression);
        CHECK(a.kind == b.kind);
        CHECK(a.operand == b.operand);
        CHECK(a.backward == b.backward);
        CHECK(a.number == b.number);
        CHECK(a.name == b.name);
        CHECK(a.tensor == b.tensor);
        CHECK(a.expression == b.expression);
        CHECK(a.einops == b.einops);
        CHECK(a.dims == b.dims);
        CHECK(a.shape == b.shape);
        CHECK(a.strides == b.strides);
        CHECK(a.contiguous == b.contiguous);
        CHECK(a.copied_bytes == b.copied_bytes);
        CHECK(a.macs == b.macs);
        CHECK(mha::step_notes(a) == mha::step_notes(b));
        CHECK(a.allowed == b.allowed);
        CHECK_FALSE(dry.seen[i].has_value());  // a dry step has no values to show
    }
}

// A configuration of the pass: sizes, masks and options.
struct Case {
    mha::Sizes sizes;
    bool bias = true, qk_norm = false;
    mha::Masks masks;
    mha::ForwardOptions options;
};

// A run of `pass` on seeded tensors and on dry ones (in a dry workspace), both recorded; the
// dry run hands out no tensor storage.
template <class Pass>
void require_dry_like_computed(const Case& c, Pass pass) {
    const mha::Sizes& s = c.sizes;
    const bool self = s.seq_len == s.kv_len && s.kdim == s.d_model && s.vdim == s.d_model;
    mha::Weights w = mha::seeded_weights(s.d_model, s.inner(), s.kv_heads * s.d_k(), c.bias,
                                         true, 1);
    if (c.qk_norm) {
        w.q_norm = mha::Tensor({s.d_k()}, std::vector<float>(s.d_k(), 1.5f));
        w.k_norm = mha::Tensor({s.d_k()}, std::vector<float>(s.d_k(), 0.5f));
    }
    Recorder computed, dry;
    pass(w, mha::seeded_inputs(s, self, 1), c.options, computed);

    const mha::Weights dry_w = mha::dry_weights(s, c.bias, c.qk_norm);
    const mha::Inputs dry_in = mha::dry_inputs(s, self);
    mha::Workspace workspace = mha::Workspace::dry();
    mha::ForwardOptions options = c.options;
    options.workspace = &workspace;
    const std::uint64_t before = mha::tensor_bytes_handed_out();
    pass(dry_w, dry_in, options, dry);
    CHECK(mha::tensor_bytes_handed_out() == before);
    require_same_steps(dry, computed);
}

mha::Sizes sizes(std::size_t B, std::size_t N, std::size_t M, std::size_t E, std::size_t h,
                 std::size_t G) {
    return {B, N, M, E, E, E, h, G, E / h};
}

}  // namespace

TEST_CASE("a dry run of the packed pass describes the computed pass's steps", "[dry]") {
    Case c;
    c.sizes = sizes(2, 5, 5, 16, 4, 4);
    SECTION("plain") {}
    SECTION("cross-attention, GQA, causal") {
        c.sizes = sizes(1, 3, 6, 16, 4, 2);
        c.masks.causal = true;
    }
    SECTION("no bias, QK-norm, RoPE, a window, soft-cap, ALiBi") {
        c.bias = false;
        c.qk_norm = true;
        c.options.rope = mha::Rope{};
        c.masks.window = 2;
        c.masks.softcap = 30.0;
        c.masks.alibi = true;
    }
    SECTION("streaming, causal") {
        c.options.path = mha::AttentionPath::Streaming;
        c.masks.causal = true;
    }
    SECTION("add_zero_attn, the scores unscaled") {
        c.options.add_zero_attn = true;
        c.options.scale = false;
    }
    c.options.heads = c.sizes.heads;
    require_dry_like_computed(c, [&](const mha::Weights& w, const mha::Inputs& in,
                                     const mha::ForwardOptions& o, mha::Tracer& tracer) {
        mha::forward(w, in, c.masks, o, tracer);
    });
}

TEST_CASE("a dry run of the fused QKV pass describes the computed pass's steps", "[dry]") {
    Case c;
    c.sizes = sizes(2, 4, 4, 12, 3, 3);
    c.masks.causal = GENERATE(false, true);
    c.options.heads = c.sizes.heads;
    require_dry_like_computed(c, [&](const mha::Weights& w, const mha::Inputs& in,
                                     const mha::ForwardOptions& o, mha::Tracer& tracer) {
        mha::forward_fused_qkv(w, in, c.masks, o, tracer);
    });
}

namespace {

// Passes every step on without what only a computed run measures (the D trick's difference),
// which a dry run leaves empty.
class WithoutMeasured : public mha::Tracer {
public:
    explicit WithoutMeasured(mha::Tracer& next) : next_(next) {}
    bool enabled() const override { return next_.enabled(); }
    void on_step(const mha::Step& step) override {
        mha::Step copy = step;
        copy.facts.row_dot_difference.reset();
        next_.on_step(copy);
    }

private:
    mha::Tracer& next_;
};

// The forward and backward of `form` as a pass for require_dry_like_computed: dOut is x_q's
// values (its shape alone in a dry run); `bias_kv` appends b_k and b_v as bias_k and bias_v.
auto forward_backward_of(const Case& c, mha::Form form, bool bias_kv = false) {
    return [&c, form, bias_kv](const mha::Weights& w, const mha::Inputs& in,
                               const mha::ForwardOptions& o, mha::Tracer& tracer) {
        mha::Weights with = w;
        if (bias_kv) {
            with.bias_k = w.b_k;
            with.bias_v = w.b_v;
        }
        WithoutMeasured without(tracer);
        mha::forward_backward(with, in, c.masks, o, form, in.x_q, without);
    };
}

// The pass untraced on dry tensors (the backward's fused units): no tensor storage handed out.
template <class Pass>
void require_untraced_dry(const Case& c, Pass pass) {
    const mha::Sizes& s = c.sizes;
    const bool self = s.seq_len == s.kv_len && s.kdim == s.d_model && s.vdim == s.d_model;
    mha::Workspace workspace = mha::Workspace::dry();
    mha::ForwardOptions options = c.options;
    options.workspace = &workspace;
    mha::NullTracer none;
    const std::uint64_t before = mha::tensor_bytes_handed_out();
    pass(mha::dry_weights(s, c.bias, c.qk_norm), mha::dry_inputs(s, self), options, none);
    CHECK(mha::tensor_bytes_handed_out() == before);
    CHECK(workspace.peak_bytes() > 0);
}

}  // namespace

TEST_CASE("a dry forward and backward of the packed form describes the computed steps", "[dry]") {
    Case c;
    c.sizes = sizes(2, 5, 5, 16, 4, 4);
    bool bias_kv = false;
    SECTION("plain") {}
    SECTION("cross-attention, GQA, causal") {
        c.masks.causal = true;
        c.sizes = sizes(2, 3, 6, 16, 4, 2);
    }
    SECTION("no bias, ALiBi, soft-cap, a window with a sink, QK-norm, RoPE") {
        c.bias = false;
        c.masks.alibi = true;
        c.masks.softcap = 30.0;
        c.masks.window = 2;
        c.masks.sinks = 1;
        c.qk_norm = true;
        c.options.rope = mha::Rope{};
    }
    SECTION("QK-norm, RoPE, soft-cap, causal, GQA") {
        c.sizes = sizes(1, 4, 4, 16, 4, 2);
        c.qk_norm = true;
        c.options.rope = mha::Rope{mha::RopeLayout::Interleaved, 10000.0};
        c.masks.softcap = 2.0;
        c.masks.causal = true;
    }
    SECTION("streaming, causal, GQA") {
        c.sizes = sizes(2, 5, 5, 16, 4, 2);
        c.options.path = mha::AttentionPath::Streaming;
        c.masks.causal = true;
    }
    SECTION("streaming, cross-attention, QK-norm, RoPE, soft-cap") {
        c.sizes = sizes(1, 3, 6, 16, 4, 4);
        c.qk_norm = true;
        c.options.rope = mha::Rope{};
        c.masks.softcap = 5.0;
        c.options.path = mha::AttentionPath::Streaming;
    }
    SECTION("bias_k, bias_v and add_zero_attn, the scores unscaled") {
        bias_kv = true;
        c.options.add_zero_attn = true;
        c.options.scale = false;
    }
    SECTION("streaming, add_zero_attn, cross-attention") {
        c.sizes = sizes(1, 3, 6, 16, 4, 4);
        c.options.add_zero_attn = true;
        c.options.path = mha::AttentionPath::Streaming;
    }
    c.options.heads = c.sizes.heads;
    require_dry_like_computed(c, forward_backward_of(c, mha::Form::Packed, bias_kv));
    require_untraced_dry(c, forward_backward_of(c, mha::Form::Packed, bias_kv));
}

TEST_CASE("a dry forward and backward of the fused QKV form describes the computed steps",
          "[dry]") {
    Case c;
    c.sizes = sizes(2, 4, 4, 12, 3, 3);
    c.masks.causal = GENERATE(false, true);
    c.options.path = GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    SECTION("plain") {}
    SECTION("no bias, QK-norm, RoPE, soft-cap") {
        c.sizes = sizes(1, 4, 4, 16, 2, 2);
        c.bias = false;
        c.qk_norm = true;
        c.options.rope = mha::Rope{};
        c.masks.softcap = 3.0;
    }
    c.options.heads = c.sizes.heads;
    require_dry_like_computed(c, forward_backward_of(c, mha::Form::FusedQkv));
    require_untraced_dry(c, forward_backward_of(c, mha::Form::FusedQkv));
}

TEST_CASE("a dry run of the per-head pass describes the computed pass's steps", "[dry]") {
    Case c;
    c.sizes = sizes(2, 4, 4, 12, 3, 3);
    SECTION("standard") {}
    SECTION("streaming, QK-norm, RoPE") {
        c.options.path = mha::AttentionPath::Streaming;
        c.qk_norm = true;
        c.options.rope = mha::Rope{};
    }
    SECTION("cross-attention, GQA, causal") {
        c.sizes = sizes(1, 3, 5, 16, 4, 2);
        c.masks.causal = true;
    }
    c.options.heads = c.sizes.heads;
    require_dry_like_computed(c, [&](const mha::Weights& w, const mha::Inputs& in,
                                     const mha::ForwardOptions& o, mha::Tracer& tracer) {
        mha::forward_per_head(w, in, c.masks, o, tracer);
    });
}

TEST_CASE("a dry run of decoding and of chunked prefill describes the computed steps",
          "[dry][draft]") {
    Case c;
    c.sizes = sizes(2, 4, 4, 16, 4, 2);
    SECTION("RoPE, QK-norm") {
        c.options.rope = mha::Rope{};
        c.qk_norm = true;
    }
    SECTION("a window with a sink, ALiBi, soft-cap") {
        c.masks.window = 2;
        c.masks.sinks = 1;
        c.masks.alibi = true;
        c.masks.softcap = 20.0;
    }
    SECTION("streaming") { c.options.path = mha::AttentionPath::Streaming; }
    c.options.heads = c.sizes.heads;
    require_dry_like_computed(c, [&](const mha::Weights& w, const mha::Inputs& in,
                                     const mha::ForwardOptions& o, mha::Tracer& tracer) {
        mha::decode(w, in, c.masks, o, tracer);
    });
    require_dry_like_computed(c, [&](const mha::Weights& w, const mha::Inputs& in,
                                     const mha::ForwardOptions& o, mha::Tracer& tracer) {
        mha::prefill(w, in, c.masks, o, {3, 1}, tracer);  // chunked prefill, the same way
    });
    const mha::KvPaging paging{3, {1, 0, 3, 2}};  // B = 2, N = 4: 2 blocks of 3 each, shuffled
    require_dry_like_computed(c, [&](const mha::Weights& w, const mha::Inputs& in,
                                     const mha::ForwardOptions& o, mha::Tracer& tracer) {
        mha::decode(w, in, c.masks, o, tracer, &paging);  // paged, the same way
    });
    require_dry_like_computed(c, [&](const mha::Weights& w, const mha::Inputs& in,
                                     const mha::ForwardOptions& o, mha::Tracer& tracer) {
        mha::prefill(w, in, c.masks, o, {3, 1}, tracer, &paging);
    });
    for (const mha::DraftTree& tree : {mha::DraftTree{-1, -1, 0}, mha::draft_chain(4)}) {
        require_dry_like_computed(c, [&](const mha::Weights& w, const mha::Inputs& in,
                                         const mha::ForwardOptions& o, mha::Tracer& tracer) {
            mha::verify_draft(w, in, c.masks, o, tree, tracer);  // a draft tree, and a chain
        });
    }
}

TEST_CASE("a dry run of the MLA pass describes the computed pass's steps", "[dry][mla]") {
    const mha::MlaSizes m = mha::seeded_mla_sizes(16, 2, 8, 4);
    const std::size_t B = 2, N = 3;
    mha::Masks masks;
    masks.causal = true;
    mha::ForwardOptions options;
    options.heads = m.heads;
    options.rope = mha::Rope{};
    options.path = GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    Recorder computed, dry;
    const mha::Tensor x =
        mha::seeded_inputs(sizes(B, N, N, m.d_model, m.heads, m.heads), true, 1).x_q;
    mha::forward_mla(mha::seeded_mla_weights(m, 1), x, masks, options, computed);
    for (mha::Step& step : computed.steps) {  // compared values: none in a dry run
        if (step.facts.mla && step.facts.mla->absorbed) {
            CHECK(step.facts.mla->max_difference.has_value());
            step.facts.mla->max_difference.reset();
        }
    }

    const mha::MlaWeights dry_w = mha::dry_mla_weights(m);
    mha::Workspace workspace = mha::Workspace::dry();
    options.workspace = &workspace;
    const std::uint64_t before = mha::tensor_bytes_handed_out();
    mha::forward_mla(dry_w, mha::Tensor::shape_only({B, N, m.d_model}), masks, options, dry);
    CHECK(mha::tensor_bytes_handed_out() == before);
    require_same_steps(dry, computed);
}

TEST_CASE("a dry run of the block describes the computed block's steps", "[dry]") {
    const mha::BlockKind kind = GENERATE(mha::BlockKind::Pre, mha::BlockKind::Post);
    Case c;
    c.sizes = sizes(2, 4, 4, 12, 3, GENERATE(3, 1));
    c.masks.causal = true;
    c.options.heads = c.sizes.heads;
    const std::size_t d_ff = 20;
    const mha::BlockWeights seeded = mha::seeded_block(c.sizes.d_model, d_ff, 1);
    const mha::BlockWeights dry = mha::dry_block(c.sizes.d_model, d_ff);
    require_dry_like_computed(c, [&](const mha::Weights& w, const mha::Inputs& in,
                                     const mha::ForwardOptions& o, mha::Tracer& tracer) {
        mha::forward_block(w, w.w_q.dry() ? dry : seeded, kind, in, c.masks, o, tracer);
    });
}

namespace {

const std::vector<std::uint32_t> small_vocab = {0, 'a', 'b', 'c', ' '};  // V = 5
const std::vector<std::size_t> small_tokens = {1, 4, 2, 2, 3};            // N = 5

// A small character model's sizes: d_model 16, 4 heads, d_ff 24, a context of 8.
mha::ModelSizes small_model(std::size_t layers) {
    mha::ModelSizes s;
    s.layers = layers;
    s.d_model = 16;
    s.heads = 4;
    s.d_ff = 24;
    s.context = 8;
    return s;
}

}  // namespace

TEST_CASE("a dry run of the model describes the computed model's steps", "[dry]") {
    const std::vector<std::uint32_t>& vocab = small_vocab;
    const mha::ModelSizes s = small_model(3);
    const std::vector<std::size_t>& tokens = small_tokens;
    const std::size_t traced = GENERATE(0, 2);
    CAPTURE(traced);
    const mha::Model seeded = mha::seeded_model(vocab, s, 1);
    Recorder computed, dry, without_values;
    mha::forward_model(seeded, tokens, traced, 1, computed);
    const mha::Model dry_model = mha::dry_model(vocab, s);
    const std::uint64_t before = mha::tensor_bytes_handed_out();
    mha::forward_model(dry_model, tokens, traced, 1, dry);
    CHECK(mha::tensor_bytes_handed_out() == before);
    require_same_steps(dry, computed);
    mha::forward_model(mha::without_values(seeded), tokens, traced, 1, without_values);
    require_same_steps(without_values, computed);
}

TEST_CASE("a dry run of the block's forward and backward describes the computed one's steps",
          "[dry]") {
    const mha::BlockKind kind = GENERATE(mha::BlockKind::Pre, mha::BlockKind::Post);
    Case c;
    c.sizes = sizes(2, 4, 4, 12, 3, GENERATE(3, 1));
    c.masks.causal = true;
    c.options.heads = c.sizes.heads;
    c.options.path = GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    const std::size_t d_ff = 20;
    const mha::BlockWeights seeded = mha::seeded_block(c.sizes.d_model, d_ff, 1);
    const mha::BlockWeights dry = mha::dry_block(c.sizes.d_model, d_ff);
    const auto pass = [&](const mha::Weights& w, const mha::Inputs& in,
                          const mha::ForwardOptions& o, mha::Tracer& tracer) {
        WithoutMeasured without(tracer);  // dOut: x's values (its shape alone in a dry run)
        mha::block_forward_backward(w, w.w_q.dry() ? dry : seeded, kind, in, c.masks, o, in.x_q,
                                    without);
    };
    require_dry_like_computed(c, pass);
    require_untraced_dry(c, pass);
}

TEST_CASE("a dry run of the model's forward and backward describes the computed one's steps",
          "[dry]") {
    const std::vector<std::uint32_t>& vocab = small_vocab;
    const mha::ModelSizes s = small_model(2);
    const std::vector<std::size_t>& tokens = small_tokens;
    const std::vector<std::size_t> targets = {4, 2, 2, 3, 0};
    const std::size_t traced = GENERATE(0, 1);
    CAPTURE(traced);
    Recorder computed, dry;
    WithoutMeasured computed_without(computed), dry_without(dry);
    mha::model_forward_backward(mha::seeded_model(vocab, s, 1), tokens, targets, traced, 1,
                                computed_without);
    const mha::Model dry_model = mha::dry_model(vocab, s);
    const std::uint64_t before = mha::tensor_bytes_handed_out();
    mha::model_forward_backward(dry_model, tokens, targets, traced, 1, dry_without);
    CHECK(mha::tensor_bytes_handed_out() == before);
    require_same_steps(dry, computed);
}

TEST_CASE("a dry run at GPT-3's and DeepSeek-V2-Lite's sizes hands out no tensor storage",
          "[dry]") {
    // What --shapes-only runs: build_shapes' dry problem through the form's forward (and
    // backward), counted by the tensor allocator itself, not timed.
    const std::string options = GENERATE(
        as<std::string>{}, "--preset gpt3", "--preset gpt3 --backward",
        "--preset gpt3 --block pre --backward", "--preset gpt3 --attention streaming --backward",
        "--preset deepseek-v2-lite --form mla", "--preset deepseek-v2-lite --form mla --backward",
        "--preset llama3-8b --per-head --rope half --qk-norm", "--preset llama3-8b -n 64 --decode 64",
        "--preset deepseek-v2-lite --decode 64 --kv-block-size 16");
    CAPTURE(options);
    std::vector<std::string> words;
    std::istringstream in(options + " --shapes-only");
    for (std::string word; in >> word;) words.push_back(word);
    const mha::Config config = mha::parse_args(words);
    const std::uint64_t before = mha::tensor_bytes_handed_out();
    mha::Problem problem = mha::build_shapes(config);
    mha::Workspace workspace = mha::Workspace::dry();
    problem.options.workspace = &workspace;
    mha::Tally tally;
    if (config.backward) {
        mha::run_backward(config, problem, tally);
    } else {
        mha::run_pass(config, problem, tally);
    }
    CHECK(mha::tensor_bytes_handed_out() == before);
    CHECK(tally.steps > 10);
    CHECK(workspace.peak_bytes() > 0);  // what a computed run would hold of its workspace
}

namespace {

// `pass` on weights with an output gate (--gate): W_q's rows as the element-wise gate, or h
// rows of a head-wise one (its values a ramp; dry when the weights are).
template <class Pass>
auto gated(const Case& c, bool headwise, Pass pass) {
    return [&c, headwise, pass](const mha::Weights& w, const mha::Inputs& in,
                                const mha::ForwardOptions& o, mha::Tracer& tracer) {
        mha::Weights with = w;
        with.w_g = w.w_q;
        with.b_g = w.b_q;
        if (headwise) {
            const mha::Shape shape{c.sizes.heads, w.d_model()};
            with.b_g = mha::Tensor();
            with.w_g = mha::Tensor::shape_only(shape);
            if (!w.w_q.dry()) {
                with.w_g = mha::Tensor(shape);
                for (std::size_t e = 0; e < with.w_g.numel(); ++e)
                    with.w_g.data()[e] = 0.1f * float(e % 7) - 0.3f;
            }
        }
        pass(with, in, o, tracer);
    };
}

}  // namespace

TEST_CASE("a dry run of gated attention describes the computed steps, in every form it takes",
          "[dry][gate]") {
    Case c;
    c.sizes = sizes(2, 4, 4, 12, 3, 3);
    const bool headwise = GENERATE(false, true);
    c.options.path = GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    c.options.heads = c.sizes.heads;
    SECTION("packed, forward and backward") {
        require_dry_like_computed(c, gated(c, headwise, forward_backward_of(c, mha::Form::Packed)));
        require_untraced_dry(c, gated(c, headwise, forward_backward_of(c, mha::Form::Packed)));
    }
    SECTION("fused QKV, forward and backward") {
        require_dry_like_computed(c, gated(c, headwise, forward_backward_of(c, mha::Form::FusedQkv)));
    }
    SECTION("per-head, forward and backward") {
        require_dry_like_computed(c, gated(c, headwise, forward_backward_of(c, mha::Form::PerHead)));
    }
    SECTION("decode") {
        require_dry_like_computed(c, gated(c, headwise, [&](const mha::Weights& w,
                                                           const mha::Inputs& in,
                                                           const mha::ForwardOptions& o,
                                                           mha::Tracer& tracer) {
                                      mha::decode(w, in, c.masks, o, tracer);
                                  }));
    }
}

TEST_CASE("a dry run without a dry workspace is refused, never run on real memory", "[dry]") {
    const mha::Sizes s = sizes(1, 4, 4, 8, 2, 2);
    mha::ForwardOptions options;
    options.heads = 2;
    mha::NullTracer quiet;
    REQUIRE_THROWS_WITH(
        mha::forward(mha::dry_weights(s, true, false), mha::dry_inputs(s, true), {}, options,
                     quiet),
        Catch::Contains("a dry run's tensors come from a dry workspace"));
}

TEST_CASE("a dry workspace counts its tensors while they live, and the copies made of them",
          "[dry]") {
    mha::Workspace w = mha::Workspace::dry();
    {
        const mha::Tensor a = w.tensor({2, 3});  // 6 floats, 24 bytes
        CHECK(w.peak_bytes() == 24);
        CHECK(a.contiguous().dry());  // already contiguous: itself, no copy
        CHECK(w.peak_bytes() == 24);
        {
            const mha::Tensor copy = a.transpose(0, 1).contiguous();  // a copy: 24 more
            CHECK(copy.dry());
            CHECK(copy.shape() == mha::Shape{3, 2});
            CHECK(w.peak_bytes() == 48);
        }
        const mha::Tensor b = w.tensor({4});  // the copy is gone: 24 + 16 live
        CHECK(w.peak_bytes() == 48);
        const mha::Tensor c = w.tensor({8});  // 24 + 16 + 32
        CHECK(w.peak_bytes() == 72);
    }
    const mha::Tensor d = w.tensor({10});  // all the others gone: 40 live
    CHECK(w.peak_bytes() == 72);
    // a problem's tensor without its values is counted nowhere, nor are its copies
    const mha::Tensor x = mha::Tensor({2, 3}).without_values();
    CHECK(x.transpose(0, 1).contiguous().dry());
    CHECK(w.peak_bytes() == 72);
    // sizes no memory holds are refused, not wrapped around
    const std::size_t huge = std::size_t(1) << 40;
    CHECK_THROWS_WITH(w.tensor({huge, huge}), Catch::Contains("does not fit in 64 bits"));
}

TEST_CASE("a dry forward's peak is its tensors counted by hand; a backward's is more",
          "[dry][budget]") {
    // one layer's forward holds Q (B, N, h·d_k), K and V (B, M, G·d_k), the scores (B, h, N, M)
    // and the concat copy of the context on the standard path only, the context (B, N, h·d_k)
    // and the output (B, N, d_model) live at once at its end
    mha::Config c;
    for (const mha::Sizes& s : {sizes(1, 64, 64, 32, 4, 4), sizes(2, 16, 24, 48, 6, 2)}) {
        for (const mha::AttentionPath path :
             {mha::AttentionPath::Standard, mha::AttentionPath::Streaming}) {
            CAPTURE(s.batch, s.seq_len, s.kv_len, s.d_model, s.heads, s.kv_heads, int(path));
            c.backward = false;
            const std::uint64_t forward =
                mha::dry_peak_bytes(c, mha::dry_problem(c, s, path, 0));
            const bool standard = path == mha::AttentionPath::Standard;
            const std::uint64_t B = s.batch, N = s.seq_len, M = s.kv_len, h = s.heads,
                                G = s.kv_heads, d_k = s.d_k();
            CHECK(forward == 4 * (B * N * h * d_k + 2 * B * M * G * d_k +
                                  (standard ? B * h * N * M : 0) +
                                  (standard ? 2 : 1) * B * N * h * d_k + B * N * s.d_model));
            c.backward = true;
            CHECK(mha::dry_peak_bytes(c, mha::dry_problem(c, s, path, 0)) > forward);
        }
    }
}

TEST_CASE("a dry_blocks workspace counts the blocks a workspace would hold, live or idle",
          "[dry]") {
    // the same tensors taken and let go in a workspace with storage and in a dry one: the dry
    // one's peak is the most bytes the other's blocks ever held
    mha::Workspace real;
    mha::Workspace dry = mha::Workspace::dry_blocks();
    std::uint64_t most = 0;
    std::vector<mha::Tensor> held_real, held_dry;
    const std::vector<mha::Shape> shapes = {{64, 64}, {16}, {32, 32}, {128, 8}, {4, 4}, {200}};
    for (std::size_t round = 0; round < 40; ++round) {
        const mha::Shape& shape = shapes[(round * 7) % shapes.size()];
        held_real.push_back(real.tensor(shape));
        held_dry.push_back(dry.tensor(shape));
        CHECK(held_dry.back().dry());
        if (round % 3 == 2) {  // let two go, not always the newest
            const std::size_t at = (round * 5) % held_real.size();
            held_real.erase(held_real.begin() + at);
            held_dry.erase(held_dry.begin() + at);
            held_real.erase(held_real.begin());
            held_dry.erase(held_dry.begin());
        }
        most = std::max(most, real.bytes());
        CHECK(dry.peak_bytes() == most);
    }
    CHECK(most > 0);
}

}  // namespace test_dry_run
