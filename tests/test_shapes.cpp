// --shapes-only and --preset: the plan gives the layout of every tensor the computed pass
// makes (also with --head-dim and --scale-base), and the pass refuses a tensor that is not
// laid out as planned; presets fill in the sizes.

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "core/forms/block.h"
#include "core/forms/decode.h"
#include "core/forms/fused_qkv.h"
#include "core/forms/mla_pass.h"
#include "core/forms/model.h"
#include "core/forms/per_head.h"
#include "core/pass/attention.h"
#include "core/pass/plan.h"
#include "helpers.h"
#include "io/init.h"
#include "io/model_file.h"
#include "recorder.h"
#include "show/notes.h"

namespace {

using test::Recorder;

// The computed pass hands the tracer the planned Step with its tensor attached, so the Step's
// own fields prove nothing; what it computed does: the tensor's layout, read from the tensor,
// and the grid of allowed keys, read from the masked scores' values.
void require_planned(const std::vector<mha::Step>& planned, const Recorder& computed) {
    REQUIRE(planned.size() == computed.steps.size());
    std::size_t tensors = 0;
    for (std::size_t i = 0; i < planned.size(); ++i) {
        const mha::Step& p = planned[i];
        CAPTURE(i, p.number, p.name, p.tensor);
        CHECK(computed.steps[i].allowed == p.allowed);
        if (!computed.seen[i]) continue;
        ++tensors;
        CHECK(computed.seen[i]->shape == p.shape);
        CHECK(computed.seen[i]->strides == p.strides);
        CHECK(computed.seen[i]->contiguous == p.contiguous);
    }
    CHECK(tensors > 0);
}

// Two plans agree step by step (the block's attention steps and the plain pass's).
void require_same_step(const mha::Step& a, const mha::Step& b) {
    CAPTURE(a.number, a.tensor);
    CHECK(a.kind == b.kind);
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

// The kinds of the steps, in order.
std::vector<mha::StepKind> kinds_of(const std::vector<mha::Step>& steps) {
    std::vector<mha::StepKind> kinds;
    for (const mha::Step& step : steps) kinds.push_back(step.kind);
    return kinds;
}

// The steps with the kinds, the ones a block or a model adds around attention's.
std::vector<mha::StepKind> outer_kinds(const std::vector<mha::Step>& steps,
                                       std::initializer_list<mha::StepKind> outer) {
    std::vector<mha::StepKind> kinds;
    for (mha::StepKind kind : kinds_of(steps)) {
        if (std::find(outer.begin(), outer.end(), kind) != outer.end()) kinds.push_back(kind);
    }
    return kinds;
}

}  // namespace

TEST_CASE("the plan gives every computed tensor's layout, the mask grid and the multiply-adds") {
    const auto [B, N, M, E, h, G, causal] = GENERATE(
        table<std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, bool>(
            {{2, 8, 8, 256, 4, 4, false},
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

    require_planned(traced.steps, computed);
    // By hand: Q and W_o B·N·E·E each, K and V B·M·(G·d_k)·E each, scores and context
    // B·h·N·M·d_k each.
    const std::size_t d_k = E / h;
    CHECK(macs == 2 * B * N * E * E + 2 * B * M * G * d_k * E + 2 * B * h * N * M * d_k);
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
    CHECK_THAT(json.output,
               Catch::Contains("\"output\":null,\"shapes_only\":{\"activation_bytes\":") &&
                   Catch::Contains("\"macs\":1340029796352"));
}

TEST_CASE("--shapes-only allocates no tensor: GPT-3's layer traces in well under 256 MiB",
          "[budget]") {
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
        {"--shapes-only -H 3", "not divisible by heads 3"},
        {"--shapes-only -b 4294967296 -n 4294967296 -d 4294967296 -H 1", "does not fit in 64 bits"},
    }));
    test::check_rejected(args, message);
}

TEST_CASE("--form mla: the plan gives every computed tensor's layout", "[mla]") {
    const auto [B, N, E, h, d_c, d_R, causal] = GENERATE(
        table<std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, bool>(
            {{2, 5, 16, 2, 6, 2, true}, {1, 7, 24, 4, 12, 4, false}}));
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
    traced.steps = mha::plan_pass(
        mha::mla_spec(m, mha::pass_spec(mha::mla_naive_sizes(m, B, N), mha::Weights(), in, masks,
                                        options, mha::Form::Mla)));
    require_planned(traced.steps, computed);
    std::size_t compared = 0;  // the absorbed form's weights and output against the naive's
    for (const mha::Step& ran : computed.steps) {
        if (!ran.facts.mla || !ran.facts.mla->max_difference) continue;
        CHECK(*ran.facts.mla->max_difference <= 1e-5);
        ++compared;
    }
    CHECK(compared == (streamed ? 1u : 2u));  // streamed: no weights to compare
    CHECK(mha::mla_parameter_count(m) ==
          w.w_q.numel() + w.w_kv_a.numel() + w.kv_norm.numel() + w.w_kv_b.numel() + w.w_o.numel());
}

TEST_CASE(
    "--head-dim and --scale-base: the plan gives every computed tensor's layout in every form",
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
        case mha::Form::PerHead:
            mha::forward_per_head(w, in, masks, options, computed);
            break;
        case mha::Form::Decode:
            mha::decode(w, in, masks, options, computed);
            break;
        case mha::Form::FusedQkv:
            mha::forward_fused_qkv(w, in, masks, options, computed);
            break;
        default:
            mha::forward(w, in, masks, options, computed);
            break;
    }
    mha::PassSpec spec;
    spec.sizes = s;
    spec.form = form;
    spec.path = options.path;
    spec.masks.causal = masks.causal;
    spec.masks.softcap = masks.softcap;
    spec.scale_base = 7.0;
    const std::vector<mha::Step> planned = mha::plan_pass(spec);
    require_planned(planned, computed);
    CHECK(mha::parameter_count(s, true) == w.parameter_count());
}

