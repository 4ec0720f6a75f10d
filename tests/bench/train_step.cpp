// Times one training step of the character model and its phases apart, interleaved, at the
// default recipe's sizes (examples/models/kjv-2x4.npz: 2 pre-LN layers, d_model 64, 4 heads,
// d_ff 256, vocabulary 63; B rows of N tokens), and prints each phase's median.
//
//   build/bench_train_step [B] [N] [repeat] [threads] [model.npz] [only]
//
// `only`: run just the phases whose name contains it (for a profiler).
//
// The phases call the layers the step calls, one at a time, on layer 0's inputs (every layer
// has the same sizes, so a layer's phases cost the same in each); "model fwd+bwd" is
// model_forward_backward and "whole step" adds gradient clipping and AdamW on every parameter;
// ", workspace": with one workspace kept across the steps (these three take the batch in one
// pass); "train_step" is the trainer's step (core/train/train_step.h), which takes it in
// micro-batches side by side on the threads and updates the same parameters.

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/backward/block_backward.h"
#include "core/backward/linear_backward.h"
#include "core/backward/model_backward.h"
#include "core/layers/cross_entropy.h"
#include "core/layers/embedding.h"
#include "core/layers/gelu.h"
#include "core/layers/layer_norm.h"
#include "core/ops/block_ops.h"
#include "core/pass/projection.h"
#include "core/train/optimizer.h"
#include "core/train/train_step.h"
#include "io/init.h"
#include "io/model_file.h"
#include "timing.h"

namespace {

// Every trainable array of a model, in one list.
std::vector<mha::Tensor*> parameters(mha::Model& m) {
    std::vector<mha::Tensor*> all{&m.token_embedding, &m.position_embedding};
    for (mha::ModelLayer& layer : m.layers) {
        mha::Weights& a = layer.attention;
        mha::BlockWeights& b = layer.block;
        for (mha::Tensor* t : {&a.w_q, &a.w_k, &a.w_v, &a.w_o, &a.b_q, &a.b_k, &a.b_v, &a.b_o,
                               &b.norm1_weight, &b.norm1_bias, &b.norm2_weight, &b.norm2_bias,
                               &b.w_1, &b.b_1, &b.w_2, &b.b_2})
            all.push_back(t);
    }
    for (mha::Tensor* t : {&m.norm_weight, &m.norm_bias, &m.head_weight, &m.head_bias})
        all.push_back(t);
    return all;
}

}  // namespace

