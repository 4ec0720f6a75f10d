// MLA decoding with its latent cache (--form mla --decode T): the same bits as the one-shot
// causal pass at every thread count, paged or not; PyTorch's decode loop; the trace, the dry
// run, the memory it counts and the refusals.

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>

#include "app/run/budget.h"
#include "app/run/kv_pool.h"
#include "app/run/problem.h"
#include "core/forms/mla_decode.h"
#include "core/forms/mla_pass.h"
#include "helpers.h"
#include "core/tensor/storage.h"
#include "core/tensor/workspace.h"
#include "io/dry.h"
#include "io/init.h"
#include "io/npy.h"
#include "io/weights.h"
#include "recorder.h"
#include "show/notes.h"

namespace test_mla_decode {

namespace {

constexpr double weights_tolerance = 1e-5;  // attention weights, as test_modern's MLA checks
constexpr double output_tolerance = 1e-4;   // layer outputs, as test_modern's MLA checks

// The options of an MLA pass with h heads, DeepSeek-V2's RoPE and `threads` workers.
mha::ForwardOptions mla_options(std::size_t heads, std::size_t threads) {
    mha::ForwardOptions options;
    options.heads = heads;
    options.threads = threads;
    options.rope = mha::Rope{mha::RopeLayout::Half, 10000.0};
    return options;
}

mha::Masks causal_masks() {
    mha::Masks masks;
    masks.causal = true;
    return masks;
}

mha::Tensor fixture(const std::map<std::string, mha::npy::Array>& arrays, const std::string& name) {
    return mha::npy::to_tensor(arrays.at(name));
}

}  // namespace

TEST_CASE("MLA decoding gives the one-shot causal pass's bits, paged or not, at 1, 2 and 3 threads",
          "[mla-decode]") {
    // seeded d_model 32, h 4: d_h = d_v = 8, d_R 4, d_c 16; B 3, T 11
    const mha::MlaSizes m = mha::seeded_mla_sizes(32, 4, 16, 4);
    const mha::MlaWeights w = mha::seeded_mla_weights(m, 5);
    const std::size_t B = 3, T = 11;
    const mha::Tensor x = mha::seeded_inputs({B, T, T, 32, 32, 32, 4, 4, 8}, true, 5).x_q;
    const std::size_t threads = GENERATE(1, 2, 3);
    const auto [window, softcap] = GENERATE(table<std::size_t, double>({{0, 0.0}, {3, 2.5}}));
    CAPTURE(threads, window, softcap);
    mha::Masks masks = causal_masks();
    masks.window = window;
    masks.softcap = softcap;
    const mha::ForwardOptions options = mla_options(4, threads);
    mha::NullTracer none;
    const mha::MlaResult one_shot = mha::mla_forward(w, x, masks, options, mha::MlaForm::Naive);
    const mha::ForwardResult decoded = mha::decode_mla(w, x, masks, options, none);
    CHECK(test::same_bits(decoded.output.to_vector(), one_shot.output.to_vector()));
    CHECK(test::same_bits(decoded.weights.to_vector(), one_shot.weights.to_vector()));
    SECTION("traced: the traced one-shot pass's bits too") {
        test::Recorder traced;
        const mha::ForwardResult shown = mha::forward_mla(w, x, masks, options, traced);
        const mha::ForwardResult decoded_traced = mha::decode_mla(w, x, masks, options, traced);
        CHECK(test::same_bits(decoded_traced.output.to_vector(), shown.output.to_vector()));
        CHECK(test::same_bits(decoded_traced.weights.to_vector(), shown.weights.to_vector()));
    }
    SECTION("paged in blocks of S, in order or shuffled") {
        const std::size_t S = GENERATE(1, 3, 4, 16);
        const bool shuffled = GENERATE(false, true);
        CAPTURE(S, shuffled);
        const mha::KvPaging paging{
            S, mha::pool_order(B * mha::blocks_for(T, S),
                               shuffled ? std::optional<std::uint64_t>(7) : std::nullopt)};
        const mha::ForwardResult paged = mha::decode_mla(w, x, masks, options, none, &paging);
        CHECK(test::same_bits(paged.output.to_vector(), one_shot.output.to_vector()));
        CHECK(test::same_bits(paged.weights.to_vector(), one_shot.weights.to_vector()));
    }
}

TEST_CASE("MLA decoding on the streaming path keeps no weights and gives the standard output",
          "[mla-decode]") {
    const mha::MlaSizes m = mha::seeded_mla_sizes(32, 4, 16, 4);
    const mha::MlaWeights w = mha::seeded_mla_weights(m, 9);
    const mha::Tensor x = mha::seeded_inputs({2, 7, 7, 32, 32, 32, 4, 4, 8}, true, 9).x_q;
    mha::ForwardOptions options = mla_options(4, 2);
    mha::NullTracer none;
    const mha::ForwardResult standard = mha::decode_mla(w, x, causal_masks(), options, none);
    options.path = mha::AttentionPath::Streaming;
    const mha::ForwardResult streamed = mha::decode_mla(w, x, causal_masks(), options, none);
    CHECK(streamed.weights.empty());
    test::require_close(streamed.output, standard.output, weights_tolerance);
}

TEST_CASE("MLA decoding matches PyTorch's decode loop over a latent cache", "[mla-decode]") {
    // tests/data/make_modern_fixtures.py mla-decode: mla_causal's layer decoded token by token,
    // caching c_kv (d_c 6) and k_pe (d_R 2) only, up-projecting every head's k_nope and v
    const auto sd = mha::npy::read_npz("data/modern/mla_decode/weights.npz");
    const auto expected = mha::npy::read_npz("data/modern/mla_decode/expected.npz");
    const mha::MlaWeights w = mha::mla_weights_from_state_dict(sd, "weights.npz", 2);
    const mha::Tensor x =
        mha::npy::to_tensor(mha::npy::read_npy("data/modern/mla_decode/query.npy"));
    const std::size_t S = GENERATE(0, 2);  // contiguous, and blocks of 2 positions
    CAPTURE(S);
    const mha::KvPaging paging{2, mha::pool_order(2 * mha::blocks_for(5, 2), 3)};
    mha::NullTracer none;
    const mha::ForwardResult r = mha::decode_mla(w, x, causal_masks(), mla_options(2, 1), none,
                                                 S > 0 ? &paging : nullptr);
    test::require_close(r.weights, fixture(expected, "attn_weights"), weights_tolerance);
    test::require_close(r.output, fixture(expected, "output"), output_tolerance);
    CHECK(fixture(expected, "latent_cache").shape() == mha::Shape{2, 5, 6 + 2});
}

TEST_CASE("--form mla --decode saves the one-shot causal run's arrays byte for byte",
          "[mla-decode]") {
    const std::string threads = GENERATE("1", "2", "3");
    const std::string sizes = "-b 2 -d 32 -H 4 --latent-dim 12 --rope-dim 4 --threads " + threads;
    const std::string one_shot = test::saved_bytes("--form mla --causal -n 9 " + sizes);
    for (const char* decode : {"--form mla --decode 9", "--decode 9 --form mla",
                               "--form mla --decode 9 --kv-block-size 4 --kv-pool-seed 2",
                               "--form mla --decode 9 --kv-block-size 1"}) {
        CAPTURE(decode);
        CHECK(test::saved_bytes(std::string(decode) + " " + sizes) == one_shot);
    }
}

TEST_CASE("the MLA decode trace shows the latent cache, its bytes and its blocks",
          "[mla-decode]") {
    // d_model 16, h 2: d_h = d_v = 8, d_c 12, d_R 4; B 2, T 5. A token caches d_c + d_R = 16
    // floats, 64 bytes, against MHA's 2·h·d_h·4 = 128; five tokens of two sequences 640 bytes.
    const std::string sizes = "-b 2 -d 16 -H 2 --latent-dim 12 --rope-dim 4 ";
    const test::RunResult r = test::run_mha(sizes + "--form mla --decode 5 --trace");
    REQUIRE(r.status == 0);
    const std::string text = test::flat(r.output);
    CHECK_THAT(text, Catch::Contains("C_cache[:, :, 4], R_cache[:, :, 4] = kv_a_layernorm(c_kv_t)") &&
                         Catch::Contains("(B=2, 1=1, t=5, d_c=12)") &&
                         Catch::Contains("the cache holds 640 bytes: (d_c + d_R)·4 = 64 bytes per "
                                         "token and sequence, shared by all 2 heads, against "
                                         "2·h·d_h·4 = 128 for MHA's K and V") &&
                         Catch::Contains("k_nope, V = (C_cache[:, 0, :5] @ kv_b_proj.T)") &&
                         Catch::Contains("token 5 of 5 done; the cache holds 640 bytes of c_kv "
                                         "and k_pe"));
    const test::RunResult explained = test::run_mha(sizes + "--form mla --decode 2 --explain --trace");
    REQUIRE(explained.status == 0);
    CHECK_THAT(test::flat(explained.output),
               Catch::Contains("In MLA decoding, the new token's compressed latent and its rotated "
                               "RoPE key are appended to the cache"));
    // B 2, T 5, S 2: 3 blocks a sequence, 6 in the pool; t = 4 is entry 2, slot 0; one slot of
    // the last blocks is unused: 2 sequences · 16 floats · 4 bytes = 128 bytes
    const test::RunResult paged =
        test::run_mha(sizes + "--form mla --decode 5 --kv-block-size 2 --trace");
    REQUIRE(paged.status == 0);
    CHECK_THAT(test::flat(paged.output),
               Catch::Contains("C_pool[block_table[:, 4 // 2], :, 4 % 2], R_pool[block_table[:, "
                               "4 // 2], :, 4 % 2]") &&
                   Catch::Contains("(blocks=6, 1=1, S=2, d_c=12)") &&
                   Catch::Contains("128 bytes of c_kv and k_pe each") &&
                   Catch::Contains("block_table[4 // 2] = block_table[2] = 2, slot t % S = 4 % 2 "
                                   "= 0") &&
                   Catch::Contains("unused 128 B") &&
                   Catch::Contains("k_nope, V = ((C_pool[block_table[:, j // 2], 0, j % 2] for j "
                                   "< 5) @ kv_b_proj.T)"));
}

TEST_CASE("a dry run of MLA decoding describes the computed steps and hands out no storage",
          "[mla-decode][dry]") {
    const mha::MlaSizes m = mha::seeded_mla_sizes(16, 2, 8, 4);
    const std::size_t B = 2, T = 4;
    mha::Masks masks = causal_masks();
    mha::ForwardOptions options = mla_options(2, 1);
    options.path = GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    const bool paged = GENERATE(false, true);
    CAPTURE(paged);
    const mha::KvPaging paging{3, {1, 0, 3, 2}};  // B = 2, T = 4: 2 blocks of 3 each, shuffled
    test::Recorder computed, dry;
    const mha::Tensor x =
        mha::seeded_inputs({B, T, T, m.d_model, m.d_model, m.d_model, 2, 2, 8}, true, 1).x_q;
    mha::decode_mla(mha::seeded_mla_weights(m, 1), x, masks, options, computed,
                    paged ? &paging : nullptr);
    mha::Workspace workspace = mha::Workspace::dry();
    options.workspace = &workspace;
    const std::uint64_t before = mha::tensor_bytes_handed_out();
    mha::decode_mla(mha::dry_mla_weights(m), mha::Tensor::shape_only({B, T, m.d_model}), masks,
                    options, dry, paged ? &paging : nullptr);
    CHECK(mha::tensor_bytes_handed_out() == before);
    REQUIRE(dry.steps.size() == computed.steps.size());
    for (std::size_t i = 0; i < dry.steps.size(); ++i) {
        const mha::Step& a = dry.steps[i];
        const mha::Step& b = computed.steps[i];
        CAPTURE(i, b.number, b.expression);
        CHECK((a.kind == b.kind && a.number == b.number && a.expression == b.expression));
        CHECK((a.dims == b.dims && a.shape == b.shape && a.strides == b.strides));
        CHECK(a.macs == b.macs);
        CHECK(mha::step_notes(a) == mha::step_notes(b));
    }
}

TEST_CASE("--preset deepseek-v2-lite --shapes-only --decode runs MLA's decode dry",
          "[mla-decode]") {
    const test::RunResult r =
        test::run_mha("--preset deepseek-v2-lite --shapes-only --decode 3 -b 1");
    CAPTURE(r.output);
    REQUIRE(r.status == 0);
    // d_c 512, d_R 64: 576 floats, 2,304 bytes a token; h 16, d_h 128: MHA's 16,384
    CHECK_THAT(test::flat(r.output),
               Catch::Contains("(B=1, 1=1, t=3, d_c=512)") &&
                   Catch::Contains("decoded token by token with a cache of c_kv and k_pe") &&
                   Catch::Contains("k_nope, V = (C_cache[:, 0, :3] @ kv_b_proj.T)"));
    const test::RunResult paged =
        test::run_mha("--preset deepseek-v2-lite --shapes-only --decode 3 -b 1 --kv-block-size 2");
    REQUIRE(paged.status == 0);
    CHECK_THAT(paged.output, Catch::Contains("(blocks=2, 1=1, S=2, d_c=512)"));
}

TEST_CASE("MLA decoding's memory counts the latent cache", "[mla-decode]") {
    // d_model 16, h 2: d_h = d_v = 8, d_R 4, d_c 12; B 2, T 5, standard path, 1 thread.
    // A dry decode of the sizes counts them (pass_bytes, one thread; dry_peak_bytes, its
    // tensors alone).
    const auto bytes = [](const mha::MlaSizes& m, std::optional<std::size_t> block_size,
                          bool tensors_alone = false) {
        mha::Config c;
        c.form = mha::Form::Mla;
        c.mla_decode = true;
        c.causal = true;
        c.kv_block_size = block_size;
        const mha::Sizes s{2, 5, 5, 16, 16, 16, 2, 2, 8};
        const mha::PassProblem dry = mha::dry_problem(c, s, mha::AttentionPath::Standard, 0, m);
        return tensors_alone ? mha::dry_peak_bytes(c, dry)
                             : mha::pass_bytes(c, mha::mla_naive_sizes(m, 2, 5), dry,
                                               mha::AttentionPath::Standard, 1, m);
    };
    const mha::MlaSizes m = mha::seeded_mla_sizes(16, 2, 12, 4);
    const std::uint64_t plain = bytes(m, std::nullopt);
    // blocks of 4: 2 blocks a sequence, 3 slots unused in each of 2 sequences, 16 floats a
    // slot (3·2·16·4 = 384 bytes), and one sequence's 5 positions gathered (5·16·4 = 320)
    CHECK(bytes(m, std::size_t(4)) - plain == 384 + 320);
    // a latent 8 floats wider raises the tensors' peak by them in the cache (2 sequences of 5
    // tokens each) and in the token's kv_a and c_kv (2 sequences): (2·5·8 + 2·2·8)·4 = 448
    // bytes; the heads and the shared pass do not change, and the latents copied out for step
    // 3 are not live at the peak
    CHECK(bytes(mha::seeded_mla_sizes(16, 2, 20, 4), std::nullopt, true) -
              bytes(m, std::nullopt, true) ==
          448);
    test::check_rejected("--form mla --decode 4096 -d 1024 -H 16 -b 8 --max-memory 64M",
                         "more than --max-memory");
}

TEST_CASE("MLA decoding refuses what it does not build, in one line", "[mla-decode]") {
    const auto [args, message] = GENERATE(table<std::string, std::string>({
        {"--form mla --decode 4 --kv-quant int8",
         "--form mla caches its latent token by token with --decode T (paged with "
         "--kv-block-size); it does not take --prefill-chunks, --draft, --draft-tree or "
         "--kv-quant"},
        {"--form mla --decode 4 --draft 2", "it does not take --prefill-chunks, --draft"},
        {"--form mla --decode 4 --draft-tree -1,0", "it does not take --prefill-chunks, --draft"},
        {"--form mla --prefill-chunks 2,2", "it does not take --prefill-chunks, --draft"},
        {"--form mla --decode 4 --mask data/exact/bias_kv_masks/mask.npy",
         "decoding is causal self-attention: one sequence attending to itself, with no "
         "attn_mask or key padding mask"},
        {"--form mla --decode 4 --fused-qkv",
         "--decode, --fused-qkv, --per-head, --block and --form mla are different forms"},
        {"--form mla --decode 4 --backward", "--backward does not run on --decode"},
        {"--form mla --decode 4 --head-contributions",
         "--decode does not give --head-contributions"},
        {"--preset deepseek-v2-lite --shapes-only --decode 4 --block pre",
         "--preset deepseek-v2-lite attends with MLA (--form mla), which --fused-qkv, --per-head "
         "and --block do not compute"},
    }));
    test::check_rejected(args, message);
}

}  // namespace test_mla_decode