TEST_CASE("the pass refuses a tensor laid out otherwise than planned, at any optimisation") {
    mha::PassSpec spec;
    spec.sizes = {1, 2, 2, 4, 4, 4, 2, 2, 2};  // B 1, N = M 2, d_model 4, h 2, d_k 2
    Recorder rec;
    mha::PassTrace trace(rec, spec);
    trace.show_input(mha::Tensor({1, 2, 4}));
    SECTION("a wrong shape") {
        REQUIRE_THROWS_WITH(trace.show(mha::Tensor({1, 2, 3})),
                            "internal error: step 1 project Q was planned as shape (1, 2, 4) "
                            "strides (8, 4, 1) but computed as shape (1, 2, 3) strides (6, 3, 1)");
    }
    SECTION("the planned shape with other strides") {
        const mha::Tensor transposed = mha::Tensor({1, 4, 2}).transpose(1, 2);  // (1, 2, 4)
        REQUIRE_THROWS_WITH(trace.show(transposed),
                            "internal error: step 1 project Q was planned as shape (1, 2, 4) "
                            "strides (8, 4, 1) but computed as shape (1, 2, 4) strides (8, 1, 2)");
    }
    SECTION("a step past the plan's end") {
        const std::size_t planned = mha::plan_pass(spec).size();
        for (std::size_t i = 1; i < planned; ++i) trace.show_layout();
        REQUIRE_THROWS_WITH(trace.show_layout(), "internal error: the pass reported step " +
                                                     std::to_string(planned + 1) +
                                                     " of a plan of " + std::to_string(planned));
    }
}

