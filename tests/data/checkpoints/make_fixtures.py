# Writes the tiny random Hugging Face checkpoints of tests/data/checkpoints/<name>/ and the
# outputs the float32 reference (reference.py) computes for them.
#
# Each folder holds what a Hugging Face model folder holds: config.json in the real key names
# and model.safetensors (or shards with model.safetensors.index.json) in the real tensor names
# and layouts, plus expected.npz:
#   tokens         (1, N) int64      the input, N = 12, with a repeated segment
#   logits         (1, N, vocab) float32
#   attn_weights   (1, heads, N, N) float32, layer 0 (what --save writes for --layer 0)
#   attn_weights.L (1, heads, N, N) float32 for every layer L
#   hidden.L       (1, N, hidden) float32 for L = 0..n_layers: the residual stream entering
#                  layer L; hidden.<n_layers> is after the last layer, BEFORE the final norm
#   top5_ids (5,) int64, top5_probs (5,) float32: next token after the last position
#   inv_freq.L     (head_dim / 2,) float32, RoPE families: layer L's inverse frequencies
#
# and, for gpt2, llama2 and gemma2, draft.npz: the greedy acceptance of an early-exit draft
# (issue 50), every id int64:
#   prompt         (N_d,)   the prompt, the first 8 tokens of the input above
#   draft_layers   (1,)     L: the draft is the model's first L layers, then its final norm
#                           and head
#   drafted        (K,)     the draft's greedy tokens after the prompt, one at a time, K = 4
#   verified       (K + 1,) the whole model's greedy token after the prompt and after each
#                           drafted token, from one pass over the prompt and the draft
#   accepted       (1,)     the drafted tokens before the first that differs from verified's
#   decoded        (K + 1,) the whole model's greedy decoding after the prompt, a token at a
#                           time (its first accepted + 1 are what the acceptance keeps)
#
# The safetensors files are written here by hand (there is no safetensors package): 8-byte
# little-endian header length, a JSON header (dtype, shape, data_offsets per tensor, and
# __metadata__ {"format": "pt"}) padded with spaces to a multiple of 8, then the data.
# Weights are drawn in float32, rounded to the file's dtype, and the reference runs on the
# stored values widened back to float32.
#
# Run from the repository root (PyTorch 1.13, NumPy 1.24); it rewrites every folder:
#
#     /usr/bin/python3 tests/data/checkpoints/make_fixtures.py

import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference  # noqa: E402

TOKENS = [1, 17, 42, 5, 88, 23, 61, 17, 42, 5, 88, 23]
DRAFT_PROMPT = TOKENS[:8]
DRAFT_K = 4
# A greedy token the fixture records must win by this much, relative to max|logit|, so that
# float32 rounding in another implementation cannot flip it.
ARGMAX_MARGIN = 1e-4
STORAGE = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
CONFIG_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


# ----------------------------------------------------------------------------- safetensors

def tensor_bytes(t):
    """Little-endian bytes of a tensor in its own dtype."""
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    if t.dtype == torch.float16:
        return t.numpy().astype("<f2").tobytes()
    return t.numpy().astype("<f4").tobytes()


