// The fast kernels against the reference loops in core/ops: products on shapes
// that are not multiples of any tile (1, 7, 33, 65, past a packed slice and a
// packed block), fused scale-mask-softmax with every mask, and the exp; each on
// every kernel variant this CPU runs, and the variants against each other bit for bit.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/kernels/kernels.h"
#include "core/ops/ops.h"
#include "core/pass/projection.h"
#include "helpers.h"
#include "io/init.h"
#include "kernel_variants.h"

namespace test_kernels {

using mha::MatrixView;

namespace {

// float sums over k against double sums: k · 2^-24 · |terms| with room to spare
constexpr double product_tolerance = 1e-4;
constexpr double softmax_tolerance = 1e-6;  // weights in [0, 1]
constexpr double exp_relative = 3e-7;       // the series to degree 7, plus rounding
const float inf = std::numeric_limits<float>::infinity();

std::vector<float> random_values(std::size_t count, std::uint32_t stream) {
    mha::Random random(42, stream);
    std::vector<float> values(count);
    for (float& v : values) v = random.uniform(-1.0f, 1.0f);
    return values;
}

void require_close(const std::vector<float>& actual, const std::vector<float>& expected,
                   double tolerance) {
    const test::Difference d = test::max_difference(actual, expected);
    INFO("worst difference " << d.worst << " at flat index " << d.index);
    REQUIRE(d.worst <= tolerance);
}

// One table of the tuned kernels and their plain twins (llm.c's dev/cuda manner): each case
// runs the kernel on the variant in use, then its twin on the same inputs, and keeps every
// float both wrote. Sizes are off every tile: 37 rows, 300 deep (past a packed slice of 256),
// 70 and 13 wide (off the wide tiles, on the narrow ones), 33 values (past whole lanes).
struct TwinCase {
    const char* name;
    std::vector<float> (*run)(bool naive);
};

std::vector<float> gemm_case(bool naive) {
    const std::size_t n = 37, k = 300;
    std::vector<float> out;
    for (const std::size_t m : {70, 13}) {
        const std::vector<float> a = random_values(k * n, 30), b = random_values(k * m, 31);
        const MatrixView a_t = MatrixView{a.data(), k, n, n, 1}.transposed();  // read strided
        std::vector<float> c(n * m, 1.0f), c_added = c;
        if (naive) {
            mha::gemm_naive(a_t, {b.data(), k, m, m, 1}, c.data(), m, false);
            mha::gemm_naive(a_t, {b.data(), k, m, m, 1}, c_added.data(), m, true);
        } else {
            mha::gemm(a_t, {b.data(), k, m, m, 1}, c.data(), m, false);
            mha::gemm(a_t, {b.data(), k, m, m, 1}, c_added.data(), m, true);
        }
        out.insert(out.end(), c.begin(), c.end());
        out.insert(out.end(), c_added.begin(), c_added.end());
    }
    return out;
}

std::vector<float> linear_case(bool naive) {
    const std::size_t rows = 37, in = 300, out = 70;
    const std::vector<float> x = random_values(rows * in, 32), w = random_values(out * in, 33),
                             bias = random_values(out, 34);
    std::vector<float> y(rows * out);
    const mha::LinearTarget target{w.data(), bias.data(), y.data(), out};
    if (naive)
        mha::linear_naive(x.data(), rows, in, target);
    else
        mha::linear_panels(x.data(), in, {target}, 0, rows, 0, mha::linear_panel_count({target}));
    return y;
}

std::vector<float> softmax_case(bool naive) {
    const std::size_t n = 9, m = 33;
    mha::Masks masks;  // every rule scale_mask_tile applies, and rows fully blocked
    masks.attn_mask = mha::Tensor({n, m}, random_values(n * m, 35));
    masks.key_padding = mha::Tensor({1, m}, random_values(m, 36));
    masks.softcap = 2.5;
    masks.alibi = true;
    masks.window = 5;
    masks.sinks = 1;
    std::vector<float> scores = random_values(n * m, 37), unmasked = scores;
    const mha::HeadMask mask = mha::unit_mask(masks, 0, 1, {1, n, m, 4, 4, 4, 2, 2, 2});
    mha::Masks causal;
    causal.causal = true;
    const mha::HeadMask causal_mask = mha::unit_mask(causal, 0, 0, {1, n, m, 1, 1, 1, 1, 1, 1});
    const auto softmax = naive ? mha::scale_mask_softmax_naive : mha::scale_mask_softmax;
    const float masked = float(softmax(scores.data(), 0.125f, mask, false));
    scores.push_back(masked + float(softmax(unmasked.data(), 0.125f, causal_mask, true)));
    scores.insert(scores.end(), unmasked.begin(), unmasked.end());
    return scores;
}

std::vector<float> reductions_case(bool naive) {
    std::vector<float> values = random_values(33, 38);
    const float max = naive ? mha::max_of_naive(values.data(), 33) : mha::max_of(values.data(), 33);
    const float sum = naive ? mha::exp_shifted_naive(values.data(), 33, max)
                            : mha::exp_shifted(values.data(), 33, max);
    values.push_back(max);
    values.push_back(sum);
    return values;
}

// flash_scores and flash_accumulate on one fused tile: 3 panels of keys, d_k 300 for the
// scores (two slices) and 65 for the context (off the panels of mr features)
std::vector<float> flash_case(bool naive) {
    const mha::FlashRegisterTile t = mha::flash_tile();
    const std::size_t kt = 3 * t.mr, d_k = 300, d_v = 65, ldo = t.nr + 3;
    const std::vector<float> keys = random_values(kt * d_k, 39), q = random_values(d_k * t.nr, 40);
    std::vector<float> values = random_values(kt * (d_v + t.mr), 41),
                       p = random_values(kt * t.nr, 42), shrink = random_values(t.nr, 43),
                       o = random_values(d_v * ldo, 44), scores(kt * t.nr);
    if (naive) {
        mha::flash_scores_naive(keys.data(), q.data(), d_k, kt, 0.125f, scores.data());
        mha::flash_accumulate_naive(values.data(), p.data(), kt, d_v, shrink.data(), o.data(), ldo);
    } else {
        mha::flash_scores(keys.data(), q.data(), d_k, kt, 0.125f, scores.data());
        mha::flash_accumulate(values.data(), p.data(), kt, d_v, shrink.data(), o.data(), ldo);
    }
    o.insert(o.end(), scores.begin(), scores.end());
    return o;
}

const TwinCase twin_cases[] = {
    {"gemm / gemm_naive", gemm_case},
    {"linear_panels / linear_naive", linear_case},
    {"scale_mask_softmax / scale_mask_softmax_naive", softmax_case},
    {"max_of, exp_shifted / max_of_naive, exp_shifted_naive", reductions_case},
    {"flash_scores, flash_accumulate / their _naive twins", flash_case},
};

}  // namespace

TEST_CASE("every tuned kernel gives the bits of its plain twin") {
    EACH_VARIANT();
    for (const TwinCase& twin : twin_cases) {
        CAPTURE(twin.name);
        const std::vector<float> tuned = twin.run(false), naive = twin.run(true);
        const test::Difference d = test::max_difference(tuned, naive);
        INFO("worst difference " << d.worst << " at flat index " << d.index);
        CHECK(std::memcmp(tuned.data(), naive.data(), tuned.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("linear_naive computes x W.T + b") {
    // x = [1, 2]; W = [[1, 0], [0, 1], [1, 1]]; b = [0.5, 0, -1]
    // y = [1*1 + 2*0 + 0.5, 1*0 + 2*1 + 0, 1*1 + 2*1 - 1] = [1.5, 2, 2]
    const mha::Tensor x({1, 2}, {1, 2});
    const mha::Tensor w({3, 2}, {1, 0, 0, 1, 1, 1});
    const mha::Tensor b({3}, {0.5f, 0, -1});
    mha::Tensor y({1, 3});
    mha::linear_naive(x.data(), 1, 2, {w.data(), b.data(), y.data(), 3});
    CHECK(y.to_vector() == std::vector<float>{1.5f, 2, 2});
    mha::linear_naive(x.data(), 1, 2, {w.data(), nullptr, y.data(), 3});  // no bias
    CHECK(y.to_vector() == std::vector<float>{1, 2, 3});
}

TEST_CASE("gemm equals the reference matmul on shapes off every tile") {
    EACH_VARIANT();
    const std::size_t n = GENERATE(1, 7, 33, 65, 130);
    const std::size_t k = GENERATE(1, 7, 65, 300);  // 300: two packed slices of 256
    const std::size_t m = GENERATE(1, 33, 65);
    const bool transposed_a = GENERATE(false, true), transposed_b = GENERATE(false, true);
    CAPTURE(n, k, m, transposed_a, transposed_b);
    const std::vector<float> a = random_values(n * k, 1), b = random_values(k * m, 2);
    // a as (n, k) row-major, or as the transpose of a (k, n) matrix like Pᵀ, dSᵀ and dYᵀ
    const MatrixView a_view = transposed_a ? MatrixView{a.data(), k, n, n, 1}.transposed()
                                           : MatrixView{a.data(), n, k, k, 1};
    // b as (k, m) row-major, or as the transpose of an (m, k) matrix like Kᵀ and Wᵀ
    const MatrixView b_view = transposed_b ? MatrixView{b.data(), m, k, k, 1}.transposed()
                                           : MatrixView{b.data(), k, m, m, 1};
    std::vector<float> fast(n * m, 7.0f), reference(n * m);
    mha::matmul(a_view, b_view, reference.data(), m);
    mha::gemm(a_view, b_view, fast.data(), m);
    require_close(fast, reference, product_tolerance);

    SECTION("accumulate adds to what c holds") {
        std::vector<float> twice = reference;
        for (float& v : twice) v *= 2;
        mha::gemm(a_view, b_view, fast.data(), m, true);
        require_close(fast, twice, 2 * product_tolerance);
    }
}

TEST_CASE("gemm reads strided views and writes rows ldc apart") {
    EACH_VARIANT();
    // a is the transpose of a (5, 9) matrix; c sits in the left part of (9, 20) rows
    const std::vector<float> a = random_values(5 * 9, 3), b = random_values(5 * 11, 4);
    const MatrixView a_view = MatrixView{a.data(), 5, 9, 9, 1}.transposed();  // (9, 5)
    const MatrixView b_view{b.data(), 5, 11, 11, 1};
    std::vector<float> fast(9 * 20, -3.0f), reference(9 * 11);
    mha::matmul(a_view, b_view, reference.data(), 11);
    mha::gemm(a_view, b_view, fast.data(), 20);
    for (std::size_t r = 0; r < 9; ++r) {
        for (std::size_t c = 0; c < 20; ++c) {
            if (c < 11)
                CHECK(fast[r * 20 + c] == Approx(reference[r * 11 + c]).margin(product_tolerance));
            else
                CHECK(fast[r * 20 + c] == -3.0f);  // untouched
        }
    }
}

TEST_CASE("gemm gives a transposed view the bits of the same matrix stored row-major") {
    EACH_VARIANT();
    // the backward's Pᵀ dO, dSᵀ Q and dYᵀ X: packing a view read along its rows is a copy
    const std::size_t n = 130, k = 300, m = 65;
    const std::vector<float> at = random_values(k * n, 7), b = random_values(k * m, 8);
    std::vector<float> a(n * k);  // the same matrix as at's transpose, stored row-major
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t p = 0; p < k; ++p) a[i * k + p] = at[p * n + i];
    }
    const MatrixView b_view{b.data(), k, m, m, 1};
    std::vector<float> from_view(n * m), from_rows(n * m);
    mha::gemm(MatrixView{at.data(), k, n, n, 1}.transposed(), b_view, from_view.data(), m);
    mha::gemm({a.data(), n, k, k, 1}, b_view, from_rows.data(), m);
    CHECK(from_view == from_rows);
}

TEST_CASE("gemm's narrow tile gives the bits of the wide one") {
    EACH_VARIANT();
    // an output no wider than the wide tile (m <= 64 with AVX-512) runs on the narrow tile;
    // the same columns computed inside a product 80 wider run on the wide tile: the same
    // products in the same order, bit for bit (300 deep makes two packed slices)
    const std::size_t n = 130, k = GENERATE(16, 300), m = GENERATE(1, 4, 16, 64);
    const bool transposed_a = GENERATE(false, true), accumulate = GENERATE(false, true);
    CAPTURE(k, m, transposed_a, accumulate);
    const std::size_t wide = m + 80;
    const std::vector<float> a = random_values(n * k, 14), b = random_values(k * wide, 15);
    const MatrixView a_view = transposed_a ? MatrixView{a.data(), k, n, n, 1}.transposed()
                                           : MatrixView{a.data(), n, k, k, 1};
    std::vector<float> narrow = random_values(n * wide, 16), whole = narrow;
    mha::gemm(a_view, {b.data(), k, m, wide, 1}, narrow.data(), wide, accumulate);
    mha::gemm(a_view, {b.data(), k, wide, wide, 1}, whole.data(), wide, accumulate);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < m; ++j) differ += narrow[i * wide + j] != whole[i * wide + j];
    }
    CHECK(differ == 0);
}

TEST_CASE("gemm's causal skips give the bits of the whole product") {
    EACH_VARIANT();
    // P V and dS K (zeros past a row's last key), Pᵀ dO and dSᵀ Q (zeros before a key's first
    // query), Q Kᵀ and dO Vᵀ (blocked keys' outputs not wanted): each against the same product
    // computed whole, bit for bit; 300 deep makes two packed slices, 130 rows two blocks
    const std::size_t n = GENERATE(7, 33, 130), k = GENERATE(65, 300), m = GENERATE(16, 65);
    const std::ptrdiff_t shift = GENERATE(-5, 0, 3, 170);
    CAPTURE(n, k, m, shift);
    const auto zero = [&](std::size_t i, std::size_t p) {  // past row i's last key
        return std::ptrdiff_t(p) > std::ptrdiff_t(i) + shift;
    };
    std::vector<float> a = random_values(n * k, 9);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t p = 0; p < k; ++p) {
            if (zero(i, p)) a[i * k + p] = 0.0f;
        }
    }
    const std::vector<float> b = random_values(k * m, 10);
    const MatrixView b_view{b.data(), k, m, m, 1};
    std::vector<float> whole(n * m), skipped(n * m, std::numeric_limits<float>::quiet_NaN());

    SECTION("RowEnds: a zero past i + shift") {
        mha::gemm({a.data(), n, k, k, 1}, b_view, whole.data(), m);
        mha::gemm({a.data(), n, k, k, 1}, b_view, skipped.data(), m, false,
                  {mha::GemmSkip::RowEnds, shift});
        CHECK(skipped == whole);
    }
    SECTION("RowStarts: aᵀ's row i zero before depth i - shift") {
        const MatrixView a_t = MatrixView{a.data(), n, k, k, 1}.transposed();  // (k, n)
        const std::vector<float> c = random_values(n * m, 11);
        const MatrixView c_view{c.data(), n, m, m, 1};
        std::vector<float> full(k * m), part(k * m, std::numeric_limits<float>::quiet_NaN());
        mha::gemm(a_t, c_view, full.data(), m);
        // a_t(i, p) = a(p, i) = 0 when i > p + shift, that is p < i - shift
        mha::gemm(a_t, c_view, part.data(), m, false, {mha::GemmSkip::RowStarts, shift});
        CHECK(part == full);
    }
    SECTION("OutputEnds: every wanted output as in the whole product") {
        // scores (k, n) = q (k, 16) keysᵀ (16, n), wanted for key j <= query i + shift
        const std::vector<float> q = random_values(k * 16, 12), kk = random_values(n * 16, 13);
        const MatrixView keys_t = MatrixView{kk.data(), n, 16, 16, 1}.transposed();  // (16, n)
        std::vector<float> full(k * n), part(k * n, std::numeric_limits<float>::quiet_NaN());
        mha::gemm({q.data(), k, 16, 16, 1}, keys_t, full.data(), n);
        mha::gemm({q.data(), k, 16, 16, 1}, keys_t, part.data(), n, false,
                  {mha::GemmSkip::OutputEnds, shift});
        std::size_t differ = 0;
        for (std::size_t i = 0; i < k; ++i) {
            for (std::size_t j = 0; j < n && std::ptrdiff_t(j) <= std::ptrdiff_t(i) + shift; ++j)
                differ += part[i * n + j] != full[i * n + j];
        }
        CHECK(differ == 0);
    }
}

