# Checks reference.py against torch's own building blocks and against hand-written
# alternatives, on the committed fixtures. Nothing here needs the transformers library, which
# is why these are the checks there are; see README.md for what they cannot show.
#
#     /usr/bin/python3 tests/data/checkpoints/check_reference.py

import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference  # noqa: E402

TOLERANCE = 1e-5
TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_safetensors(path):
    """name -> float32 tensor, read independently of make_fixtures.py's writer."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        raw = bytearray(body[start:end])
        if info["dtype"] == "BF16":
            t = torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16)
        else:
            t = torch.frombuffer(raw, dtype=TORCH_DTYPES[info["dtype"]])
        tensors[name] = t.reshape(info["shape"]).float()
    return tensors


def read_folder(name):
    folder = os.path.join(HERE, name)
    config = json.load(open(os.path.join(folder, "config.json")))
    index = os.path.join(folder, "model.safetensors.index.json")
    tensors = {}
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) \
        else ["model.safetensors"]
    for f in files:
        tensors.update(read_safetensors(os.path.join(folder, f)))
    expected = dict(np.load(os.path.join(folder, "expected.npz")))
    return config, tensors, expected


def close(name, got, want, tol=TOLERANCE):
    diff = float((torch.as_tensor(got) - torch.as_tensor(want)).abs().max())
    status = "ok" if diff <= tol else "FAIL"
    print(f"  {status} {name}: max |diff| {diff:.2e}")
    if diff > tol:
        raise SystemExit(f"{name} differs by {diff}")


def check_files_reproduce(name):
    """The expected.npz equals a fresh reference run on the files as read back."""
    config, tensors, expected = read_folder(name)
    out = reference.forward(config, tensors, torch.tensor(expected["tokens"]))
    close(f"{name} logits from the files", out["logits"], expected["logits"], 0.0)


def check_gpt2_against_torch(name):
    """GPT-2 written with nn.LayerNorm, nn.MultiheadAttention (in_proj = c_attn.weight^T,
    out_proj = c_proj.weight^T, boolean causal mask) and torch's tanh GELU."""
    config, tensors, expected = read_folder(name)
    prefix = "transformer." if "transformer.wte.weight" in tensors else ""
    w = lambda k: tensors[prefix + k]
    e, heads, n = config["n_embd"], config["n_head"], expected["tokens"].shape[1]
    tokens = torch.tensor(expected["tokens"])
    x = w("wte.weight")[tokens] + w("wpe.weight")[:n][None]
    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    with torch.no_grad():
        for layer in range(config["n_layer"]):
            p = f"h.{layer}."
            close(f"{name} hidden.{layer}", x, expected[f"hidden.{layer}"])
            ln1 = nn.LayerNorm(e, eps=config["layer_norm_epsilon"])
            ln1.weight.copy_(w(p + "ln_1.weight")), ln1.bias.copy_(w(p + "ln_1.bias"))
            mha = nn.MultiheadAttention(e, heads, batch_first=True)
            mha.in_proj_weight.copy_(w(p + "attn.c_attn.weight").T)
            mha.in_proj_bias.copy_(w(p + "attn.c_attn.bias"))
            mha.out_proj.weight.copy_(w(p + "attn.c_proj.weight").T)
            mha.out_proj.bias.copy_(w(p + "attn.c_proj.bias"))
            h = ln1(x)
            out, weights = mha(h, h, h, attn_mask=causal, need_weights=True, average_attn_weights=False)
            close(f"{name} attn_weights.{layer}", weights, expected[f"attn_weights.{layer}"])
            x = x + out
            ln2 = nn.LayerNorm(e, eps=config["layer_norm_epsilon"])
            ln2.weight.copy_(w(p + "ln_2.weight")), ln2.bias.copy_(w(p + "ln_2.bias"))
            fc = nn.functional.gelu(ln2(x) @ w(p + "mlp.c_fc.weight") + w(p + "mlp.c_fc.bias"),
                                    approximate="tanh")
            x = x + fc @ w(p + "mlp.c_proj.weight") + w(p + "mlp.c_proj.bias")
        close(f"{name} hidden.{config['n_layer']}", x, expected[f"hidden.{config['n_layer']}"])
        final = nn.functional.layer_norm(x, (e,), w("ln_f.weight"), w("ln_f.bias"),
                                         config["layer_norm_epsilon"])
        logits = final @ w("wte.weight").T
    scale = float(np.abs(expected["logits"]).max())
    close(f"{name} logits / max|logit|", logits / scale, expected["logits"] / scale)


