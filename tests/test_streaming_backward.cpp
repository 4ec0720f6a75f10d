// The streaming backward of one (batch, head) unit (core/kernels/streaming_backward.h) against
// the standard backward written here with plain loops in double (P stored whole,
// dS = P ∘ (dP − rowsum(dP ∘ P))), for every kind of mask; the forward's row log-sum-exp; the
// same bits on every kernel variant; scratch that does not grow with M; the traced row.

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/kernels/kernels.h"
#include "core/kernels/streaming.h"
#include "core/kernels/streaming_backward.h"
#include "core/ops/masks.h"
#include "core/pass/flash_row.h"
#include "helpers.h"
#include "kernel_variants.h"

namespace test_streaming_backward {

using mha::MatrixView;
using test::random_values;
using test::same_bits;

namespace {

// Streaming gradients against the double-precision reference, as a fraction of the reference
// tensor's largest magnitude. Each gradient sums up to M = 600 float products of recomputed
// weights (e^x to 1e-7, lse and D rounded to float), a few float32 ulps (6e-8) of the largest
// term at worst: the cases here measured at most 1.8e-6; 1e-5 leaves a factor of 5.
constexpr double grad_tolerance = 1e-5;
constexpr double lse_tolerance = 1e-5;  // lse against double, relative to max(1, |lse|)
const float inf = std::numeric_limits<float>::infinity();

// One unit's problem: q (N, d_k), k (M, d_k), v (M, d_v), d_o (N, d_v), row-major.
struct Unit {
    std::size_t n, m, d_k, d_v;
    std::vector<float> q, k, v, d_o;
    mha::Masks masks;
    std::size_t heads = 1, head = 0;  // for the ALiBi slope