TEST_CASE("gemm gives the same bits however the rows are split") {
    EACH_VARIANT();
    // what lets parallel_for split rows over threads without changing a bit
    const std::size_t n = 71, k = 300, m = 45;
    const std::vector<float> a = random_values(n * k, 5), b = random_values(k * m, 6);
    const MatrixView b_view{b.data(), k, m, m, 1};
    std::vector<float> whole(n * m), parts(n * m);
    mha::gemm({a.data(), n, k, k, 1}, b_view, whole.data(), m);
    const std::size_t split = GENERATE(1, 5, 13, 70);
    mha::gemm({a.data(), split, k, k, 1}, b_view, parts.data(), m);
    mha::gemm({a.data() + split * k, n - split, k, k, 1}, b_view, parts.data() + split * m, m);
    CHECK(parts == whole);
}

TEST_CASE(
    "linear_panels equals linear_naive on each target of a fused product; any split of "
    "rows and panels gives the same bits, and so does gemm plus the bias",
    "[serial]") {
    EACH_VARIANT();
    // 37 rows make one block on every variant (each panel of W packed just before its use),
    // 300 several (the slice of all panels packed first); a split below mixes the two
    const std::size_t rows = GENERATE(37, 300), in = GENERATE(7, 65, 300), out = GENERATE(1, 33);
    const std::size_t wide = 70;
    const bool with_bias = GENERATE(false, true);
    CAPTURE(rows, in, out, with_bias);
    const mha::Tensor x({rows, in}, random_values(rows * in, 7));
    const mha::Tensor w({out, in}, random_values(out * in, 8));  // a target of `out` outputs
    const mha::Tensor bias = with_bias ? mha::Tensor({out}, random_values(out, 9)) : mha::Tensor();
    const mha::Tensor w2({wide, in}, random_values(wide * in, 12));  // and one of 70, with bias
    const mha::Tensor bias2({wide}, random_values(wide, 13));
    auto targets = [&](mha::Tensor& y, mha::Tensor& y2) {
        return std::vector<mha::LinearTarget>{
            {w.data(), bias.empty() ? nullptr : bias.data(), y.data(), out},
            {w2.data(), bias2.data(), y2.data(), wide}};
    };
    mha::Tensor fast({rows, out}), fast2({rows, wide});
    const std::size_t panels = mha::linear_panel_count(targets(fast, fast2));
    REQUIRE(panels >= 3);  // at least one panel for the first target, two for the second
    mha::linear_panels(x.data(), in, targets(fast, fast2), 0, rows, 0, panels);
    mha::Tensor reference({rows, out}), reference2({rows, wide});
    mha::linear_naive(x.data(), rows, in,
                      {w.data(), bias.empty() ? nullptr : bias.data(), reference.data(), out});
    mha::linear_naive(x.data(), rows, in, {w2.data(), bias2.data(), reference2.data(), wide});
    test::require_close(fast, reference, product_tolerance);
    test::require_close(fast2, reference2, product_tolerance);
    // rows and panels split in two each: four calls
    const auto in_four_parts = [&](const std::vector<mha::LinearTarget>& split,
                                   std::size_t row_split, std::size_t panel_split) {
        mha::linear_panels(x.data(), in, split, 0, row_split, 0, panel_split);
        mha::linear_panels(x.data(), in, split, row_split, rows, 0, panel_split);
        mha::linear_panels(x.data(), in, split, 0, row_split, panel_split, panels);
        mha::linear_panels(x.data(), in, split, row_split, rows, panel_split, panels);
    };

    // The splits are loops, not generators: a generator would run the products above (and
    // the reference) again for each split.
    SECTION("any split of rows and panels") {
        for (const std::size_t row_split : {1, 20}) {
            for (const std::size_t panel_split : {0, 1, 2}) {
                CAPTURE(row_split, panel_split);
                mha::Tensor parts({rows, out}), parts2({rows, wide});
                const std::vector<mha::LinearTarget> split = targets(parts, parts2);
                in_four_parts(split, row_split, panel_split);
                CHECK(parts.to_vector() == fast.to_vector());
                CHECK(parts2.to_vector() == fast2.to_vector());
            }
        }
    }
    SECTION("W packed once (pack_linear): the same bits, for any split") {
        const mha::PackedLinear packed = mha::pack_linear(w.data(), out, in);
        const mha::PackedLinear packed2 = mha::pack_linear(w2.data(), wide, in);
        REQUIRE(packed.for_kernels() != nullptr);
        for (const std::size_t row_split : {0, 20}) {
            for (const std::size_t panel_split : {0, 1, 2}) {
                for (const bool both : {false, true}) {  // or only the second target packed
                    CAPTURE(row_split, panel_split, both);
                    mha::Tensor parts({rows, out}), parts2({rows, wide});
                    std::vector<mha::LinearTarget> split = targets(parts, parts2);
                    if (both) split[0].packed = packed.for_kernels();
                    split[1].packed = packed2.for_kernels();
                    in_four_parts(split, row_split, panel_split);
                    CHECK(parts.to_vector() == fast.to_vector());
                    CHECK(parts2.to_vector() == fast2.to_vector());
                }
            }
        }
    }
    SECTION("gemm on the transposed view, then the bias") {
        std::vector<float> product(rows * out);
        mha::gemm({x.data(), rows, in, in, 1}, MatrixView{w.data(), out, in, in, 1}.transposed(),
                  product.data(), out);
        for (std::size_t r = 0; r < rows && with_bias; ++r) {
            for (std::size_t o = 0; o < out; ++o) product[r * out + o] += bias.data()[o];
        }
        CHECK(product == fast.to_vector());
    }
}

