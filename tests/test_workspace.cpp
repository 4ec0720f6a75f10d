// The workspace: a block is handed out again only once no tensor holds it, every tensor
// starts at zero, the idle blocks are released when none fits, and a pass run in a
// workspace gives the same bits as one in fresh memory while a second pass adds nothing.

#include <catch2/catch.hpp>

#include "core/attention.h"
#include "core/workspace.h"
#include "io/init.h"

TEST_CASE("a workspace reuses a block once no tensor holds it, zero-filled") {
    mha::Workspace workspace;
    mha::Tensor a = workspace.tensor({4, 8});
    const float* a_memory = a.data();
    a.data()[5] = 3.0f;
    const mha::Tensor b = workspace.tensor({2, 8});  // a is live: a block of its own
    CHECK(b.data() != a_memory);
    CHECK(workspace.bytes() == (32 + 16) * sizeof(float));
    a = mha::Tensor();
    const mha::Tensor c = workspace.tensor({3, 8});  // a's block, 32 floats, fits 24
    CHECK(c.data() == a_memory);
    CHECK(c.shape() == mha::Shape{3, 8});
    CHECK(c.to_vector() == std::vector<float>(24, 0.0f));  // the 3 written into a is gone
    CHECK(workspace.bytes() == (32 + 16) * sizeof(float));
}

TEST_CASE("a workspace takes the smallest idle block that fits, and releases idle blocks "
          "when none fits") {
    mha::Workspace workspace;
    mha::Tensor big = workspace.tensor({100}), small = workspace.tensor({10});
    const float* small_memory = small.data();
    big = mha::Tensor();
    small = mha::Tensor();
    CHECK(workspace.tensor({10}).data() == small_memory);  // not the 100-float block
    const mha::Tensor huge = workspace.tensor({1000});  // fits neither: both released
    CHECK(workspace.bytes() == 1000 * sizeof(float));
}

TEST_CASE("a pass in a workspace gives the bits of a pass in fresh memory; a second pass "
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