    Unit(std::size_t n_, std::size_t m_, std::size_t d_k_, std::size_t d_v_)
        : n(n_),
          m(m_),
          d_k(d_k_),
          d_v(d_v_),
          q(random_values(n * d_k, 1, 2.0f)),
          k(random_values(m * d_k, 2, 2.0f)),
          v(random_values(m * d_v, 3)),
          d_o(random_values(n * d_v, 4)) {}
    mha::HeadMask mask() const {
        return mha::unit_mask(masks, 0, head, mha::Sizes{1, n, m, 1, 1, 1, heads, heads, d_k});
    }
    float factor() const { return float(1.0 / std::sqrt(double(d_k))); }
};

// What one unit's forward and backward give.
struct Result {
    std::vector<float> context, lse, dq, dk, dv;
    std::size_t blocked = 0;
};

// attend_streaming keeping lse, then attend_backward_streaming, both on the kernels in use.
Result streamed(const Unit& u, bool zero_rows = false) {
    Result r;
    r.context.resize(u.n * u.d_v);
    r.lse.resize(u.n);
    r.dq.resize(u.n * u.d_k);
    r.dk.resize(u.m * u.d_k);
    r.dv.resize(u.m * u.d_v);
    const mha::HeadMask mask = u.mask();
    const MatrixView q{u.q.data(), u.n, u.d_k, u.d_k, 1}, k{u.k.data(), u.m, u.d_k, u.d_k, 1},
        v{u.v.data(), u.m, u.d_v, u.d_v, 1};
    mha::attend_streaming(q, k, v, mask, u.factor(), zero_rows, r.context.data(), u.d_v,
                          r.lse.data());
    r.blocked = mha::attend_backward_streaming(
        q, k, v, mask, u.factor(), zero_rows,
        {{r.context.data(), u.n, u.d_v, u.d_v, 1}, r.lse.data()},
        {u.d_o.data(), u.n, u.d_v, u.d_v, 1},
        {r.dq.data(), u.d_k, r.dk.data(), u.d_k, r.dv.data(), u.d_v});
    return r;
}

// The standard backward in double, P stored whole:
//   s = cap(q kᵀ · factor) + mask;  P = softmax(s);  O = P v;  lse = ln Σ e^s
//   dP = d_o vᵀ;  dS = P ∘ (dP − rowsum(dP ∘ P)) · cap' · factor
//   dq = dS k;  dk = dSᵀ q;  dv = Pᵀ d_o
// A row with every key blocked has NaN weights (or zeros when zero_rows), which flow on.
struct Reference {
    std::vector<double> lse, dq, dk, dv;
};
Reference reference(const Unit& u, bool zero_rows = false) {
    const std::size_t n = u.n, m = u.m;
    const double factor = u.factor(), cap = u.masks.softcap;
    // what step 8 adds (attn mask, padding, ALiBi, −inf where causal or window block), read
    // off the mask model on a tile of zeros with no scale and no cap
    mha::Masks uncapped = u.masks;
    uncapped.softcap = 0.0;
    mha::HeadMask bias_mask = u.mask();
    bias_mask.masks = &uncapped;
    std::vector<float> bias(n * m, 0.0f);
    mha::scale_mask_tile(bias.data(), m, 0, n, 0, m, 1.0f, bias_mask);

    Reference r{std::vector<double>(n), std::vector<double>(n * u.d_k, 0.0),
                std::vector<double>(m * u.d_k, 0.0), std::vector<double>(m * u.d_v, 0.0)};
    std::vector<double> p(m), slope(m), dp(m);
    for (std::size_t i = 0; i < n; ++i) {
        double top = -inf;
        for (std::size_t j = 0; j < m; ++j) {
            double s = 0.0;
            for (std::size_t c = 0; c < u.d_k; ++c)
                s += double(u.q[i * u.d_k + c]) * u.k[j * u.d_k + c];
            s *= factor;
            slope[j] = 1.0;
            if (cap > 0.0) {
                const double t = std::tanh(s / cap);
                s = cap * t;
                slope[j] = 1.0 - t * t;
            }
            p[j] = s + bias[i * m + j];
            top = std::max(top, p[j]);
        }
        double sum = 0.0;
        for (std::size_t j = 0; j < m; ++j) sum += std::exp(p[j] - top);  // NaN if top = −inf
        r.lse[i] = top == -inf ? -inf : top + std::log(sum);
        for (std::size_t j = 0; j < m; ++j) {
            p[j] = top == -inf && zero_rows ? 0.0 : std::exp(p[j] - top) / sum;
        }
        double row_d = 0.0;  // rowsum(dP ∘ P), the full softmax Jacobian's row term
        for (std::size_t j = 0; j < m; ++j) {
            dp[j] = 0.0;
            for (std::size_t c = 0; c < u.d_v; ++c)
                dp[j] += double(u.d_o[i * u.d_v + c]) * u.v[j * u.d_v + c];
            row_d += dp[j] * p[j];
        }
        for (std::size_t j = 0; j < m; ++j) {
            const double ds = p[j] * (dp[j] - row_d) * slope[j] * factor;
            for (std::size_t c = 0; c < u.d_k; ++c) {
                r.dq[i * u.d_k + c] += ds * u.k[j * u.d_k + c];
                r.dk[j * u.d_k + c] += ds * u.q[i * u.d_k + c];
            }
            for (std::size_t c = 0; c < u.d_v; ++c)
                r.dv[j * u.d_v + c] += p[j] * u.d_o[i * u.d_v + c];
        }
    }
    return r;
}

// got within grad_tolerance of want's largest magnitude, NaN exactly where want has NaN.
void require_close(const std::string& name, const std::vector<float>& got,
                   const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    double largest = 0.0, worst = 0.0;
    std::size_t at = 0;
    for (double x : want) largest = std::isnan(x) ? largest : std::max(largest, std::fabs(x));
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(want[i]) || std::isnan(got[i])) {
            INFO(name << "[" << i << "]: " << got[i] << " where the reference has " << want[i]);
            REQUIRE(std::isnan(want[i]) == std::isnan(got[i]));
            continue;
        }
        const double diff = std::fabs(double(got[i]) - want[i]);
        if (diff > worst) {
            worst = diff;
            at = i;
        }
    }
    INFO(name << ": worst difference " << worst << " at " << at << ", largest |x| " << largest);
    REQUIRE(worst <= grad_tolerance * std::max(largest, 1e-30));
}

void require_matches_reference(const Unit& u, bool zero_rows = false) {
    const Result got = streamed(u, zero_rows);
    const Reference want = reference(u, zero_rows);
    for (std::size_t i = 0; i < u.n; ++i) {
        INFO("lse[" << i << "] " << got.lse[i] << " vs " << want.lse[i]);
        if (want.lse[i] == -inf) {
            REQUIRE(got.lse[i] == -inf);
            continue;
        }
        REQUIRE(std::fabs(got.lse[i] - want.lse[i]) <=
                lse_tolerance * std::max(1.0, std::fabs(want.lse[i])));
    }
    require_close("dq", got.dq, want.dq);
    require_close("dk", got.dk, want.dk);
    require_close("dv", got.dv, want.dv);
}

// An additive (N, M) mask of random finite values with some −inf entries (a bool mask's
// blocked places), no row blocked whole.
mha::Tensor attn_mask(std::size_t n, std::size_t m, bool with_blocked) {
    std::vector<float> values = random_values(n * m, 5);
    for (std::size_t e = 0; with_blocked && e < values.size(); e += 3) {
        if (e % m != 0) values[e] = -inf;
    }
    return mha::Tensor({n, m}, values);
}

