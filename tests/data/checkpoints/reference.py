# The float32 PyTorch reference forward of the checkpoint families mha reads (issue 46):
# gpt2, llama, mistral, qwen2, qwen3, gemma2, gemma3_text and gemma3 (text model only).
#
# Written in plain torch, because the transformers library is not installable here, from a
# reading of Hugging Face transformers' eager code (read with the search tools' read_file on
# the repository huggingface/transformers; no code was copied):
#
#   src/transformers/models/gpt2/modeling_gpt2.py      commit 0010f60284ab (v4.3x era)
#       GPT2Attention._attn, GPT2Block.forward, GPT2Model: Conv1D weights (in, out) and
#       y = x W + b, c_attn split into q | k | v, scale_attn_weights (1/sqrt(head_dim)),
#       scale_attn_by_inverse_layer_idx (1/(layer+1)), causal mask by torch.where with
#       finfo.min, LayerNorm(eps=layer_norm_epsilon), n_inner (default 4 * n_embd).
#   src/transformers/activations.py                    commit 00e12e7c5459
#       gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); gelu_pytorch_tanh is
#       torch's gelu(approximate="tanh") (same formula); silu.
#   src/transformers/models/llama/modeling_llama.py    commit 002272831fba (v4.38 era)
#       LlamaRMSNorm (float32 variance, weight * normalized), rotate_half and
#       apply_rotary_pos_emb, the rotary embedding's forward (inv_freq and position ids in
#       float32, emb = cat(freqs, freqs)), repeat_kv, SwiGLU MLP, attention_bias on q, k, v, o.
#   src/transformers/modeling_rope_utils.py            commit 0044e3b3facf (v4.45 era), and
#       a v5-era copy of its RotaryEmbeddingConfigMixin (standardize_rope_params): the
#       default, linear and llama3 inverse frequencies, attention_factor 1.0 for all three,
#       the v4 layout (rope_theta + rope_scaling with rope_type or legacy type) and the v5
#       layout (rope_parameters, nested per layer type when its keys are layer types).
#   src/transformers/masking_utils.py (v4.53+/v5, several copies agree)
#       causal: kv <= q; sliding_window_overlay: kv > q - sliding_window, so a query at p
#       sees the keys p - W + 1 .. p (W keys, itself included).
#   src/transformers/models/gemma2/modeling_gemma2.py  commit 006e86931247 (v4.44 era) and
#   src/transformers/models/gemma2/configuration_gemma2.py commit 008e574391258 (v5):
#       Gemma2RMSNorm (float32, times (1 + w)), eager attention with soft-cap before the
#       mask, softmax in float32, scaling query_pre_attn_scalar**-0.5, sandwich norms,
#       layer_types default: even layers sliding, odd layers full.
#   src/transformers/models/gemma3/modeling_gemma3.py  commit 0018aa647bb1 (v5 era) and
#   src/transformers/models/gemma3/configuration_gemma3.py commit 008f5c8c29be (v4.50), plus
#       the v5 convert_rope_params_to_dict of the Gemma 3 family (seen in t5gemma2's copy):
#       q_norm/k_norm over head_dim before RoPE, embed_scale sqrt(hidden_size) cast to the
#       weight dtype, per-layer-type RoPE (sliding layers: rope_local_base_freq, default
#       rope; full layers: rope_theta and rope_scaling), layer_types from
#       sliding_window_pattern (layer i sliding unless (i + 1) % pattern == 0),
#       final_logit_softcapping in Gemma3ForCausalLM only (Gemma3ForConditionalGeneration's
#       forward does not apply it), attn_logit_softcapping read by Gemma3Attention but never
#       passed to the attention function (so not applied), text model under
#       language_model.model.* in files.
#   src/transformers/models/{mistral,qwen2,qwen3}/configuration_*.py (several versions):
#       Mistral's sliding_window on every layer; Qwen2/Qwen3 use_sliding_window,
#       sliding_window, max_window_layers (layer i sliding iff i >= max_window_layers);
#       Qwen2's q, k, v biases without an o bias; Qwen3's q_norm/k_norm (Llama RMSNorm over
#       head_dim, before RoPE) and attention_bias on q, k, v, o.
#
# Everything runs in float32 on the stored values widened to float32 (F16 and BF16 widen
# exactly), as Hugging Face does with torch_dtype=float32. Two consequences differ from a
# half-precision HF run and are deliberate: Gemma's sqrt(hidden_size) stays float32 (HF casts
# it to the weight dtype, 55.4256 -> 55.5 in bfloat16), and nothing is rounded between steps.
#
# Usage: from reference import load_config, forward; see make_fixtures.py.

