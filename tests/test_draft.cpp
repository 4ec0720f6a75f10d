// Speculative verification (--draft, --draft-tree): the tree mask by hand, every branch's rows
// equal to decoding that branch token by token to the bit (in the pass and through --save),
// the refusals; and --model's early-exit draft, whose accepted tokens are greedy decoding's.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "app/run/budget.h"
#include "app/run/problem.h"
#include "core/forms/decode.h"
#include "core/forms/draft.h"
#include "core/forms/speculate.h"
#include "greedy_decoding.h"
#include "helpers.h"
#include "io/init.h"
#include "io/model_file.h"
#include "io/npy.h"

namespace test_draft {

using mha::Tensor;

namespace {

// Rows `rows` of dimension 1 of a (B, L, E) tensor, in that order: (B, rows.size(), E).
Tensor gather_rows(const Tensor& x, const std::vector<std::size_t>& rows) {
    const std::size_t B = x.size(0), L = x.size(1), E = x.size(2);
    const std::vector<float> all = x.to_vector();
    std::vector<float> values;
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t r : rows)
            values.insert(values.end(), all.begin() + (b * L + r) * E, all.begin() + (b * L + r + 1) * E);
    }
    return Tensor({B, rows.size(), E}, values);
}

// Draft token `leaf`'s branch: the draft tokens from the root down to it.
std::vector<std::size_t> branch_to(const mha::DraftTree& tree, std::size_t leaf) {
    std::vector<std::size_t> branch;
    for (std::ptrdiff_t node = std::ptrdiff_t(leaf); node >= 0; node = tree[std::size_t(node)])
        branch.insert(branch.begin(), std::size_t(node));
    return branch;
}

// The tokens no other hangs from.
std::vector<std::size_t> leaves(const mha::DraftTree& tree) {
    std::vector<bool> parent(tree.size(), false);
    for (std::ptrdiff_t p : tree) {
        if (p >= 0) parent[std::size_t(p)] = true;
    }
    std::vector<std::size_t> found;
    for (std::size_t i = 0; i < tree.size(); ++i) {
        if (!parent[i]) found.push_back(i);
    }
    return found;
}

// Row r of the last two dimensions' (rows, cols) matrix of every leading index: all rows r of
// a (B, L, E) or (B, h, L, M) array of floats, one after another.
std::vector<float> rows_at(const std::vector<float>& values, const mha::Shape& shape,
                           std::size_t r) {
    const std::size_t cols = shape.back(), rows = shape[shape.size() - 2];
    const std::size_t blocks = values.size() / (rows * cols);
    std::vector<float> picked;
    for (std::size_t u = 0; u < blocks; ++u) {
        const auto start = values.begin() + std::ptrdiff_t((u * rows + r) * cols);
        picked.insert(picked.end(), start, start + std::ptrdiff_t(cols));
    }
    return picked;
}

// Columns `columns` of each row of `cols` values, in that order.
std::vector<float> columns_of(const std::vector<float>& rows, std::size_t cols,
                              const std::vector<std::size_t>& columns) {
    std::vector<float> picked;
    for (std::size_t start = 0; start < rows.size(); start += cols) {
        for (std::size_t c : columns) picked.push_back(rows[start + c]);
    }
    return picked;
}

// The drafted run's rows for `branch` (after P cached tokens) are, bit for bit, the rows of
// decoding the prefix and the branch token by token: the output, and the weights at the keys
// the row sees (the prefix's, then the branch's cache positions); every other weight is 0.
void require_branch_decoded(const std::vector<float>& drafted_output,
                            const std::vector<float>& drafted_weights,
                            const mha::Shape& drafted_weights_shape,
                            const std::vector<float>& decoded_output,
                            const std::vector<float>& decoded_weights, const mha::Shape& out_shape,
                            const mha::Shape& decoded_out_shape,
                            const mha::Shape& decoded_weights_shape, std::size_t P,
                            const std::vector<std::size_t>& branch) {
    const std::size_t T = drafted_weights_shape.back(), L = decoded_weights_shape.back();
    for (std::size_t e = 0; e < branch.size(); ++e) {
        CAPTURE(P, branch, e);
        CHECK(test::same_bits(rows_at(drafted_output, out_shape, P + branch[e]),
                              rows_at(decoded_output, decoded_out_shape, P + e)));
        if (drafted_weights.empty()) continue;  // the streaming path keeps no weights
        std::vector<std::size_t> seen, seen_decoded, blocked;
        for (std::size_t j = 0; j < P; ++j) seen.push_back(j);
        seen_decoded = seen;
        for (std::size_t f = 0; f <= e; ++f) {
            seen.push_back(P + branch[f]);
            seen_decoded.push_back(P + f);
        }
        for (std::size_t j = 0; j < T; ++j) {
            if (std::find(seen.begin(), seen.end(), j) == seen.end()) blocked.push_back(j);
        }
        const std::vector<float> row = rows_at(drafted_weights, drafted_weights_shape, P + branch[e]);
        const std::vector<float> decoded_row =
            rows_at(decoded_weights, decoded_weights_shape, P + e);
        CHECK(test::same_bits(columns_of(row, T, seen), columns_of(decoded_row, L, seen_decoded)));
        const std::vector<float> zeros = columns_of(row, T, blocked);
        CHECK(test::same_bits(zeros, std::vector<float>(zeros.size(), 0.0f)));
    }
}

}  // namespace

