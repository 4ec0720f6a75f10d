// The MLA form traced: x, the projections, the cached latent and RoPE key, then the weights
// and the output of the naive form and of the absorbed form, with their largest difference.

#include "core/mla_pass.h"

#include <algorithm>
#include <cmath>

namespace mha {

namespace {

// max |a − b| over two tensors of one shape, in double.
double max_difference(const Tensor& a, const Tensor& b) {
    const Tensor x = a.contiguous(), y = b.contiguous();
    double worst = 0.0;
    for (std::size_t i = 0; i < x.numel(); ++i) {
        worst = std::max(worst, std::fabs(double(x.data()[i]) - double(y.data()[i])));
    }
    return worst;
}

}  // namespace

PassSpec mla_spec(const MlaSizes& m, std::size_t batch, std::size_t seq_len, bool causal,
                  const Rope& rope) {
    Masks masks;
    masks.causal = causal;
    ForwardOptions options;
    options.heads = m.heads;
    options.rope = rope;
    PassSpec spec = pass_spec(Sizes{batch, seq_len, seq_len, m.d_model, m.d_model, m.d_model,
                                    m.heads, m.heads, m.d_model / m.heads},
                              masks, options, Form::Mla);
    spec.bias = {false, false, false, false};
    spec.mla = m;
    return spec;
}

ForwardResult forward_mla(const MlaWeights& w, const Tensor& x, std::size_t heads, bool causal,
                          const Rope& rope, Tracer& tracer) {
    const MlaSizes m = mla_sizes(w, heads);
    const MlaResult naive = mla_forward(w, x, heads, causal, rope, MlaForm::Naive);
    const MlaResult absorbed = mla_forward(w, x, heads, causal, rope, MlaForm::Absorbed);
    PassTrace trace(tracer, mla_spec(m, x.size(0), x.size(1), causal, rope));
    trace.show_input(x);             // 0
    trace.show(naive.queries);       // 1  q_proj
    trace.show(naive.kv_a);          // 2  kv_a_proj_with_mqa
    trace.show(naive.latent);        // 2  the cached latent, normalised
    trace.show(naive.rope_key);      // 5  the cached RoPE key, rotated
    trace.show(naive.weights);       // 9  naive
    trace.show(naive.output);        // 14 naive
    if (trace.on()) trace.upcoming().mla->max_difference = max_difference(absorbed.weights, naive.weights);
    trace.show(absorbed.weights);    // 9  absorbed
    if (trace.on()) trace.upcoming().mla->max_difference = max_difference(absorbed.output, naive.output);
    trace.show(absorbed.output);     // 14 absorbed
    ForwardResult result;
    result.output = naive.output;
    result.weights = naive.weights;
    return result;
}

}  // namespace mha