TEST_CASE("the block's planned steps are the tensors the block computes") {
    using K = mha::StepKind;
    const auto [kind, B, N, E, h, G, d_ff, causal] = GENERATE(
        table<mha::BlockKind, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t,
              std::size_t, bool>({{mha::BlockKind::Pre, 2, 5, 16, 4, 4, 24, false},
                                  {mha::BlockKind::Post, 1, 3, 8, 2, 1, 32, true},
                                  {mha::BlockKind::Pre, 3, 4, 12, 3, 1, 7, true},
                                  {mha::BlockKind::Post, 2, 6, 32, 4, 2, 64, false}}));
    CAPTURE(kind == mha::BlockKind::Pre, B, N, E, h, G, d_ff, causal);
    const mha::Sizes s{B, N, N, E, E, E, h, G, E / h};
    const mha::Weights w = mha::seeded_weights(E, G * (E / h), true, false, 1);
    const mha::BlockWeights block = mha::seeded_block(E, d_ff, 1);
    mha::Masks masks;
    masks.causal = causal;
    mha::ForwardOptions options;
    options.heads = h;
    Recorder computed;
    mha::forward_block(w, block, kind, mha::seeded_inputs(s, true, 1), masks, options, computed);
    mha::PassSpec spec;  // from the sizes alone
    spec.sizes = s;
    spec.masks.causal = causal;
    spec.block = mha::BlockSpec{kind, d_ff};
    const std::vector<mha::Step> planned = mha::plan_pass(spec);

    require_planned(planned, computed);
    // 0-14 are the pass's own steps, planned as without the block
    spec.block.reset();
    const std::vector<mha::Step> attention = mha::plan_pass(spec);
    const std::size_t first = kind == mha::BlockKind::Pre ? 1 : 0;
    for (std::size_t i = 0; i < attention.size(); ++i)
        require_same_step(planned[first + i], attention[i]);
    CHECK(planned.size() == attention.size() + 7);
    const std::initializer_list<K> block_kinds = {K::Norm, K::Residual, K::FfnIn, K::Gelu,
                                                  K::FfnOut};
    CHECK(outer_kinds(planned, block_kinds) ==
          (kind == mha::BlockKind::Pre ? std::vector<K>{K::Norm, K::Residual, K::Norm, K::FfnIn,
                                                        K::Gelu, K::FfnOut, K::Residual}
                                       : std::vector<K>{K::Residual, K::Norm, K::FfnIn, K::Gelu,
                                                        K::FfnOut, K::Residual, K::Norm}));
    CHECK(planned.back().number == 21);
    // the multiply-adds of both linear layers, B·N·d_ff·d_model each; the parameters
    CHECK(mha::planned_macs(planned) == mha::planned_macs(attention) + 2 * B * N * d_ff * E);
    std::uint64_t parameters = 0;
    for (const mha::Step& step : planned) parameters += step.facts.parameters.value_or(0);
    CHECK(parameters == block.parameter_count());
    CHECK(mha::block_parameter_count(E, d_ff) == block.parameter_count());
}

TEST_CASE("the model's planned steps are the tensors the model computes") {
    using K = mha::StepKind;
    const mha::Model model = mha::load_model("../examples/models/kjv-2x4.npz", 1u << 30);
    const std::string text = "In the";
    const mha::ModelText tokens = mha::encode_text(text, model);
    const std::size_t layer = GENERATE(0, 1);
    CAPTURE(layer);
    Recorder computed;
    mha::forward_model(model, tokens.tokens, layer, 1, computed);
    const std::vector<mha::Step> planned =
        mha::plan_model(mha::model_spec(model, tokens.tokens.size(), layer));

    require_planned(planned, computed);
    // the embedding, the layers in order (the untraced one as one step, the traced one as its
    // block: 19 attention steps and 7 of the block's), the final norm, the head
    const std::vector<K> kinds = kinds_of(planned);
    CHECK(planned.size() == 1 + 1 + (19 + 7) + 2);
    CHECK(outer_kinds(planned, {K::Embed, K::Layer, K::Logits}) ==
          std::vector<K>{K::Embed, K::Layer, K::Logits});
    CHECK(kinds.front() == K::Embed);
    CHECK(kinds[layer == 0 ? kinds.size() - 3 : 1] == K::Layer);
    CHECK(planned[layer == 0 ? 1 : 2].kind == K::Norm);  // the traced block's norm1, step 15
    CHECK(kinds[kinds.size() - 2] == K::Norm);
    CHECK(kinds.back() == K::Logits);
    CHECK(planned.back().shape == mha::Shape{1, text.size(), model.vocab_size()});
}

TEST_CASE("--shapes-only --trace is --trace without values for the block and the model") {
    const std::string args = GENERATE(
        as<std::string>{}, "-b 1 -n 3 -d 8 -H 2 --block pre", "-b 1 -n 3 -d 8 -H 2 --block post",
        "-b 2 -n 5 -d 16 -H 4 -G 2 --causal --block pre --d-ff 24",
        "-b 1 -n 4 -d 16 -H 2 --block post --rope half --window 2 --softcap 30",
        "--model ../examples/models/kjv-2x4.npz --text 'In the beginning'",
        "--model ../examples/models/kjv-2x4.npz --text 'In the' --layer 1");
    CAPTURE(args);
    const test::RunResult computed = test::run_mha(args + " --trace");
    const test::RunResult planned = test::run_mha(args + " --trace --shapes-only");
    REQUIRE(computed.status == 0);
    REQUIRE(planned.status == 0);
    const std::string steps = test::trace_steps(computed.output);
    CHECK_FALSE(steps.empty());
    CHECK(test::trace_steps(planned.output) == steps);
    // JSON lists the same steps, notes and all
    const auto json_steps = [](const std::string& json) {
        const std::size_t from = json.find("\"steps\":["), to = json.find("],\"output\":");
        return from == std::string::npos || to == std::string::npos ? std::string()
                                                                    : json.substr(from, to - from);
    };
    const std::string json = json_steps(test::run_mha(args + " --format json", false).output);
    CHECK_FALSE(json.empty());
    CHECK(json_steps(test::run_mha(args + " --format json --shapes-only", false).output) == json);
}