TEST_CASE("project_into gives one call's bits on any number of threads, in parts or a grid") {
    EACH_VARIANT();
    // Parts narrower than a group (in = 40: a group holds every panel), parts of whole groups
    // (in = 2000: a group is a few panels, as much of W as three quarters of L2 holds, so 600
    // outputs make more groups than four parts a thread at 2 and 3 threads), and a lone panel
    // of 8 outputs, split by rows instead (the grid). Each case has the multiply-adds for 4
    // threads or more (threads_for).
    struct Case {
        std::size_t rows, in, out;
        bool lone;
    };
    const Case c =
        GENERATE(Case{1500, 40, 70, false}, Case{120, 2000, 600, false}, Case{300, 2000, 8, true});
    const std::size_t rows = c.rows, in = c.in, out = c.out;
    const bool lone = c.lone;
    CAPTURE(rows, in, out);
    const std::vector<float> x = random_values(rows * in, 21), w = random_values(out * in, 22),
                             w2 = random_values(33 * in, 23), bias = random_values(out, 24);
    auto project = [&](std::size_t threads) {
        std::vector<float> y(rows * out), y2(rows * 33);
        std::vector<mha::LinearTarget> targets = {{w.data(), bias.data(), y.data(), out}};
        if (!lone) targets.push_back({w2.data(), nullptr, y2.data(), 33});
        mha::project_into(x.data(), rows, in, targets, threads);
        y.insert(y.end(), y2.begin(), y2.end());
        return y;
    };
    const std::vector<float> one = project(1);
    std::vector<float> reference(rows * out);
    mha::gemm({x.data(), rows, in, in, 1}, MatrixView{w.data(), out, in, in, 1}.transposed(),
              reference.data(), out);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t o = 0; o < out; ++o) reference[r * out + o] += bias[o];
    }
    CHECK(std::vector<float>(one.begin(), one.begin() + rows * out) == reference);
    for (const std::size_t threads : {2, 3, 8}) {
        CAPTURE(threads);
        CHECK(project(threads) == one);
    }
}

