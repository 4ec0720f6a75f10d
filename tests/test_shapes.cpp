// --shapes-only and --preset: the shapes-only trace reports exactly the steps the
// computed pass reports, minus the values (also with --head-dim and --scale-base);
// presets fill in the sizes.

#include <catch2/catch.hpp>

#include "core/attention.h"
#include "core/decode.h"
#include "core/fused_qkv.h"
#include "core/per_head.h"
#include "core/mla_pass.h"
#include "core/plan.h"
#include "helpers.h"
#include "show/notes.h"
#include "recorder.h"
#include "io/init.h"

namespace {

using test::Recorder;

void require_same_step(const mha::Step& a, const mha::Step& b) {
    CAPTURE(a.number, a.tensor);
    CHECK(a.name == b.name);
    CHECK(a.tensor == b.tensor);
    CHECK(a.expression == b.expression);
    CHECK(a.dims == b.dims);
    CHECK(a.shape == b.shape);
    CHECK(a.strides == b.strides);
    CHECK(a.contiguous == b.contiguous);
    CHECK(a.copied_bytes == b.copied_bytes);
    CHECK(a.macs == b.macs);
    CHECK(mha::step_notes(a) == mha::step_notes(b));
    CHECK(a.allowed == b.allowed);
}

}  // namespace

TEST_CASE("the shapes-only trace is the computed trace without values") {
    const auto [B, N, M, E, h, G, causal] =
        GENERATE(table<std::size_t, std::size_t, std::size_t, std::size_t, std::size_t,
                       std::size_t, bool>({{2, 8, 8, 256, 4, 4, false},
                                           {1, 1, 1, 8, 1, 1, false},
                                           {3, 5, 7, 12, 3, 1, true},
                                           {2, 4, 9, 16, 8, 2, true},
                                           {1, 6, 6, 32, 4, 2, true}}));
    CAPTURE(B, N, M, E, h, G, causal);
    const mha::Sizes s{B, N, M, E, E, E, h, G, E / h};
    const mha::Weights w = mha::seeded_weights(E, G * (E / h), true, false, 1);
    const mha::Inputs in = mha::seeded_inputs(s, N == M, 1);
    mha::Masks masks;
    masks.causal = causal;
    mha::ForwardOptions options;
    options.heads = h;
    Recorder computed, traced;
    mha::forward(w, in, masks, options, computed);
    mha::PassSpec spec;
    spec.sizes = s;
    spec.self_attention = N == M;
    spec.masks.causal = causal;
    traced.steps = mha::plan_pass(spec);
    const std::uint64_t macs = mha::planned_macs(traced.steps);

    REQUIRE(traced.steps.size() == computed.steps.size());
    std::uint64_t computed_macs = 0;
    for (std::size_t i = 0; i < traced.steps.size(); ++i) {
        require_same_step(traced.steps[i], computed.steps[i]);
        computed_macs += computed.steps[i].macs;
    }
    CHECK(macs == computed_macs);
    CHECK(mha::parameter_count(s, true) == w.parameter_count());
    CHECK(mha::parameter_count(s, false) ==
          mha::seeded_weights(E, G * (E / h), false, false, 1).parameter_count());
}

TEST_CASE("--preset gpt3 --shapes-only --trace: GPT-3's attention layer without allocating") {
    const test::RunResult r = test::run_mha("--preset gpt3 --shapes-only --trace");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("B=1  N=2048  M=2048  d_model=12288  h=96  d_k=128") &&
                             Catch::Contains("parameters: 604,028,928 = 4·12288² + 4·12288") &&
                             Catch::Contains("(B=1, h=96, N=2048, M=2048)") &&
                             Catch::Contains("copied 96 MiB") &&
                             Catch::Contains("1,340,029,796,352 multiply-adds"));
    const test::RunResult json = test::run_mha("--preset gpt3 --shapes-only --format json", false);
    REQUIRE(json.status == 0);
    CHECK_THAT(json.output, Catch::Contains("\"output\":null,\"shapes_only\":{\"activation_bytes\":") &&
                                Catch::Contains("\"macs\":1340029796352"));
}