TEST_CASE("the tree mask and the depths of a small tree, by hand", "[draft]") {
    // -1 ─┬─ 0 ─┬─ 2      two tokens after the last cached one (depth 0), two under
    //     │     └─ 3      token 0 and one under token 1 (depth 1); with 2 cached tokens,
    //     └─ 1 ─── 4      token i sees keys 0, 1 and its branch's cache positions 2 + node
    const mha::DraftTree tree = {-1, -1, 0, 0, 1};
    CHECK(mha::draft_depths(tree) == std::vector<std::size_t>{0, 0, 1, 1, 1});
    const std::vector<std::vector<bool>> expected = {
        // keys: 0  1  2(d0) 3(d1) 4(d2) 5(d3) 6(d4)
        {true, true, true, false, false, false, false},   // draft 0: -1 → 0
        {true, true, false, true, false, false, false},   // draft 1: -1 → 1
        {true, true, true, false, true, false, false},    // draft 2: -1 → 0 → 2
        {true, true, true, false, false, true, false},    // draft 3: -1 → 0 → 3
        {true, true, false, true, false, false, true}};   // draft 4: -1 → 1 → 4
    CHECK(mha::tree_mask(tree, 2) == expected);

    // a chain is the causal mask over the draft: --draft 3 after 1 cached token
    CHECK(mha::draft_chain(3) == mha::DraftTree{-1, 0, 1});
    CHECK(mha::tree_mask(mha::draft_chain(3), 1) ==
          std::vector<std::vector<bool>>{{true, true, false, false},
                                         {true, true, true, false},
                                         {true, true, true, true}});
    CHECK(mha::draft_depths(mha::draft_chain(3)) == std::vector<std::size_t>{0, 1, 2});

    REQUIRE_THROWS_WITH(mha::draft_depths({-1, 1}),
                        "draft tree: token 1's parent is 1; a parent is -1 (the last cached "
                        "token) or an earlier draft token, 0 to 0");
    REQUIRE_THROWS_WITH(mha::draft_depths({-1, 0, 3, 0}),
                        "draft tree: token 2's parent is 3; a parent is -1 (the last cached "
                        "token) or an earlier draft token, 0 to 1");
    REQUIRE_THROWS_WITH(mha::draft_depths({0}),
                        "draft tree: token 0's parent is 0; the first draft token hangs from "
                        "the last cached token, -1");
    REQUIRE_THROWS_WITH(mha::draft_depths({-1, -2}),
                        "draft tree: token 1's parent is -2; a parent is -1 (the last cached "
                        "token) or an earlier draft token, 0 to 0");
}