// Every score mod at once: a float and −inf attn_mask, a soft-cap of 3, ALiBi (head 0 of 2,
// slope 1/16) and a window of `window` keys with `sinks` sinks.
void add_every_mod(Unit& u, std::size_t window, std::size_t sinks) {
    u.masks.attn_mask = attn_mask(u.n, u.m, true);
    u.masks.softcap = 3.0;
    u.masks.alibi = true;
    u.heads = 2;
    u.masks.window = window;
    u.masks.sinks = sinks;
}

}  // namespace

TEST_CASE("the streaming backward equals the standard one, mask by mask", "[backward]") {
    SECTION("no mask, N = 67 and M = 300 (no multiple of the tiles), d_v != d_k") {
        require_matches_reference(Unit(67, 300, 16, 24));
    }
    SECTION("N > M, one key tile") { require_matches_reference(Unit(300, 67, 8, 8)); }
    SECTION("one query, one key; d_k past gemm's 256-deep slice") {
        require_matches_reference(Unit(1, 1, 4, 4));
        require_matches_reference(Unit(70, 130, 300, 5));
    }
    SECTION("causal, both alignments, tiles skipped above the diagonal") {
        for (mha::CausalAlign align : {mha::CausalAlign::BottomRight, mha::CausalAlign::TopLeft}) {
            for (std::size_t n : {67, 300}) {
                Unit u(n, 300, 16, 16);
                u.masks.causal = true;
                u.masks.causal_align = align;
                CAPTURE(n, align == mha::CausalAlign::TopLeft);
                require_matches_reference(u);
            }
        }
    }
    SECTION("attn_mask: float values, and bool (−inf entries)") {
        for (bool with_blocked : {false, true}) {
            Unit u(67, 300, 16, 12);
            u.masks.attn_mask = attn_mask(67, 300, with_blocked);
            CAPTURE(with_blocked);
            require_matches_reference(u);
        }
    }
    SECTION("key padding") {
        Unit u(67, 300, 16, 16);
        std::vector<float> padding(300, 0.0f);
        for (std::size_t j = 5; j < 300; j += 4) padding[j] = -inf;
        u.masks.key_padding = mha::Tensor({1, 300}, padding);
        require_matches_reference(u);
    }
    SECTION("ALiBi") {
        Unit u(67, 300, 16, 16);
        u.masks.alibi = true;
        u.heads = 4;
        u.head = 1;  // slope 2^(-8·2/4) = 1/16
        require_matches_reference(u);
    }
    SECTION("a window with sinks: tiles left of the band skipped too") {
        Unit u(600, 600, 8, 8);
        u.masks.window = 40;
        u.masks.sinks = 2;
        require_matches_reference(u);
    }
    SECTION("soft-capping: dS times 1 − tanh²") {
        Unit u(67, 300, 16, 16);
        u.masks.softcap = 1.5;  // small enough that tanh bends: |scores| reach several
        require_matches_reference(u);
    }
    SECTION("every mod at once") {
        Unit u(130, 300, 16, 20);
        add_every_mod(u, 90, 3);
        require_matches_reference(u);
    }
}

TEST_CASE("a fully blocked row: NaN gradients as the standard path, or none with zeros",
          "[backward]") {
    Unit u(67, 300, 16, 16);
    std::vector<float> values(67 * 300, 0.0f);
    for (std::size_t j = 0; j < 300; ++j) values[10 * 300 + j] = -inf;  // query 10 sees nothing
    u.masks.attn_mask = mha::Tensor({67, 300}, values);

    SECTION("NaN: query 10's dQ row, and every dK and dV entry (its NaN weights reach all)") {
        const Result got = streamed(u);
        CHECK(got.blocked == 1);
        CHECK(got.lse[10] == -inf);
        for (std::size_t i = 0; i < 67; ++i) {
            CAPTURE(i);
            CHECK(std::isnan(got.dq[i * 16]) == (i == 10));
        }
        require_matches_reference(u);  // the reference's NaN weights flow the same way
    }
    SECTION("--masked-rows zero: the row's output is 0, so it adds no gradient") {
        const Result got = streamed(u, true);
        CHECK(got.blocked == 1);
        for (std::size_t c = 0; c < 16; ++c) CHECK(got.dq[10 * 16 + c] == 0.0f);
        require_matches_reference(u, true);
    }
}

TEST_CASE("the forward's lse changes no bit of its output, and M = 0 gives lse −inf",
          "[backward]") {
    Unit u(130, 300, 16, 16);
    u.masks.causal = true;
    const mha::HeadMask mask = u.mask();
    const MatrixView q{u.q.data(), u.n, 16, 16, 1}, k{u.k.data(), u.m, 16, 16, 1},
        v{u.v.data(), u.m, 16, 16, 1};
    std::vector<float> plain(u.n * 16), with_lse(u.n * 16), lse(u.n);
    mha::attend_streaming(q, k, v, mask, u.factor(), false, plain.data(), 16);
    mha::attend_streaming(q, k, v, mask, u.factor(), false, with_lse.data(), 16, lse.data());
    CHECK(same_bits(plain, with_lse));

    Unit empty(3, 0, 4, 4);
    const Result got = streamed(empty);
    for (float x : got.lse) CHECK(x == -inf);
    for (float x : got.dq) CHECK(x == 0.0f);  // no key: the output is constant, so no gradient
    CHECK(got.blocked == 0);
}

