// --shapes-only and --preset: a dry run's header, costs and refusals at real models' sizes,
// and the einops patterns its steps carry; presets fill in the sizes. (That a dry run shows
// the computed run's very steps: test_dry_run.cpp.)

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
#include "core/tensor/workspace.h"
#include "helpers.h"
#include "io/dry.h"
#include "io/init.h"
#include "io/model_file.h"
#include "recorder.h"
#include "show/notes.h"

namespace test_shapes {

using test::Recorder;

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

TEST_CASE("--shapes-only builds no RoPE table: a huge head dimension stays within a few MiB",
          "[budget]") {
    // A dry run computes no angle: --head-dim 100000000 once built 385 MiB of cos/sin tables.
    const long peak = test::peak_rss_kib(
        test::mha_binary() +
        " --shapes-only --rope half --head-dim 100000000 --max-memory 16M >/dev/null");
    CHECK(peak > 0);
    CHECK(peak < 64 * 1024);
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
    // decoding T tokens of the model's context: N = T, not the whole context
    const test::RunResult decode = test::run_mha("--preset llama3-8b --shapes-only --decode 100");
    REQUIRE(decode.status == 0);
    CHECK_THAT(decode.output, Catch::Contains("B=1  N=100  M=100  d_model=4096") &&
                                  Catch::Contains("K_cache[:, :, 99]"));

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
        {"--preset llama3-8b --shapes-only --decode 8193",
         "--decode 8193 is longer than Llama 3 8B's context of 8192 positions"},
        {"--shapes-only -H 3", "not divisible by heads 3"},
        {"--shapes-only -b 4294967296 -n 4294967296 -d 4294967296 -H 1", "does not fit in 64 bits"},
    }));
    test::check_rejected(args, message);
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
    const mha::Sizes s{B, N, cross ? 5u : N, E, E, E, h, G, D};
    const mha::Weights w = mha::dry_weights(s, true, false);
    const mha::Inputs in = mha::dry_inputs(s, !cross);
    mha::Masks masks;
    masks.causal = form == mha::Form::Decode;
    mha::ForwardOptions options;
    options.heads = h;
    options.path = streamed ? mha::AttentionPath::Streaming : mha::AttentionPath::Standard;
    mha::Workspace workspace = mha::Workspace::dry();  // a dry run: the steps, no values
    options.workspace = &workspace;
    Recorder dry;
    if (block && form == mha::Form::Packed) {
        mha::forward_block(w, mha::dry_block(E, 40), mha::BlockKind::Pre, in, masks, options, dry);
    } else if (form == mha::Form::PerHead) {
        mha::forward_per_head(w, in, masks, options, dry);
    } else if (form == mha::Form::Decode) {
        mha::decode(w, in, masks, options, dry);
    } else if (form == mha::Form::FusedQkv) {
        mha::forward_fused_qkv(w, in, masks, options, dry);
    } else {
        mha::forward(w, in, masks, options, dry);
    }
    require_einops(dry.steps, s);
}

TEST_CASE("MLA's head assembly and its narrower values carry einops patterns", "[einops][mla]") {
    const bool streamed = GENERATE(false, true);
    const mha::MlaSizes m{24, 4, 5, 2, 9, 3};  // d_v = 3, d_k = d_h + d_R = 7
    mha::ForwardOptions options;
    options.heads = m.heads;
    options.path = streamed ? mha::AttentionPath::Streaming : mha::AttentionPath::Standard;
    mha::Workspace workspace = mha::Workspace::dry();
    options.workspace = &workspace;
    CAPTURE(streamed);
    Recorder dry;
    mha::forward_mla(mha::dry_mla_weights(m), mha::Tensor::shape_only({2, 6, 24}), mha::Masks(),
                     options, dry);
    require_einops(dry.steps, mha::mla_naive_sizes(m, 2, 6));
}

}  // namespace test_shapes
