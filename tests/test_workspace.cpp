// The workspace: a block is handed out again only once no tensor holds it, a tensor starts
// at zero unless taken uninitialised, the idle blocks are released when none fits, and a
// pass run in a workspace (and its backward) gives the same bits as one in fresh memory while a
// second pass adds nothing, even when every block it takes held NaN before.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

#include "core/backward/backward.h"
#include "core/forms/block.h"
#include "core/forms/fused_qkv.h"
#include "core/pass/attention.h"
#include "core/tensor/workspace.h"
#include "io/init.h"
#include "kernel_variants.h"

namespace test_workspace {

namespace {

// The first index at which the two tensors' values differ bit for bit (so that NaN matches
// the same NaN), their common length when one is longer, or -1 when they are the same.
long first_difference(const mha::Tensor& a, const mha::Tensor& b) {
    const std::vector<float> x = a.to_vector(), y = b.to_vector();
    const std::size_t n = std::min(x.size(), y.size());
    for (std::size_t i = 0; i < n; ++i) {
        if (std::memcmp(&x[i], &y[i], sizeof(float)) != 0) return long(i);
    }
    return x.size() == y.size() ? -1 : long(n);
}

// `count` idle blocks of `floats` floats each, every float NaN: a pass that holds at most
// `count` tensors at once, none larger, takes each of them from a block full of NaN.
void fill_with_nan(mha::Workspace& workspace, std::size_t count, std::size_t floats) {
    std::vector<mha::Tensor> held;
    for (std::size_t i = 0; i < count; ++i) {
        held.push_back(workspace.tensor({floats}));
        std::fill(held.back().data(), held.back().data() + floats,
                  std::numeric_limits<float>::quiet_NaN());
    }
}

}  // namespace

TEST_CASE(
    "a workspace reuses a block once no tensor holds it, zero-filled unless taken "
    "uninitialised") {
    mha::Workspace workspace;
    mha::Tensor a = workspace.tensor({4, 8});
    const float* a_memory = a.data();
    a.data()[5] = 3.0f;
    const mha::Tensor b = workspace.tensor({2, 8});  // a is live: a block of its own
    CHECK(b.data() != a_memory);
    CHECK(workspace.bytes() == (32 + 16) * sizeof(float));
    a = mha::Tensor();
    mha::Tensor c = workspace.tensor({3, 8});  // a's block, 32 floats, fits 24
    CHECK(c.data() == a_memory);
    CHECK(c.shape() == mha::Shape{3, 8});
    CHECK(c.to_vector() == std::vector<float>(24, 0.0f));  // the 3 written into a is gone
    CHECK(workspace.bytes() == (32 + 16) * sizeof(float));
    c.data()[5] = 3.0f;
    c = mha::Tensor();
    const mha::Tensor d = workspace.uninitialised({4, 8});  // the same block, as c left it
    CHECK(d.data() == a_memory);
    CHECK(d.data()[5] == 3.0f);
    CHECK(d.data()[31] == 0.0f);  // past c's 24 floats: never held a value, zero
}

TEST_CASE(
    "a workspace takes the smallest idle block that fits, and releases idle blocks "
    "when none fits") {
    mha::Workspace workspace;
    mha::Tensor big = workspace.tensor({100}), small = workspace.tensor({10});
    const float* small_memory = small.data();
    big = mha::Tensor();
    small = mha::Tensor();
    CHECK(workspace.tensor({10}).data() == small_memory);  // not the 100-float block
    const mha::Tensor huge = workspace.tensor({1000});     // fits neither: both released
    CHECK(workspace.bytes() == 1000 * sizeof(float));
}

TEST_CASE(
    "a pass in a workspace gives the bits of a pass in fresh memory; a second pass "
    "needs no new block") {
    const mha::Sizes s{2, 9, 9, 16, 16, 16, 4, 4, 4};
    const mha::Inputs in = mha::seeded_inputs(s, true, 3);
    const mha::Weights w = mha::seeded_weights(16, true, true, 3);
    mha::ForwardOptions options;
    options.heads = 4;
    options.path = GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    mha::NullTracer none;
    const mha::ForwardResult fresh = mha::forward(w, in, {}, options, none);
    mha::Workspace workspace;
    options.workspace = &workspace;
    const std::vector<float> first = mha::forward(w, in, {}, options, none).output.to_vector();
    const std::uint64_t after_first = workspace.bytes();
    CHECK(after_first > 0);
    const std::vector<float> second = mha::forward(w, in, {}, options, none).output.to_vector();
    CHECK(first == fresh.output.to_vector());
    CHECK(second == first);
    CHECK(workspace.bytes() == after_first);
}

TEST_CASE(
    "a pass in a workspace whose blocks hold NaN gives the bits of a pass in fresh "
    "memory, so every tensor it takes uninitialised is written in full") {
    const std::size_t B = 2, h = 4, E = 16;
    // the pass's forms: 0 self-attention, 1 causal, 2 cross-attention (K, V from other
    // inputs), 3 causal with N > M (the first queries see no key: fully masked rows), 4 no
    // key at all (M = 0), 5 fused QKV, 6 the encoder block around the pass
    const int form = GENERATE(0, 1, 2, 3, 4, 5, 6);
    const mha::AttentionPath path =
        GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    const bool zero_rows = GENERATE(false, true);
    EACH_VARIANT();  // each register tile leaves its own partial tiles at the edges
    const std::size_t N = 70, M = form == 3 ? 40 : form == 4 ? 0 : form == 2 ? 130 : N;
    CAPTURE(form, path, zero_rows);
    const bool self = form != 2 && form != 3 && form != 4;
    const mha::Inputs in = mha::seeded_inputs({B, N, M, E, E, E, h, h, E / h}, self, 9);
    const mha::Weights w = mha::seeded_weights(E, true, true, 9);
    const mha::BlockWeights block = mha::seeded_block(E, 2 * E, 9);
    mha::Masks masks;
    masks.causal = form == 1 || form == 3;
    mha::ForwardOptions options;
    options.heads = h;
    options.threads = 2;
    options.path = path;
    options.zero_masked_rows = zero_rows;
    mha::NullTracer none;
    const auto pass = [&] {
        if (form == 5) return mha::forward_fused_qkv(w, in, masks, options, none);
        if (form == 6)
            return mha::forward_block(w, block, mha::BlockKind::Pre, in, masks, options, none);
        return mha::forward(w, in, masks, options, none);
    };
    const mha::ForwardResult fresh = pass();
    mha::Workspace workspace;
    // the block takes its norms, residual sums and feed-forward from the workspace too
    const std::size_t count = form == 6 ? 16 : 8, floats = B * h * N * std::max(N, M);  // scores
    fill_with_nan(workspace, count, floats);
    options.workspace = &workspace;
    const mha::ForwardResult dirty = pass();
    CHECK(workspace.bytes() == count * floats * sizeof(float));  // every tensor from a NaN block
    CHECK(first_difference(dirty.output, fresh.output) == -1);
    CHECK(first_difference(dirty.weights, fresh.weights) == -1);
    CHECK(dirty.fully_masked_rows == fresh.fully_masked_rows);
    if (form == 3) CHECK(fresh.fully_masked_rows > 0);
}

TEST_CASE(
    "a pass and its backward in a workspace whose blocks hold NaN give the bits of fresh "
    "memory, so every gradient taken uninitialised is written in full") {
    const std::size_t B = 2, h = 4, E = 16, N = 70;
    // 0 self-attention (dX sums the three paths), 1 cross-attention, 2 causal, 3 fused QKV,
    // 4 per head
    const int form = GENERATE(0, 1, 2, 3, 4);
    const mha::AttentionPath path =
        GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    EACH_VARIANT();
    CAPTURE(form, path);
    const std::size_t M = form == 1 ? 130 : N;
    const mha::Inputs in = mha::seeded_inputs({B, N, M, E, E, E, h, h, E / h}, form != 1, 11);
    const mha::Weights w = mha::seeded_weights(E, true, true, 11);
    // dOut (B, N, d_model): the query input of another seed
    const mha::Inputs out_grad = mha::seeded_inputs({B, N, N, E, E, E, h, h, E / h}, true, 12);
    mha::Masks masks;
    masks.causal = form == 2;
    mha::ForwardOptions options;
    options.heads = h;
    options.threads = 2;
    options.path = path;
    const mha::Form kind = form == 3   ? mha::Form::FusedQkv
                           : form == 4 ? mha::Form::PerHead
                                       : mha::Form::Packed;
    mha::NullTracer none;
    const auto pass = [&] {
        return mha::forward_backward(w, in, masks, options, kind, out_grad.x_q, none);
    };
    const mha::BackwardResult fresh = pass();
    mha::Workspace workspace;
    // more blocks than the pass and its backward hold at once, each as large as the scores
    const std::size_t count = 40, floats = B * h * N * M;
    fill_with_nan(workspace, count, floats);
    options.workspace = &workspace;
    const mha::BackwardResult dirty = pass();
    CHECK(workspace.bytes() == count * floats * sizeof(float));  // every tensor from a NaN block
    CHECK(first_difference(dirty.forward.output, fresh.forward.output) == -1);
    const mha::Gradients &a = dirty.grads, &b = fresh.grads;
    for (const auto& [name, x, y] :
         {std::tuple<const char*, const mha::Tensor&, const mha::Tensor&>{"input", a.input,
                                                                          b.input},
          {"key", a.key, b.key},
          {"value", a.value, b.value},
          {"w_q", a.params.w_q, b.params.w_q},
          {"w_k", a.params.w_k, b.params.w_k},
          {"w_v", a.params.w_v, b.params.w_v},
          {"w_o", a.params.w_o, b.params.w_o},
          {"b_q", a.params.b_q, b.params.b_q},
          {"b_o", a.params.b_o, b.params.b_o}}) {
        CAPTURE(name);
        CHECK(x.shape() == y.shape());
        CHECK(first_difference(x, y) == -1);
    }
}

}  // namespace test_workspace