TEST_CASE("--shapes-only allocates no tensor: GPT-3's layer traces in well under 256 MiB", "[budget]") {
    // A computed run would need 2.1 GiB for its activations alone.
    const long peak =
        test::peak_rss_kib(test::mha_binary() + " --preset gpt3 --shapes-only >/dev/null");
    CHECK(peak > 0);
    CHECK(peak < 256 * 1024);
    const test::RunResult computed = test::run_mha("--preset gpt3 --max-memory 256M");
    CHECK(computed.status == 2);
    CHECK_THAT(computed.output, Catch::Contains("more than --max-memory"));
}

TEST_CASE("presets set the sizes; options given too win") {
    const test::RunResult llama = test::run_mha("--preset llama2-70b --shapes-only");
    REQUIRE(llama.status == 0);
    CHECK_THAT(llama.output, Catch::Contains("d_model=8192  h=64  d_k=128  G=8") &&
                                 Catch::Contains("no bias") &&
                                 Catch::Contains("GQA G=8 (this run)"));
    const test::RunResult small = test::run_mha("--preset gpt2 -n 4 -b 2 --trace");
    REQUIRE(small.status == 0);
    CHECK_THAT(small.output, Catch::Contains("B=2  N=4  M=4  d_model=768  h=12  d_k=64"));
    const test::RunResult block = test::run_mha("--preset bert-base -n 2 --block post");
    REQUIRE(block.status == 0);
    CHECK_THAT(block.output, Catch::Contains("post-LN block, d_ff=3072"));
    const test::RunResult heads = test::run_mha("--preset llama3-8b --heads 16 --shapes-only");
    REQUIRE(heads.status == 0);
    CHECK_THAT(heads.output, Catch::Contains("h=16  d_k=256\n"));  // no G=: it follows the new h

    const test::RunResult list = test::run_mha("--list-presets");
    REQUIRE(list.status == 0);
    for (const char* name : {"transformer-base", "bert-base", "gpt2 ", "gpt2-medium", "gpt2-large",
                             "gpt2-xl", "gpt3", "llama2-7b", "llama2-70b", "llama3-8b"}) {
        CHECK_THAT(list.output, Catch::Contains(name));
    }
    std::size_t start = 0;
    while (start < list.output.size()) {
        const std::size_t end = list.output.find('\n', start);
        CHECK(end - start <= 80);
        start = end + 1;
    }
}

TEST_CASE("--preset and --shapes-only refuse what they cannot do") {
    const auto [args, message] = GENERATE(table<std::string, std::string>({
        {"--preset gpt5", "--preset expects one of transformer-base, bert-base, gpt2,"},
        {"--preset gpt3", "or trace with --shapes-only"},
        {"--shapes-only --weights data/parity/gqa/weights.npz", "--shapes-only traces sizes"},
        {"--shapes-only --values", "cannot be combined with"},
        {"--shapes-only -H 3", "not divisible by --heads 3"},
        {"--shapes-only -b 4294967296 -n 4294967296 -d 4294967296 -H 1", "does not fit in 64 bits"},
    }));
    test::check_rejected(args, message);
}