TEST_CASE("--block and --model --shapes-only: the header, the costs, and what stays refused") {
    const test::RunResult block = test::run_mha("-b 1 -n 3 -d 8 -H 2 --block pre --shapes-only");
    REQUIRE(block.status == 0);
    // 4 (8, 8) projections with biases (288), 2 norms (32), linear1 (32·8 + 32), linear2
    // (8·32 + 8): 872, as the computed run says
    CHECK_THAT(block.output, Catch::Contains("parameters: 872"));
    CHECK_THAT(block.output, Catch::Contains("pre-LN block, d_ff=32, shapes only"));
    // attention 4·(3·8·8) + 2·(2·3·3·4) = 912, the feed-forward 2·(3·32·8) = 1,536
    CHECK_THAT(test::flat(block.output), Catch::Contains("take 2,448 multiply-adds"));
    const test::RunResult model = test::run_mha(
        "--model ../examples/models/kjv-2x4.npz --text 'In the' --shapes-only --format json",
        false);
    REQUIRE(model.status == 0);
    CHECK_THAT(model.output, Catch::Contains("\"shapes_only\":{"));
    CHECK_THAT(model.output, Catch::Contains("\"output\":null"));
    const test::RunResult markdown =
        test::run_mha("-b 1 -n 3 -d 8 -H 2 --block post --shapes-only --format markdown");
    REQUIRE(markdown.status == 0);
    CHECK_THAT(markdown.output, Catch::Contains("norm2(out)"));
    CHECK_THAT(markdown.output, Catch::Contains("Total: 96 B copied, 2,448 multiply-adds."));
    const std::string page = test::temp_path("block-shapes.html");
    REQUIRE(test::run_mha("-b 1 -n 3 -d 8 -H 2 --block pre --shapes-only --format html --output " +
                          page)
                .status == 0);
    CHECK_THAT(test::read_text(page), Catch::Contains("ffn = F.gelu(ffn_hidden) @ W_2.T + b_2"));
    std::remove(page.c_str());
    test::check_rejected("--model ../examples/models/kjv-2x4.npz --shapes-only",
                         "--model reads characters");
    test::check_rejected("--model ../examples/models/kjv-2x4.npz --text ab --shapes-only --heatmap",
                         "--shapes-only computes no weights to look at");
    test::check_rejected("--shapes-only --text ab", "--shapes-only computes no weights");
}