TEST_CASE("every branch of a draft equals decoding it token by token, to the bit", "[draft]") {
    // a chain (--draft 4) and a real tree; MHA and GQA; RoPE, QK-norm, a window with a sink,
    // ALiBi and the soft-cap, the streaming path; 1, 2 and 3 threads; draft rows whose keys
    // run past the softmax's 8 lanes (P = 9)
    const auto [tree, P] = GENERATE(table<mha::DraftTree, std::size_t>(
        {{{-1, 0, 1, 2}, 3}, {{-1, -1, 0, 0, 1}, 2}, {{-1, -1, 0, 0, 1, 4, 4}, 9}, {{-1}, 0}}));
    const auto [G, variant, threads] = GENERATE(table<std::size_t, int, std::size_t>(
        {{4, 0, 1}, {2, 0, 2}, {4, 1, 3}, {2, 1, 1}, {1, 2, 2}, {2, 3, 3}}));
    CAPTURE(tree, P, G, variant, threads);
    const std::size_t B = 2, E = 32, h = 4, K = tree.size(), T = P + K;
    mha::Weights w = mha::seeded_weights(E, G * (E / h), true, true, 11);
    const mha::Inputs in = mha::seeded_inputs({B, T, T, E, E, E, h, G, E / h}, true, 11);
    mha::Masks masks;
    mha::ForwardOptions options;
    options.heads = h;
    options.threads = threads;
    if (variant == 1) {
        options.rope = mha::Rope{};
        w.q_norm = Tensor({E / h}, std::vector<float>(E / h, 1.5f));
        w.k_norm = Tensor({E / h}, std::vector<float>(E / h, 0.5f));
    }
    if (variant == 2) {
        masks.window = 3;
        masks.sinks = 1;
        masks.alibi = true;
        masks.softcap = 5.0;
    }
    if (variant == 3) options.path = mha::AttentionPath::Streaming;
    mha::NullTracer none;
    const mha::ForwardResult drafted = mha::verify_draft(w, in, masks, options, tree, none);
    std::vector<std::size_t> prefix;
    for (std::size_t t = 0; t < P; ++t) prefix.push_back(t);
    for (std::size_t leaf : leaves(tree)) {
        const std::vector<std::size_t> branch = branch_to(tree, leaf);
        std::vector<std::size_t> rows = prefix;
        for (std::size_t node : branch) rows.push_back(P + node);
        const Tensor x = gather_rows(in.x_q, rows);
        const mha::ForwardResult decoded = mha::decode(w, {x, x, x}, masks, options, none);
        const mha::Shape weights_shape = {B, h, T, T}, decoded_weights = {B, h, rows.size(), rows.size()};
        require_branch_decoded(drafted.output.to_vector(),
                               drafted.weights.empty() ? std::vector<float>()
                                                       : drafted.weights.to_vector(),
                               weights_shape, decoded.output.to_vector(),
                               decoded.weights.empty() ? std::vector<float>()
                                                       : decoded.weights.to_vector(),
                               {B, T, E}, {B, rows.size(), E}, decoded_weights, P, branch);
        if (leaf == leaves(tree).front()) {  // the prefix's rows are decoding's too
            for (std::size_t t = 0; t < P; ++t) {
                CHECK(test::same_bits(rows_at(drafted.output.to_vector(), {B, T, E}, t),
                                      rows_at(decoded.output.to_vector(), {B, rows.size(), E}, t)));
            }
        }
    }
}

TEST_CASE("the memory of a draft's verification is counted before it runs", "[draft]") {
    // a dry run of the verification counts at least the cache, weights and output of all
    // T = 6 rows, and the draft's own tensors on top of what decoding the T rows holds
    const std::size_t B = 2, T = 6, E = 16, h = 4, G = 2, d_k = 4;
    const mha::Sizes s{B, T, T, E, E, E, h, G, d_k};
    const auto bytes = [&](const mha::Config& c) {
        return mha::pass_bytes(c, s, mha::dry_problem(c, s, mha::AttentionPath::Standard, 0),
                               mha::AttentionPath::Standard, 1);
    };
    mha::Config decoded;
    decoded.form = mha::Form::Decode;
    mha::Config drafted = decoded;
    drafted.draft_tree = {-1, 0, 0, 1};
    CHECK(bytes(drafted) >= 4 * (2 * B * G * T * d_k + B * h * T * T + B * T * E));
    CHECK(bytes(drafted) > bytes(decoded));
    test::check_rejected("--decode 512 -d 512 -H 8 -b 4 --draft-tree -1,0,0,1 --max-memory 8M",
                         "more than --max-memory");
}