TEST_CASE("--form mla: the shapes-only trace is the computed trace without values", "[mla]") {
    const auto [B, N, E, h, d_c, d_R, causal] =
        GENERATE(table<std::size_t, std::size_t, std::size_t, std::size_t, std::size_t,
                       std::size_t, bool>({{2, 5, 16, 2, 6, 2, true}, {1, 7, 24, 4, 12, 4, false}}));
    const bool streamed = GENERATE(false, true);
    CAPTURE(B, N, E, h, d_c, d_R, causal, streamed);
    const mha::MlaSizes m = mha::seeded_mla_sizes(E, h, d_c, d_R);
    const mha::MlaWeights w = mha::seeded_mla_weights(m, 3);
    const mha::Inputs in = mha::seeded_inputs({B, N, N, E, E, E, h, h, E / h}, true, 3);
    mha::Masks masks;
    masks.causal = causal;
    masks.window = causal ? 0 : 3;
    masks.softcap = causal ? 0.0 : 5.0;
    mha::ForwardOptions options;
    options.heads = h;
    options.rope = mha::Rope{mha::RopeLayout::Half, 10000.0};
    options.path = streamed ? mha::AttentionPath::Streaming : mha::AttentionPath::Standard;
    Recorder computed, traced;
    mha::forward_mla(w, in.x_q, masks, options, computed);
    traced.steps = mha::plan_pass(mha::mla_spec(
        m, mha::pass_spec(mha::mla_naive_sizes(m, B, N), mha::Weights(), in, masks, options,
                          mha::Form::Mla)));
    REQUIRE(traced.steps.size() == computed.steps.size());
    std::uint64_t computed_macs = 0;
    for (std::size_t i = 0; i < traced.steps.size(); ++i) {
        mha::Step planned = traced.steps[i];
        const mha::Step& ran = computed.steps[i];
        if (ran.facts.mla && ran.facts.mla->max_difference) {  // only the computation knows it
            CHECK(*ran.facts.mla->max_difference <= 1e-5);
            planned.facts.mla->max_difference = ran.facts.mla->max_difference;
        }
        require_same_step(planned, ran);
        computed_macs += ran.macs;
    }
    CHECK(mha::planned_macs(traced.steps) == computed_macs);
    CHECK(mha::mla_parameter_count(m) == w.w_q.numel() + w.w_kv_a.numel() + w.kv_norm.numel() +
                                             w.w_kv_b.numel() + w.w_o.numel());
}

TEST_CASE("--head-dim and --scale-base: the shapes-only trace is the computed trace in every form",
          "[head-dim]") {
    const auto [E, h, G, D, form] =
        GENERATE(table<std::size_t, std::size_t, std::size_t, std::size_t, mha::Form>(
            {{16, 2, 2, 12, mha::Form::Packed},
             {16, 4, 2, 3, mha::Form::Packed},
             {12, 4, 4, 5, mha::Form::PerHead},
             {16, 4, 2, 6, mha::Form::Decode},
             {10, 2, 2, 8, mha::Form::FusedQkv}}));
    const bool streamed = GENERATE(false, true);
    CAPTURE(E, h, G, D, int(form), streamed);
    const std::size_t B = 2, N = 5;
    const mha::Sizes s{B, N, N, E, E, E, h, G, D};
    const mha::Weights w = mha::seeded_weights(E, h * D, G * D, true, true, 4);
    const mha::Inputs in = mha::seeded_inputs(s, true, 4);
    mha::Masks masks;
    masks.causal = form == mha::Form::Decode;
    masks.softcap = 3.0;
    mha::ForwardOptions options;
    options.heads = h;
    options.scale_base = 7.0;
    options.path = streamed ? mha::AttentionPath::Streaming : mha::AttentionPath::Standard;
    Recorder computed;
    switch (form) {
        case mha::Form::PerHead: mha::forward_per_head(w, in, masks, options, computed); break;
        case mha::Form::Decode: mha::decode(w, in, masks, options, computed); break;
        case mha::Form::FusedQkv: mha::forward_fused_qkv(w, in, masks, options, computed); break;
        default: mha::forward(w, in, masks, options, computed); break;
    }
    mha::PassSpec spec;
    spec.sizes = s;
    spec.form = form;
    spec.path = options.path;
    spec.masks.causal = masks.causal;
    spec.masks.softcap = masks.softcap;
    spec.scale_base = 7.0;
    const std::vector<mha::Step> planned = mha::plan_pass(spec);
    REQUIRE(planned.size() == computed.steps.size());
    std::uint64_t computed_macs = 0;
    for (std::size_t i = 0; i < planned.size(); ++i) {
        require_same_step(planned[i], computed.steps[i]);
        computed_macs += computed.steps[i].macs;
    }
    CHECK(mha::planned_macs(planned) == computed_macs);
    CHECK(mha::parameter_count(s, true) == w.parameter_count());
}
