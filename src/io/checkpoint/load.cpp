// A checkpoint's tensors checked against its config, then read as the pass's weights.

#include "io/checkpoint/load.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "io/weights.h"

namespace mha::checkpoint {

namespace {

// Every tensor the model reads, with the shape the config gives it.
std::vector<std::pair<std::string, Shape>> model_tensors(const Config& c, const Names& n) {
    const std::size_t E = c.hidden_size;
    std::vector<std::pair<std::string, Shape>> t = {{n.embed, {c.vocab_size, E}},
                                                    {n.final_norm + ".weight", {E}}};
    if (c.family == Family::Gpt2) {
        t.emplace_back(n.positions, Shape{c.max_positions, E});
        t.emplace_back(n.final_norm + ".bias", Shape{E});
    }
    if (n.head != n.embed) t.emplace_back(n.head, Shape{c.vocab_size, E});
    for (std::size_t l = 0; l < c.layers; ++l) {
        for (auto& each : layer_tensors(c, n, l)) t.push_back(std::move(each));
    }
    return t;
}

// The config keys that set a shape, for the message when a tensor disagrees.
std::string size_keys(const Config& c) {
    if (c.family == Family::Gpt2) {
        return "n_embd " + std::to_string(c.hidden_size) + ", n_head " + std::to_string(c.heads) +
               ", d_ff " + std::to_string(c.intermediate_size) + ", vocab_size " +
               std::to_string(c.vocab_size) + ", n_positions " + std::to_string(c.max_positions);
    }
    return "hidden_size " + std::to_string(c.hidden_size) + ", intermediate_size " +
           std::to_string(c.intermediate_size) + ", num_attention_heads " +
           std::to_string(c.heads) + ", num_key_value_heads " + std::to_string(c.kv_heads) +
           ", head_dim " + std::to_string(c.head_dim) + ", vocab_size " +
           std::to_string(c.vocab_size);
}

// The tensor `name` read in float32.
Tensor read(const Checkpoint& ck, const std::string& name, Ledger& ledger) {
    Tensor t = ck.folder.read(name, ledger);
    ledger.hold(ck.folder.float32_bytes(name));
    return t;
}

// GPT-2's Conv1D weight (in, out) as nn.Linear's (out, in).
Tensor linear_of_conv1d(const Tensor& w) { return w.transpose(0, 1).contiguous(); }

// Gemma's RMSNorm scales by (1 + w): that weight, added in float32 as it computes it.
Tensor norm_weight(const Checkpoint& ck, const std::string& name, Ledger& ledger) {
    Tensor w = read(ck, name, ledger);
    if (ck.config.norm_plus_one) {
        for (std::size_t i = 0; i < w.numel(); ++i) w.data()[i] = 1.0f + w.data()[i];
    }
    return w;
}

BlockStyle style_of(const Config& c) {
    BlockStyle s;
    s.norm = c.norm;
    s.rms_eps = c.norm_eps;
    s.activation = c.activation;
    s.gated = c.gated;
    s.sandwich = c.sandwich;
    return s;
}

LayerAttention attention_of(const Config& c, std::size_t l) {
    LayerAttention a;
    if (c.rope) a.rope = c.layer[l].rope;
    a.scale_base = c.query_pre_attn_scalar;
    a.softcap = c.attn_softcap;
    a.window = c.layer[l].window;
    a.qk_norm_eps = c.norm_eps;
    return a;
}

ModelLayer read_gpt2_layer(const Checkpoint& ck, const std::string& at, Ledger& ledger) {
    const std::size_t E = ck.config.hidden_size;
    ModelLayer layer;
    const Tensor qkv = linear_of_conv1d(read(ck, at + "attn.c_attn.weight", ledger));  // (3E, E)
    const Tensor qkv_bias = read(ck, at + "attn.c_attn.bias", ledger);
    Weights& w = layer.attention;
    split_packed(qkv, qkv_bias, E, w);
    w.w_o = linear_of_conv1d(read(ck, at + "attn.c_proj.weight", ledger));
    w.b_o = read(ck, at + "attn.c_proj.bias", ledger);
    BlockWeights& b = layer.block;
    b.norm1_weight = read(ck, at + "ln_1.weight", ledger);
    b.norm1_bias = read(ck, at + "ln_1.bias", ledger);
    b.norm2_weight = read(ck, at + "ln_2.weight", ledger);
    b.norm2_bias = read(ck, at + "ln_2.bias", ledger);
    b.w_1 = linear_of_conv1d(read(ck, at + "mlp.c_fc.weight", ledger));
    b.b_1 = read(ck, at + "mlp.c_fc.bias", ledger);
    b.w_2 = linear_of_conv1d(read(ck, at + "mlp.c_proj.weight", ledger));
    b.b_2 = read(ck, at + "mlp.c_proj.bias", ledger);
    return layer;
}

// The bias `name` when the config says the projection has one, else none.
Tensor bias(const Checkpoint& ck, const std::string& name, bool present, Ledger& ledger) {
    return present ? read(ck, name, ledger) : Tensor();
}

ModelLayer read_rope_layer(const Checkpoint& ck, const std::string& at, Ledger& ledger) {
    const Config& c = ck.config;
    ModelLayer layer;
    Weights& w = layer.attention;
    const std::string attn = at + "self_attn.";
    w.w_q = read(ck, attn + "q_proj.weight", ledger);
    w.w_k = read(ck, attn + "k_proj.weight", ledger);
    w.w_v = read(ck, attn + "v_proj.weight", ledger);
    w.w_o = read(ck, attn + "o_proj.weight", ledger);
    w.b_q = bias(ck, attn + "q_proj.bias", c.qkv_bias, ledger);
    w.b_k = bias(ck, attn + "k_proj.bias", c.qkv_bias, ledger);
    w.b_v = bias(ck, attn + "v_proj.bias", c.qkv_bias, ledger);
    w.b_o = bias(ck, attn + "o_proj.bias", c.o_bias, ledger);
    if (c.qk_norm) {
        w.q_norm = norm_weight(ck, attn + "q_norm.weight", ledger);
        w.k_norm = norm_weight(ck, attn + "k_norm.weight", ledger);
    }
    BlockWeights& b = layer.block;
    b.norm1_weight = norm_weight(ck, at + "input_layernorm.weight", ledger);
    if (c.sandwich) {
        b.post_attn_norm = norm_weight(ck, at + "post_attention_layernorm.weight", ledger);
        b.norm2_weight = norm_weight(ck, at + "pre_feedforward_layernorm.weight", ledger);
        b.post_ffn_norm = norm_weight(ck, at + "post_feedforward_layernorm.weight", ledger);
    } else {
        b.norm2_weight = norm_weight(ck, at + "post_attention_layernorm.weight", ledger);
    }
    const std::string mlp = at + "mlp.";
    b.w_1 = read(ck, mlp + "gate_proj.weight", ledger);
    b.w_up = read(ck, mlp + "up_proj.weight", ledger);
    b.w_2 = read(ck, mlp + "down_proj.weight", ledger);
    b.b_1 = bias(ck, mlp + "gate_proj.bias", c.mlp_bias, ledger);
    b.b_up = bias(ck, mlp + "up_proj.bias", c.mlp_bias, ledger);
    b.b_2 = bias(ck, mlp + "down_proj.bias", c.mlp_bias, ledger);
    return layer;
}

}  // namespace

Checkpoint open_checkpoint(const std::string& dir, const Ledger& ledger) {
    Config config = read_config(dir + "/config.json", ledger);
    safetensors::Folder folder = safetensors::Folder::open(dir, ledger);
    Names names = names_in(folder, config);
    for (const auto& [name, shape] : model_tensors(config, names)) {
        const safetensors::Entry& entry = folder.entry(name);
        if (entry.shape != shape) {
            throw Error(dir + ": tensor " + name + " has shape " + to_string(entry.shape) +
                        ", config.json gives " + to_string(shape) + " (" + size_keys(config) + ")");
        }
    }
    return {std::move(config), std::move(folder), std::move(names)};
}

std::uint64_t layer_bytes(const Checkpoint& ck, std::size_t layer) {
    std::uint64_t bytes = 0;
    const bool transposed = ck.config.family == Family::Gpt2;
    for (const auto& [name, shape] : layer_tensors(ck.config, ck.names, layer)) {
        const std::uint64_t one = ck.folder.float32_bytes(name);
        bytes += transposed && shape.size() == 2 ? 2 * one : one;
    }
    return bytes;
}

ModelLayer read_layer(const Checkpoint& ck, std::size_t l, const Ledger& budget) {
    Ledger ledger = budget;
    const std::string at = ck.names.layers + std::to_string(l) + ".";
    ModelLayer layer = ck.config.family == Family::Gpt2 ? read_gpt2_layer(ck, at, ledger)
                                                        : read_rope_layer(ck, at, ledger);
    layer.heads = ck.config.heads;
    layer.options = attention_of(ck.config, l);
    layer.block.style = style_of(ck.config);
    return layer;
}

Prompt read_prompt(const Checkpoint& ck, const std::vector<std::size_t>& tokens, Ledger& ledger) {
    const Config& c = ck.config;
    std::vector<std::size_t> distinct = tokens;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    Prompt p;
    for (std::size_t t : tokens) {
        p.rows.push_back(
            std::size_t(std::lower_bound(distinct.begin(), distinct.end(), t) - distinct.begin()));
    }
    Model& m = p.model;
    const std::uint64_t row = 4 * std::uint64_t(c.hidden_size);
    m.token_embedding = ck.folder.read_rows(ck.names.embed, distinct, ledger);
    ledger.hold(row * distinct.size());
    if (c.family == Family::Gpt2) {
        m.position_embedding =
            ck.folder.read_row_range(ck.names.positions, 0, tokens.size(), ledger);
        ledger.hold(row * tokens.size());
        m.norm_bias = read(ck, ck.names.final_norm + ".bias", ledger);
        m.final_norm = NormKind::Layer;
    } else {
        m.final_norm = NormKind::Rms;
        m.final_rms_eps = c.norm_eps;
    }
    m.norm_weight = norm_weight(ck, ck.names.final_norm + ".weight", ledger);
    m.head_weight = Tensor::shape_only({c.vocab_size, c.hidden_size});
    m.embedding_scale = c.embedding_scale;
    m.max_positions = c.max_positions;
    m.final_softcap = c.final_softcap;
    return p;
}

ModelSource checkpoint_source(const Checkpoint& ck, std::size_t head_chunk, const Ledger& ledger) {
    ModelSource source;
    source.layers = ck.config.layers;
    source.layer = [&ck, &ledger](std::size_t l) { return read_layer(ck, l, ledger); };
    source.head_chunk = head_chunk;
    source.head_rows = [&ck, &ledger](std::size_t first, std::size_t count) {
        return ck.folder.read_row_range(ck.names.head, first, count, ledger);
    };
    return source;
}

EarlyExits early_exits(const Checkpoint& ck, std::size_t head_chunk, const Ledger& ledger,
                       std::size_t threads) {
    EarlyExits exits;
    exits.layers = ck.config.layers;
    exits.context = ck.config.max_positions;
    exits.logits = [&ck, &ledger, head_chunk, threads](const std::vector<std::size_t>& tokens,
                                                       std::size_t layers) {
        Ledger held = ledger;  // what this forward reads, let go when it returns
        const Prompt prompt = read_prompt(ck, tokens, held);
        return early_exit_logits(prompt.model, checkpoint_source(ck, head_chunk, held),
                                 prompt.rows, layers, threads);
    };
    return exits;
}

ModelLayer dry_layer(const Config& c, std::size_t l) {
    const std::size_t E = c.hidden_size, F = c.intermediate_size;
    const std::size_t q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
    const auto shape = [](Shape s) { return Tensor::shape_only(std::move(s)); };
    const auto maybe = [&](bool present, std::size_t n) { return present ? shape({n}) : Tensor(); };
    ModelLayer layer;
    Weights& w = layer.attention;
    w.w_q = shape({q, E});
    w.w_k = shape({kv, E});
    w.w_v = shape({kv, E});
    w.w_o = shape({E, q});
    w.b_q = maybe(c.qkv_bias, q);
    w.b_k = maybe(c.qkv_bias, kv);
    w.b_v = maybe(c.qkv_bias, kv);
    w.b_o = maybe(c.o_bias, E);
    w.q_norm = maybe(c.qk_norm, c.head_dim);
    w.k_norm = maybe(c.qk_norm, c.head_dim);
    BlockWeights& b = layer.block;
    const bool layer_norm = c.norm == NormKind::Layer;
    b.norm1_weight = shape({E});
    b.norm2_weight = shape({E});
    b.norm1_bias = maybe(layer_norm, E);
    b.norm2_bias = maybe(layer_norm, E);
    b.post_attn_norm = maybe(c.sandwich, E);
    b.post_ffn_norm = maybe(c.sandwich, E);
    b.w_1 = shape({F, E});
    b.w_2 = shape({E, F});
    b.w_up = c.gated ? shape({F, E}) : Tensor();
    const bool mlp_bias = c.gated ? c.mlp_bias : true;
    b.b_1 = maybe(mlp_bias, F);
    b.b_up = maybe(c.gated && c.mlp_bias, F);
    b.b_2 = maybe(mlp_bias, E);
    b.style = style_of(c);
    layer.heads = c.heads;
    layer.options = attention_of(c, l);
    return layer;
}

Prompt dry_prompt(const Config& c, std::size_t n) {
    Prompt p;
    for (std::size_t i = 0; i < n; ++i) p.rows.push_back(i);
    Model& m = p.model;
    const std::size_t E = c.hidden_size;
    m.token_embedding = Tensor::shape_only({n, E});
    if (!c.rope) {
        m.position_embedding = Tensor::shape_only({n, E});
        m.norm_bias = Tensor::shape_only({E});
    }
    m.final_norm = c.norm;
    m.final_rms_eps = c.norm_eps;
    m.norm_weight = Tensor::shape_only({E});
    m.head_weight = Tensor::shape_only({c.vocab_size, E});
    m.embedding_scale = c.embedding_scale;
    m.max_positions = c.max_positions;
    m.final_softcap = c.final_softcap;
    return p;
}

ModelSource dry_source(const Config& c) {
    ModelSource source;
    source.layers = c.layers;
    source.layer = [&c](std::size_t l) { return dry_layer(c, l); };
    return source;
}

}  // namespace mha::checkpoint
