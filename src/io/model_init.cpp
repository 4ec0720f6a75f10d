// The trainer's initial model, seeded, as PyTorch initialises train.py's modules.

#include "io/model_init.h"

#include <cmath>

#include "io/init.h"

namespace mha {

namespace {

// Fills t with U(-bound, bound) draws.
void fill_uniform(Random& random, Tensor& t, double bound) {
    const Tensor drawn = uniform_tensor(random, t.shape(), float(bound));
    std::copy(drawn.data(), drawn.data() + drawn.numel(), t.data());
}

// Fills t with N(0, std²) draws.
void fill_normal(Random& random, Tensor& t, float std) {
    float* values = t.data();
    for (std::size_t i = 0; i < t.numel(); ++i) values[i] = std * random.normal();
}

void fill(Tensor& t, float value) { std::fill(t.data(), t.data() + t.numel(), value); }

double linear_bound(std::size_t fan_in) { return 1.0 / std::sqrt(double(fan_in)); }

}  // namespace

Model seeded_model(const std::vector<std::uint32_t>& vocab, const ModelSizes& s,
                   std::uint64_t seed) {
    const std::size_t V = vocab.size(), E = s.d_model, F = s.d_ff;
    std::vector<Shape> shapes = {{V, E}, {s.context, E}};
    const std::vector<Shape> layer_shapes = {
        {E, E}, {E, E}, {E, E}, {E, E}, {E}, {E}, {E}, {E},  // W_q, W_k, W_v, W_o, b_q ... b_o
        {E},    {E},    {E},    {E},                         // norm1, norm2: weight, bias
        {F, E}, {F},    {E, F}, {E}};                        // linear1, linear2
    for (std::size_t l = 0; l < s.layers; ++l)
        shapes.insert(shapes.end(), layer_shapes.begin(), layer_shapes.end());
    shapes.insert(shapes.end(), {{E}, {E}, {V, E}, {V}});
    std::vector<Tensor> t = Tensor::in_one_block(shapes);  // zero-filled

    Random random(seed, model_stream);
    Model m;
    m.vocab = vocab;
    m.token_embedding = t[0];
    m.position_embedding = t[1];
    fill_normal(random, m.token_embedding, 0.02f);
    fill_normal(random, m.position_embedding, 0.2f);
    std::size_t next = 2;
    for (std::size_t l = 0; l < s.layers; ++l) {
        ModelLayer layer;
        Weights& a = layer.attention;
        BlockWeights& b = layer.block;
        for (Tensor* each :
             {&a.w_q, &a.w_k, &a.w_v, &a.w_o, &a.b_q, &a.b_k, &a.b_v, &a.b_o, &b.norm1_weight,
              &b.norm1_bias, &b.norm2_weight, &b.norm2_bias, &b.w_1, &b.b_1, &b.w_2, &b.b_2})
            *each = t[next++];
        // in_proj_weight (3E, E) as one Xavier-uniform draw: W_q, W_k, W_v in order
        const double xavier = std::sqrt(6.0 / double(E + 3 * E));
        for (Tensor* w : {&a.w_q, &a.w_k, &a.w_v}) fill_uniform(random, *w, xavier);
        fill_uniform(random, a.w_o, linear_bound(E));  // out_proj's bias stays 0
        fill(b.norm1_weight, 1.0f);
        fill(b.norm2_weight, 1.0f);
        fill_uniform(random, b.w_1, linear_bound(E));
        fill_uniform(random, b.b_1, linear_bound(E));
        fill_uniform(random, b.w_2, linear_bound(F));
        fill_uniform(random, b.b_2, linear_bound(F));
        layer.heads = s.heads;
        m.layers.push_back(std::move(layer));
    }
    m.norm_weight = t[next++];
    m.norm_bias = t[next++];
    m.head_weight = t[next++];
    m.head_bias = t[next++];
    fill(m.norm_weight, 1.0f);
    fill_uniform(random, m.head_weight, linear_bound(E));
    fill_uniform(random, m.head_bias, linear_bound(E));
    return m;
}

}  // namespace mha