TEST_CASE("pack_linear: each panel of outputs all inputs deep, zero-padded, for its variant") {
    // W (3, 2) = [[1, 2], [3, 4], [5, 6]]: panel 0 holds outputs 0..nr-1, row p = (W[0][p],
    // W[1][p], W[2][p], 0, ...): (1, 3, 5, 0...) then (2, 4, 6, 0...), nr wide each.
    EACH_VARIANT();
    const std::vector<float> w = {1, 2, 3, 4, 5, 6};
    const mha::PackedLinear packed = mha::pack_linear(w.data(), 3, 2);
    CHECK(packed.variant == variant);
    const std::size_t nr = packed.panels.size() / 2;  // one panel, 2 deep
    REQUIRE(nr >= 3);
    std::vector<float> expected(2 * nr, 0.0f);
    for (std::size_t o = 0; o < 3; ++o) {
        expected[o] = w[o * 2];
        expected[nr + o] = w[o * 2 + 1];
    }
    CHECK(packed.panels == expected);
    CHECK(packed.for_kernels() == packed.panels.data());
    for (mha::KernelVariant other : mha::runnable_kernel_variants()) {  // packed for another
        const test::UsingVariant using_other(other);                    // variant: not used
        CHECK((packed.for_kernels() == nullptr) == (other != variant));
    }
}

