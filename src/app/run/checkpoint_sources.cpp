// The config.json keys behind each step of a checkpoint's traced layer, in words.

#include "app/run/checkpoint_sources.h"

#include "show/format.h"

namespace mha {

namespace {

std::string family_words(const checkpoint::Config& c) { return c.model_type + " (" + c.file + ")"; }

}  // namespace

std::map<StepKind, std::vector<std::string>> checkpoint_sources(const checkpoint::Config& c,
                                                                std::size_t layer) {
    using checkpoint::Family;
    std::map<StepKind, std::vector<std::string>> s;
    const bool gpt2 = c.family == Family::Gpt2;
    s[StepKind::Embed].push_back(
        family_words(c) + ": " +
        (gpt2 ? "wte rows of the tokens plus wpe rows 0..N-1"
              : "embed_tokens rows of the tokens; positions come from RoPE"));
    if (c.embedding_scale != 1.0f) {
        s[StepKind::Embed].push_back(
            "embedding_scale = sqrt(hidden_size " + std::to_string(c.hidden_size) +
            ") = " + compact(c.embedding_scale) + ", rounded to float32 as Gemma does");
    }
    s[StepKind::Norm].push_back(
        gpt2
            ? "LayerNorm, layer_norm_epsilon " + compact(c.norm_eps)
            : "RMSNorm, rms_norm_eps " + compact(c.norm_eps) +
                  (c.norm_plus_one ? "; Gemma's norms scale by (1 + w): the weight is 1 + w" : ""));
    if (c.sandwich) {
        s[StepKind::Norm].push_back(
            "Gemma's sandwich: post_attention_layernorm and post_feedforward_layernorm norm each "
            "branch before its residual sum; pre_feedforward_layernorm is norm2");
    }
    s[StepKind::Project].push_back(
        gpt2 ? "c_attn (Conv1D, stored (in, out)) transposed and split into W_q, W_k, W_v"
             : "q_proj, k_proj, v_proj; num_attention_heads " + std::to_string(c.heads) +
                   ", num_key_value_heads " + std::to_string(c.kv_heads) + ", head_dim " +
                   std::to_string(c.head_dim) + (c.qkv_bias ? ", with biases" : ""));
    if (c.qk_norm) {
        s[StepKind::QkNorm].push_back("q_norm and k_norm: RMSNorm over head_dim " +
                                      std::to_string(c.head_dim) + " before RoPE, rms_norm_eps " +
                                      compact(c.norm_eps) +
                                      (c.norm_plus_one ? ", weight 1 + w" : ""));
    }
    const checkpoint::LayerConfig& l = c.layer[layer];
    if (c.rope) s[StepKind::Rope].push_back(l.rope_source);
    const double S = c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : double(c.head_dim);
    s[StepKind::Scale].push_back(
        "scale 1/sqrt(" + compact(S) + ") (" +
        (c.query_pre_attn_scalar > 0 ? "query_pre_attn_scalar" : "head_dim") + ")");
    if (c.attn_softcap > 0) {
        s[StepKind::Scale].push_back("attn_logit_softcapping " + compact(c.attn_softcap));
    }
    s[StepKind::Mask].push_back(l.window_source.empty() ? "causal: no sliding window"
                                                        : l.window_source);
    s[StepKind::OutputProject].push_back(gpt2 ? "c_proj (Conv1D) transposed" : "o_proj");
    s[StepKind::FfnIn].push_back(
        gpt2 ? "mlp.c_fc (Conv1D) transposed, then " + std::string(activation_name(c.activation))
             : std::string(c.activation == Activation::Silu ? "SwiGLU" : "GeGLU") +
                   ": gate_proj, up_proj, down_proj");
    s[StepKind::Logits].push_back(c.tied ? "tie_word_embeddings: the LM head is the token "
                                           "embedding, read in chunks of rows"
                                         : "lm_head, read in chunks of rows");
    if (c.final_softcap > 0) {
        s[StepKind::Logits].push_back("final_logit_softcapping " + compact(c.final_softcap));
    }
    return s;
}

void SourcedTracer::on_step(const Step& step) {
    const auto found = sources_.find(step.kind);
    const bool repeated = step.operand == Operand::K || step.operand == Operand::V;  // said at Q
    if (found == sources_.end() || repeated) return inner_.on_step(step);
    Step sourced = step;
    for (const std::string& source : found->second) sourced.facts.sources.push_back(source);
    inner_.on_step(sourced);
}

}  // namespace mha