import math

import torch
import torch.nn.functional as F

FAMILIES = ("gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text", "gemma3")
ROPE_TYPES = ("default", "linear", "llama3")

# Hugging Face's defaults for the keys a config.json may leave out, per family.
DEFAULTS = {
    "gpt2": {"layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "n_inner": None,
             "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
             "reorder_and_upcast_attn": False, "tie_word_embeddings": True},
    "llama": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
              "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False},
    "mistral": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
                "sliding_window": 4096, "tie_word_embeddings": False},
    "qwen2": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
              "use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 28,
              "tie_word_embeddings": False},
    "qwen3": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
              "attention_bias": False, "use_sliding_window": False, "sliding_window": 4096,
              "max_window_layers": 28, "head_dim": 128, "tie_word_embeddings": False},
    "gemma2": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_activation": "gelu_pytorch_tanh",
               "attention_bias": False, "head_dim": 256, "query_pre_attn_scalar": 256,
               "sliding_window": 4096, "final_logit_softcapping": 30.0,
               "attn_logit_softcapping": 50.0, "tie_word_embeddings": True},
    "gemma3_text": {"rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
                    "hidden_activation": "gelu_pytorch_tanh", "attention_bias": False,
                    "head_dim": 256, "query_pre_attn_scalar": 256, "sliding_window": 4096,
                    "sliding_window_pattern": 6, "final_logit_softcapping": None,
                    "attn_logit_softcapping": None, "tie_word_embeddings": True},
}


def load_config(config):
    """The text model's config with the family's defaults filled in, and its tensor prefix."""
    model_type = config["model_type"]
    if model_type not in FAMILIES:
        raise ValueError(f"model_type {model_type!r} is not one of {FAMILIES}")
    prefix = "model."
    image_text = model_type == "gemma3"
    if image_text:
        config = dict(config["text_config"])
        config.setdefault("model_type", "gemma3_text")
        prefix = "language_model.model."
    elif model_type == "gpt2":
        prefix = ""
    merged = dict(DEFAULTS[config["model_type"]])
    merged.update(config)
    merged["_prefix"] = prefix
    merged["_image_text"] = image_text
    return merged


# ----------------------------------------------------------------------------- helpers

def layer_norm(x, weight, bias, eps):
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)


def rms_norm(x, weight, eps, gemma):
    """Llama: weight * (x / rms). Gemma: (x / rms) * (1 + weight). Both in float32."""
    variance = x.float().pow(2).mean(-1, keepdim=True)
    normalized = x.float() * torch.rsqrt(variance + eps)
    return normalized * (1.0 + weight.float()) if gemma else weight * normalized


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


ACTIVATIONS = {
    "gelu_new": gelu_new,
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "gelu": F.gelu,
}


def softcap(x, cap):
    return x if cap is None else torch.tanh(x / cap) * cap


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, groups):
    """(1, G, N, d) -> (1, G * groups, N, d), each K/V head repeated for its query heads."""
    return x.repeat_interleave(groups, dim=1)


# ----------------------------------------------------------------------------- RoPE