TEST_CASE("linear_panels with no inputs gives the bias alone") {
    EACH_VARIANT();
    const std::vector<float> bias = {0.5f, -2.0f, 3.0f};
    std::vector<float> y(2 * 3, 7.0f);  // 7: stale values the call must overwrite
    const float x = 0.0f, w = 0.0f;     // never read: 0 inputs
    const std::vector<mha::LinearTarget> target = {{&w, bias.data(), y.data(), 3}};
    mha::linear_panels(&x, 0, target, 0, 2, 0, mha::linear_panel_count(target));
    CHECK(y == std::vector<float>{0.5f, -2.0f, 3.0f, 0.5f, -2.0f, 3.0f});
}

TEST_CASE("scale_mask_softmax equals scale, masks and softmax_rows") {
    EACH_VARIANT();
    const std::size_t n = GENERATE(1, 7, 33), m = GENERATE(1, 9, 65);
    const bool with_attn = GENERATE(false, true), with_padding = GENERATE(false, true);
    const bool causal = GENERATE(false, true), zero_rows = GENERATE(false, true);
    CAPTURE(n, m, with_attn, with_padding, causal, zero_rows);
    std::vector<float> attn = random_values(n * m, 10), padding(m, 0.0f);
    attn[0] = -inf;
    for (std::size_t j = 0; j < m; j += 3) padding[j] = -inf;  // key 0 is always padded
    const float factor = 0.125f;
    std::vector<float> reference = random_values(n * m, 11);
    std::vector<float> fast = reference;

    mha::scale(reference.data(), n * m, factor);
    if (with_attn) mha::add_mask(reference.data(), attn.data(), n * m);
    if (with_padding) mha::add_key_padding(reference.data(), padding.data(), n, m);
    if (causal) mha::apply_causal(reference.data(), n, m);
    const std::size_t reference_masked = mha::softmax_rows(reference.data(), n, m, zero_rows);

    mha::Masks masks;
    if (with_attn) masks.attn_mask = mha::Tensor({n, m}, attn);
    if (with_padding) masks.key_padding = mha::Tensor({1, m}, padding);
    masks.causal = causal;
    const mha::HeadMask mask = mha::unit_mask(masks, 0, 0, mha::Sizes{1, n, m, 1, 1, 1, 1, 1, 1});
    CHECK(mha::scale_mask_softmax(fast.data(), factor, mask, zero_rows) == reference_masked);
    require_close(fast, reference, softmax_tolerance);
}

