// State-dict loading: every supported layout, and errors that name the array
// and the shape expected. Masks: both conventions.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "helpers.h"
#include "io/init.h"
#include "io/masks.h"
#include "io/weights.h"

namespace test_weights {

using mha::npy::Array;

namespace {

constexpr std::size_t E = 4;

// A float32 array whose values count up from `start`, so slices can be recognised.
Array counting(mha::Shape shape, double start = 0) {
    Array a;
    a.shape = shape;
    a.values.resize(mha::element_count(shape));
    for (std::size_t i = 0; i < a.values.size(); ++i) a.values[i] = start + double(i);
    return a;
}

std::map<std::string, Array> torch_dict() {
    return {{"in_proj_weight", counting({3 * E, E})},
            {"in_proj_bias", counting({3 * E}, 100)},
            {"out_proj.weight", counting({E, E}, 200)},
            {"out_proj.bias", counting({E}, 300)}};
}

}  // namespace

TEST_CASE("nn.MultiheadAttention's packed in_proj splits into q, k, v in that order") {
    const mha::Weights w = mha::weights_from_state_dict(torch_dict(), "w.npz");
    CHECK(w.w_q.at({0, 0}) == 0.0f);
    CHECK(w.w_k.at({0, 0}) == float(E * E));
    CHECK(w.w_v.at({3, 3}) == float(3 * E * E - 1));
    CHECK(w.b_k.at({0}) == 104.0f);
    CHECK(w.w_o.at({0, 1}) == 201.0f);
    CHECK(w.b_o.at({3}) == 303.0f);
    CHECK(w.parameter_count() == 4 * E * E + 4 * E);
}

TEST_CASE("separate q/k/v_proj_weight carry kdim and vdim") {
    const mha::Weights w = mha::weights_from_state_dict({{"q_proj_weight", counting({E, E})},
                                                         {"k_proj_weight", counting({E, 3})},
                                                         {"v_proj_weight", counting({E, 2})},
                                                         {"out_proj.weight", counting({E, E})}},
                                                        "w.npz");
    CHECK(w.kdim() == 3);
    CHECK(w.vdim() == 2);
    CHECK_FALSE(w.any_bias());
}

TEST_CASE("from-scratch names: W_q..W_o, lowercase, and a fused W_qkv") {
    std::map<std::string, Array> upper, lower;
    for (const char* p : {"q", "k", "v", "o"}) {
        upper[std::string("W_") + p + ".weight"] = counting({E, E});
        upper[std::string("W_") + p + ".bias"] = counting({E});
        lower[std::string("w_") + p + ".weight"] = counting({E, E});
    }
    CHECK(mha::weights_from_state_dict(upper, "w.npz").parameter_count() == 4 * E * E + 4 * E);
    CHECK(mha::weights_from_state_dict(lower, "w.npz").parameter_count() == 4 * E * E);
    const mha::Weights fused = mha::weights_from_state_dict(
        {{"W_qkv.weight", counting({3 * E, E})}, {"W_o.weight", counting({E, E})}}, "w.npz");
    CHECK(fused.w_v.at({0, 0}) == float(2 * E * E));
}

TEST_CASE("missing, extra, mis-shaped and mistyped arrays are named") {
    auto dict = torch_dict();
    dict.erase("out_proj.weight");
    REQUIRE_THROWS_WITH(mha::weights_from_state_dict(dict, "w.npz"),
                        Catch::Contains("w.npz: missing array 'out_proj.weight' of shape (4, 4)"));
    dict = torch_dict();
    dict["extra"] = counting({2});
    REQUIRE_THROWS_WITH(mha::weights_from_state_dict(dict, "w.npz"),
                        Catch::Contains("unexpected array 'extra' of shape (2,)"));
    dict = torch_dict();
    dict["out_proj.bias"] = counting({E + 1});
    REQUIRE_THROWS_WITH(mha::weights_from_state_dict(dict, "w.npz"),
                        Catch::Contains("'out_proj.bias' has shape (5,), expected (4,)"));
    dict = torch_dict();
    dict["out_proj.weight"].kind = 'b';
    dict["out_proj.weight"].item_size = 1;
    REQUIRE_THROWS_WITH(mha::weights_from_state_dict(dict, "w.npz"), Catch::Contains("is bool"));
    REQUIRE_THROWS_WITH(
        mha::weights_from_state_dict({{"linear.weight", counting({E, E})}}, "w.npz"),
        Catch::Contains("not a state dict mha knows"));
    REQUIRE_THROWS_WITH(
        mha::weights_from_state_dict({{"in_proj_weight", counting({3 * E})}}, "w.npz"),
        Catch::Contains("expected a matrix"));
}

TEST_CASE("bool and integer masks: block by default, keep on request; floats are added") {
    Array bools = counting({2, 2});
    bools.kind = 'b';
    bools.item_size = 1;
    bools.values = {1, 0, 0, 1};
    std::string note;
    const mha::Tensor block = mha::additive_mask(bools, mha::MaskMeaning::Block, "m", note);
    CHECK(std::isinf(block.at({0, 0})));
    CHECK(block.at({0, 1}) == 0.0f);
    CHECK_THAT(note, Catch::Contains("True/non-zero = blocked"));
    const mha::Tensor keep = mha::additive_mask(bools, mha::MaskMeaning::Keep, "m", note);
    CHECK(keep.at({0, 0}) == 0.0f);
    CHECK(std::isinf(keep.at({0, 1})));
    CHECK_THAT(note, Catch::Contains("0 = blocked"));
    const mha::Tensor added =
        mha::additive_mask(counting({2, 2}, -1.5), mha::MaskMeaning::Block, "m", note);
    CHECK(added.at({1, 1}) == 1.5f);
    CHECK_THAT(note, Catch::Contains("added to the scores"));
    REQUIRE_THROWS_WITH(
        mha::additive_mask(counting({2, 2}), mha::MaskMeaning::Keep, "m", note),
        Catch::Contains("--mask-means keep applies to bool and integer masks only"));
}

TEST_CASE("num_heads saved beside a state dict is taken out and read; anything else is refused") {
    std::map<std::string, Array> arrays = torch_dict();
    CHECK_FALSE(mha::take_num_heads(arrays, "w.npz").has_value());
    Array heads = counting({}, 2);  // np.int64(2): shape (), one value
    heads.kind = 'i';
    heads.item_size = 8;
    arrays["num_heads"] = heads;
    CHECK(mha::take_num_heads(arrays, "w.npz") == std::optional<std::size_t>(2));
    CHECK(arrays.count("num_heads") == 0);  // so the state dict has no leftover
    CHECK(mha::weights_from_state_dict(arrays, "w.npz").d_model() == E);
    Array two_values = heads, zero = heads;
    two_values.shape = {2};
    two_values.values = {2, 2};
    zero.values = {0};
    for (const Array& bad : {counting({}, 2), two_values, zero}) {  // float, (2,), 0
        arrays["num_heads"] = bad;
        REQUIRE_THROWS_WITH(mha::take_num_heads(arrays, "w.npz"),
                            Catch::Contains("w.npz: num_heads must be one positive integer"));
    }
}

TEST_CASE("4-D masks broadcast over (B, h, N, M) as PyTorch's (N, M), (B, N, M), (B·h, N, M)") {
    const std::size_t B = 2, h = 2;
    // (1, 1, 1, 3) -> (1, 3): the same plane for every batch and head
    const mha::Tensor shared = mha::broadcast_attn_mask(mha::Tensor({1, 1, 1, 3}, {0, 1, 2}), B, h);
    CHECK(shared.shape() == mha::Shape{1, 3});
    // (B, 1, 1, 2) -> (B, 1, 2): one plane per batch
    const mha::Tensor per_batch =
        mha::broadcast_attn_mask(mha::Tensor({B, 1, 1, 2}, {0, 1, 2, 3}), B, h);
    CHECK(per_batch.shape() == mha::Shape{B, 1, 2});
    CHECK(per_batch.to_vector() == std::vector<float>{0, 1, 2, 3});
    // (1, h, 1, 2) -> (B·h, 1, 2): index b·h + head, so the two heads' planes repeat per batch:
    // head 0 = (0, 1), head 1 = (2, 3) -> b0h0, b0h1, b1h0, b1h1 = 0 1 2 3 0 1 2 3
    const mha::Tensor per_head =
        mha::broadcast_attn_mask(mha::Tensor({1, h, 1, 2}, {0, 1, 2, 3}), B, h);
    CHECK(per_head.shape() == mha::Shape{B * h, 1, 2});
    CHECK(per_head.to_vector() == std::vector<float>{0, 1, 2, 3, 0, 1, 2, 3});
    // (B, h, 1, 1) -> (B·h, 1, 1) in the same batch-major order
    const mha::Tensor full =
        mha::broadcast_attn_mask(mha::Tensor({B, h, 1, 1}, {0, 1, 2, 3}), B, h);
    CHECK(full.shape() == mha::Shape{B * h, 1, 1});
    CHECK(full.to_vector() == std::vector<float>{0, 1, 2, 3});
    // a 2-D mask passes through; a leading size that is neither 1 nor B is refused
    CHECK(mha::broadcast_attn_mask(mha::Tensor({2, 2}), B, h).shape() == mha::Shape{2, 2});
    REQUIRE_THROWS_WITH(mha::broadcast_attn_mask(mha::Tensor({3, 1, 2, 2}), B, h),
                        Catch::Contains("must be (1 or 2, 1 or 2, N, M); got (3, 1, 2, 2)"));
}

TEST_CASE("a bool/int mask that hides the diagonal or a whole row gets the --mask-means keep hint",
          "[masks]") {
    const float x = -std::numeric_limits<float>::infinity();
    // (2, 2): the diagonal blocked, as a 1 = keep identity mask reads under True = blocked
    CHECK(mha::blocks_diagonal_or_a_row(mha::Tensor({2, 2}, {x, 0, 0, x})));
    // row 1 blocked entirely (N = 2, M = 3)
    CHECK(mha::blocks_diagonal_or_a_row(mha::Tensor({2, 3}, {0, x, x, x, x, x})));
    // a causal mask the PyTorch way: above the diagonal only
    CHECK_FALSE(mha::blocks_diagonal_or_a_row(mha::Tensor({2, 2}, {0, x, 0, 0})));
    // the second (2, 2) matrix of a (2, 2, 2) mask hides its diagonal
    CHECK(mha::blocks_diagonal_or_a_row(mha::Tensor({2, 2, 2}, {0, x, 0, 0, x, 0, 0, x})));

    // The lower-triangular ones of exercise 3, read as PyTorch reads them: the hint on
    // stderr names --mask-means keep and no longer suggests --masked-rows zero.
    const std::string files =
        "--input ../examples/exercises/03-causal-masks/query.npy "
        "--mask ../examples/exercises/03-causal-masks/mask.npy -H 2";
    const auto stderr_of = [](const std::string& args) {
        return test::run_command(test::mha_binary() + " " + args + " 2>&1 >/dev/null");
    };
    const test::RunResult block = stderr_of(files);
    CHECK(block.status == 0);
    CHECK_THAT(block.output, Catch::Contains("add --mask-means keep") &&
                                 !Catch::Contains("--masked-rows zero gives zeros"));
    const test::RunResult keep = stderr_of(files + " --mask-means keep");
    CHECK(keep.status == 0);
    CHECK(keep.output.empty());
    // A causal run without a mask file keeps the old advice.
    CHECK_THAT(stderr_of("-b 1 -n 3 -m 2 -d 8 -H 2 --causal").output,
               Catch::Contains("--masked-rows zero gives zeros") && !Catch::Contains("keep"));
}

TEST_CASE(
    "Hugging Face's q_proj ... o_proj read as the from-scratch W_q ... W_o, K and V with G·d_k "
    "rows") {
    const std::map<std::string, Array> scratch = {{"W_q.weight", counting({E, E})},
                                                  {"W_k.weight", counting({2, E}, 50)},
                                                  {"W_v.weight", counting({2, E}, 70)},
                                                  {"W_o.weight", counting({E, E}, 200)},
                                                  {"W_q.bias", counting({E}, 300)}};
    const std::map<std::string, Array> hugging_face = {{"q_proj.weight", counting({E, E})},
                                                       {"k_proj.weight", counting({2, E}, 50)},
                                                       {"v_proj.weight", counting({2, E}, 70)},
                                                       {"o_proj.weight", counting({E, E}, 200)},
                                                       {"q_proj.bias", counting({E}, 300)}};
    const mha::Weights a = mha::weights_from_state_dict(scratch, "a.npz");
    const mha::Weights b = mha::weights_from_state_dict(hugging_face, "b.npz");
    for (const auto& [x, y] : {std::pair{&a.w_q, &b.w_q},
                               {&a.w_k, &b.w_k},
                               {&a.w_v, &b.w_v},
                               {&a.w_o, &b.w_o},
                               {&a.b_q, &b.b_q}}) {
        CHECK(x->shape() == y->shape());
        CHECK(x->to_vector() == y->to_vector());
    }
    CHECK(b.b_k.empty());
    // BART and Whisper name the output projection out_proj
    std::map<std::string, Array> bart = hugging_face;
    bart["out_proj.weight"] = bart.at("o_proj.weight");
    bart.erase("o_proj.weight");
    CHECK(mha::weights_from_state_dict(bart, "c.npz").w_o.to_vector() == a.w_o.to_vector());
}

TEST_CASE("GPT-2's Conv1D c_attn and c_proj are read transposed, c_attn split into q, k, v") {
    std::map<std::string, Array> gpt2 = {{"c_attn.weight", counting({E, 3 * E})},
                                         {"c_attn.bias", counting({3 * E}, 100)},
                                         {"c_proj.weight", counting({E, E}, 200)},
                                         {"c_proj.bias", counting({E}, 300)}};
    const mha::Weights w = mha::weights_from_state_dict(gpt2, "g.npz");
    // c_attn.weight (E, 3E) holds 12·i + j at (i, j); transposed, row r of in_proj_weight is
    // column r: W_q (r, c) = 12·c + r, W_k (r, c) = 12·c + 4 + r, W_v (r, c) = 12·c + 8 + r
    CHECK(w.w_q.shape() == mha::Shape{E, E});
    CHECK(w.w_q.at({0, 1}) == 12.0f);
    CHECK(w.w_q.at({1, 0}) == 1.0f);
    CHECK(w.w_k.at({0, 1}) == 16.0f);
    CHECK(w.w_v.at({3, 3}) == 47.0f);
    CHECK(w.b_k.at({0}) == 104.0f);  // the bias is not transposed: [b_q | b_k | b_v]
    // c_proj.weight holds 200 + 4·i + j; W_o (r, c) = 200 + 4·c + r
    CHECK(w.w_o.at({0, 1}) == 204.0f);
    CHECK(w.w_o.at({1, 0}) == 201.0f);
    CHECK(w.b_o.at({3}) == 303.0f);
    // older Hugging Face exports carry the causal mask buffer and masked_bias: passed over
    Array mask = counting({1, 1, 8, 8});
    mask.kind = 'b';
    gpt2["bias"] = mask;
    gpt2["masked_bias"] = counting({});
    CHECK(mha::weights_from_state_dict(gpt2, "g.npz").w_o.to_vector() == w.w_o.to_vector());
    gpt2["bias"] = counting({E});  // not the mask buffer's shape
    REQUIRE_THROWS_WITH(
        mha::weights_from_state_dict(gpt2, "g.npz"),
        Catch::StartsWith("g.npz: unexpected array 'bias' of shape (4,) (GPT-2 attention"));
    gpt2.erase("bias");
    gpt2["c_attn.weight"] = counting({3 * E, E});  // saved the nn.Linear way
    REQUIRE_THROWS_WITH(mha::weights_from_state_dict(gpt2, "g.npz"),
                        "g.npz: array 'c_attn.weight' has shape (12, 4), expected (12, 36)");
}

TEST_CASE("timm's ViT qkv splits into q, k, v as in_proj_weight does; proj is W_o", "[timm]") {
    std::map<std::string, Array> timm = {{"qkv.weight", counting({3 * E, E})},
                                         {"qkv.bias", counting({3 * E}, 100)},
                                         {"proj.weight", counting({E, E}, 200)},
                                         {"proj.bias", counting({E}, 300)}};
    const mha::Weights w = mha::weights_from_state_dict(timm, "t.npz");
    const mha::Weights packed = mha::weights_from_state_dict(torch_dict(), "p.npz");
    for (const auto& [ours, theirs] :
         {std::pair{&w.w_q, &packed.w_q}, {&w.w_k, &packed.w_k}, {&w.w_v, &packed.w_v},
          {&w.w_o, &packed.w_o}, {&w.b_q, &packed.b_q}, {&w.b_v, &packed.b_v}, {&w.b_o, &packed.b_o}}) {
        CHECK(ours->shape() == theirs->shape());
        CHECK(ours->to_vector() == theirs->to_vector());
    }
    timm.erase("qkv.bias");  // qkv_bias=False: no bias on q, k, v
    CHECK(mha::weights_from_state_dict(timm, "t.npz").b_q.empty());
    timm["q_norm.weight"] = counting({1});  // qk_norm's LayerNorm is not read
    REQUIRE_THROWS_WITH(mha::weights_from_state_dict(timm, "t.npz"),
                        Catch::StartsWith("t.npz: unexpected array 'q_norm.weight' of shape (1,) "
                                          "(timm's ViT attention"));
    timm.erase("q_norm.weight");
    timm["proj.weight"] = counting({E, 2 * E});
    REQUIRE_THROWS_WITH(mha::weights_from_state_dict(timm, "t.npz"),
                        "t.npz: array 'proj.weight' has shape (4, 8), expected (4, 4)");
}

TEST_CASE("a state dict under prefixes names them; --weights-prefix reads one") {
    std::map<std::string, Array> prefixed;
    for (const auto& [name, array] : torch_dict()) prefixed["layers.1.attn." + name] = array;
    prefixed["layers.1.mlp.weight"] = counting({E, E});
    REQUIRE_THROWS_WITH(mha::weights_from_state_dict(prefixed, "m.npz"),
                        "m.npz: the attention arrays carry the prefix 'layers.1.attn.'; add "
                        "--weights-prefix layers.1.attn. to read the arrays under it");
    const std::map<std::string, Array> kept =
        mha::under_prefix(prefixed, "layers.1.attn.", "m.npz", {"in_proj_weight"});
    CHECK(kept.size() == 4);
    CHECK(mha::weights_from_state_dict(kept, "m.npz").w_o.at({0, 1}) == 201.0f);
    REQUIRE_THROWS_WITH(mha::under_prefix(prefixed, "attn.", "m.npz", {"in_proj_weight"}),
                        "m.npz: no array name starts with --weights-prefix 'attn.'; the attention "
                        "modules are under 'layers.1.attn.'");
    CHECK(mha::prefixes_of(torch_dict(), {"in_proj_weight"}).empty());  // no prefix: none named
}

TEST_CASE("--weights-prefix gives the numbers of the same module saved without a prefix", "[cli]") {
    const auto output_line = [](const std::string& args) {
        const test::RunResult r = test::run_mha("--input data/bad/x.npy -H 4 " + args);
        INFO(r.output);
        REQUIRE(r.status == 0);
        const std::size_t at = r.output.find("output (B=2, N=5, d_model=16)");
        REQUIRE(at != std::string::npos);
        return r.output.substr(at, r.output.find('\n', at) - at);
    };
    CHECK(output_line("--weights data/bad/prefixed.npz --weights-prefix attn.") ==
          output_line("--weights data/bad/weights.npz"));
    // GPT-2's Conv1D c_attn and c_proj: weights.npz's matrices stored transposed
    CHECK(output_line("--weights data/bad/gpt2_names.npz") ==
          output_line("--weights data/bad/weights.npz"));
    // two Hugging Face layers with the same arrays: either prefix gives hf_names.npz's numbers
    CHECK(output_line("--weights data/bad/layers.npz --weights-prefix model.layers.1.self_attn.") ==
          output_line("--weights data/bad/hf_names.npz"));
}

TEST_CASE("the arrays a state dict was read from come back under its names and orientation") {
    // the state dicts of data/grad/: nn.MultiheadAttention's (packed, kdim/vdim, bias_kv, no
    // bias), from-scratch with QK-norm, Hugging Face's, a fused W_qkv, GPT-2's transposed
    // c_attn and c_proj, and names under a prefix
    const std::pair<const char*, const char*> cases[] = {{"self", ""},
                                                         {"kdim_vdim", ""},
                                                         {"bias_kv", ""},
                                                         {"no_bias", ""},
                                                         {"qk_norm_rope", ""},
                                                         {"gqa_kv_heads", ""},
                                                         {"names_hugging_face", ""},
                                                         {"names_fused_qkv", ""},
                                                         {"names_gpt2", ""},
                                                         {"names_prefix", "layers.0.self_attn."}};
    for (const auto& [name, prefix] : cases) {
        CAPTURE(name);
        const std::string path = std::string("data/grad/") + name + "/weights.npz";
        const mha::LoadedWeights loaded = mha::load_weights(path, mha::Ledger(), prefix);
        const auto original = mha::npy::read_npz(path);
        const auto arrays = mha::state_dict_arrays(loaded.weights, loaded.names, prefix);
        REQUIRE(arrays.size() == original.size());
        for (const auto& [array_name, tensor] : arrays) {
            CAPTURE(array_name);
            REQUIRE(original.count(array_name) == 1);
            const Array& file = original.at(array_name);
            REQUIRE(tensor.shape() == file.shape);
            const std::vector<float> values = tensor.to_vector();
            CHECK(std::equal(values.begin(), values.end(), file.values.begin(),
                             [](float a, double b) { return double(a) == b; }));
        }
    }
}

TEST_CASE("seeded weights get nn.MultiheadAttention names, or from-scratch ones for other widths") {
    const mha::Weights packed = mha::seeded_weights(8, true, false, 0);
    const auto names = [](const std::vector<std::pair<std::string, mha::Tensor>>& arrays) {
        std::vector<std::string> list;
        for (const auto& array : arrays)
            list.push_back(array.first + " " + mha::to_string(array.second.shape()));
        return list;
    };
    CHECK(names(mha::state_dict_arrays(packed, mha::own_names(packed), "grad.")) ==
          std::vector<std::string>{"grad.in_proj_weight (24, 8)", "grad.in_proj_bias (24,)",
                                   "grad.out_proj.weight (8, 8)", "grad.out_proj.bias (8,)"});
    mha::Weights grouped = mha::seeded_weights(8, 8, 4, false, false, 0);  // G·d_k = 4
    grouped.q_norm = grouped.k_norm = mha::Tensor({2}, std::vector<float>{1, 1});
    CHECK(names(mha::state_dict_arrays(grouped, mha::own_names(grouped), "")) ==
          std::vector<std::string>{"W_q.weight (8, 8)", "W_k.weight (4, 8)", "W_v.weight (4, 8)",
                                   "W_o.weight (8, 8)", "q_norm.weight (2,)",
                                   "k_norm.weight (2,)"});
}

}  // namespace test_weights