int main(int argc, char** argv) {
    using bench::argument;
    const std::size_t B = argument(argc, argv, 1, 32), N = argument(argc, argv, 2, 128),
                      repeat = argument(argc, argv, 3, 21), threads = argument(argc, argv, 4, 1);
    const std::string path = argc > 5 ? argv[5] : "examples/models/kjv-2x4.npz";
    mha::Model model = mha::load_model(path, std::uint64_t(1) << 30);
    const std::size_t V = model.vocab_size(), E = model.d_model();
    mha::Random random(7, 1);
    std::vector<std::size_t> tokens(B * N), targets(B * N);
    for (std::size_t i = 0; i < B * N; ++i) {
        tokens[i] = std::size_t(random.uniform() * float(V)) % V;
        targets[i] = std::size_t(random.uniform() * float(V)) % V;
    }
    mha::Masks causal;
    causal.causal = true;
    const mha::ModelLayer& layer = model.layers[0];
    const mha::BlockWeights& w = layer.block;
    mha::ForwardOptions options;
    options.heads = layer.heads;
    options.threads = threads;
    mha::NullTracer quiet;
    mha::PassTrace untraced(quiet);

    // layer 0's inputs and what its forward keeps, for the phases that read them
    const mha::Tensor x = mha::embed(model.token_embedding, model.position_embedding, tokens, B);
    mha::BlockKept kept;
    const mha::ForwardResult block = mha::forward_block(
        layer.attention, w, mha::BlockKind::Pre, {x, x, x}, causal, options, untraced, &kept);
    mha::Tensor dy({B, N, E});
    random.uniform(-1e-3f, 1e-3f, dy.data(), dy.numel());

    const std::vector<mha::Tensor*> params = parameters(model);  // the whole steps update them
    std::vector<mha::AdamWMoments> moments;
    for (const mha::Tensor* p : params) moments.push_back(mha::adamw_moments(p->shape()));
    std::uint64_t steps = 0;
    const auto optimizer = [&](mha::Model& grads) {
        const std::vector<mha::Tensor*> g = parameters(grads);
        mha::clip_grad_norm(g, 1.0);
        ++steps;
        for (std::size_t i = 0; i < params.size(); ++i) {
            mha::adamw_step(*params[i], *g[i], moments[i], steps, 3e-4,
                            params[i]->dim() == 2 ? 0.01 : 0.0, mha::AdamWSettings{}, threads);
        }
    };
    mha::ModelBackward step = mha::model_forward_backward(model, tokens, targets, B, threads);
    mha::Workspace workspace;  // kept across the steps that are given it, as a trainer keeps it
    mha::TrainState trainer = mha::start_training(model);  // the trainer's own step

    struct Phase {
        const char* name;
        std::function<void()> run;
        std::vector<double> ms;
    };
    std::vector<Phase> phases{
        {"embedding fwd", [&] { mha::embed(model.token_embedding, model.position_embedding,
                                           tokens, B); }, {}},
        {"layer: LN1 + LN2 fwd", [&] {
             mha::layer_norm(x, w.norm1_weight, w.norm1_bias);
             mha::layer_norm(kept.norm2_in, w.norm2_weight, w.norm2_bias);
         }, {}},
        {"layer: attention fwd", [&] {
             mha::Kept k;
             mha::ForwardOptions o = options;
             o.keep = &k;
             mha::forward(layer.attention, {kept.attn_in, kept.attn_in, kept.attn_in}, causal,
                          o, untraced);
         }, {}},
        {"layer: MLP fwd", [&] {
             const mha::Tensor u = mha::project(kept.ffn_in, w.w_1, w.b_1, threads);
             mha::project(mha::gelu(u), w.w_2, w.b_2, threads);
         }, {}},
        {"layer: residuals fwd", [&] {
             mha::add(x, block.output, threads);
             mha::add(kept.norm2_in, block.output, threads);
         }, {}},
        {"layer fwd (block)", [&] {
             mha::BlockKept k;
             mha::forward_block(layer.attention, w, mha::BlockKind::Pre, {x, x, x}, causal,
                                options, untraced, &k);
         }, {}},
        {"head + CE fwd+bwd", [&] {
             const mha::Tensor n = mha::layer_norm(x, model.norm_weight, model.norm_bias);
             const mha::Tensor z = mha::project(n, model.head_weight, model.head_bias, threads);
             const mha::CrossEntropy ce = mha::cross_entropy(z, targets, threads);
             const mha::LinearGrads g =
                 mha::linear_backward(n, model.head_weight, true, ce.dlogits, threads);
             mha::layer_norm_backward(x, model.norm_weight, g.dx, threads);
         }, {}},
        {"layer: MLP bwd", [&] {
             const mha::LinearGrads g2 =
                 mha::linear_backward(kept.activated, w.w_2, true, dy, threads);
             const mha::Tensor du = mha::gelu_backward(kept.hidden, g2.dx, threads);
             mha::linear_backward(kept.ffn_in, w.w_1, true, du, threads);
         }, {}},
        {"layer: LN1 + LN2 bwd", [&] {
             mha::layer_norm_backward(kept.norm2_in, w.norm2_weight, dy, threads);
             mha::layer_norm_backward(x, w.norm1_weight, dy, threads);
         }, {}},
        {"layer: attention bwd", [&] {
             mha::backward(layer.attention, {kept.attn_in, kept.attn_in, kept.attn_in}, causal,
                           options, mha::Form::Packed, kept.attention, block.weights, dy,
                           untraced);
         }, {}},
        {"layer bwd (block)", [&] {
             mha::block_backward(layer.attention, w, mha::BlockKind::Pre, causal, options, kept,
                                 block.weights, dy, untraced);
         }, {}},
        {"embedding bwd", [&] {
             mha::embed_backward(dy, tokens, V, model.context(), threads);
         }, {}},
        {"optimizer (clip + AdamW)", [&] { optimizer(step.grads); }, {}},
        {"model fwd+bwd", [&] {
             mha::model_forward_backward(model, tokens, targets, B, threads);
         }, {}},
        {"whole step", [&] {
             mha::ModelBackward s =
                 mha::model_forward_backward(model, tokens, targets, B, threads);
             optimizer(s.grads);
         }, {}},
        {"model fwd+bwd, workspace", [&] {
             mha::model_forward_backward(model, tokens, targets, B, threads, &workspace);
         }, {}},
        {"whole step, workspace", [&] {
             mha::ModelBackward s =
                 mha::model_forward_backward(model, tokens, targets, B, threads, &workspace);
             optimizer(s.grads);
         }, {}},
        {"train_step", [&] { mha::train_step(trainer, tokens, targets, B, {}, threads); }, {}},
    };
    if (argc > 6) {
        const std::string only = argv[6];
        phases.erase(std::remove_if(phases.begin(), phases.end(),
                                    [&](const Phase& p) {
                                        return std::string(p.name).find(only) == std::string::npos;
                                    }),
                     phases.end());
    }
    for (Phase& p : phases) p.run();  // warm-up
    for (std::size_t r = 0; r < repeat; ++r) {
        for (Phase& p : phases) p.ms.push_back(bench::time_ms(p.run));
    }
    std::printf("train step (B %zu, N %zu, d_model %zu, %zu layers, V %zu), %zu thread(s), "
                "kernels %s, median of %zu\n",
                B, N, E, model.layers.size(), V, threads, mha::kernel_variant_name(), repeat);
    for (const Phase& p : phases) {
        std::printf("  %-26s %9.3f ms\n", p.name, bench::median_ms(p.ms));
    }
}