TEST_CASE("--draft and --draft-tree through --save: the same bytes as --decode", "[draft]") {
    const std::string sizes = " -b 2 -d 16 -H 4 ";
    const std::string kv = GENERATE(as<std::string>{}, "", "-G 2 ");
    const std::string rope = GENERATE(as<std::string>{}, "", "--rope half ");
    const std::string threads = GENERATE(as<std::string>{}, "-t 1 ", "-t 3 ");
    CAPTURE(kv, rope, threads);
    const std::string options = sizes + kv + rope + threads;

    SECTION("a chain: --draft 3 of --decode 7 saves what --decode 7 saves") {
        const std::string drafted = test::temp_path("draft-chain.npz");
        const std::string decoded = test::temp_path("decode-chain.npz");
        REQUIRE(test::run_mha(options + "--decode 7 --draft 3 --save " + drafted).status == 0);
        REQUIRE(test::run_mha(options + "--decode 7 --save " + decoded).status == 0);
        CHECK(test::read_text(drafted) == test::read_text(decoded));
        const std::string tree = test::temp_path("draft-chain-tree.npz");  // -1,0,1 is --draft 3
        REQUIRE(test::run_mha(options + "--decode 7 --draft-tree -1,0,1 --save " + tree).status == 0);
        CHECK(test::read_text(tree) == test::read_text(decoded));
    }
    SECTION("a tree: each branch's rows are those --decode saves for the prefix and the branch") {
        const mha::DraftTree tree = {-1, -1, 0, 0, 1};
        const std::size_t B = 2, P = 3, T = P + tree.size(), E = 16;
        const Tensor x({B, T, E}, test::random_values(B * T * E, 7));
        const std::string x_path = test::temp_path("draft-x.npy");
        std::ofstream(x_path, std::ios::binary) << mha::npy::to_npy_bytes(x);
        const std::string drafted_path = test::temp_path("draft-tree.npz");
        REQUIRE(test::run_mha(options + "--input " + x_path + " --decode 8 --draft-tree " +
                              "-1,-1,0,0,1 --save " + drafted_path)
                    .status == 0);
        const auto drafted = mha::npy::read_npz(drafted_path);
        for (std::size_t leaf : leaves(tree)) {
            const std::vector<std::size_t> branch = branch_to(tree, leaf);
            std::vector<std::size_t> rows = {0, 1, 2};
            for (std::size_t node : branch) rows.push_back(P + node);
            const std::string branch_path = test::temp_path("draft-branch.npy");
            std::ofstream(branch_path, std::ios::binary)
                << mha::npy::to_npy_bytes(gather_rows(x, rows));
            const std::string decoded_path = test::temp_path("draft-branch.npz");
            REQUIRE(test::run_mha(options + "--input " + branch_path + " --decode " +
                                  std::to_string(rows.size()) + " --save " + decoded_path)
                        .status == 0);
            const auto decoded = mha::npy::read_npz(decoded_path);
            const auto floats = [](const mha::npy::Array& a) {
                return std::vector<float>(a.values.begin(), a.values.end());
            };
            require_branch_decoded(
                floats(drafted.at("output")), floats(drafted.at("attn_weights")),
                drafted.at("attn_weights").shape, floats(decoded.at("output")),
                floats(decoded.at("attn_weights")), drafted.at("output").shape,
                decoded.at("output").shape, decoded.at("attn_weights").shape, P, branch);
        }
    }
}

TEST_CASE("--draft and --draft-tree refuse what makes no sense", "[draft]") {
    test::check_rejected("--decode 6 --draft-tree -1,1",
                         "draft tree: token 1's parent is 1; a parent is -1 (the last cached "
                         "token) or an earlier draft token, 0 to 0");
    test::check_rejected("--decode 6 --draft-tree -1,-1,3", "draft tree: token 2's parent is 3");
    test::check_rejected("--decode 6 --draft-tree -2", "draft tree: token 0's parent is -2");
    test::check_rejected("--decode 6 --draft-tree -1,x",
                         "--draft-tree expects a whole number, got 'x'");
    test::check_rejected("-n 6 --causal --draft 2",
                         "--draft and --draft-tree verify the last K tokens of a causal decode; "
                         "give --decode T too");
    test::check_rejected("--draft-tree -1,0", "give --decode T too");
    test::check_rejected("--decode 4 --draft 5",
                         "--draft gives 5 draft tokens, more than the T = 4 decoded; the draft is "
                         "the last K of the T tokens");
    test::check_rejected("--decode 4 --draft-tree -1,0,1,2,3", "--draft-tree gives 5 draft tokens");
    test::check_rejected("--decode 4 --draft 0", "--draft must be at least 1, got 0");
    test::check_rejected("--decode 4 --draft 2 --draft-tree -1,0",
                         "--draft K is the chain -1,0,...,K-2 of --draft-tree; give one of them");
    test::check_rejected("--prefill-chunks 2,2 --draft 2",
                         "--draft and --draft-tree verify the last tokens of --decode T; they "
                         "cannot be combined with --prefill-chunks");
    test::check_rejected("--decode 4 --draft 2 --backward", "--backward does not run on --decode");
    test::check_rejected("--decode 8 --draft 2 --kv-quant int8",
                         "--draft and --draft-tree verify against a float cache; they cannot be "
                         "combined with --kv-quant");
    test::check_rejected("--decode 8 --draft-tree -1,0 --kv-block-size 4",
                         "--draft and --draft-tree verify against a contiguous cache; they cannot "
                         "be combined with --kv-block-size");

    mha::NullTracer none;
    const mha::Weights w = mha::seeded_weights(8, true, true, 1);
    const mha::Inputs in = mha::seeded_inputs({1, 3, 3, 8, 8, 8, 2, 2, 4}, true, 1);
    mha::ForwardOptions options;
    options.heads = 2;
    REQUIRE_THROWS_WITH(mha::verify_draft(w, in, {}, options, mha::draft_chain(4), none),
                        "a draft of 4 tokens among the 3 decoded; the draft is the last K of the "
                        "T tokens, 1 <= K <= T");
    REQUIRE_THROWS_WITH(mha::verify_draft(w, in, {}, options, {}, none),
                        "a draft of 0 tokens among the 3 decoded; the draft is the last K of the "
                        "T tokens, 1 <= K <= T");
}