def rope_parameters(config, layer_type):
    """The RoPE dict that applies to a layer of this type: rope_type, rope_theta and the
    scaling keys, from the v5 layout (rope_parameters, maybe nested per layer type) or the v4
    layout (rope_theta + rope_scaling; Gemma 3: rope_local_base_freq for sliding layers)."""
    layer_types = config.get("layer_types")
    if config.get("rope_parameters"):
        params = config["rope_parameters"]
        if layer_types and set(params).issubset(set(layer_types)):
            params = params[layer_type]
        params = dict(params)
        if config["model_type"] == "gemma3_text" and "rope_theta" not in params:
            params["rope_theta"] = 10000.0 if layer_type == "sliding_attention" else 1000000.0
        params.setdefault("rope_theta", config.get("rope_theta"))
    elif config["model_type"] == "gemma3_text" and layer_type == "sliding_attention":
        params = {"rope_type": "default", "rope_theta": config["rope_local_base_freq"]}
    else:
        params = dict(config.get("rope_scaling") or {})
        params["rope_theta"] = config["rope_theta"]
    params["rope_type"] = params.get("rope_type", params.get("type", "default"))
    if params["rope_type"] in ("llama3",):
        params.setdefault("original_max_position_embeddings", config["max_position_embeddings"])
    return params


def inverse_frequencies(params, head_dim):
    """(head_dim / 2,) float32 inverse frequencies and the attention factor of the type."""
    rope_type = params["rope_type"]
    if rope_type not in ROPE_TYPES:
        raise ValueError(f"rope_type {rope_type!r} is not one of {ROPE_TYPES}")
    if params.get("partial_rotary_factor", 1.0) != 1.0:
        raise ValueError("partial_rotary_factor is not supported")
    base = params["rope_theta"]
    exponents = torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim
    inv_freq = 1.0 / (base ** exponents)
    if rope_type == "linear":
        inv_freq = inv_freq / params["factor"]
    elif rope_type == "llama3":
        inv_freq = llama3_frequencies(inv_freq, params)
    return inv_freq, 1.0


def llama3_frequencies(inv_freq, params):
    """Llama 3.1: wavelengths above original/low_freq_factor are divided by factor, those
    below original/high_freq_factor kept, those between blended smoothly."""
    factor = params["factor"]
    low, high = params["low_freq_factor"], params["high_freq_factor"]
    old_context = params["original_max_position_embeddings"]
    low_freq_wavelen = old_context / low
    high_freq_wavelen = old_context / high
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_context / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium, smoothed, scaled)


def cos_sin(inv_freq, attention_factor, n):
    """cos and sin (N, head_dim), computed in float32 from integer positions 0..N-1."""
    positions = torch.arange(n, dtype=torch.int64).float()
    freqs = (inv_freq[:, None].float() @ positions[None, :]).transpose(0, 1)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * attention_factor, emb.sin() * attention_factor


# ----------------------------------------------------------------------------- layers

def layer_types(config):
    """'full_attention' or 'sliding_attention' per layer, as the family's config decides."""
    n = config["num_hidden_layers"]
    family = config["model_type"]
    if config.get("layer_types"):
        return list(config["layer_types"])
    if family == "mistral":
        return ["sliding_attention" if config.get("sliding_window") else "full_attention"] * n
    if family in ("qwen2", "qwen3"):
        window = config["sliding_window"] if config["use_sliding_window"] else None
        return ["sliding_attention" if window is not None and i >= config["max_window_layers"]
                else "full_attention" for i in range(n)]
    if family == "gemma2":
        return ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)]
    if family == "gemma3_text":
        pattern = config["sliding_window_pattern"]
        return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]
    return ["full_attention"] * n


def attention_mask(n, window):
    """(N, N) bool, True where query p may attend key j: j <= p, and p - j < window if any."""
    q = torch.arange(n)[:, None]
    k = torch.arange(n)[None, :]
    allowed = k <= q
    if window is not None:
        allowed = allowed & (k > q - window)
    return allowed