TEST_CASE("HeadMask::key_end follows the bottom-right causal rule") {
    const auto view = [](const mha::Masks& masks, std::size_t n, std::size_t m) {
        return mha::unit_mask(masks, 0, 0, mha::Sizes{1, n, m, 1, 1, 1, 1, 1, 1});
    };
    mha::Masks masks;
    CHECK(view(masks, 3, 5).key_end(0) == 5);  // not causal: every key
    masks.causal = true;
    // query i sees keys j <= i + M - N = i + 2
    CHECK(view(masks, 3, 5).key_end(0) == 3);
    CHECK(view(masks, 3, 5).key_end(2) == 5);
    // N = 4, M = 2: j <= i - 2: queries 0 and 1 see nothing, query 3 sees keys 0 and 1
    const mha::HeadMask mask = view(masks, 4, 2);
    CHECK(mask.key_end(0) == 0);
    CHECK(mask.key_end(1) == 0);
    CHECK(mask.key_end(2) == 1);
    CHECK(mask.key_end(3) == 2);
}

TEST_CASE("exp_nonpositive matches std::exp; -inf and far below give 0") {
    CHECK(mha::exp_nonpositive(0.0f) == 1.0f);
    CHECK(mha::exp_nonpositive(-inf) == 0.0f);
    CHECK(mha::exp_nonpositive(-100.0f) == 0.0f);
    for (float x = -87.0f; x <= 0.0f; x += 0.01f) {
        const double expected = std::exp(double(x));
        INFO("x = " << x);
        REQUIRE(std::fabs(mha::exp_nonpositive(x) - expected) <= exp_relative * expected);
    }
}

TEST_CASE("max_of and exp_shifted over more and fewer values than their lanes") {
    EACH_VARIANT();
    const std::size_t n = GENERATE(1, 7, 8, 33);
    std::vector<float> values = random_values(n, 12);
    values[n / 2] = 3.0f;
    CHECK(mha::max_of(values.data(), n) == 3.0f);
    double expected_sum = 0;
    for (float v : values) expected_sum += std::exp(double(v) - 3.0);
    const float sum = mha::exp_shifted(values.data(), n, 3.0f);
    CHECK(sum == Approx(expected_sum).epsilon(1e-6));
    CHECK(values[n / 2] == 1.0f);
}

TEST_CASE("the fused tile's kernels equal the reference loops") {
    EACH_VARIANT();
    const mha::FlashRegisterTile t = mha::flash_tile();
    const std::size_t mr = t.mr, nr = t.nr, kt = 3 * mr;
    const std::size_t d_k = GENERATE(1, 7, 65, 300);  // 300: two slices of 256
    CAPTURE(mr, nr, d_k);

    SECTION("flash_scores: (kt, d_k) x (d_k, nr), scaled") {
        const std::vector<float> keys = random_values(kt * d_k, 20),
                                 q = random_values(nr * d_k, 21);
        std::vector<float> packed_keys(kt * d_k), packed_q(d_k * nr), scores(kt * nr);
        for (std::size_t j = 0; j < kt; ++j) {  // panels of mr keys, each (d_k, mr)
            for (std::size_t d = 0; d < d_k; ++d)
                packed_keys[j / mr * d_k * mr + d * mr + j % mr] = keys[j * d_k + d];
        }
        for (std::size_t r = 0; r < nr; ++r) {  // one panel of nr queries, (d_k, nr)
            for (std::size_t d = 0; d < d_k; ++d) packed_q[d * nr + r] = q[r * d_k + d];
        }
        mha::flash_scores(packed_keys.data(), packed_q.data(), d_k, kt, 0.125f, scores.data());
        std::vector<float> expected(kt * nr);
        for (std::size_t j = 0; j < kt; ++j) {
            for (std::size_t r = 0; r < nr; ++r) {
                double sum = 0;
                for (std::size_t d = 0; d < d_k; ++d)
                    sum += double(keys[j * d_k + d]) * q[r * d_k + d];
                expected[j * nr + r] = float(sum * 0.125);
            }
        }
        require_close(scores, expected, product_tolerance);
    }

    SECTION("flash_accumulate: o (d_k, nr) = o · shrink + valuesᵀ p") {
        const std::size_t ldo = nr + 3, padded_d = (d_k + mr - 1) / mr * mr;
        const std::vector<float> values = random_values(kt * d_k, 22),
                                 p = random_values(kt * nr, 23);
        std::vector<float> shrink = random_values(nr, 24), o = random_values(d_k * ldo, 25);
        for (float& c : shrink) c = std::fabs(c);
        std::vector<float> packed(kt * padded_d, 0.0f);  // panels of mr features, each (kt, mr)
        for (std::size_t j = 0; j < kt; ++j) {
            for (std::size_t d = 0; d < d_k; ++d)
                packed[d / mr * kt * mr + j * mr + d % mr] = values[j * d_k + d];
        }
        std::vector<float> expected = o;
        for (std::size_t d = 0; d < d_k; ++d) {
            for (std::size_t r = 0; r < nr; ++r) {
                double sum = 0;
                for (std::size_t j = 0; j < kt; ++j)
                    sum += double(values[j * d_k + d]) * p[j * nr + r];
                expected[d * ldo + r] = float(double(o[d * ldo + r] * shrink[r]) + sum);
            }
        }
        mha::flash_accumulate(packed.data(), p.data(), kt, d_k, shrink.data(), o.data(), ldo);
        require_close(o, expected, product_tolerance);  // and the 3 columns past nr untouched
    }
}