def write_safetensors(path, tensors):
    """tensors: name -> tensor already in its storage dtype. Returns the data size."""
    names = sorted(tensors)
    header = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name in names:
        blob = tensor_bytes(tensors[name])
        dtype = {v: k for k, v in STORAGE.items()}[tensors[name].dtype]
        header[name] = {"dtype": dtype, "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    return offset


def write_sharded(folder, tensors, first_shard):
    """Two shards: the names in first_shard go to file 1, the rest to file 2, and the index."""
    files = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    groups = [{k: v for k, v in tensors.items() if k in first_shard},
              {k: v for k, v in tensors.items() if k not in first_shard}]
    total = sum(write_safetensors(os.path.join(folder, f), g) for f, g in zip(files, groups))
    weight_map = {name: files[0] if name in first_shard else files[1] for name in sorted(tensors)}
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")


# ----------------------------------------------------------------------------- weights

class Draw:
    """Seeded random tensors: linear weights ~ N(0, (gain / sqrt(fan_in))^2)."""

    def __init__(self, seed, gain):
        self.generator = torch.Generator().manual_seed(seed)
        self.gain = gain

    def normal(self, *shape, std=1.0):
        return torch.randn(*shape, generator=self.generator) * std

    def linear(self, out_features, in_features):
        return self.normal(out_features, in_features, std=self.gain / math.sqrt(in_features))

    def near_one(self, n):
        return 1.0 + self.normal(n, std=0.1)


def gpt2_tensors(c, draw, prefix, with_masked_bias):
    e, inner, p, v = c["n_embd"], c["n_inner"] or 4 * c["n_embd"], c["n_positions"], c["vocab_size"]
    t = {"wte.weight": draw.normal(v, e, std=0.5), "wpe.weight": draw.normal(p, e, std=0.2)}
    for layer in range(c["n_layer"]):
        h = f"h.{layer}."
        t[h + "ln_1.weight"], t[h + "ln_1.bias"] = draw.near_one(e), draw.normal(e, std=0.1)
        t[h + "attn.c_attn.weight"] = draw.linear(3 * e, e).T.contiguous()  # Conv1D: (in, out)
        t[h + "attn.c_attn.bias"] = draw.normal(3 * e, std=0.1)
        t[h + "attn.c_proj.weight"] = draw.linear(e, e).T.contiguous()
        t[h + "attn.c_proj.bias"] = draw.normal(e, std=0.1)
        t[h + "ln_2.weight"], t[h + "ln_2.bias"] = draw.near_one(e), draw.normal(e, std=0.1)
        t[h + "mlp.c_fc.weight"] = draw.linear(inner, e).T.contiguous()
        t[h + "mlp.c_fc.bias"] = draw.normal(inner, std=0.1)
        t[h + "mlp.c_proj.weight"] = draw.linear(e, inner).T.contiguous()
        t[h + "mlp.c_proj.bias"] = draw.normal(e, std=0.1)
        t[h + "attn.bias"] = torch.tril(torch.ones(p, p)).view(1, 1, p, p)  # causal buffer
        if with_masked_bias:
            t[h + "attn.masked_bias"] = torch.tensor(-1e4)
    t["ln_f.weight"], t["ln_f.bias"] = draw.near_one(e), draw.normal(e, std=0.1)
    return {prefix + k: v for k, v in t.items()}


def decoder_tensors(c, draw, prefix):
    """Llama-family tensors in Hugging Face's names, nn.Linear layout (out, in)."""
    family = c["model_type"]
    gemma = family in ("gemma2", "gemma3_text")
    e, v, inner = c["hidden_size"], c["vocab_size"], c["intermediate_size"]
    heads, kv_heads, head_dim = reference.decoder_shape(c)
    biases = reference.projection_biases(reference.load_config(c))
    mlp_bias = c.get("mlp_bias", False)
    norm = (lambda n: draw.normal(n, std=0.1)) if gemma else draw.near_one
    tied = c.get("tie_word_embeddings", gemma)
    t = {"embed_tokens.weight": draw.normal(v, e, std=0.25 if tied else 1.0)}
    for layer in range(c["num_hidden_layers"]):
        p = f"layers.{layer}."
        a = p + "self_attn."
        sizes = {"q": (heads * head_dim, e), "k": (kv_heads * head_dim, e),
                 "v": (kv_heads * head_dim, e), "o": (e, heads * head_dim)}
        for name, (rows, cols) in sizes.items():
            t[a + name + "_proj.weight"] = draw.linear(rows, cols)
            if biases[name]:
                t[a + name + "_proj.bias"] = draw.normal(rows, std=0.1)
        if family in ("qwen3", "gemma3_text"):
            t[a + "q_norm.weight"], t[a + "k_norm.weight"] = norm(head_dim), norm(head_dim)
        m = p + "mlp."
        for name, (rows, cols) in {"gate": (inner, e), "up": (inner, e), "down": (e, inner)}.items():
            t[m + name + "_proj.weight"] = draw.linear(rows, cols)
            if mlp_bias:
                t[m + name + "_proj.bias"] = draw.normal(rows, std=0.1)
        t[p + "input_layernorm.weight"] = norm(e)
        t[p + "post_attention_layernorm.weight"] = norm(e)
        if gemma:
            t[p + "pre_feedforward_layernorm.weight"] = norm(e)
            t[p + "post_feedforward_layernorm.weight"] = norm(e)
    t["norm.weight"] = norm(e)
    t = {prefix + k: val for k, val in t.items()}
    if not tied:
        t["lm_head.weight"] = draw.linear(v, e)
    return t


def stored(tensors, dtype):
    return {k: v.to(STORAGE[dtype]) for k, v in tensors.items()}


# ----------------------------------------------------------------------------- outputs

def expected_arrays(config, tensors):
    tokens = torch.tensor([TOKENS], dtype=torch.int64)
    out = reference.forward(config, tensors, tokens)
    arrays = {"tokens": tokens.numpy(), "logits": out["logits"].numpy().astype(np.float32)}
    arrays["attn_weights"] = out["attn_weights"][0].numpy().astype(np.float32)
    for layer, weights in enumerate(out["attn_weights"]):
        arrays[f"attn_weights.{layer}"] = weights.numpy().astype(np.float32)
    for layer, hidden in enumerate(out["hidden"]):
        arrays[f"hidden.{layer}"] = hidden.numpy().astype(np.float32)
    for layer, inv_freq in enumerate(out.get("inv_freq", [])):
        arrays[f"inv_freq.{layer}"] = inv_freq.numpy().astype(np.float32)
    probs = torch.softmax(out["logits"][0, -1], dim=-1)
    top = torch.topk(probs, 5)
    arrays["top5_ids"] = top.indices.numpy().astype(np.int64)
    arrays["top5_probs"] = top.values.numpy().astype(np.float32)
    return arrays


# ----------------------------------------------------------------------------- the draft

def greedy(config, tensors, tokens, rows, layers=None):
    """The greedy token after each of the last `rows` positions of tokens (the first largest
    logit's index), through the first `layers` layers (None: all); asserts each wins by
    ARGMAX_MARGIN."""
    logits = reference.forward(config, tensors, torch.tensor([tokens]), layers)["logits"][0]
    used = logits[-rows:]
    top2 = torch.topk(used, 2, dim=-1).values
    margin = float((top2[:, 0] - top2[:, 1]).min() / logits.abs().max())
    assert margin > ARGMAX_MARGIN, f"a greedy token wins by {margin:.2e} only"
    return used.argmax(-1).tolist()


def draft_arrays(config, tensors, layers):
    """The early-exit draft's greedy acceptance (issue 50): the first `layers` layers guess
    DRAFT_K tokens after DRAFT_PROMPT one at a time, the whole model reads the prompt and the
    guesses in one pass; and the whole model's own greedy decoding, a token at a time."""
    drafted = []
    for _ in range(DRAFT_K):
        drafted += greedy(config, tensors, DRAFT_PROMPT + drafted, 1, layers)
    verified = greedy(config, tensors, DRAFT_PROMPT + drafted, DRAFT_K + 1)
    accepted = 0
    while accepted < DRAFT_K and drafted[accepted] == verified[accepted]:
        accepted += 1
    decoded = []
    for _ in range(DRAFT_K + 1):
        decoded += greedy(config, tensors, DRAFT_PROMPT + decoded, 1)
    kept = drafted[:accepted] + [verified[accepted]]
    assert decoded[:accepted + 1] == kept, "the acceptance keeps what greedy decoding gives"
    ids = lambda values: np.array(values, dtype=np.int64)
    return {"prompt": ids(DRAFT_PROMPT), "draft_layers": ids([layers]), "drafted": ids(drafted),
            "verified": ids(verified), "accepted": ids([accepted]), "decoded": ids(decoded)}


def write_folder(name, config, tensors, dtype, shard_first=None, draft_layers=None):
    """Writes config.json, the safetensors file(s), expected.npz and, given draft_layers,
    draft.npz; returns expected.npz's arrays."""
    folder = os.path.join(HERE, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)  # as save_pretrained writes it
        f.write("\n")
    files = stored(tensors, dtype)
    if shard_first is None:
        write_safetensors(os.path.join(folder, "model.safetensors"), files)
    else:
        write_sharded(folder, files, shard_first)
    arrays = expected_arrays(config, files)
    np.savez(os.path.join(folder, "expected.npz"), **arrays)
    report(name, arrays)
    if draft_layers is not None:
        draft = draft_arrays(config, files, draft_layers)
        np.savez(os.path.join(folder, "draft.npz"), **draft)
        print(f"{name} draft of {draft_layers} layers: drafted {draft['drafted'].tolist()} "
              f"verified {draft['verified'].tolist()} accepted {int(draft['accepted'][0])}")
    return arrays


def report(name, arrays):
    layers = sorted(k for k in arrays if k.startswith("attn_weights."))
    peaks = [float(arrays[k].max(-1).mean()) for k in layers]
    print(f"{name}: top5 {arrays['top5_ids'].tolist()} p {np.round(arrays['top5_probs'], 3).tolist()}"
          f" max|logit| {np.abs(arrays['logits']).max():.2f} mean row max of attention "
          f"{[round(p, 2) for p in peaks]}")


# ----------------------------------------------------------------------------- configs

def gpt2_config(dtype):
    return {
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1, "bos_token_id": 0, "embd_pdrop": 0.1, "eos_token_id": 0,
        "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
        "n_ctx": 16, "n_embd": 32, "n_head": 4, "n_inner": None, "n_layer": 2, "n_positions": 16,
        "reorder_and_upcast_attn": False, "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True, "torch_dtype": CONFIG_DTYPE[dtype],
        "transformers_version": "4.44.2", "use_cache": True, "vocab_size": 96,
    }


def llama_config(dtype, hidden, heads, kv_heads, head_dim, layers, vocab, tie, **extra):
    """A v4-layout LlamaConfig as save_pretrained writes it (transformers 4.4x)."""
    c = {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 1, "eos_token_id": 2, "head_dim": head_dim, "hidden_act": "silu",
        "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": 2 * hidden,
        "max_position_embeddings": 256, "mlp_bias": False, "model_type": "llama",
        "num_attention_heads": heads, "num_hidden_layers": layers, "num_key_value_heads": kv_heads,
        "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0,
        "tie_word_embeddings": tie, "torch_dtype": CONFIG_DTYPE[dtype],
        "transformers_version": "4.45.2", "use_cache": True, "vocab_size": vocab,
    }
    c.update(extra)
    return c


def to_v5_layout(c):
    """The same config as transformers v5 writes it: dtype, and rope_parameters holding
    rope_theta and the scaling keys instead of rope_theta + rope_scaling."""
    c = dict(c)
    rope = dict(c.pop("rope_scaling") or {"rope_type": "default"})
    if "type" in rope:
        rope["rope_type"] = rope.pop("type")
    rope["rope_theta"] = c.pop("rope_theta")
    c["rope_parameters"] = rope
    c["dtype"] = c.pop("torch_dtype")
    c["transformers_version"] = "5.0.0"
    return c


def make_gpt2():
    c = gpt2_config("F32")
    write_folder("gpt2", c, gpt2_tensors(c, Draw(46_001, 1.5), "", False), "F32", draft_layers=1)
    c = gpt2_config("F16")
    write_folder("gpt2_prefixed", c, gpt2_tensors(c, Draw(46_002, 1.5), "transformer.", True), "F16")


def make_llama():
    c = llama_config("F32", 32, 4, 4, 8, 2, 128, False)
    write_folder("llama2", c, decoder_tensors(c, Draw(46_011, 1.5), "model."), "F32", draft_layers=1)

    c = llama_config("BF16", 32, 4, 2, 8, 2, 128, False, attention_bias=True, mlp_bias=True,
                     rope_scaling={"type": "linear", "factor": 4.0})
    write_folder("llama_linear", c, decoder_tensors(c, Draw(46_012, 1.5), "model."), "BF16")

    scaling = {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
               "original_max_position_embeddings": 64, "rope_type": "llama3"}
    c = llama_config("BF16", 64, 4, 2, 16, 2, 128, True, rope_scaling=scaling,
                     bos_token_id=0, eos_token_id=[1, 2])
    tensors = decoder_tensors(c, Draw(46_013, 1.5), "model.")
    first = {k for k in tensors if k.startswith("model.embed_tokens") or k.startswith("model.layers.0.")}
    v4 = write_folder("llama3_v4", c, tensors, "BF16", shard_first=first)
    v5 = write_folder("llama3_v5", to_v5_layout(c), tensors, "BF16")
    assert all(np.array_equal(v4[k], v5[k]) for k in v4), "the two config layouts disagree"



def make_mistral():
    c = {
        "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
        "eos_token_id": 2, "head_dim": 8, "hidden_act": "silu", "hidden_size": 32,
        "initializer_range": 0.02, "intermediate_size": 64, "max_position_embeddings": 256,
        "model_type": "mistral", "num_attention_heads": 4, "num_hidden_layers": 2,
        "num_key_value_heads": 2, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4,
        "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.45.2",
        "use_cache": True, "vocab_size": 112,
    }
    write_folder("mistral", c, decoder_tensors(c, Draw(46_021, 1.5), "model."), "F16")


def make_qwen():
    c = {
        "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 0,
        "eos_token_id": 1, "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02,
        "intermediate_size": 64, "max_position_embeddings": 128, "max_window_layers": 1,
        "model_type": "qwen2", "num_attention_heads": 4, "num_hidden_layers": 2,
        "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
        "sliding_window": 5, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "transformers_version": "4.45.2", "use_cache": True, "use_sliding_window": True,
        "vocab_size": 120,
    }
    write_folder("qwen2", c, decoder_tensors(c, Draw(46_031, 1.5), "model."), "BF16")

    c = {
        "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 0, "dtype": "float32", "eos_token_id": 1, "head_dim": 16,
        "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
        "layer_types": ["full_attention", "full_attention"], "max_position_embeddings": 128,
        "max_window_layers": 28, "model_type": "qwen3", "num_attention_heads": 4,
        "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
        "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}, "sliding_window": None,
        "tie_word_embeddings": False, "transformers_version": "5.0.0", "use_cache": True,
        "use_sliding_window": False, "vocab_size": 120,
    }
    write_folder("qwen3", c, decoder_tensors(c, Draw(46_032, 1.5), "model."), "F32")


def make_gemma2():
    c = {
        "architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "attn_logit_softcapping": 5.0, "bos_token_id": 2, "cache_implementation": "hybrid",
        "eos_token_id": 1, "final_logit_softcapping": 10.0, "head_dim": 16,
        "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 48, "initializer_range": 0.02, "intermediate_size": 64,
        "max_position_embeddings": 128, "model_type": "gemma2", "num_attention_heads": 4,
        "num_hidden_layers": 3, "num_key_value_heads": 2, "pad_token_id": 0,
        "query_pre_attn_scalar": 24, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
        "sliding_window": 4, "torch_dtype": "float32", "transformers_version": "4.45.2",
        "use_cache": True, "vocab_size": 128,
    }
    write_folder("gemma2", c, decoder_tensors(c, Draw(46_041, 2.0), "model."), "F32", draft_layers=2)


def gemma3_text_v4():
    """A gemma3_text config as transformers 4.50 writes it: rope_theta for the full layers with
    rope_scaling, rope_local_base_freq for the sliding ones, sliding_window_pattern."""
    return {
        "architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "attn_logit_softcapping": None, "bos_token_id": 2, "cache_implementation": "hybrid",
        "eos_token_id": [1, 106], "final_logit_softcapping": None, "head_dim": 16,
        "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 48, "initializer_range": 0.02,
        "intermediate_size": 64, "max_position_embeddings": 256, "model_type": "gemma3_text",
        "num_attention_heads": 4, "num_hidden_layers": 3, "num_key_value_heads": 2,
        "pad_token_id": 0, "query_pre_attn_scalar": 16, "rms_norm_eps": 1e-06,
        "rope_local_base_freq": 10000.0, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "rope_theta": 1000000.0, "sliding_window": 4, "sliding_window_pattern": 2,
        "torch_dtype": "bfloat16", "transformers_version": "4.50.0", "use_cache": True,
        "vocab_size": 136,
    }


def gemma3_multimodal_v5():
    """A gemma3 (image-text) config in the v5 layout: text_config with layer_types and
    rope_parameters nested per layer type; keys left at their defaults are absent, as in the
    real files (rms_norm_eps, hidden_activation, attention_bias, tie_word_embeddings)."""
    text = {
        "head_dim": 16, "hidden_size": 48, "intermediate_size": 64,
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
        "max_position_embeddings": 256, "model_type": "gemma3_text", "num_attention_heads": 4,
        "num_hidden_layers": 3, "num_key_value_heads": 1, "query_pre_attn_scalar": 16,
        "rope_parameters": {
            "full_attention": {"factor": 8.0, "rope_theta": 1000000.0, "rope_type": "linear"},
            "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"},
        },
        "sliding_window": 5, "vocab_size": 136,
    }
    vision = {"hidden_size": 8, "image_size": 16, "intermediate_size": 16,
              "model_type": "siglip_vision_model", "num_attention_heads": 2, "num_hidden_layers": 1,
              "patch_size": 4, "vision_use_head": False}
    return {
        "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 128,
        "dtype": "float16", "eoi_token_index": 129, "eos_token_id": [1, 106],
        "image_token_index": 130, "initializer_range": 0.02, "mm_tokens_per_image": 4,
        "model_type": "gemma3", "text_config": text, "transformers_version": "5.0.0",
        "vision_config": vision,
    }


