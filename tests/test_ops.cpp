// Kernels and parallel_for on cases small enough to check by hand.

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <mutex>

#include "core/ops/ops.h"
#include "core/threads/parallel.h"

namespace test_ops {

using mha::MatrixView;
using mha::Tensor;

namespace {

constexpr double exact = 1e-6;  // float rounding of small hand-computed values
const float inf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("matmul reads strided views, so K.T is only a view") {
    // [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] = [[1*5 + 2*7, 1*6 + 2*8], [3*5 + 4*7, 3*6 + 4*8]]
    const float a[] = {1, 2, 3, 4};
    const float b[] = {5, 6, 7, 8};
    float c[4];
    mha::matmul({a, 2, 2, 2, 1}, {b, 2, 2, 2, 1}, c, 2);
    CHECK(std::vector<float>(c, c + 4) == std::vector<float>{19, 22, 43, 50});
    // a @ b.T = [[1*5 + 2*6, 1*7 + 2*8], [3*5 + 4*6, 3*7 + 4*8]] = [[17, 23], [39, 53]]
    mha::matmul({a, 2, 2, 2, 1}, MatrixView{b, 2, 2, 2, 1}.transposed(), c, 2);
    CHECK(std::vector<float>(c, c + 4) == std::vector<float>{17, 23, 39, 53});
}

TEST_CASE("softmax subtracts the row max and sums to one") {
    // softmax([1, 2, 3]) = [e, e^2, e^3] / (e + e^2 + e^3) = [0.0900306, 0.2447285, 0.6652410]
    // softmax([1000, 1000]) would overflow exp without the max subtraction: [0.5, 0.5]
    float rows[] = {1, 2, 3, 1000, 1000, -inf};
    CHECK(mha::softmax_rows(rows, 2, 3, false) == 0);
    CHECK(rows[0] == Approx(0.0900306).margin(exact));
    CHECK(rows[1] == Approx(0.2447285).margin(exact));
    CHECK(rows[2] == Approx(0.6652410).margin(exact));
    CHECK(rows[3] == Approx(0.5).margin(exact));
    CHECK(rows[4] == Approx(0.5).margin(exact));
    CHECK(rows[5] == 0.0f);
}

TEST_CASE("a row with every key blocked is NaN like PyTorch, or zeros on request") {
    float nan_row[] = {-inf, -inf, 0, 0};
    CHECK(mha::softmax_rows(nan_row, 2, 2, false) == 1);
    CHECK(std::isnan(nan_row[0]));
    CHECK(std::isnan(nan_row[1]));
    CHECK(nan_row[2] == Approx(0.5).margin(exact));
    float zero_row[] = {-inf, -inf};
    CHECK(mha::softmax_rows(zero_row, 1, 2, true) == 1);
    CHECK(zero_row[0] == 0.0f);
    CHECK(zero_row[1] == 0.0f);
}

TEST_CASE("the causal mask is bottom-right aligned") {
    // N = 2 queries, M = 4 keys: query i sees keys j <= i + (M - N) = i + 2
    float scores[8] = {};
    mha::apply_causal(scores, 2, 4);
    CHECK(std::vector<float>(scores, scores + 8) == std::vector<float>{0, 0, 0, -inf, 0, 0, 0, 0});
    // N = M = 3: the usual lower triangle
    float square[9] = {};
    mha::apply_causal(square, 3, 3);
    CHECK(std::vector<float>(square, square + 9) ==
          std::vector<float>{0, -inf, -inf, 0, 0, -inf, 0, 0, 0});
    // N = 3 > M = 2: query 0 has no key left (j <= 0 - 1)
    float tall[6] = {};
    mha::apply_causal(tall, 3, 2);
    CHECK(std::vector<float>(tall, tall + 6) == std::vector<float>{-inf, -inf, 0, -inf, 0, 0});
}

TEST_CASE("the causal mask aligned top-left: query i sees keys j <= i, as is_causal=True") {
    using mha::CausalAlign;
    // N = 2 queries, M = 4 keys: tril(ones(2, 4)) keeps key 0 for query 0, keys 0-1 for query 1
    float scores[8] = {};
    mha::apply_causal(scores, 2, 4, CausalAlign::TopLeft);
    CHECK(std::vector<float>(scores, scores + 8) ==
          std::vector<float>{0, -inf, -inf, -inf, 0, 0, -inf, -inf});
    // N = 3 > M = 2: every query keeps key 0, so no row is empty (bottom-right empties row 0)
    float tall[6] = {};
    mha::apply_causal(tall, 3, 2, CausalAlign::TopLeft);
    CHECK(std::vector<float>(tall, tall + 6) == std::vector<float>{0, -inf, 0, 0, 0, 0});
    // both alignments agree when N = M
    for (std::size_t i = 0; i < 5; ++i) {
        CHECK(mha::causal_key_end(i, 5, 5, CausalAlign::TopLeft) ==
              mha::causal_key_end(i, 5, 5, CausalAlign::BottomRight));
    }
}

TEST_CASE("masks add, key padding applies to every query row") {
    float scores[4] = {1, 2, 3, 4};
    const float mask[4] = {0, -1, -inf, 0.5f};
    mha::add_mask(scores, mask, 4);
    CHECK(std::vector<float>(scores, scores + 4) == std::vector<float>{1, 1, -inf, 4.5f});
    float rows[4] = {0, 0, 0, 0};
    const float padding[2] = {0, -inf};
    mha::add_key_padding(rows, padding, 2, 2);
    CHECK(std::vector<float>(rows, rows + 4) == std::vector<float>{0, -inf, 0, -inf});
}

TEST_CASE("parallel_for covers every unit exactly once for any thread count") {
    const std::size_t threads = GENERATE(1, 2, 3, 7, 16);
    const std::size_t units = GENERATE(1, 5, 7, 64);
    std::vector<int> seen(units, 0);
    std::mutex lock;
    mha::parallel_for(units, threads, [&](std::size_t begin, std::size_t end) {
        std::lock_guard<std::mutex> guard(lock);
        for (std::size_t u = begin; u < end; ++u) ++seen[u];
    });
    CHECK(seen == std::vector<int>(units, 1));
}

TEST_CASE("parallel_for passes a worker's exception to the caller") {
    REQUIRE_THROWS_WITH(mha::parallel_for(8, 4,
                                          [](std::size_t begin, std::size_t) {
                                              if (begin >= 4)
                                                  throw std::runtime_error("worker failed");
                                          }),
                        "worker failed");
}

}  // namespace test_ops