def check_rope_by_complex_rotation():
    """rotate_half RoPE equals rotating the pairs (i, i + d/2) as complex numbers by
    position * inv_freq_i, computed in float64 from the formula."""
    head_dim, n = 16, 12
    params = {"rope_type": "default", "rope_theta": 10000.0}
    inv_freq, _ = reference.inverse_frequencies(params, head_dim)
    cos, sin = reference.cos_sin(inv_freq, 1.0, n)
    x = torch.randn(n, head_dim, generator=torch.Generator().manual_seed(7))
    rotated = x * cos + reference.rotate_half(x) * sin
    half = head_dim // 2
    pairs = torch.complex(x[:, :half].double(), x[:, half:].double())
    angles = torch.arange(n).double()[:, None] * (10000.0 ** (-torch.arange(0, head_dim, 2).double() / head_dim))
    turned = pairs * torch.polar(torch.ones_like(angles), angles)
    close("RoPE vs complex rotation", rotated.double(), torch.cat((turned.real, turned.imag), -1), 1e-5)


def check_llama3_bands():
    """For the llama3 fixtures (theta 10000, head_dim 16, original 64, low 1, high 4): pair
    0 (wavelength 6.3 < 16) is kept, pairs 1 and 2 (19.9 and 62.8, between 16 and 64) are
    blended, pairs 3.. (wavelength > 64) are divided by 8, computed here by hand."""
    params = {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
              "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
    got, _ = reference.inverse_frequencies(params, 16)
    base = [10000.0 ** (-2 * i / 16) for i in range(8)]
    want = []
    for f in base:
        wavelen = 2 * math.pi / f
        if wavelen < 16:
            want.append(f)
        elif wavelen > 64:
            want.append(f / 8)
        else:
            smooth = (64 / wavelen - 1) / (4 - 1)
            want.append((1 - smooth) * f / 8 + smooth * f)
    close("llama3 inverse frequencies by hand", got.double(), torch.tensor(want), 1e-7)
    assert math.isclose(got[0].item(), base[0]) and got[3].item() < base[3] / 7.9


def check_llama3_against_hf_snapshot():
    """Five values of the snapshot in transformers' tests/utils/test_modeling_rope_utils.py
    (commit 087e80025678, test_llama3_rope_numerically: head_dim 128, theta 10000, factor 10, original 2048, low 1,
    high 4), one from each band and its edges: pair 30 kept, 31, 35 and 40 blended, 41 divided."""
    params = {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 10.0, "low_freq_factor": 1.0,
              "high_freq_factor": 4.0, "original_max_position_embeddings": 2048}
    got, _ = reference.inverse_frequencies(params, 128)
    snapshot = {30: 1.3335e-02, 31: 1.0730e-02, 35: 2.8248e-03, 40: 3.4539e-04, 41: 2.7384e-04}
    for i, want in snapshot.items():
        assert abs(got[i].item() - want) <= 5e-5 * want, f"pair {i}: {got[i].item()} vs HF's {want}"
    print("  ok llama3 frequencies match transformers' own snapshot at pairs 30, 31, 35, 40, 41")


def check_windows(name, window_layers, window):
    """Sliding layers give exactly zero weight to keys p - j >= window and to the future;
    full layers reach back to key 0."""
    _, _, expected = read_folder(name)
    layers = sorted(int(k.split(".")[1]) for k in expected if k.startswith("attn_weights."))
    n = expected["tokens"].shape[1]
    p, j = np.arange(n)[:, None], np.arange(n)[None, :]
    for layer in layers:
        w = expected[f"attn_weights.{layer}"][0]
        assert (w[:, j > p] == 0).all(), f"{name} layer {layer} attends the future"
        if layer in window_layers:
            assert (w[:, (p - j >= window) & (j <= p)] == 0).all(), f"{name} layer {layer} sees outside its window"
            assert (w[:, (p - j == window - 1) & (j <= p)] > 0).all(), f"{name} layer {layer} window too short"
        else:
            assert (w[:, -1, 0] > 0).all(), f"{name} layer {layer} should reach key 0"
    print(f"  ok {name}: sliding layers {sorted(window_layers)} see {window} keys, the others all")


def numpy_decoder_forward(raw_config, tensors, tokens):
    """The Llama-family forward again, in float64 NumPy and written another way (one head at
    a time, the K/V head of query head h is h // groups, RoPE as complex rotation of the
    pairs (i, i + d/2), masks by explicit comparison). Only the reading of the config
    (layer types, RoPE parameters and frequencies) is shared with reference.py."""
    config = reference.load_config(raw_config)
    family = config["model_type"]
    gemma = family in ("gemma2", "gemma3_text")
    w = {k[len(config["_prefix"]):]: v.double().numpy() for k, v in tensors.items()
         if k.startswith(config["_prefix"])}
    heads, kv_heads, d = reference.decoder_shape(config)
    groups = heads // kv_heads
    eps = config["rms_norm_eps"]
    biases = reference.projection_biases(config)
    n = len(tokens)
    types = reference.layer_types(config)

    def norm(x, name):
        r = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
        return r * (1.0 + w[name + ".weight"]) if gemma else r * w[name + ".weight"]

    def lin(x, name, bias):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if bias else y

    def rope(x, layer_type):
        inv_freq, _ = reference.inverse_frequencies(reference.rope_parameters(config, layer_type), d)
        angles = np.arange(n)[:, None] * inv_freq.double().numpy()[None, :]
        z = (x[:, :d // 2] + 1j * x[:, d // 2:]) * np.exp(1j * angles)
        return np.concatenate([z.real, z.imag], axis=-1)

    def cap(x, c):
        return x if c is None else c * np.tanh(x / c)

    def act(x):
        if gemma:
            return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        return x / (1 + np.exp(-x))

    x = w["embed_tokens.weight"][tokens]
    if gemma:
        x = x * math.sqrt(config["hidden_size"])
    scale = config["query_pre_attn_scalar"] ** -0.5 if gemma else d ** -0.5
    weights_all = []
    for layer in range(config["num_hidden_layers"]):
        p, a = f"layers.{layer}.", f"layers.{layer}.self_attn."
        window = config.get("sliding_window") if types[layer] == "sliding_attention" else None
        h = norm(x, p + "input_layernorm")
        q, k, v = (lin(h, a + s + "_proj", biases[s]) for s in "qkv")
        outs, layer_weights = [], []
        for head in range(heads):
            g = head // groups
            qh, kh, vh = q[:, head * d:(head + 1) * d], k[:, g * d:(g + 1) * d], v[:, g * d:(g + 1) * d]
            if family in ("qwen3", "gemma3_text"):
                qh, kh = norm(qh, a + "q_norm"), norm(kh, a + "k_norm")
            qh, kh = rope(qh, types[layer]), rope(kh, types[layer])
            scores = cap(qh @ kh.T * scale, config.get("attn_logit_softcapping") if family == "gemma2" else None)
            for i in range(n):
                for j in range(n):
                    if j > i or (window is not None and i - j >= window):
                        scores[i, j] = -np.inf
            e = np.exp(scores - scores.max(-1, keepdims=True))
            layer_weights.append(e / e.sum(-1, keepdims=True))
            outs.append(layer_weights[-1] @ vh)
        weights_all.append(np.stack(layer_weights)[None])
        out = lin(np.concatenate(outs, axis=-1), a + "o_proj", biases["o"])
        mlp_bias = bool(config.get("mlp_bias", False))
        if gemma:
            x = x + norm(out, p + "post_attention_layernorm")
            h = norm(x, p + "pre_feedforward_layernorm")
        else:
            x = x + out
            h = norm(x, p + "post_attention_layernorm")
        m = p + "mlp."
        h = lin(act(lin(h, m + "gate_proj", mlp_bias)) * lin(h, m + "up_proj", mlp_bias), m + "down_proj", mlp_bias)
        x = x + (norm(h, p + "post_feedforward_layernorm") if gemma else h)
    head_weight = tensors.get("lm_head.weight")
    head_weight = w["embed_tokens.weight"] if head_weight is None else head_weight.double().numpy()
    final_cap = config.get("final_logit_softcapping") if gemma and not config["_image_text"] else None
    logits = cap(norm(x, "norm") @ head_weight.T, final_cap)
    return logits[None], weights_all


def check_decoder_against_numpy(name):
    config, tensors, expected = read_folder(name)
    logits, weights = numpy_decoder_forward(config, tensors, expected["tokens"][0])
    for layer, wl in enumerate(weights):
        close(f"{name} attn_weights.{layer} vs float64 NumPy", wl, expected[f"attn_weights.{layer}"])
    scale = float(np.abs(expected["logits"]).max())
    close(f"{name} logits / max|logit| vs float64 NumPy", logits / scale, expected["logits"] / scale, 1e-5)


def without(config, path, value):
    """A copy of config with the key at path (a tuple) set to value."""
    config = json.loads(json.dumps(config))
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return config


TRAITS = [
    # folder, what, key path, value that turns the trait off
    ("llama_linear", "linear RoPE scaling", ("rope_scaling",), None),
    ("llama_linear", "attention_bias", ("attention_bias",), False),
    ("llama_linear", "mlp_bias", ("mlp_bias",), False),
    ("llama3_v4", "llama3 RoPE scaling (v4 layout)", ("rope_scaling",), None),
    ("llama3_v5", "llama3 RoPE scaling (v5 layout)", ("rope_parameters", "rope_type"), "default"),
    ("mistral", "sliding_window", ("sliding_window",), None),
    ("qwen2", "use_sliding_window", ("use_sliding_window",), False),
    ("gemma2", "attn_logit_softcapping", ("attn_logit_softcapping",), None),
    ("gemma2", "final_logit_softcapping", ("final_logit_softcapping",), None),
    ("gemma2", "sliding_window", ("sliding_window",), 4096),
    ("gemma2", "query_pre_attn_scalar", ("query_pre_attn_scalar",), 16),
    ("gemma3_text", "global linear RoPE scaling", ("rope_scaling",), None),
    ("gemma3_text", "rope_local_base_freq", ("rope_local_base_freq",), 1000000.0),
    ("gemma3_text", "sliding_window_pattern", ("sliding_window_pattern",), 6),
    ("gemma3", "nested full_attention RoPE", ("text_config", "rope_parameters", "full_attention", "rope_type"), "default"),
    ("gemma3", "nested sliding_attention rope_theta", ("text_config", "rope_parameters", "sliding_attention", "rope_theta"), 1000000.0),
    ("gemma3", "layer_types", ("text_config", "layer_types"), ["full_attention"] * 3),
]


def check_traits_matter():
    """Each trait a fixture is meant to exercise changes its logits by more than 1e-2 of
    max|logit| when turned off, so an implementation that ignored it would fail."""
    for name, what, path, value in TRAITS:
        config, tensors, expected = read_folder(name)
        out = reference.forward(without(config, path, value), tensors, torch.tensor(expected["tokens"]))
        scale = float(np.abs(expected["logits"]).max())
        change = float(np.abs(out["logits"].numpy() - expected["logits"]).max()) / scale
        status = "ok" if change > 1e-2 else "FAIL"
        print(f"  {status} {name}: {what} changes the logits by {change:.3f} of max|logit|")
        if change <= 1e-2:
            raise SystemExit(f"{name}: {what} does not matter at N = 12")


def main():
    torch.set_num_threads(1)
    check_rope_by_complex_rotation()
    check_llama3_bands()
    check_llama3_against_hf_snapshot()
    for name in ("gpt2", "gpt2_prefixed"):
        check_gpt2_against_torch(name)
    for name in ("llama2", "llama_linear", "llama3_v4", "llama3_v5", "mistral", "qwen2", "qwen3",
                 "gemma2", "gemma3_text", "gemma3"):
        check_decoder_against_numpy(name)
    check_windows("mistral", {0, 1}, 4)
    check_windows("qwen2", {1}, 5)
    check_windows("gemma2", {0, 2}, 4)
    check_windows("gemma3_text", {0, 2}, 4)
    check_windows("gemma3", {0, 1}, 5)
    check_traits_matter()
    for name in sorted(os.listdir(HERE)):
        if os.path.isfile(os.path.join(HERE, name, "config.json")):
            check_files_reproduce(name)
    print("all checks passed")


if __name__ == "__main__":
    main()