def vision_tensors(draw, text_hidden):
    """A few SigLIP and projector tensors a multimodal Gemma 3 file carries; mha skips them."""
    return {
        "vision_tower.vision_model.embeddings.patch_embedding.weight": draw.normal(8, 3, 4, 4, std=0.1),
        "vision_tower.vision_model.embeddings.patch_embedding.bias": draw.normal(8, std=0.1),
        "vision_tower.vision_model.embeddings.position_embedding.weight": draw.normal(16, 8, std=0.1),
        "vision_tower.vision_model.post_layernorm.weight": draw.near_one(8),
        "vision_tower.vision_model.post_layernorm.bias": draw.normal(8, std=0.1),
        "multi_modal_projector.mm_input_projection_weight": draw.normal(8, text_hidden, std=0.1),
        "multi_modal_projector.mm_soft_emb_norm.weight": draw.normal(8, std=0.1),
    }


def make_gemma3():
    c = gemma3_text_v4()
    write_folder("gemma3_text", c, decoder_tensors(c, Draw(46_051, 2.0), "model."), "BF16")
    c = gemma3_multimodal_v5()
    draw = Draw(46_052, 2.0)
    text = dict(c["text_config"])
    tensors = decoder_tensors(text, draw, "language_model.model.")
    tensors.update(vision_tensors(draw, text["hidden_size"]))
    write_folder("gemma3", c, tensors, "F16")


if __name__ == "__main__":
    torch.set_num_threads(1)
    make_gpt2()
    make_llama()
    make_mistral()
    make_qwen()
    make_gemma2()
    make_gemma3()