TEST_CASE("flash_softmax: running maximum, shrink and sum per query, by the formulas") {
    EACH_VARIANT();
    const std::size_t nr = mha::flash_tile().nr, kt = 12;
    // query 0: every key blocked and nothing seen before; 1: a first tile (max -inf before);
    // 2: an earlier maximum above the whole tile (shrink 1); the others: maximum 0.5, sum 2
    std::vector<float> scores = random_values(kt * nr, 26), row_max(nr, 0.5f), row_sum(nr, 2.0f);
    for (std::size_t j = 0; j < kt; ++j) {
        scores[j * nr] = -inf;
        if (j % 5 == 0) scores[j * nr + nr - 1] = -inf;  // some blocked keys
    }
    row_max[0] = row_max[1] = -inf;
    row_sum[0] = row_sum[1] = 0.0f;
    row_max[2] = 3.0f;
    std::vector<float> p = scores, shrink(nr), new_max = row_max, new_sum = row_sum;
    mha::flash_softmax(p.data(), kt, new_max.data(), new_sum.data(), shrink.data());
    for (std::size_t r = 0; r < nr; ++r) {
        CAPTURE(r);
        float top = row_max[r];
        for (std::size_t j = 0; j < kt; ++j) top = std::max(top, scores[j * nr + r]);
        CHECK(new_max[r] == top);
        if (top == -inf) {  // nothing visible: no weight, and the (zero) state stays zero
            CHECK(shrink[r] == 0.0f);
            CHECK(new_sum[r] == 0.0f);
            for (std::size_t j = 0; j < kt; ++j) CHECK(p[j * nr + r] == 0.0f);
            continue;
        }
        const double c = std::exp(double(row_max[r]) - top);  // e^-inf = 0
        CHECK(shrink[r] == Approx(c).margin(softmax_tolerance));
        double sum = row_sum[r] * c;
        for (std::size_t j = 0; j < kt; ++j) {
            const double e = std::exp(double(scores[j * nr + r]) - top);
            CHECK(p[j * nr + r] == Approx(e).margin(softmax_tolerance));
            sum += e;
        }
        CHECK(new_sum[r] == Approx(sum).epsilon(1e-6));
    }
    CHECK(shrink[2] == 1.0f);
    CHECK(shrink[1] == 0.0f);
}

TEST_CASE("every kernel variant gives the same bits as the plain one") {
    // all variants fuse each product into its sum and sum in the same order; 300 deep is past a
    // packed slice, 70 wide off every wide tile, 13 wide on the narrow tiles of AVX2 and AVX-512
    const std::size_t n = 37, k = 300, m = GENERATE(70, 13);
    CAPTURE(m);
    const std::vector<float> a = random_values(n * k, 13), b = random_values(k * m, 14);
    std::vector<float> values = random_values(m, 15);
    auto run = [&](mha::KernelVariant v) {
        const test::UsingVariant using_variant(v);
        std::vector<float> out(n * m, 1.0f), softmaxed = values;
        mha::gemm({a.data(), n, k, k, 1}, MatrixView{b.data(), m, k, k, 1}.transposed(), out.data(),
                  m, true);
        const float max = mha::max_of(softmaxed.data(), m);
        out.push_back(mha::exp_shifted(softmaxed.data(), m, max));
        out.insert(out.end(), softmaxed.begin(), softmaxed.end());
        return out;
    };
    const std::vector<float> plain = run(mha::KernelVariant::Plain);
    for (mha::KernelVariant v : mha::runnable_kernel_variants()) {
        CAPTURE(mha::kernel_variant_name(v));
        CHECK(run(v) == plain);
    }
}

// A sum of two products, -(1 + 2^-11) and then (1 + 2^-12)^2, whose exact value 2^-24 survives
// only when the second product is fused into the sum: rounded alone, it is 1 + 2^-11 (a tie,
// to even) and the sum 0. The pair sits at depth `at` of a sum of `depth` (a packed slice
// holds 256), every other product zero.
constexpr float fused_sum = 0x1p-24f;
float fused_pair(std::size_t p, std::size_t at, bool left) {
    if (p == at) return left ? 1.0f : -(1.0f + 0x1p-11f);
    return p == at + 1 ? 1.0f + 0x1p-12f : 0.0f;
}

TEST_CASE("each product is fused into its sum, one rounding, on every variant and tile edge") {
    EACH_VARIANT();
    // rows and columns off every variant's wide and narrow tiles (4x8, 8x4, 6x16, 12x8, 6x64,
    // 16x16); the pair in the first packed slice, or in the second (258 deep)
    const std::size_t n = GENERATE(1, 5, 7, 13, 37), m = GENERATE(1, 3, 8, 13, 16, 17, 64, 70);
    const std::size_t k = GENERATE(2, 258);
    CAPTURE(n, m, k);
    std::vector<float> a(n * k), a_t(k * n), b(k * m), w(m * k);  // w = bᵀ, a_t = aᵀ
    for (std::size_t p = 0; p < k; ++p) {
        for (std::size_t i = 0; i < n; ++i) a[i * k + p] = a_t[p * n + i] = fused_pair(p, k - 2, true);
        for (std::size_t j = 0; j < m; ++j) b[p * m + j] = w[j * k + p] = fused_pair(p, k - 2, false);
    }
    const std::vector<float> expected(n * m, fused_sum);
    const MatrixView b_view{b.data(), k, m, m, 1};
    for (const MatrixView& a_view :
         {MatrixView{a.data(), n, k, k, 1}, MatrixView{a_t.data(), k, n, n, 1}.transposed()}) {
        std::vector<float> c(n * m, 7.0f), naive(n * m, 7.0f);
        mha::gemm(a_view, b_view, c.data(), m);
        mha::gemm_naive(a_view, b_view, naive.data(), m, false);
        CHECK(c == expected);
        CHECK(naive == expected);
    }
    std::vector<float> y(n * m, 7.0f);
    const mha::LinearTarget target{w.data(), nullptr, y.data(), m};
    mha::linear_panels(a.data(), k, {target}, 0, n, 0, mha::linear_panel_count({target}));
    CHECK(y == expected);
}

