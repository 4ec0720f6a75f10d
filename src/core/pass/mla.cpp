// MLA's sizes: what its weights imply, the sizes of its shared passes, its parameters and
// its cache ledger; the copy between rows and heads its forward and backward share.

#include "core/pass/mla.h"

#include <algorithm>
#include <string>

#include "core/checked.h"
#include "core/error.h"

namespace mha {

static std::string dims(const Tensor& t) { return to_string(t.shape()); }

MlaSizes mla_sizes(const MlaWeights& w, std::size_t heads) {
    MlaSizes s{};
    s.heads = heads;
    s.d_model = w.w_q.size(1);
    s.d_latent = w.kv_norm.size(0);
    if (heads == 0 || w.w_kv_a.size(0) <= s.d_latent || w.w_q.size(0) % heads != 0 ||
        w.w_kv_b.size(0) % heads != 0) {
        throw Error("MLA: weights q " + dims(w.w_q) + ", kv_a " + dims(w.w_kv_a) + ", kv_b " +
                    dims(w.w_kv_b) + " do not split into " + std::to_string(heads) + " heads");
    }
    s.d_rope = w.w_kv_a.size(0) - s.d_latent;
    if (w.w_q.size(0) / heads <= s.d_rope ||
        w.w_kv_b.size(0) / heads <= w.w_q.size(0) / heads - s.d_rope) {
        throw Error("MLA: q " + dims(w.w_q) + " and kv_b " + dims(w.w_kv_b) +
                    " leave no room for the RoPE part d_R = " + std::to_string(s.d_rope));
    }
    s.d_nope = w.w_q.size(0) / heads - s.d_rope;
    s.d_v = w.w_kv_b.size(0) / heads - s.d_nope;
    if (w.w_kv_a.size(1) != s.d_model || w.w_kv_b.size(1) != s.d_latent ||
        w.w_o.shape() != Shape{s.d_model, heads * s.d_v}) {
        throw Error("MLA: kv_a " + dims(w.w_kv_a) + ", kv_b " + dims(w.w_kv_b) + " and o " +
                    dims(w.w_o) + " do not fit d_model = " + std::to_string(s.d_model) +
                    ", d_c = " + std::to_string(s.d_latent) +
                    ", h·d_v = " + std::to_string(heads * s.d_v));
    }
    if (s.d_rope % 2 != 0)
        throw Error("RoPE needs an even d_k, got d_R = " + std::to_string(s.d_rope));
    return s;
}

Sizes mla_naive_sizes(const MlaSizes& m, std::size_t batch, std::size_t seq_len) {
    Sizes s{batch,     seq_len, seq_len, m.d_model,          m.d_model,
            m.d_model, m.heads, m.heads, m.d_nope + m.d_rope};
    s.value_dim = m.d_v;
    return s;
}

Sizes mla_absorbed_sizes(const MlaSizes& m, std::size_t batch, std::size_t seq_len) {
    Sizes s{batch,     seq_len,   seq_len,
            m.d_model, m.d_model, m.d_model,
            m.heads,   1,         m.d_latent + m.d_rope};
    s.value_dim = m.d_latent;
    return s;
}

CachePerToken cache_per_token(const MlaSizes& s, std::size_t kv_heads) {
    const std::uint64_t d_h = s.d_nope;
    return {2 * s.heads * d_h, 2 * kv_heads * d_h, 2 * d_h, std::uint64_t(s.d_latent) + s.d_rope};
}

std::size_t ledger_kv_heads(std::size_t heads) {
    if (heads > 8 && heads % 8 == 0) return 8;
    for (std::size_t g = heads / 2; g > 1; --g) {
        if (heads % g == 0) return g;
    }
    return 0;
}

MlaFacts mla_facts(const MlaSizes& m, std::size_t N, bool absorbed) {
    MlaFacts facts;
    facts.heads = m.heads;
    facts.d_nope = m.d_nope;
    facts.d_rope = m.d_rope;
    facts.d_latent = m.d_latent;
    facts.d_v = m.d_v;
    facts.length = N;
    facts.gqa_kv_heads = ledger_kv_heads(m.heads);
    facts.absorbed = absorbed;
    return facts;
}

MlaSizes seeded_mla_sizes(std::size_t d_model, std::size_t heads, std::size_t d_latent,
                          std::size_t d_rope) {
    const std::size_t d_k = d_model / heads;
    return {d_model, heads, d_k, d_rope, d_latent, d_k};
}

std::uint64_t mla_parameter_count(const MlaSizes& s) {
    const std::string what = "the parameter count";
    const std::uint64_t h = s.heads;
    return checked_sum({checked_product({h, s.d_nope + s.d_rope, s.d_model}, what),
                        checked_product({s.d_latent + s.d_rope, s.d_model}, what), s.d_latent,
                        checked_product({h, s.d_nope + s.d_v, s.d_latent}, what),
                        checked_product({s.d_model, h, s.d_v}, what)},
                       what);
}

void copy_heads(HeadsCopy way, const Tensor& from, Tensor& to, std::size_t at, std::size_t first,
                std::size_t step, std::size_t width) {
    if (any_dry(from, to)) return;  // a dry run copies nothing
    const bool into_heads = way == HeadsCopy::IntoHeads;
    const Tensor& heads = into_heads ? to : from;
    const Tensor& rows = into_heads ? from : to;
    const std::size_t B = heads.size(0), h = heads.size(1), N = heads.size(2);
    const std::size_t W = heads.size(3), F = rows.size(2);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < h; ++i)
            for (std::size_t n = 0; n < N; ++n) {
                const std::size_t head_at = ((b * h + i) * N + n) * W + at;
                const std::size_t row_at = (b * N + n) * F + first + i * step;
                const float* src = from.data() + (into_heads ? row_at : head_at);
                std::copy(src, src + width, to.data() + (into_heads ? head_at : row_at));
            }
}

}  // namespace mha
