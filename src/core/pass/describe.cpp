// The words, counts and facts that steps' descriptions share.

#include "core/pass/describe.h"

#include <algorithm>
#include <utility>

#include "core/checked.h"
#include "core/ops/ops.h"
#include "core/position/position_bias.h"

namespace mha {

Step described(StepKind kind, int number, std::string name, std::string tensor,
               std::string expression, Dims dims, std::uint64_t macs) {
    Step step;
    step.kind = kind;
    step.number = number;
    step.name = std::move(name);
    step.tensor = std::move(tensor);
    step.expression = std::move(expression);
    step.dims = std::move(dims);
    step.macs = macs;
    return step;
}

Step described(Operand operand, StepKind kind, int number, std::string name, std::string tensor,
               std::string expression, Dims dims, std::uint64_t macs) {
    Step step = described(kind, number, std::move(name), std::move(tensor), std::move(expression),
                          std::move(dims), macs);
    step.operand = operand;
    return step;
}

std::uint64_t macs_of(std::initializer_list<std::uint64_t> factors) {
    return checked_product(factors, "the multiply-adds");
}

std::uint64_t copy_bytes(const Tensor& t) {
    if (t.is_contiguous()) return 0;
    return checked_product({element_count(t.shape()), sizeof(float)}, "the copy");
}

std::string bias_suffix(bool bias, const std::string& name) {
    return bias ? " + " + name : std::string();
}

std::string scale_suffix(bool scale, double scale_base) {
    return !scale ? "" : scale_base > 0 ? " / sqrt(S)" : " / sqrt(d_k)";
}

std::string q_width_name(const Sizes& s) { return s.inner() == s.d_model ? "d_model" : "h·d_k"; }

std::string v_dim_name(const Sizes& s) { return s.d_v() == s.d_k() ? "d_k" : "d_v"; }

std::string concat_width_name(const Sizes& s) {
    if (s.d_v() == s.d_k()) return q_width_name(s);
    return s.value_inner() == s.d_model ? "d_model" : "h·d_v";
}

std::string query_name(bool self_attention) { return self_attention ? "x" : "x_q"; }

std::vector<std::vector<bool>> allowed_grid(const Masks& masks, std::size_t n, std::size_t m) {
    std::vector<std::vector<bool>> grid(n, std::vector<bool>(m));
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < m; ++j) {
            grid[i][j] = masks.window > 0 ? window_allows({masks.window, masks.sinks}, i + m - n, j)
                                          : j < causal_key_end(i, n, m, masks.causal_align);
        }
    }
    return grid;
}

WindowFacts window_facts(const Masks& masks, const Sizes& s, std::size_t length) {
    const std::size_t kept = window_cache_positions({masks.window, masks.sinks}, length);
    return {masks.window,
            masks.sinks,
            length,
            kept,
            macs_of({s.batch, s.kv_heads, kept, s.d_k() + s.d_v(), sizeof(float)}),
            macs_of({s.batch, s.kv_heads, length, s.d_k() + s.d_v(), sizeof(float)})};
}

void mask_facts(const Masks& masks, const Sizes& s, std::size_t n, std::size_t m,
                StepFacts& facts) {
    facts.masks = masks;
    facts.mask_queries = n;
    facts.mask_keys = m;
    if (masks.alibi) facts.alibi_slopes = alibi_slopes(s.heads);
    if (masks.window > 0) facts.window = window_facts(masks, s, m);
}

TokenFacts token_facts(const Sizes& s, std::size_t t) {
    TokenFacts facts;
    facts.position = t + 1;
    facts.count = s.seq_len;
    facts.cache_bytes = macs_of({2, s.batch, s.kv_heads, t + 1, s.d_k(), sizeof(float)});
    return facts;
}

RopeFacts rope_facts(const Rope& rope, const Sizes& s) {
    const std::size_t d_k = s.d_k(), M = s.kv_len;
    const std::vector<double> inv_freq = rope_inv_freq(d_k, rope, 4);  // the shown pairs'
    RopeFacts facts{rope.layout == RopeLayout::Half, rope.theta, d_k, s.seq_len, M, d_k / 2, {},
                    rope.scaling != RopeScaling::None};
    const std::size_t shown = inv_freq.size();
    for (std::size_t position : {std::size_t(0), std::size_t(1), M - 1}) {
        if (position >= M || (position == M - 1 && M <= 2)) continue;
        std::vector<double> angles;
        for (std::size_t i = 0; i < shown; ++i) angles.push_back(double(position) * inv_freq[i]);
        facts.angles.emplace_back(position, std::move(angles));
    }
    return facts;
}

}  // namespace mha

namespace mha {

Step output_described(const Sizes& s, bool bias) {
    Step step = described(StepKind::OutputProject, 14, "project", "output",
                          "output = concat @ W_o.T" + bias_suffix(bias, "b_o"),
                          {"B", "N", "d_model"},
                          macs_of({s.batch, s.seq_len, s.d_model, s.value_inner()}));
    step.facts.value_heads = s.d_v() != s.d_k();
    return step;
}

std::string gated_expression(const std::string& t, bool headwise, const std::string& width) {
    if (!headwise) return t + " = " + t + " * gate";
    return t + " = (" + t + ".view(B, N, h, d_k) * gate.unsqueeze(-1)).view(B, N, " + width + ")";
}

}  // namespace mha
