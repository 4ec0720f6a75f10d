// What training one layer costs (core/backward/training_costs.h): the kept tensors a dry
// forward lists against what a computed forward really keeps, by hand for a preset's size, and
// a dry run's multiply-adds split into the forward's and the backward's.

#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "core/backward/training_costs.h"
#include "core/pass/attention.h"
#include "core/backward/backward.h"
#include "core/tensor/storage.h"
#include "core/tensor/workspace.h"
#include "io/dry.h"
#include "io/init.h"

namespace test_training_costs {

namespace {

using mha::Tensor;

// The bytes of every tensor the forward kept, by the names kept_tensors gives them.
std::map<std::string, std::uint64_t> kept_by_name(const mha::Kept& kept,
                                                  const mha::ForwardResult& result,
                                                  const mha::Inputs& in) {
    std::map<std::string, std::uint64_t> bytes;
    auto add = [&bytes](const std::string& name, const Tensor& t) {
        if (!t.empty()) bytes[name] = 4 * t.numel();
    };
    if (in.self_attention()) {
        add("x", in.x_q);
    } else {
        add("x_q", in.x_q);
        add("x_k", in.x_k);
        add("x_v", in.x_v);
    }
    add("Q_raw", kept.q_raw);
    add("K_raw", kept.k_raw);
    add("Q", kept.q);
    add("K", kept.k);
    add("V", kept.v);
    add("P", result.weights);
    add("lse", kept.lse);
    add("O", kept.context);
    add("concat", kept.concat);
    return bytes;
}

std::map<std::string, std::uint64_t> listed_by_name(const std::vector<mha::KeptTensor>& list) {
    std::map<std::string, std::uint64_t> bytes;
    for (const mha::KeptTensor& t : list) {
        std::uint64_t elements = 1;
        for (std::size_t size : t.shape) elements *= size;
        CHECK(t.bytes == 4 * elements);
        CHECK(t.dims.size() == t.shape.size());
        bytes[t.name] = t.bytes;
    }
    return bytes;
}

}  // namespace

// A dry forward of these weights and inputs with keep set: the kept tensors it lists.
std::vector<mha::KeptTensor> dry_kept(const mha::Weights& w, const mha::Inputs& in,
                                      mha::ForwardOptions options) {
    mha::Workspace workspace = mha::Workspace::dry();
    mha::Kept kept;
    options.keep = &kept;
    options.workspace = &workspace;
    const mha::Inputs dry_in = mha::without_values(in);
    mha::NullTracer quiet;
    const mha::ForwardResult result =
        mha::forward(mha::without_values(w), dry_in, {}, options, quiet);
    return mha::kept_tensors(dry_in, kept, result.weights);
}

TEST_CASE("kept_tensors names exactly what the forward keeps, in bytes, on either path",
          "[backward]") {
    const mha::AttentionPath path =
        GENERATE(mha::AttentionPath::Standard, mha::AttentionPath::Streaming);
    const bool self = GENERATE(true, false);
    const bool qk_norm = GENERATE(false, true);
    const bool zero_attn = GENERATE(false, true);
    CAPTURE(path == mha::AttentionPath::Standard, self, qk_norm, zero_attn);
    // B=2, N=3, M=5 (cross), d_model=8, h=4, G=2: d_k=2
    const mha::Sizes s{2, 3, self ? 3u : 5u, 8, 8, 8, 4, 2, 2};
    mha::Weights w = mha::seeded_weights(8, 4, true, true, 1);
    if (qk_norm) w.q_norm = w.k_norm = Tensor({2}, {1.0f, 0.5f});
    const mha::Inputs in = mha::seeded_inputs(s, self, 2);
    mha::ForwardOptions options;
    options.heads = 4;
    options.add_zero_attn = zero_attn;
    options.path = path;
    const std::vector<mha::KeptTensor> listed = dry_kept(w, in, options);
    mha::Kept kept;
    options.keep = &kept;
    mha::NullTracer quiet;
    const mha::ForwardResult result = mha::forward(w, in, {}, options, quiet);
    CHECK(listed_by_name(listed) == kept_by_name(kept, result, in));
    std::uint64_t total = 0;
    for (const auto& [name, bytes] : kept_by_name(kept, result, in)) total += bytes;
    CHECK(mha::kept_bytes(listed) == total);
}

TEST_CASE("the kept tensors at llama3-8b's size, by hand, without allocating them",
          "[backward]") {
    // B=1, N=M=8192, d_model=4096, h=32, G=8, d_k=128 (mha --preset llama3-8b)
    const mha::Sizes s{1, 8192, 8192, 4096, 4096, 4096, 32, 8, 128};
    const mha::Weights w = mha::dry_weights(s, false, false);
    const mha::Inputs in = mha::dry_inputs(s, true);
    mha::ForwardOptions options;
    options.heads = 32;
    const std::uint64_t MiB = 1 << 20, before = mha::tensor_bytes_handed_out();
    // x, Q, O, concat: 8192·4096·4 B = 128 MiB each; K, V: 8·8192·128·4 B = 32 MiB each;
    // P: 32·8192·8192·4 B = 8 GiB
    CHECK(mha::kept_bytes(dry_kept(w, in, options)) == 4 * 128 * MiB + 2 * 32 * MiB + 8192 * MiB);
    options.path = mha::AttentionPath::Streaming;
    const std::vector<mha::KeptTensor> streaming = dry_kept(w, in, options);
    // lse: 32·8192·4 B = 1 MiB instead of P
    CHECK(streaming.at(4).name == "lse");
    CHECK(streaming.at(4).bytes == MiB);
    CHECK(mha::kept_bytes(streaming) == 4 * 128 * MiB + 2 * 32 * MiB + MiB);
    CHECK(mha::tensor_bytes_handed_out() == before);
}

TEST_CASE("a dry run's tally adds the forward's and the backward's multiply-adds apart",
          "[backward]") {
    const mha::Sizes s{1, 3, 3, 8, 8, 8, 2, 2, 4};
    mha::Workspace workspace = mha::Workspace::dry();
    mha::ForwardOptions options;
    options.heads = 2;
    options.workspace = &workspace;
    mha::Tally tally;
    mha::forward_backward(mha::dry_weights(s, true, false), mha::dry_inputs(s, true), {}, options,
                          mha::Form::Packed, mha::Tensor::shape_only({1, 3, 8}), tally);
    // forward: 4 projections 3·8·8 = 192 each, Q Kᵀ and P V 2·3·3·4 = 72 each
    CHECK(tally.macs.forward == 4 * 192 + 2 * 72);
    // backward: dW and dx of 4 projections (8 × 192), dV, dP, dQ, dK (4 × 72),
    // D = rowsum(dP ∘ P) = 2·3·3 = 18, dS = 2·3·3 = 18
    CHECK(tally.macs.backward == 8 * 192 + 4 * 72 + 18 + 18);
}

}  // namespace test_training_costs