TEST_CASE("the streaming backward gives the same bits on every kernel variant", "[backward]") {
    const int mods = GENERATE(0, 1, 2);  // none; causal and padding; every modern mod
    CAPTURE(mods);
    Unit u(130, 300, GENERATE(std::size_t(7), std::size_t(64)), 20);
    if (mods == 1) {
        u.masks.causal = true;
        std::vector<float> padding(300, 0.0f);
        for (std::size_t j = 0; j < 300; j += 7) padding[j] = -inf;
        u.masks.key_padding = mha::Tensor({1, 300}, padding);
    }
    if (mods == 2) add_every_mod(u, 40, 2);
    auto on = [&](mha::KernelVariant variant) {
        const test::UsingVariant using_variant(variant);
        return streamed(u);
    };
    const Result plain = on(mha::KernelVariant::Plain);
    for (mha::KernelVariant variant : mha::runnable_kernel_variants()) {
        CAPTURE(mha::kernel_variant_name(variant));
        const Result r = on(variant);
        CHECK(same_bits(r.lse, plain.lse));
        CHECK(same_bits(r.dq, plain.dq));
        CHECK(same_bits(r.dk, plain.dk));
        CHECK(same_bits(r.dv, plain.dv));
    }
}

TEST_CASE("the streaming backward's scratch is O(tile), not O(N·M)", "[backward]") {
    // the tile's P and dS (64 x 256 each), D (N) and gemm's packing; M appears nowhere
    const std::uint64_t at_2048 = mha::streaming_backward_scratch_floats(2048, 64, 64),
                        at_4096 = mha::streaming_backward_scratch_floats(4096, 64, 64);
    CHECK(at_4096 - at_2048 == 2048);   // only D grows, one float per query
    CHECK(at_2048 < 2048 * 2048 / 40);  // under 2.5% of one head's (N, M) weights
    CHECK(at_2048 >= 2 * mha::stream_query_tile * mha::stream_key_tile + 2048);
}

TEST_CASE("the traced backward row is the kernel's dQ row, beside the standard row", "[backward]") {
    const bool mods = GENERATE(false, true);
    CAPTURE(mods);
    Unit u(130, 600, 16, 12);
    u.masks.causal = true;
    if (mods) {
        u.masks.attn_mask = attn_mask(130, 600, true);
        u.masks.softcap = 3.0;
        u.masks.alibi = true;
        u.heads = 2;
    }
    const Result got = streamed(u);
    const mha::HeadMask mask = u.mask();
    const MatrixView q{u.q.data(), u.n, 16, 16, 1}, k{u.k.data(), u.m, 16, 16, 1},
        v{u.v.data(), u.m, 12, 12, 1}, d_o{u.d_o.data(), u.n, 12, 12, 1};
    const mha::UnitForward forward{{got.context.data(), u.n, 12, 12, 1}, got.lse.data()};
    for (std::size_t row : {std::size_t(0), std::size_t(77), std::size_t(129)}) {
        CAPTURE(row);
        const mha::FlashBackFacts facts =
            mha::flash_back_facts(q, k, v, mask, u.factor(), forward, d_o, row, 1);
        // bottom-right causal, N = 130, M = 600: row i sees keys 0 .. i + 470, in 256-wide tiles
        CHECK(facts.tiles.size() == (row + 470) / 256 + 1);
        CHECK(facts.key_tile == mha::stream_key_tile);
        CHECK(facts.lse == got.lse[row]);
        const std::vector<float> kernel_row(got.dq.begin() + row * 16,
                                            got.dq.begin() + (row + 1) * 16);
        CHECK(same_bits(facts.dq, kernel_row));
        CHECK(same_bits(facts.tiles.back().dq, kernel_row));
        CHECK(facts.max_difference <= grad_tolerance * 10);
        CHECK(facts.d == Approx(facts.d_standard).margin(1e-5));  // the D trick: dO·O = dP·P
        double weights = 0.0, ds = 0.0;
        for (const mha::FlashBackTile& tile : facts.tiles) {
            weights += tile.weight_sum;
            ds += tile.ds_sum;
        }
        CHECK(weights == Approx(1.0).margin(1e-5));  // the recomputed P sums to 1 over the row
        if (!mods) CHECK(ds == Approx(0.0).margin(1e-5));  // Σ P (dP − D) = D − D
    }
}

}  // namespace test_streaming_backward