TEST_CASE("the fused tile's products are fused into their sums too") {
    EACH_VARIANT();
    const mha::FlashRegisterTile t = mha::flash_tile();
    const std::size_t kt = 2 * t.mr, d = GENERATE(2, 65, 258);  // d: d_k, then d_v
    CAPTURE(d);
    // scores: keys (kt, d) in panels of mr, each (d, mr); queries (d, nr)
    std::vector<float> keys(kt * d), queries(d * t.nr), scores(kt * t.nr);
    for (std::size_t p = 0; p < d; ++p) {
        for (std::size_t j = 0; j < kt; ++j)
            keys[j / t.mr * d * t.mr + p * t.mr + j % t.mr] = fused_pair(p, d - 2, true);
        for (std::size_t r = 0; r < t.nr; ++r) queries[p * t.nr + r] = fused_pair(p, d - 2, false);
    }
    mha::flash_scores(keys.data(), queries.data(), d, kt, 1.0f, scores.data());
    CHECK(scores == std::vector<float>(kt * t.nr, fused_sum));
    // o (d, nr) = o · 1 + valuesᵀ p, the pair at the tile's last two keys; values in panels of
    // mr features, each (kt, mr), zero-padded past d
    const std::size_t padded = (d + t.mr - 1) / t.mr * t.mr;
    std::vector<float> values(kt * padded, 0.0f), p(kt * t.nr), shrink(t.nr, 1.0f), o(d * t.nr);
    for (std::size_t j = 0; j < kt; ++j) {
        for (std::size_t f = 0; f < d; ++f)
            values[f / t.mr * kt * t.mr + j * t.mr + f % t.mr] = fused_pair(j, kt - 2, true);
        for (std::size_t r = 0; r < t.nr; ++r) p[j * t.nr + r] = fused_pair(j, kt - 2, false);
    }
    mha::flash_accumulate(values.data(), p.data(), kt, d, shrink.data(), o.data(), t.nr);
    CHECK(o == std::vector<float>(d * t.nr, fused_sum));
}

TEST_CASE("MHA_KERNEL picks the variant; every one gives the same output at any thread count") {
    // the steps' values, without the configuration (threads) and the wall time
    const auto body = [](const std::string& s) {
        const std::size_t begin = s.find("\"parameters\"");
        return s.substr(begin, s.find("\"wall_time_ms\"") - begin);
    };
    // the standard path, then the fused tile of the streaming path in each form that runs it
    const std::string args =
        std::string(" --seed 7 -b 2 -d 64 -H 4 --values --format json ") +
        GENERATE("-n 33 -m 40 --causal", "-n 33 -m 300 --causal --attention streaming",
                 "-n 70 -m 300 --per-head --alibi --softcap 5 --attention streaming",
                 "-n 70 --block pre --window 9 --attention streaming",
                 "--decode 70 --attention streaming");
    CAPTURE(args);
    const test::RunResult expected =
        test::run_command("MHA_KERNEL=plain " + test::mha_binary() + args + " -t 1");
    REQUIRE(expected.status == 0);
    for (mha::KernelVariant v : mha::runnable_kernel_variants()) {
        for (const char* threads : {" -t 1", " -t 3"}) {
            const std::string name = mha::kernel_variant_name(v);
            CAPTURE(name, threads);
            const test::RunResult r =
                test::run_command("MHA_KERNEL=" + name + " " + test::mha_binary() + args + threads);
            REQUIRE(r.status == 0);
            CHECK(body(r.output) == body(expected.output));
            CHECK_THAT(r.output,
                       Catch::Contains("\"kernels\":\"" + name + "\""));  // the header says
        }
    }
    const test::RunResult bench =
        test::run_command("MHA_KERNEL=plain " + test::mha_binary() + " bench --quick --repeat 1");
    CHECK_THAT(bench.output, Catch::Contains("kernels plain (tile 4x8 floats, narrow 8x4;"));
}

#if defined(__x86_64__) || defined(__i386__)
TEST_CASE(
    "the variants this CPU runs are those libgcc's own check finds; the binary takes "
    "the fastest") {
    // the kernels ask glibc, which read the features before main (no cpuid of their own);
    // __builtin_cpu_supports asks the CPU through libgcc: both check the OS saves the registers
    const std::vector<mha::KernelVariant> runnable = mha::runnable_kernel_variants();
    const auto runs = [&runnable](mha::KernelVariant v) {
        return std::find(runnable.begin(), runnable.end(), v) != runnable.end();
    };
    CHECK(runs(mha::KernelVariant::Avx512) ==
          (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw")));
    CHECK(runs(mha::KernelVariant::Avx2) == bool(__builtin_cpu_supports("avx2")));
    CHECK(runs(mha::KernelVariant::Sse2) == bool(__builtin_cpu_supports("sse2")));
    CHECK(runs(mha::KernelVariant::Plain));
    const test::RunResult r =
        test::run_command("env -u MHA_KERNEL " + test::mha_binary() + " --format json");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains(std::string("\"kernels\":\"") +
                                         mha::kernel_variant_name(runnable.front()) + "\""));
}
#endif

}  // namespace test_kernels