namespace {

// An einops pattern's side: its groups, each the axis names one dimension holds,
// "b n (h d)" -> {{b}, {n}, {h, d}}.
std::vector<std::vector<std::string>> einops_groups(const std::string& side) {
    std::vector<std::vector<std::string>> groups;
    bool open = false;
    std::string name;
    const auto end_name = [&] {
        if (name.empty()) return;
        if (!open || groups.empty()) groups.emplace_back();
        groups.back().push_back(name);
        name.clear();
    };
    for (char c : side) {
        if (c == '(') {
            end_name();
            groups.emplace_back();
            open = true;
        } else if (c == ')') {
            end_name();
            open = false;
        } else if (c == ' ') {
            end_name();
        } else {
            name += c;
        }
    }
    end_name();
    return groups;
}

// The axis names of a side, sorted: a rearrangement keeps every axis.
std::vector<std::string> einops_axes(const std::vector<std::vector<std::string>>& groups) {
    std::vector<std::string> axes;
    for (const auto& group : groups) axes.insert(axes.end(), group.begin(), group.end());
    std::sort(axes.begin(), axes.end());
    return axes;
}

// The einops axis a plan's dimension name stands for.
std::string einops_axis(const std::string& dim) {
    if (dim == "B") return "b";
    if (dim == "N") return "n";
    if (dim == "M") return "m";
    if (dim == "G") return "g";
    if (dim == "d_k") return "d";
    if (dim == "d_v") return "dv";
    if (dim == "qkv") return "three";
    return dim;  // h
}

// Every rearranging step carries a pattern whose last rearrangement keeps its axes and whose
// right-hand side is the step's tensor: one group per dimension, a lone axis named as the
// dimension, each group's sizes multiplying to the dimension's size. Other steps carry none.
void require_einops(const std::vector<mha::Step>& steps, const mha::Sizes& s) {
    using K = mha::StepKind;
    const std::map<std::string, std::size_t> sizes = {
        {"b", s.batch},    {"n", s.seq_len}, {"m", s.kv_len}, {"h", s.heads},
        {"g", s.kv_heads}, {"d", s.d_k()},   {"dv", s.d_v()}, {"three", 3}};
    std::size_t patterns = 0;
    for (const mha::Step& step : steps) {
        CAPTURE(step.number, step.name, step.tensor, step.einops);
        const bool rearranges = step.kind == K::SplitHeads || step.kind == K::MoveHeads ||
                                step.kind == K::Unbind || step.kind == K::MergeHeads ||
                                step.kind == K::JoinHeads || step.kind == K::Concat ||
                                step.kind == K::AssembleHeads;
        REQUIRE(step.einops.empty() == !rearranges);
        if (!rearranges) continue;
        ++patterns;
        const std::size_t arrow = step.einops.rfind(" -> ");
        REQUIRE(arrow != std::string::npos);
        const std::size_t then = step.einops.rfind("then ", arrow);
        const std::size_t from = then == std::string::npos ? 0 : then + 5;
        const auto left = einops_groups(step.einops.substr(from, arrow - from));
        auto right = einops_groups(step.einops.substr(arrow + 4));
        CHECK(einops_axes(left) == einops_axes(right));
        if (step.kind == K::Unbind) {  // q, k, v = rearrange(...): the leading axis unpacked
            REQUIRE(right.front() == std::vector<std::string>{"three"});
            right.erase(right.begin());
        }
        REQUIRE(right.size() == step.dims.size());
        for (std::size_t i = 0; i < right.size(); ++i) {
            CAPTURE(i, step.dims[i]);
            if (right[i].size() == 1) CHECK(right[i][0] == einops_axis(step.dims[i]));
            std::size_t product = 1;
            for (const std::string& axis : right[i]) {
                REQUIRE(sizes.count(axis) == 1);
                product *= sizes.at(axis);
            }
            CHECK(product == step.shape[i]);
        }
    }
    const bool decode = !steps.empty() && std::any_of(steps.begin(), steps.end(), [](auto& x) {
        return x.kind == mha::StepKind::Cache;
    });
    CHECK((patterns > 0) != decode);  // decode's steps attend to a cache: nothing rearranged
}

}  // namespace

TEST_CASE("every rearranging step's einops pattern names the step's own dimensions", "[einops]") {
    // Sizes chosen apart so that a pattern naming the wrong axis multiplies to a wrong size.
    const auto [h, G, D, form] = GENERATE(
        table<std::size_t, std::size_t, std::size_t, mha::Form>({{4, 4, 6, mha::Form::Packed},
                                                                 {4, 2, 6, mha::Form::Packed},
                                                                 {4, 1, 6, mha::Form::Packed},
                                                                 {4, 4, 11, mha::Form::Packed},
                                                                 {4, 2, 6, mha::Form::PerHead},
                                                                 {4, 2, 6, mha::Form::Decode},
                                                                 {4, 4, 6, mha::Form::FusedQkv}}));
    const bool streamed = GENERATE(false, true);
    const bool block = GENERATE(false, true);
    CAPTURE(h, G, D, int(form), streamed, block);
    const std::size_t E = 24, B = 7, N = 3;
    const bool cross = form == mha::Form::Packed && !block;  // M = 5 keys
    mha::PassSpec spec;
    spec.sizes = {B, N, cross ? 5u : N, E, E, E, h, G, D};
    spec.form = form;
    spec.self_attention = !cross;
    spec.path = streamed ? mha::AttentionPath::Streaming : mha::AttentionPath::Standard;
    spec.masks.causal = form == mha::Form::Decode;
    if (block && form == mha::Form::Packed) spec.block = mha::BlockSpec{mha::BlockKind::Pre, 40};
    require_einops(mha::plan_pass(spec), spec.sizes);
}

TEST_CASE("MLA's head assembly and its narrower values carry einops patterns", "[einops][mla]") {
    const bool streamed = GENERATE(false, true);
    const mha::MlaSizes m{24, 4, 5, 2, 9, 3};  // d_v = 3, d_k = d_h + d_R = 7
    mha::PassSpec spec = mha::pass_spec(mha::mla_naive_sizes(m, 2, 6), mha::Masks(),
                                        mha::ForwardOptions(), mha::Form::Mla);
    spec.path = streamed ? mha::AttentionPath::Streaming : mha::AttentionPath::Standard;
    spec = mha::mla_spec(m, spec);
    CAPTURE(streamed);
    require_einops(mha::plan_pass(spec), spec.sizes);
}