def attend(q, k, v, scale, allowed, cap):
    """Eager attention: scores * scale, soft-cap, mask with finfo.min, softmax in float32."""
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    scores = softcap(scores, cap)
    scores = torch.where(allowed, scores, torch.tensor(torch.finfo(scores.dtype).min))
    weights = torch.softmax(scores.float(), dim=-1)
    return torch.matmul(weights, v), weights


def split_heads(x, heads, head_dim):
    """(1, N, heads * head_dim) -> (1, heads, N, head_dim)."""
    return x.view(x.shape[0], x.shape[1], heads, head_dim).transpose(1, 2)


def merge_heads(x):
    """(1, heads, N, head_dim) -> (1, N, heads * head_dim)."""
    return x.transpose(1, 2).reshape(x.shape[0], x.shape[2], -1)


# ----------------------------------------------------------------------------- GPT-2

def gpt2_forward(config, weights, tokens, layers):
    prefix = "transformer." if "transformer.wte.weight" in weights else ""
    w = lambda name: weights[prefix + name]
    hidden = config["n_embd"]
    heads = config["n_head"]
    head_dim = hidden // heads
    eps = config["layer_norm_epsilon"]
    act = ACTIVATIONS[config["activation_function"]]
    n = tokens.shape[1]
    allowed = attention_mask(n, None)
    x = w("wte.weight")[tokens] + w("wpe.weight")[torch.arange(n)][None]
    hiddens, attentions = [x], []
    for layer in range(layers or config["n_layer"]):
        p = f"h.{layer}."
        h = layer_norm(x, w(p + "ln_1.weight"), w(p + "ln_1.bias"), eps)
        qkv = h @ w(p + "attn.c_attn.weight") + w(p + "attn.c_attn.bias")
        q, k, v = (split_heads(t, heads, head_dim) for t in qkv.split(hidden, dim=2))
        scale = 1.0 / math.sqrt(head_dim) if config["scale_attn_weights"] else 1.0
        if config["scale_attn_by_inverse_layer_idx"]:
            scale = scale / float(layer + 1)
        out, weights_l = attend(q, k, v, scale, allowed, None)
        x = x + merge_heads(out) @ w(p + "attn.c_proj.weight") + w(p + "attn.c_proj.bias")
        h = layer_norm(x, w(p + "ln_2.weight"), w(p + "ln_2.bias"), eps)
        h = act(h @ w(p + "mlp.c_fc.weight") + w(p + "mlp.c_fc.bias"))
        x = x + h @ w(p + "mlp.c_proj.weight") + w(p + "mlp.c_proj.bias")
        hiddens.append(x)
        attentions.append(weights_l)
    final = layer_norm(x, w("ln_f.weight"), w("ln_f.bias"), eps)
    logits = final @ w("wte.weight").T
    return {"logits": logits, "hidden": hiddens, "attn_weights": attentions}


# ----------------------------------------------------------------------------- Llama family

def decoder_shape(config):
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    return heads, kv_heads, head_dim


def linear(x, weights, name, bias):
    y = x @ weights[name + ".weight"].T
    return y + weights[name + ".bias"] if bias else y


def projection_biases(config):
    """Which of q, k, v, o carry a bias in this family."""
    family = config["model_type"]
    if family == "qwen2":
        return {"q": True, "k": True, "v": True, "o": False}
    flag = bool(config.get("attention_bias", False))
    return {"q": flag, "k": flag, "v": flag, "o": flag}


def attention_scale(config, head_dim):
    if config["model_type"] in ("gemma2", "gemma3_text"):
        return config["query_pre_attn_scalar"] ** -0.5
    return head_dim ** -0.5