TEST_CASE("an early-exit draft on the trained model: what it keeps is greedy decoding's",
          "[draft]") {
    const mha::Model model =
        mha::load_model("../examples/models/kjv-2x4.npz", std::uint64_t(1) << 30);
    REQUIRE(model.layers.size() == 2);
    const std::vector<std::size_t> text = {5, 12, 3, 1, 20, 7, 9, 1};  // any tokens below V
    const std::size_t K = GENERATE(1, 4, 9);
    CAPTURE(K);
    const mha::GreedyAcceptance a = mha::greedy_acceptance(model, text, 1, K, 2);
    REQUIRE(a.drafted.size() == K);
    REQUIRE(a.verified.size() == K + 1);

    // greedy decoding, a token at a time: with the first layer, the draft; with both, what the
    // acceptance keeps (the accepted guesses and the whole model's next token)
    const mha::EarlyExits exits = mha::early_exits(model, 1);
    CHECK(test::greedy_decoding(exits, text, 1, K) == a.drafted);
    std::vector<std::size_t> kept(a.drafted.begin(), a.drafted.begin() + std::ptrdiff_t(a.accepted));
    kept.push_back(a.verified[a.accepted]);
    CHECK(test::greedy_decoding(exits, text, 2, a.accepted + 1) == kept);
    CHECK((a.accepted == K || a.drafted[a.accepted] != a.verified[a.accepted]));

    REQUIRE_THROWS_WITH(mha::greedy_acceptance(model, text, 2, K, 1),
                        "an early-exit draft of 2 layers of a 2-layer model; the draft takes 1 "
                        "to 1 layers, fewer than the model it drafts for");
    REQUIRE_THROWS_WITH(mha::greedy_acceptance(model, text, 1, model.context(), 1),
                        "a prompt of 8 tokens and a draft of " + std::to_string(model.context()) +
                            " need " + std::to_string(model.context() + 8) +
                            " positions; the model's context is " +
                            std::to_string(model.context()));
}

TEST_CASE("--model --draft K --draft-layers L shows how many drafted characters it accepts",
          "[draft]") {
    const test::RunResult r = test::run_mha(
        "--model ../examples/models/kjv-2x4.npz --text 'And God said, Let there be light: and "
        "there was ' --draft 4 --draft-layers 1");
    REQUIRE(r.status == 0);
    CHECK_THAT(test::flat(r.output),
               Catch::Contains("drafted: 't' 'h' 'e' 'm' verified: 't' 'h' 'e' ' ' ' ' "
                               "accepted: 3 of 4, then the whole model's ' ': 4 characters"));
    test::check_rejected("--model ../examples/models/kjv-2x4.npz --text ab --draft 2",
                         "--draft K on --model drafts with the model's first layers: give "
                         "--draft-layers L (--draft-tree is for --decode)");
    test::check_rejected("--decode 4 --draft 2 --draft-layers 1",
                         "--draft-layers L makes the first L layers of --model or --checkpoint "
                         "the draft of --draft K; give one of them and --draft too");
    test::check_rejected("--model ../examples/models/kjv-2x4.npz --text ab --draft 2 "
                         "--draft-layers 1 --format json",
                         "--draft-layers prints which drafted characters the model accepts as "
                         "text; it cannot be combined with --format, --shapes-only or "
                         "--backward");
    test::check_rejected("--model ../examples/models/kjv-2x4.npz --text ab --draft 2 "
                         "--draft-layers 2",
                         "an early-exit draft of 2 layers of a 2-layer model");
}

}  // namespace test_draft
