// Tensor names and shapes per family: GPT-2's h.N.*, and the model.layers.N.* of the others.

#include "io/checkpoint/names.h"

#include "core/error.h"

namespace mha::checkpoint {

namespace {

// The prefixes a family's files put before the model's tensors, in the order tried.
std::vector<std::string> prefixes(const Config& c) {
    if (c.family == Family::Gpt2) return {"", "transformer."};
    if (c.multimodal) return {"language_model.model.", "model.language_model.", "model."};
    return {"model.", ""};
}

std::string embed_of(const Config& c) {
    return c.family == Family::Gpt2 ? "wte.weight" : "embed_tokens.weight";
}

void add_vector(std::vector<std::pair<std::string, Shape>>& out, const std::string& name,
                std::size_t n) {
    out.emplace_back(name, Shape{n});
}

}  // namespace

Names names_in(const safetensors::Folder& folder, const Config& c) {
    Names n;
    std::string tried;
    for (const std::string& prefix : prefixes(c)) {
        if (!folder.has(prefix + embed_of(c))) {
            tried += (tried.empty() ? "" : ", ") + prefix + embed_of(c);
            continue;
        }
        const bool gpt2 = c.family == Family::Gpt2;
        n.embed = prefix + embed_of(c);
        n.positions = gpt2 ? prefix + "wpe.weight" : "";
        n.final_norm = prefix + (gpt2 ? "ln_f" : "norm");
        n.layers = prefix + (gpt2 ? "h." : "layers.");
        const std::string head = c.multimodal && prefix == "language_model.model."
                                     ? "language_model.lm_head.weight"
                                     : "lm_head.weight";
        if (c.tied) {
            n.head = n.embed;
        } else if (folder.has(head)) {
            n.head = head;
        } else {
            throw Error(folder.dir() + ": no tensor " + head +
                        ", and config.json says the LM head is not tied (tie_word_embeddings "
                        "false)");
        }
        return n;
    }
    throw Error(folder.dir() + ": no token embedding for a " + c.model_type + " model; tried " +
                tried);
}

std::vector<std::pair<std::string, Shape>> layer_tensors(const Config& c, const Names& names,
                                                         std::size_t layer) {
    const std::string at = names.layers + std::to_string(layer) + ".";
    const std::size_t E = c.hidden_size, F = c.intermediate_size;
    const std::size_t q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
    std::vector<std::pair<std::string, Shape>> t;
    if (c.family == Family::Gpt2) {  // Conv1D: (in, out)
        for (const char* norm : {"ln_1", "ln_2"}) {
            add_vector(t, at + norm + ".weight", E);
            add_vector(t, at + norm + ".bias", E);
        }
        t.emplace_back(at + "attn.c_attn.weight", Shape{E, 3 * E});
        add_vector(t, at + "attn.c_attn.bias", 3 * E);
        t.emplace_back(at + "attn.c_proj.weight", Shape{E, E});
        add_vector(t, at + "attn.c_proj.bias", E);
        t.emplace_back(at + "mlp.c_fc.weight", Shape{E, F});
        add_vector(t, at + "mlp.c_fc.bias", F);
        t.emplace_back(at + "mlp.c_proj.weight", Shape{F, E});
        add_vector(t, at + "mlp.c_proj.bias", E);
        return t;
    }
    const std::pair<const char*, std::pair<std::size_t, std::size_t>> projections[] = {
        {"self_attn.q_proj", {q, E}}, {"self_attn.k_proj", {kv, E}}, {"self_attn.v_proj", {kv, E}},
        {"self_attn.o_proj", {E, q}}, {"mlp.gate_proj", {F, E}},     {"mlp.up_proj", {F, E}},
        {"mlp.down_proj", {E, F}}};
    for (const auto& [name, shape] : projections) {
        t.emplace_back(at + name + ".weight", Shape{shape.first, shape.second});
        const bool attention = std::string(name).rfind("self_attn", 0) == 0;
        const bool o = std::string(name) == "self_attn.o_proj";
        const bool bias = attention ? (o ? c.o_bias : c.qkv_bias) : c.mlp_bias;
        if (bias) add_vector(t, at + name + ".bias", shape.first);
    }
    if (c.qk_norm) {
        add_vector(t, at + "self_attn.q_norm.weight", c.head_dim);
        add_vector(t, at + "self_attn.k_norm.weight", c.head_dim);
    }
    add_vector(t, at + "input_layernorm.weight", E);
    add_vector(t, at + "post_attention_layernorm.weight", E);
    if (c.sandwich) {
        add_vector(t, at + "pre_feedforward_layernorm.weight", E);
        add_vector(t, at + "post_feedforward_layernorm.weight", E);
    }
    return t;
}

}  // namespace mha::checkpoint
