// Tensor semantics: view, transpose, contiguous as PyTorch defines them.

#include <catch2/catch.hpp>
#include <numeric>

#include "core/error.h"
#include "core/tensor/tensor.h"

namespace test_tensor {

using mha::Shape;
using mha::Strides;
using mha::Tensor;

namespace {

Tensor iota(Shape shape) {
    std::vector<float> values(mha::element_count(shape));
    std::iota(values.begin(), values.end(), 0.0f);
    return Tensor(shape, values);
}

}  // namespace

TEST_CASE("a new tensor is contiguous with C-order strides") {
    const Tensor t({2, 8, 256});
    CHECK(t.strides() == Strides{2048, 256, 1});
    CHECK(t.is_contiguous());
    CHECK(t.numel() == 4096);
}

TEST_CASE("view splits d_model into heads without copying") {
    const Tensor q = iota({2, 8, 256});
    const Tensor heads = q.view({2, 8, 4, 64});
    CHECK(heads.shape() == Shape{2, 8, 4, 64});
    CHECK(heads.strides() == Strides{2048, 256, 64, 1});
    CHECK(heads.shares_storage_with(q));
    CHECK(heads.at({1, 2, 3, 4}) == q.at({1, 2, 3 * 64 + 4}));
}

TEST_CASE("transpose swaps strides, copies nothing and is not contiguous") {
    const Tensor heads = iota({2, 8, 4, 64});
    const Tensor t = heads.transpose(1, 2);
    CHECK(t.shape() == Shape{2, 4, 8, 64});
    CHECK(t.strides() == Strides{2048, 64, 256, 1});
    CHECK_FALSE(t.is_contiguous());
    CHECK(t.shares_storage_with(heads));
    CHECK(t.at({1, 3, 5, 7}) == heads.at({1, 5, 3, 7}));
}

TEST_CASE("view of a transposed tensor fails and says to call contiguous() first") {
    const Tensor t = iota({2, 8, 4, 64}).transpose(1, 2);  // (B, h, N, d_k)
    REQUIRE_THROWS_AS(t.view({2, 4, 512}), mha::Error);
    REQUIRE_THROWS_WITH(t.view({2, 4, 512}), Catch::Contains("call contiguous() first"));
    const Tensor back = iota({2, 4, 8, 64}).transpose(1, 2);  // (B, N, h, d_k), non-contiguous
    REQUIRE_THROWS_WITH(back.view({2, 8, 256}),
                        Catch::Contains("shape (2, 8, 4, 64) with strides (2048, 64, 512, 1)"));
}

TEST_CASE("view works on a non-contiguous tensor when only a contiguous chunk is split") {
    const Tensor t = iota({2, 8, 4, 64}).transpose(1, 2);  // (2, 4, 8, 64), last dim contiguous
    const Tensor split = t.view({2, 4, 8, 2, 32});
    CHECK(split.strides() == Strides{2048, 64, 256, 32, 1});
    CHECK(split.at({1, 2, 3, 1, 5}) == t.at({1, 2, 3, 37}));
}

TEST_CASE("view with the wrong number of elements names both shapes") {
    REQUIRE_THROWS_WITH(iota({2, 8, 256}).view({2, 8, 3}),
                        Catch::Contains("(2, 8, 3)") && Catch::Contains("(2, 8, 256)"));
}

TEST_CASE("contiguous copies only when it must") {
    const Tensor a = iota({2, 3});
    CHECK(a.contiguous().shares_storage_with(a));
    const Tensor t = a.transpose(0, 1);  // [[0, 3], [1, 4], [2, 5]]
    const Tensor c = t.contiguous();
    CHECK_FALSE(c.shares_storage_with(t));
    CHECK(c.is_contiguous());
    CHECK(c.strides() == Strides{2, 1});
    CHECK(c.to_vector() == std::vector<float>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("contiguous copies any transposed or permuted layout in C order, tile edges included") {
    // 37 x 53 leaves partial 16 x 16 tiles on both edges; the 3-D cases copy a matrix per
    // leading index with a strided last dimension, and one with a strided middle dimension
    const auto element_by_element = [](const Tensor& t) {
        std::vector<float> values;
        std::vector<std::size_t> index(t.dim(), 0);
        for (std::size_t n = 0; n < t.numel(); ++n) {
            values.push_back(t.at(index));
            for (std::size_t d = t.dim(); d-- > 0;) {
                if (++index[d] < t.size(d)) break;
                index[d] = 0;
            }
        }
        return values;
    };
    for (const Tensor& t : {iota({37, 53}).transpose(0, 1), iota({3, 37, 53}).transpose(1, 2),
                            iota({3, 37, 53}).transpose(0, 2), iota({5, 7, 3}).transpose(0, 1),
                            iota({16, 16}).transpose(0, 1), iota({1, 40}).transpose(0, 1)}) {
        const Tensor c = t.contiguous();
        CHECK(c.is_contiguous());
        CHECK(c.to_vector() == element_by_element(t));
    }
}

TEST_CASE("size-1 dimensions do not break contiguity") {
    const Tensor t = iota({2, 1, 8, 64}).transpose(1, 2);  // one head: (B, N, 1, d_k)
    CHECK(t.is_contiguous());
    CHECK(t.view({2, 8, 64}).shares_storage_with(t));
}

TEST_CASE("bad indices and dimensions are errors, not crashes") {
    const Tensor t = iota({2, 3});
    REQUIRE_THROWS_AS(t.transpose(0, 2), mha::Error);
    REQUIRE_THROWS_AS(t.at({2, 0}), mha::Error);
    REQUIRE_THROWS_AS(t.at({0}), mha::Error);
    REQUIRE_THROWS_AS(Tensor({2, 2}, {1, 2, 3}), mha::Error);
}

}  // namespace test_tensor