def decoder_forward(config, weights, tokens, layers):
    family = config["model_type"]
    gemma = family in ("gemma2", "gemma3_text")
    prefix = config["_prefix"]
    w = {k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)}
    heads, kv_heads, head_dim = decoder_shape(config)
    eps = config["rms_norm_eps"]
    act = ACTIVATIONS[config.get("hidden_activation") or config.get("hidden_act")] if gemma \
        else ACTIVATIONS[config["hidden_act"]]
    biases = projection_biases(config)
    mlp_bias = bool(config.get("mlp_bias", False))
    qk_norm = family in ("qwen3", "gemma3_text")
    scale = attention_scale(config, head_dim)
    attn_cap = config.get("attn_logit_softcapping") if family == "gemma2" else None
    types = layer_types(config)
    n = tokens.shape[1]
    window = config.get("sliding_window")
    masks = {t: attention_mask(n, window if t == "sliding_attention" else None) for t in set(types)}
    rope = {t: cos_sin(*inverse_frequencies(rope_parameters(config, t), head_dim), n)
            for t in set(types)}
    norm = lambda x, name: rms_norm(x, w[name + ".weight"], eps, gemma)

    x = w["embed_tokens.weight"][tokens]
    if gemma:
        x = x * torch.tensor(config["hidden_size"] ** 0.5, dtype=x.dtype)
    hiddens, attentions = [x], []
    for layer in range(layers or config["num_hidden_layers"]):
        p = f"layers.{layer}."
        a = p + "self_attn."
        h = norm(x, p + "input_layernorm")
        q = split_heads(linear(h, w, a + "q_proj", biases["q"]), heads, head_dim)
        k = split_heads(linear(h, w, a + "k_proj", biases["k"]), kv_heads, head_dim)
        v = split_heads(linear(h, w, a + "v_proj", biases["v"]), kv_heads, head_dim)
        if qk_norm:
            q = norm(q, a + "q_norm")
            k = norm(k, a + "k_norm")
        cos, sin = rope[types[layer]]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        groups = heads // kv_heads
        out, weights_l = attend(q, repeat_kv(k, groups), repeat_kv(v, groups), scale,
                                masks[types[layer]], attn_cap)
        out = linear(merge_heads(out), w, a + "o_proj", biases["o"])
        if gemma:
            x = x + norm(out, p + "post_attention_layernorm")
            h = norm(x, p + "pre_feedforward_layernorm")
        else:
            x = x + out
            h = norm(x, p + "post_attention_layernorm")
        m = p + "mlp."
        h = act(linear(h, w, m + "gate_proj", mlp_bias)) * linear(h, w, m + "up_proj", mlp_bias)
        h = linear(h, w, m + "down_proj", mlp_bias)
        x = x + (norm(h, p + "post_feedforward_layernorm") if gemma else h)
        hiddens.append(x)
        attentions.append(weights_l)
    final = norm(x, "norm")
    head = lm_head_weight(config, weights, w)
    final_cap = config.get("final_logit_softcapping") if gemma and not config["_image_text"] else None
    logits = softcap(final @ head.T, final_cap)
    inv_freqs = [inverse_frequencies(rope_parameters(config, t), head_dim)[0] for t in types]
    return {"logits": logits, "hidden": hiddens, "attn_weights": attentions, "inv_freq": inv_freqs}


def lm_head_weight(config, weights, stripped):
    """lm_head.weight when the file has it (untied), else the embedding (tied)."""
    for name in ("lm_head.weight", "language_model.lm_head.weight"):
        if name in weights:
            return weights[name]
    if not config.get("tie_word_embeddings", True):
        raise ValueError("tie_word_embeddings is false but the file has no lm_head.weight")
    return stripped["embed_tokens.weight"]


def forward(raw_config, weights, tokens, layers=None):
    """Logits (1, N, vocab), hidden list (L + 1 entries, the stream entering each layer and
    after the last, before the final norm), attn_weights list (1, heads, N, N) per layer and,
    for the RoPE families, inv_freq list (head_dim / 2,) per layer. With layers, only the
    first that many layers run, then the final norm and the head: an early exit."""
    config = load_config(raw_config)
    weights = {k: v.float() for k, v in weights.items()}
    with torch.no_grad():
        if config["model_type"] == "gpt2":
            return gpt2_forward(config, weights, tokens, layers)
        return decoder_forward(config, weights, tokens, layers)
